//! Running one configuration: the [`Runner`] prepares a target once (builds the workload, finds
//! the program) and then makes one run of it per call, measured the same way whether the run
//! belongs to a sweep or to `coretune bench`, and audited: a run counts only when coretune
//! checked that it ran as its configuration says.
//!
//! - A **built-in workload** runs in this process, on the workers of a coretune pool built with
//!   the configuration's placement (worker `i` pinned to thread `i`'s CPUs, stealing from the
//!   others nearest first: [`crate::Placement::pool_builder`]'s data) and throttle (a fresh one per run,
//!   so an adaptive throttle's climb is part of every run's time). Each worker checks, before
//!   it works, that it is on its CPUs and has its memory policy. With a timeout the run happens
//!   on a thread of its own; a run that exceeds it cannot be stopped inside the process, so it is
//!   [`Outcome::Abandoned`]: logged as timed out, and the sweep stops (the caller exits, which
//!   ends the stuck thread; `--resume` continues). (`builtin.rs`)
//! - An **external program** is started by [`crate::program::PlacedCommand`], the one place
//!   coretune starts a placed program: `{threads}`, `{cpus}`, `{place}` and `{mem}` substituted
//!   into its arguments (`placeholders.rs`), the thread-count variables set, the process CPU set
//!   and memory policy applied before `exec`, a pinned placement reaching its threads one by one
//!   through the preloaded pinning library where it can ([`crate::pin`]; the program is
//!   inspected once, when the runner is made, and [`Runner::pinning_warning`] says before the
//!   sweep when it falls back), in a tree of its own that nothing it starts leaves; stdio closed
//!   (its stdout kept in an unnamed file when a metric is read there), killed at the timeout. A
//!   non-zero exit is a failed run; one ended by SIGINT or SIGTERM is a sweep being stopped
//!   ([`Outcome::Stopped`]), not a measurement. (`command.rs`)
//! - **Several instances** (`--instances`): the configuration's CPUs are split as hwloc-distrib
//!   splits them ([`Config::placements`]), and a built-in workload runs a pool per part at once
//!   ([`crate::workload::run_copies`]), a program a copy per part (`{instance}`, its own
//!   `{cpus}`, placement and memory policy), waited for together; the run is the slowest copy's
//!   time, and a copy that fails fails it.
//! - A **server** (`--server`) is started, loaded by its client once it is ready, and stopped
//!   (`server.rs`).
//! - **Under a launcher** (`--launcher mpirun|srun`): the launcher's command line for the
//!   configuration ([`super::Launcher::words`]) is put before the program's, and that one
//!   command is the run (`launched.rs`).
//!
//! **The audit** (`runner.rs`, [`Runner::run`]): while a program with something to check runs
//! (a CPU set, a per-thread plan, a memory policy), its threads are sampled (every 50 ms, or at
//! `--monitor`'s interval: one pass over `/proc/PID/task/*/stat`, after the first samples at 2,
//! 4, 8, … ms); afterwards every program the run started is checked against what it was started
//! with ([`crate::program::Placed::audit`]), and what it left running is ended and named. A
//! mismatch is kept in the run's record and makes the run count as
//! [`super::Status::Mismatch`], never as a measurement.
//!
//! With [`RunSettings::monitor`] the background sampler also records per-CPU utilisation,
//! kept in the results folder.
//!
//! [`RunSettings::monitor`]: super::RunSettings::monitor
//! [`Outcome::Abandoned`]: super::Outcome::Abandoned
//! [`Outcome::Stopped`]: super::Outcome::Stopped
//! [`Config::placements`]: crate::grid::Config::placements

mod builtin;
mod command;
mod launched;
mod placeholders;
mod runner;
mod server;

pub use placeholders::substitute;
pub use runner::{RunResult, Runner};

pub(crate) use placeholders::{placeholder_list, substitute_all, substitute_copy};
