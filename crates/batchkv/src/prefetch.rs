//! Software prefetch: the one helper the batched read paths use to put
//! several cache misses in flight at once (see docs/design.md §4.3 and §5).
//!
//! A prefetch is only a hint: it never faults, never changes memory and never
//! changes the result of any later load, so calling it with any address —
//! dangling, null, unaligned — is sound. It only costs a load slot.
#![allow(unsafe_code)]

/// Hints the CPU to bring the cache line holding `p` into L1 for reading.
/// No-op on architectures without a stable prefetch intrinsic.
#[inline(always)]
pub fn prefetch_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is architecturally a hint: it does not fault on
        // any address (invalid or unmapped addresses are silently dropped),
        // reads nothing the program can observe and writes nothing. SSE is
        // part of the x86_64 baseline, so the instruction always exists.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
    }
}

#[cfg(test)]
mod tests {
    use super::prefetch_read;

    #[test]
    fn prefetch_accepts_any_address_and_leaves_memory_unchanged() {
        let data = [7u64; 16];
        prefetch_read(data.as_ptr());
        prefetch_read(std::ptr::null::<u8>());
        prefetch_read(usize::MAX as *const u8);
        assert_eq!(data, [7u64; 16]);
    }
}
