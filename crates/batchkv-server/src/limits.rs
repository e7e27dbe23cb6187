//! The file-descriptor budget at start: `--maxclients` clients plus the
//! descriptors the server and the engine need must fit under
//! `RLIMIT_NOFILE`. As Redis does (`adjustOpenFilesLimit`), the soft limit
//! is raised when it is too low; when it cannot be raised far enough,
//! `maxclients` is lowered to what fits, with Redis's warnings.

/// Descriptors kept for everything but clients, as Redis's
/// `CONFIG_MIN_RESERVED_FDS` (listening socket, logs, ...).
pub const MIN_RESERVED_FDS: u64 = 32;

/// Descriptors the engine may hold besides its table cache: WAL,
/// MANIFEST, LOCK, directory syncs, a table being written.
const ENGINE_FIXED_FDS: u64 = 16;

/// The engine's table cache when `max_open_files` is unlimited: counted
/// as its default (an estimate: an unlimited cache holds every table).
const UNLIMITED_TABLES_ESTIMATE: u64 = 1000;

/// Descriptors reserved for the server and an engine opened with
/// `max_open_files`.
pub fn reserved_fds(max_open_files: usize) -> u64 {
    let tables = if max_open_files == usize::MAX {
        UNLIMITED_TABLES_ESTIMATE
    } else {
        max_open_files as u64
    };
    MIN_RESERVED_FDS + ENGINE_FIXED_FDS + tables
}

/// What [`plan`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The soft limit already suffices.
    Enough,
    /// The soft limit was raised from `from` to `to` (≥ what is needed).
    Raised { from: u64, to: u64 },
    /// The limit could not reach `needed`: it is `limit` (raised from
    /// `from`, or not), and `maxclients` becomes `maxclients`.
    Reduced {
        from: u64,
        limit: u64,
        needed: u64,
        maxclients: usize,
    },
    /// Not even the reserved descriptors fit: the server must not start.
    TooLow { limit: u64, needed: u64 },
}

/// Decides the budget for `maxclients` clients and `reserved` other
/// descriptors under the limits `(soft, hard)`; `set(soft, hard)` tries to
/// install new limits (false if the OS refused). First the soft limit
/// (and the hard one if needed: allowed to a privileged process) is set to
/// what is needed; failing that, the soft limit is raised to the hard one.
/// The hard limit is never lowered.
pub fn plan(
    maxclients: usize,
    reserved: u64,
    (soft, hard): (u64, u64),
    mut set: impl FnMut(u64, u64) -> bool,
) -> Plan {
    let needed = (maxclients as u64).saturating_add(reserved);
    if soft >= needed {
        return Plan::Enough;
    }
    if set(needed, hard.max(needed)) {
        return Plan::Raised {
            from: soft,
            to: needed,
        };
    }
    let limit = if hard > soft && set(hard, hard) {
        hard
    } else {
        soft
    };
    if limit <= reserved {
        return Plan::TooLow { limit, needed };
    }
    Plan::Reduced {
        from: soft,
        limit,
        needed,
        maxclients: (limit - reserved) as usize,
    }
}

/// Applies [`plan`] to this process's `RLIMIT_NOFILE`; returns the
/// `maxclients` to use, logging what changed (Redis's texts), or an error
/// when even the reserved descriptors do not fit.
pub fn adjust_open_files(maxclients: usize, reserved: u64) -> std::io::Result<usize> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        let e = std::io::Error::last_os_error();
        log::warn!("batchkv serve: unable to obtain the current NOFILE limit ({e}); maxclients is not checked against it");
        return Ok(maxclients);
    }
    let mut last_error = None;
    let decided = plan(
        maxclients,
        reserved,
        (lim.rlim_cur, lim.rlim_max),
        |cur, max| {
            let new = libc::rlimit {
                rlim_cur: cur as libc::rlim_t,
                rlim_max: max as libc::rlim_t,
            };
            // SAFETY: `new` is a valid rlimit.
            let ok = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0;
            if !ok {
                last_error.get_or_insert_with(std::io::Error::last_os_error);
            }
            ok
        },
    );
    match decided {
        Plan::Enough => Ok(maxclients),
        Plan::Raised { from, to } => {
            log::info!("batchkv serve: increased maximum number of open files to {to} (it was originally set to {from}).");
            Ok(maxclients)
        }
        Plan::Reduced {
            limit,
            needed,
            maxclients: reduced,
            ..
        } => {
            let why = last_error.map_or_else(|| "unknown".to_string(), |e| e.to_string());
            log::warn!("batchkv serve: you requested maxclients of {maxclients} requiring at least {needed} max file descriptors.");
            log::warn!("batchkv serve: server can't set maximum open files to {needed} because of OS error: {why}.");
            log::warn!("batchkv serve: current maximum open files is {limit}. maxclients has been reduced to {reduced} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.");
            Ok(reduced)
        }
        Plan::TooLow { limit, needed } => Err(std::io::Error::other(format!(
            "your current 'ulimit -n' of {limit} is not enough for the server to start: \
             it needs at least {} descriptors besides clients ({} for the engine's table \
             cache, max_open_files), {needed} for maxclients {maxclients}; increase \
             'ulimit -n' or lower max_open_files (--options max_open_files=N)",
            reserved + 1,
            reserved - MIN_RESERVED_FDS - ENGINE_FIXED_FDS,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enough_is_left_alone() {
        let p = plan(100, 50, (1024, 4096), |_, _| panic!("no change expected"));
        assert_eq!(p, Plan::Enough);
    }

    #[test]
    fn the_soft_limit_is_raised_when_allowed() {
        let mut calls = Vec::new();
        let p = plan(10_000, 1048, (1024, 524_288), |c, m| {
            calls.push((c, m));
            true
        });
        assert_eq!(
            p,
            Plan::Raised {
                from: 1024,
                to: 11_048
            }
        );
        // The hard limit is kept, not lowered to what is needed.
        assert_eq!(calls, [(11_048, 524_288)]);
    }

    #[test]
    fn past_the_hard_limit_maxclients_is_reduced() {
        // Unprivileged: raising the hard limit fails, the soft limit goes
        // up to the hard one.
        let mut calls = Vec::new();
        let p = plan(10_000, 1048, (1024, 4096), |c, m| {
            calls.push((c, m));
            m <= 4096
        });
        assert_eq!(
            p,
            Plan::Reduced {
                from: 1024,
                limit: 4096,
                needed: 11_048,
                maxclients: 4096 - 1048
            }
        );
        assert_eq!(calls, [(11_048, 11_048), (4096, 4096)]);
        // Soft already at the hard limit: nothing more to try.
        let p = plan(10_000, 1048, (4096, 4096), |_, m| m <= 4096);
        assert!(
            matches!(
                p,
                Plan::Reduced {
                    maxclients: 3048,
                    ..
                }
            ),
            "{p:?}"
        );
    }

    #[test]
    fn too_low_for_the_reserved_descriptors() {
        let p = plan(10, 1048, (256, 256), |_, _| false);
        assert_eq!(
            p,
            Plan::TooLow {
                limit: 256,
                needed: 1058
            }
        );
    }

    #[test]
    fn reserved_counts_the_table_cache() {
        assert_eq!(reserved_fds(1000), 1048);
        assert_eq!(reserved_fds(usize::MAX), 1048);
        assert_eq!(reserved_fds(10), 58);
    }
}
