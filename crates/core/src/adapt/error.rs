//! Why `adapt` could not start, go on, or put things back.

use std::path::PathBuf;

use crate::placement::PlacementError;
use crate::program::LaunchError;
use crate::program::server::ServerError;
use crate::program::watch::WatchError;
use crate::sys::SysError;

/// Why adapting failed; every message is one line naming what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdaptError {
    /// The program could not be started, found, rebound or re-pinned.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// Its CPU progress could not be read.
    #[error("reading the program's CPU progress: {0}")]
    Watch(#[from] WatchError),
    /// A placement could not be planned on the CPUs of a setting.
    #[error("planning the placement: {0}")]
    Placement(#[from] PlacementError),
    /// The probe command gave no figure several intervals in a row.
    #[error("--probe '{command}': no figure {times} intervals in a row; the last: {reason}")]
    Probe {
        /// The command.
        command: String,
        /// How many intervals.
        times: usize,
        /// Why the last gave none.
        reason: String,
    },
    /// The thread-count hook failed.
    #[error("--set-threads '{command}': {reason}")]
    Hook {
        /// The command, its placeholder filled in.
        command: String,
        /// Why (its exit status, or it could not start).
        reason: String,
    },
    /// The log file could not be made or written.
    #[error("--log {}: {error}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A cgroup could not be found, read or changed.
    #[error("cgroup {}: {reason}", path.display())]
    Cgroup {
        /// The cgroup or its file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A cgroup file could not be read or written (the kernel's error).
    #[error(transparent)]
    Sys(#[from] SysError),
    /// The server (`--server`) could not be started, got not ready, or did not stop.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A setting or option that cannot be used.
    #[error("{0}")]
    Invalid(String),
}
