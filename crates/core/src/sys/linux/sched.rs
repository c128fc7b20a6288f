//! `/proc/PID/task/TID/sched`: the scheduler's debug statistics of one thread, of which coretune
//! reads `se.nr_migrations` (the thread's moves between CPUs since it started). procfs does not
//! parse this file; it exists only with `CONFIG_SCHED_DEBUG`.

use std::path::Path;

use super::files::parse_text;
use crate::sys::error::SysError;

/// `se.nr_migrations` from a `sched` file's text, when present.
fn parse_migrations(text: &str) -> Result<u64, String> {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "se.nr_migrations").then(|| v.trim().parse().ok())?
        })
        .ok_or_else(|| "no se.nr_migrations line".to_owned())
}

/// `se.nr_migrations` from the `sched` file at `path`.
pub(super) fn migrations(path: &Path) -> Result<u64, SysError> {
    parse_text(path, parse_migrations)
}

/// `se.nr_migrations` of the calling thread (`/proc/thread-self/sched`).
pub(crate) fn thread_migrations() -> Result<u64, SysError> {
    migrations(Path::new("/proc/thread-self/sched"))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::sched;

    #[test]
    fn finds_nr_migrations() {
        assert_eq!(parse_migrations(&sched(12)), Ok(12));
        assert!(parse_migrations("nr_switches : 3\n").is_err());
        assert!(parse_migrations("se.nr_migrations : x\n").is_err());
    }

    #[test]
    fn reads_this_thread() {
        // Absent without CONFIG_SCHED_DEBUG; then the error names the file.
        match thread_migrations() {
            Ok(_) => {}
            Err(SysError::Read { path, .. } | SysError::Parse { path, .. }) => {
                assert_eq!(path, Path::new("/proc/thread-self/sched"));
            }
            Err(e) => panic!("{e}"),
        }
    }
}
