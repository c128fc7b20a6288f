//! Workload options shared by `bench` and `tune`: which built-in workload, its size and its own
//! parameters.

use crate::choices::one_of;
use clap::Args;
use coretune_core::workload::{Size, WorkloadSpec};

#[derive(Debug, Clone, Args)]
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
    /// The parameters given on the command line: the option's name and the workload it is for.
    fn given(&self) -> Vec<(&'static str, &'static str)> {
        [
            (self.rays.is_some(), "--rays", "raymesh"),
            (self.mib.is_some(), "--mib", "membw"),
            (self.tasks.is_some(), "--tasks", "mixed"),
            (self.compute_us.is_some(), "--compute-us", "mixed"),
            (self.block_us.is_some(), "--block-us", "mixed"),
            (self.count.is_some(), "--count", "sum"),
            (self.repeat.is_some(), "--repeat", "sum"),
            (self.items.is_some(), "--items", "spawn"),
            (self.pool.is_some(), "--pool", "spawn"),
            (self.batch, "--batch", "spawn"),
        ]
        .into_iter()
        .filter(|(given, ..)| *given)
        .map(|(_, option, workload)| (option, workload))
        .collect()
    }

    /// Refuses workload options given with a program (`tune -- CMD`): they would do nothing.
    pub(crate) fn check_unused(&self) -> anyhow::Result<()> {
        let mut given: Vec<&str> = self.given().into_iter().map(|(o, _)| o).collect();
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

    /// The workload `name` with these options; an option of another workload is an error
    /// naming both (it would be ignored).
    pub(crate) fn spec(&self, name: &str) -> anyhow::Result<WorkloadSpec> {
        if !coretune_core::workload::NAMES.contains(&name) {
            anyhow::bail!(
                "unknown workload '{name}' (built in: {})",
                coretune_core::workload::NAMES.join(", ")
            );
        }
        if let Some((option, owner)) = self.given().into_iter().find(|(_, w)| *w != name) {
            let own: Vec<&str> = [
                ("raymesh", "--rays"),
                ("membw", "--mib"),
                ("mixed", "--tasks, --compute-us, --block-us"),
                ("sum", "--count, --repeat"),
                ("spawn", "--items, --pool, --batch"),
            ]
            .into_iter()
            .filter(|(w, _)| *w == name)
            .map(|(_, o)| o)
            .collect();
            anyhow::bail!(
                "{option} is a parameter of {owner}, not of {name} ({name} takes {})",
                own.first().copied().unwrap_or_default()
            );
        }
        Ok(WorkloadSpec {
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
        })
    }
}
