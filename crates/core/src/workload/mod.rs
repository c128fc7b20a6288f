//! Built-in workloads ([`Workload`], made by [`build`] from a [`WorkloadSpec`]): real jobs that
//! check their own answers, so that `coretune tune` works with nothing installed and a broken
//! parallel run can never look fast. One file each: `raymesh`, `membw`, `mixed`, `sum`, `spawn`.
//!
//! Each workload is prepared once (inputs generated, reference answers computed), then run any
//! number of times under a [`RunConfig`] — thread count, each worker's CPU set and steal order
//! (a placement as plain data), a start hook, and optionally a limit on how many workers compute
//! at once — and each run's output is verified outside the measured region. The workers are a
//! coretune pool's ([`run_workers`]), so the placement reaches them. [`run_measured`] is the one place that measures a run
//! ([`crate::measure`]), used by `coretune bench` and by every run of a sweep.

mod api;
mod harness;
mod membw;
mod mixed;
mod raymesh;
mod record;
mod spawn;
mod spec;
mod sum;

pub use api::{
    DynWorkload, RunConfig, RunOutput, Size, StartHook, Throughput, Unit, Unverified, Work,
    Workload, WorkloadError,
};
pub(crate) use harness::fnv1a;
pub use harness::{run_copies, run_measured, run_workers};
pub use record::{RunRecord, ThrottleSample};
pub use spec::{NAMES, PARAMETERS, SpecError, WorkloadSpec, build};

#[cfg(test)]
mod test;
