//! coretune's exit statuses (the README's "Errors and exit status" lists them):
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | the measurement itself failed: no configuration of a sweep completed a verified run, a `bench` run did not verify, `compare --fail-above` found a regression |
//! | 2 | bad input, or an error coretune could not get past (one line on stderr says which) |
//! | 130 | interrupted by Ctrl-C (a sweep keeps what it finished: `--resume` continues) |
//!
//! `run` and `watch` end with the program's own status (128 + the signal that killed it).

/// The measurement failed (see the module table).
pub(crate) const FAILED: u8 = 1;
/// Bad input or an error coretune reports itself.
pub(crate) const ERROR: u8 = 2;
/// Interrupted by Ctrl-C.
pub(crate) const INTERRUPTED: u8 = 130;
