//! Workload options shared by `bench` and `tune`: which built-in workload, its size and its own
//! parameters.

use crate::choices::one_of;
use clap::Args;
use coretune_core::workload::{Size, WorkloadSpec};
use serde::{Deserialize, Serialize};

/// Serialized (kebab-case, as the options are spelt) in a fleet's sweep options; a field
/// missing there is an option not given.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub(crate) struct WorkloadArgs {
    /// Size preset: small (well under a second on one thread), default, large.
    #[arg(long, value_parser = one_of(Size::ALL))]
    pub(crate) size: Option<Size>,
    /// raymesh: rays per table (3 tables; default 975065).
    #[arg(long, value_name = "N", help_heading = "Workload parameters")]
    pub(crate) rays: Option<usize>,
    /// membw: MiB per array (3 arrays; default 4 x the last-level cache).
    #[arg(long, value_name = "MIB", help_heading = "Workload parameters")]
    pub(crate) mib: Option<usize>,
    /// mixed: tasks per run.
    #[arg(long, value_name = "N", help_heading = "Workload parameters")]
    pub(crate) tasks: Option<usize>,
    /// mixed: compute per task in µs (default 200).
    #[arg(long, value_name = "US", help_heading = "Workload parameters")]
    pub(crate) compute_us: Option<u64>,
    /// mixed: blocking per task in µs (default 800).
    #[arg(long, value_name = "US", help_heading = "Workload parameters")]
    pub(crate) block_us: Option<u64>,
    /// sum: integers each thread sums (default 65536).
    #[arg(long, value_name = "N", help_heading = "Workload parameters")]
    pub(crate) count: Option<u64>,
    /// sum: times each thread sums its slice (default 100).
    #[arg(long, value_name = "N", help_heading = "Workload parameters")]
    pub(crate) repeat: Option<u64>,
    /// spawn: work items per run (default 10000000).
    #[arg(long, value_name = "N", help_heading = "Workload parameters")]
    pub(crate) items: Option<usize>,
    /// spawn: the pool: coretune, rayon, rayon-scope, tokio, crossbeam, mutex.
    #[arg(long, value_name = "NAME", help_heading = "Workload parameters")]
    pub(crate) pool: Option<String>,
    /// spawn: submit with coretune's batch submission (spawn_batch).
    #[arg(long, help_heading = "Workload parameters")]
    pub(crate) batch: bool,
}

impl WorkloadArgs {
    /// The workload `name` with these options, unchecked.
    fn unchecked(&self, name: &str) -> WorkloadSpec {
        WorkloadSpec {
            name: name.to_owned(),
            size: self.size.unwrap_or_default(),
            rays: self.rays,
            mib: self.mib,
            tasks: self.tasks,
            compute_us: self.compute_us,
            block_us: self.block_us,
            count: self.count,
            repeat: self.repeat,
            items: self.items,
            pool: self.pool.clone(),
            batch: self.batch,
        }
    }

    /// Refuses workload options given with a program (`tune -- CMD`): they would do nothing.
    pub(crate) fn check_unused(&self) -> anyhow::Result<()> {
        let mut given: Vec<&str> = self
            .unchecked("")
            .given()
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        if self.size.is_some() {
            given.insert(0, "--size");
        }
        if let Some(first) = given.first() {
            anyhow::bail!(
                "{first}: the workload options apply to the built-in workloads, not to a program \
                 (-- CMD)"
            );
        }
        Ok(())
    }

    /// The workload `name` with these options; an unknown name, or an option of another
    /// workload (it would be ignored), is an error naming both ([`WorkloadSpec::check`]).
    pub(crate) fn spec(&self, name: &str) -> anyhow::Result<WorkloadSpec> {
        let spec = self.unchecked(name);
        spec.check()?;
        Ok(spec)
    }
}
