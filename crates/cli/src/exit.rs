//! coretune's exit statuses (the README's "Errors and exit status" lists them):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | the measurement itself failed: no configuration of a sweep completed a verified run, a `bench` run did not verify, `compare --fail-above` found a regression |
//! | 2 | bad input, or an error coretune could not get past (one line on stderr says which) |
//! | 130 | interrupted by Ctrl-C (a sweep keeps what it finished: `--resume` continues) |
//!
//! `run` and `watch` end with the program's own status (128 + the signal that killed it); when
//! they cannot start it, with 127 (not found) or 126 (found, not executable), as `env`,
//! `taskset`, `nice` and `timeout` do; `run --timeout` with 124, as `timeout` does.

use coretune_core::program::LaunchError;

/// The measurement failed (see the module table).
pub(crate) const FAILED: u8 = 1;
/// Bad input or an error coretune reports itself.
pub(crate) const ERROR: u8 = 2;
/// Interrupted by Ctrl-C.
pub(crate) const INTERRUPTED: u8 = 130;
/// The program to start was not found (`env`, `timeout`: 127).
pub(crate) const NOT_FOUND: u8 = 127;
/// The program to start was found but cannot be executed (`env`, `timeout`: 126).
pub(crate) const NOT_EXECUTABLE: u8 = 126;

/// The status of a command that starts a program and failed with `err`: 127 or 126 when the
/// program could not be started, else [`ERROR`].
pub(crate) fn of_launch_error(err: &anyhow::Error) -> u8 {
    err.chain()
        .find_map(|cause| match cause.downcast_ref::<LaunchError>() {
            Some(LaunchError::CommandNotFound { .. }) => Some(NOT_FOUND),
            Some(LaunchError::NotExecutable { .. }) => Some(NOT_EXECUTABLE),
            _ => None,
        })
        .unwrap_or(ERROR)
}
