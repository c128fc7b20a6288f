//! `coretune adapt`: keeping a running program at its best as load and neighbours change,
//! judged by its own figure, online.
//!
//! A [`Session`] attaches to a program (`--pid`) or to every process of a cgroup (`--cgroup`),
//! or starts one, contained (a command, or a server made ready first as `tune --server` does);
//! reads its figure once per interval ([`ProbeSpec`]: a probe command's output, or by default
//! the CPU progress of its process tree or its cgroup's usage counter); hands it to the
//! [`Controller`]; turns the knobs the controller answers with (its CPU set and placement,
//! every thread re-pinned or the cgroup's `cpuset.cpus`; its cgroup's CPU quota, in a cgroup
//! of adapt's own for a process that has none to turn; its thread count through a user's hook;
//! [`Setting`]); logs every interval ([`LogLine`]); and at the end puts back what it found
//! (a cgroup's files byte for byte), or ends what it started.
//!
//! # The controller, and why it is built so
//!
//! The tools that adapt online each failed in a way this controller is built against:
//!
//! - **Envoy's adaptive concurrency** measured its baseline by cutting the limit for everyone
//!   (503s from its own probes, envoy#8337), overreacted to noise (envoy PR #9038), and let its
//!   baseline drift under sustained load (envoy PR #11579). Here a probe is *one neighbour* of
//!   the incumbent, for a few intervals, under a **budget** (a bucket of probe intervals that
//!   refills at a share of the time: at most `budget_burst + budget_share × intervals` are ever
//!   spent on probes); a probe that breaks the latency bound is **rolled back on the interval
//!   it is seen**, before its figure is even counted; and the incumbent is **re-measured
//!   between the probe's blocks** (after the incumbent's own baseline: probe, incumbent, probe,
//!   and to confirm a probe that is better so far, incumbent, probe again), so a drift of the
//!   whole machine hits both sides and is not taken for a gain.
//! - **Noise**: a probe is accepted only *beyond noise*, after its confirmation blocks: every
//!   one of its figures better than every figure of the incumbent in the trial (6 against 8: a
//!   chance of 1 in 3,003 for two equal settings), the 95% bootstrap intervals of the medians
//!   apart, and the medians more than the tolerance apart — `tune`'s tie rule (intervals
//!   overlapping or within 3% is a tie), made stricter because it is applied again and again —
//!   and more than twice the incumbent's own spread (its MAD as a standard deviation), so a
//!   service whose figures wander by a tenth is not moved by a tenth. On a flat service with
//!   5% noise this made 0 moves in 40 seeded runs of 3,000 intervals (13 without the
//!   confirmation and the spread). One exception to the confirmation: a gain so large that
//!   the probe's worst figure of its first pair of blocks beats the incumbent's best by more
//!   than 3 tolerances and 4 of its spreads (a bad start a CPU or a quota from its best) is
//!   accepted then, 6 intervals sooner; with it the flat service still made 0 moves in the
//!   same 40 runs. A tie stays with the incumbent (hysteresis). Rolling back
//!   needs less: a probe block worse beyond noise ends the trial at once. Quick to retreat,
//!   slow to move.
//! - **`tuned`'s dynamic tuning flapped** and was turned off by default (tuned PR #603, #652).
//!   Here a newly accepted setting is held for a **minimum dwell**; the setting just left is
//!   not tried again from the new one until something changes (no A → B → A); and once every
//!   neighbour has been tried without a gain the controller is **converged** and probes
//!   nothing until a step change or a slow recheck (every 150 intervals by default).
//! - **.NET's hill climbing** adapted its thread count on throughput alone and gained little
//!   (disabling it was usually as good, dotnet/runtime PR #81406): small random moves on a
//!   noisy signal. Here the moves are the ones that matter on a machine — a CPU more or fewer
//!   (one per core first), another placement, a quarter more or fewer threads — and each is
//!   judged by the service's own figure.
//! - **Step changes** (the load doubles, a neighbour starts on the same CPUs): the incumbent's
//!   last 3 figures all more than 15% away from the median of the ones before them, on the
//!   same side, is a step (also when it shows in the incumbent's blocks of a trial, which is
//!   then dropped): the controller says `re-explore` and probes every
//!   neighbour again from the incumbent measured afresh. An incumbent over the latency bound for
//!   3 intervals in a row is re-explored from too. The reference window rolls, so a slow drift
//!   follows along instead of triggering.
//!
//! Each interval gives one decision: `hold` (the incumbent measured), `probe` (a trial started
//! or going on), `accept`, `rollback` (worse, over the bound, a tie, or no figure), `re-explore`,
//! or `skip` (no figure: nothing counted). [`Tuning`] holds the numbers, each default argued at
//! [`Tuning::default`]; the controller counts intervals, not seconds, so it is tested on
//! simulated services without a clock (`test.rs`).
//!
//! What is not built yet: a pool resizing itself live.

mod cgroup;
mod controller;
mod error;
mod knobs;
mod log;
mod session;
mod setting;
mod signal;

#[cfg(test)]
mod test;

pub use controller::{Controller, Decision, Direction, Observation, Step, Tuning};
pub use error::AdaptError;
pub use log::{AdaptLog, LogLine};
pub use session::{AdaptSpec, Ending, Outcome, PROBE_FAILURES, Session, Target};
pub use setting::{Setting, Space};
pub use signal::ProbeSpec;
