//! The process's logger and the flags about recovery that every command
//! shares: `--log-level` (where the engine's `log` lines go: stderr, or
//! `serve --logfile`) and `--wal-recovery` (the engine's
//! `wal_recovery_mode`).
//!
//! The engine logs what opening a database recovered at `warn` when it
//! was not clean (a torn tail, damage, what was not applied, where the
//! damaged WAL was copied), so the default level shows it on every command.

use std::io::Write;
use std::path::Path;

use log::LevelFilter;

/// `--log-level` and `--wal-recovery`, global flags of every command.
#[derive(clap::Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Log level of the messages on stderr (or in `serve --logfile`):
    /// off, error, warn, info, debug or trace. `RUST_LOG` adds per-module
    /// filters (e.g. `RUST_LOG=batchkv=debug`).
    #[arg(long, global = true, default_value = "warn")]
    pub log_level: LevelFilter,
    /// How data commands and `serve` open a database whose WAL is damaged:
    /// tolerate-corrupted-tail
    /// (the default: a crash's torn tail is accepted, damage followed by
    /// intact writes refuses the open), point-in-time (keep the writes
    /// before the damage), skip-corrupted (also apply the intact writes
    /// after it) or absolute (refuse any damage). Sets the option
    /// `wal_recovery_mode` (overriding `--options`). The salvaging modes
    /// copy the damaged WAL to DIR/lost/ first.
    #[arg(long, global = true, value_name = "MODE", value_parser = [
        "tolerate-corrupted-tail", "absolute", "point-in-time", "skip-corrupted",
    ])]
    pub wal_recovery: Option<String>,
}

impl GlobalArgs {
    /// `options` (the global `--options`) with `--wal-recovery` appended,
    /// so the flag wins over an option string that sets the mode too.
    pub fn options(&self, options: Option<String>) -> Option<String> {
        let Some(mode) = &self.wal_recovery else {
            return options;
        };
        let set = format!("wal_recovery_mode={mode}");
        Some(match options {
            Some(o) if !o.trim().is_empty() => format!("{o};{set}"),
            _ => set,
        })
    }
}

/// Installs the logger: `level` for every module, then the filters of
/// `RUST_LOG` if set; lines go to `logfile` (appended to) or stderr, as
/// `TIME LEVEL target: message` with the time in UTC.
pub fn init(level: LevelFilter, logfile: Option<&Path>) -> std::io::Result<()> {
    let mut builder = env_logger::Builder::new();
    builder.filter_level(level);
    if let Ok(filters) = std::env::var("RUST_LOG") {
        builder.parse_filters(&filters);
    }
    builder.format(|buf, record| {
        writeln!(
            buf,
            "{} {:<5} {}: {}",
            utc_now(),
            record.level(),
            record.target(),
            record.args()
        )
    });
    if let Some(path) = logfile {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("--logfile {}: {e}", path.display()))
            })?;
        builder.target(env_logger::Target::Pipe(Box::new(file)));
    }
    // Only fails if a logger is already installed (it never is here).
    let _ = builder.try_init();
    Ok(())
}

/// The time now as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn utc_now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of the day `days` after 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn wal_recovery_is_appended_to_the_options() {
        let args = |mode: Option<&str>| GlobalArgs {
            log_level: LevelFilter::Warn,
            wal_recovery: mode.map(String::from),
        };
        assert_eq!(args(None).options(Some("a=1".into())), Some("a=1".into()));
        assert_eq!(args(None).options(None), None);
        assert_eq!(
            args(Some("skip-corrupted")).options(Some("wal_recovery_mode=absolute".into())),
            Some("wal_recovery_mode=absolute;wal_recovery_mode=skip-corrupted".into())
        );
        assert_eq!(
            args(Some("point-in-time")).options(None),
            Some("wal_recovery_mode=point-in-time".into())
        );
        let o: batchkv::Options = args(Some("point-in-time"))
            .options(Some("write_buffer_size=1MB".into()))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(o.wal_recovery_mode, batchkv::WalRecoveryMode::PointInTime);
    }
}
