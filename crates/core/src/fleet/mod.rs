//! Sweeps across a Slurm cluster: one sweep per node, submitted as exclusive batch jobs, each
//! writing its own results folder under one fleet folder on a shared file system. Slurm
//! schedules; coretune measures, and merges the folders into one report
//! ([`FleetFolder`]).
//!
//! # The fleet folder
//!
//! ```text
//! DIR/fleet.json              what was asked (targets, the sweep's options, site options) and
//!                             every job submitted, with its last known Slurm state, node and log
//! DIR/TARGET/                 one folder per target (a partition, a constraint, a node list):
//!        submit-N.sh          the batch scripts submitted
//!        slurm-ID.log         the jobs' output
//!        NODE/                one sweep folder per node measured (sweep.json, runs.jsonl, ...)
//! ```
//!
//! Two targets over the same node (two partitions sharing it) get two folders, so they never
//! collide.
//!
//! # Lifecycle
//!
//! 1. [`SlurmFleet::create`] writes `fleet.json`; [`SlurmFleet::submissions`] says what to
//!    submit: per partition or constraint target, an array of `nodes` exclusive one-node jobs
//!    (one job for one node); per node-list target, one job per node (`--nodelist`).
//! 2. [`SlurmFleet::submit`] writes each batch script and hands it to `sbatch`. On its node,
//!    a job runs `coretune tune --fleet-node DIR/TARGET/NODE`, which reads the sweep's options
//!    back from `fleet.json` ([`SlurmFleet::node_options`]: kept as given, so that each node
//!    resolves them on its own topology) and sweeps into that folder.
//! 3. [`SlurmFleet::refresh`] asks `squeue` (then `sacct`, where accounting is on) what became
//!    of the jobs and records it; a job that fails, is cancelled or times out keeps its state
//!    and log.
//! 4. Resuming ([`SlurmFleet::open`], then [`SlurmFleet::submissions`] again) resubmits only
//!    what is missing: a node whose sweep is incomplete gets a job on that node, which
//!    continues the sweep where it stopped (the batch script resumes a folder that has one);
//!    nodes never measured get new jobs that exclude the nodes already measured. A target
//!    with a job still pending or running is left to it.
//!
//! Slurm may run two tasks of one array on the same node one after the other (`--exclusive`
//! keeps them apart in time, not in place); the second then finds the node's sweep complete
//! and adds nothing, and a resume measures another node instead.

mod error;
mod folder;
mod jobs;
mod script;
mod slurm;
mod spec;

pub use error::FleetError;
pub use folder::{
    FLEET_SCHEMA, FleetCell, FleetChoice, FleetFolder, FleetReport, FleetRow, NodeInfo,
    NodeTypeReport, TypeLoss,
};
pub use jobs::{JobCounts, JobRecord, NodeProgress, SLURM_FLEET_SCHEMA, SlurmFleet, Submission};
pub use script::JobNodes;
pub use slurm::{QueueEntry, Slurm};
pub use spec::{FleetSpec, NodeSweep, SlurmTarget, TargetKind};
