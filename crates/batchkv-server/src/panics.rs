//! The panic boundary around commands: a panic inside a command handler
//! (or a batched GET/MGET) becomes the reply `-ERR internal error` and one
//! `log::error!` line with the panic's message, location and backtrace;
//! the connection and the server go on.
//!
//! What a caught panic can leave behind, and why that is acceptable:
//! - stripe locks and the other mutexes are guards, released while
//!   unwinding; every lock of the server ignores poisoning (the data they
//!   guard is `()`, counters, or replaced whole);
//! - the EXEC overlay (`tx.rs`) is a thread-local removed by a drop guard
//!   when EXEC itself unwinds; a queued command that panics inside EXEC is
//!   caught by its own boundary, answers the error, and EXEC goes on (as
//!   a command error inside EXEC does in Redis) — what it recorded in the
//!   overlay before panicking is committed with the transaction, as a
//!   command outside EXEC that panics after its write keeps that write;
//! - a command writes the engine with one `WriteBatch` (`Shared::write`),
//!   so a panic leaves either its whole write or none of it.
//!
//! The backtrace is taken by a panic hook ([`install_hook`]) while the
//! stack is still there: on a thread inside the boundary the hook stores
//! message, location and backtrace for [`catch`] to log instead of
//! printing them; on any other thread it calls the hook installed before.

use std::backtrace::Backtrace;
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

/// The reply to a command that panicked.
pub const INTERNAL_ERROR: &str = "ERR internal error";

/// How many panics the boundary has caught on this thread, and the
/// description (message, location, backtrace) of the last one (the fuzz
/// target fails on any).
#[cfg(any(test, feature = "fuzzing"))]
pub fn caught() -> (u64, Option<String>) {
    CAUGHT.with(|c| {
        let c = c.borrow();
        (c.0, c.1.clone())
    })
}

thread_local! {
    /// Depth of [`catch`] calls running on this thread.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
    /// What the hook recorded of the last panic inside the boundary.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Panics caught on this thread, and the last one's description.
    static CAUGHT: RefCell<(u64, Option<String>)> = const { RefCell::new((0, None)) };
}

/// Installs the panic hook (once per process), keeping the previous hook
/// for panics outside the boundary.
pub fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE.with(Cell::get) > 0 {
                let text = describe(info);
                LAST.with(|l| *l.borrow_mut() = Some(text));
            } else {
                previous(info);
            }
        }));
    });
}

/// The message, location and backtrace of a panic.
fn describe(info: &PanicHookInfo<'_>) -> String {
    let msg = payload_text(info.payload());
    let at = info
        .location()
        .map_or_else(String::new, |l| format!(" at {l}"));
    format!("{msg}{at}\nbacktrace:\n{}", Backtrace::force_capture())
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Leaves the boundary when dropped (also when `catch`'s closure
/// unwinds through a nested boundary).
struct Inside;

impl Inside {
    fn enter() -> Inside {
        INSIDE.with(|d| d.set(d.get() + 1));
        Inside
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Runs `f`; if it panics, logs the panic (naming `what`, e.g. the
/// command) with its backtrace and returns `None`.
pub fn catch<R>(what: impl FnOnce() -> String, f: impl FnOnce() -> R) -> Option<R> {
    install_hook();
    let inside = Inside::enter();
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    drop(inside);
    match r {
        Ok(v) => Some(v),
        Err(payload) => {
            let detail = LAST
                .with(|l| l.borrow_mut().take())
                .unwrap_or_else(|| payload_text(&*payload));
            let what = what();
            log::error!("batchkv serve: panic in {what}: {detail}");
            CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                c.0 += 1;
                c.1 = Some(format!("{what}: {detail}"));
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_caught_and_the_boundary_left() {
        assert_eq!(catch(|| "x".into(), || 7), Some(7));
        let r: Option<()> = catch(|| "x".into(), || panic!("boom {}", 1));
        assert_eq!(r, None);
        assert_eq!(INSIDE.with(Cell::get), 0);
        assert!(LAST.with(|l| l.borrow().is_none()), "the record was taken");
        // Nested: the inner boundary catches, the outer sees a value.
        let r = catch(
            || "outer".into(),
            || catch(|| "inner".into(), || -> u8 { panic!("inner") }),
        );
        assert_eq!(r, Some(None));
        assert_eq!(INSIDE.with(Cell::get), 0);
    }

    #[test]
    fn the_hook_records_message_and_location() {
        install_hook();
        let inside = Inside::enter();
        let r = panic::catch_unwind(|| panic!("recorded {}", 2));
        drop(inside);
        assert!(r.is_err());
        let text = LAST.with(|l| l.borrow_mut().take()).unwrap();
        assert!(text.starts_with("recorded 2 at "), "{text}");
        assert!(text.contains("panics.rs"), "{text}");
        assert!(text.contains("backtrace:"), "{text}");
    }
}
