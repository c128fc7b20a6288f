//! The one error type of the platform layer.

use std::io;
use std::path::PathBuf;

/// Why reading the operating system's state failed. Each variant keeps what it failed on: the
/// file, the process or the call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SysError {
    /// A file (under `/proc`, `/sys` or a cgroup file system) could not be read or written.
    #[error("{path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The reason.
        error: io::Error,
    },
    /// A file did not have the expected layout.
    #[error("{path}: unexpected format: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// The process does not exist (or is not visible to this one).
    #[error("no process with pid {pid}")]
    NoProcess {
        /// The process id.
        pid: i32,
    },
    /// A system call failed.
    #[error("{call}: {error}")]
    Call {
        /// The call (`getrusage`, `perf_event_open`, ...).
        call: &'static str,
        /// The OS error.
        error: io::Error,
    },
    /// What was asked is not implemented for this operating system.
    #[error("{what} is not implemented for this operating system")]
    Unsupported {
        /// What was asked.
        what: &'static str,
    },
}
