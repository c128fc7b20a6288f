//! Which workload, at which size: [`WorkloadSpec`] and [`build`], by name ([`NAMES`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::api::{DynWorkload, Size, WorkloadError};

/// Which workload to build, at what size, with which overrides: the command line's workload
/// options as data (also recorded with every sweep, so a run can be repeated).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// `raymesh`, `membw` or `mixed`.
    pub name: String,
    /// Size preset; the overrides below win over it.
    pub size: Size,
    /// raymesh: rays per table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rays: Option<usize>,
    /// membw: MiB per array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib: Option<usize>,
    /// mixed: tasks per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// mixed: compute per task, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_us: Option<u64>,
    /// mixed: blocking per task, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_us: Option<u64>,
    /// sum: numbers per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// sum: times each thread sums its slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u64>,
    /// spawn: work items per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<usize>,
    /// spawn: which pool (`coretune`, `rayon`, `rayon-scope`, `tokio`, `crossbeam`, `mutex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// spawn: coretune's batch submission.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

/// Names of the workloads [`build`] knows.
pub const NAMES: &[&str] = &["raymesh", "membw", "mixed", "sum", "spawn"];

/// Each workload parameter, by its command-line option, with the workload it belongs to (in the
/// order of [`WorkloadSpec`]'s fields).
pub const PARAMETERS: [(&str, &str); 10] = [
    ("--rays", "raymesh"),
    ("--mib", "membw"),
    ("--tasks", "mixed"),
    ("--compute-us", "mixed"),
    ("--block-us", "mixed"),
    ("--count", "sum"),
    ("--repeat", "sum"),
    ("--items", "spawn"),
    ("--pool", "spawn"),
    ("--batch", "spawn"),
];

/// A workload named or parameterised wrongly, found before anything is built.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// No built-in workload of that name.
    #[error("unknown workload '{0}' (built in: {names})", names = NAMES.join(", "))]
    Unknown(String),
    /// A parameter of another workload: it would be ignored.
    #[error("{option} is a parameter of {owner}, not of {name} ({name} takes {takes})")]
    Foreign {
        /// The option given.
        option: &'static str,
        /// The workload it belongs to.
        owner: &'static str,
        /// The workload named.
        name: String,
        /// The options that workload takes.
        takes: String,
    },
}

impl WorkloadSpec {
    /// The parameters set in it, each as its option with the workload it belongs to
    /// ([`PARAMETERS`]).
    pub fn given(&self) -> Vec<(&'static str, &'static str)> {
        let set = [
            self.rays.is_some(),
            self.mib.is_some(),
            self.tasks.is_some(),
            self.compute_us.is_some(),
            self.block_us.is_some(),
            self.count.is_some(),
            self.repeat.is_some(),
            self.items.is_some(),
            self.pool.is_some(),
            self.batch,
        ];
        PARAMETERS
            .into_iter()
            .zip(set)
            .filter_map(|(parameter, given)| given.then_some(parameter))
            .collect()
    }

    /// Checks it before it is built: a workload of that name, and no parameter of another
    /// workload.
    ///
    /// # Errors
    ///
    /// [`SpecError::Unknown`], [`SpecError::Foreign`].
    pub fn check(&self) -> Result<(), SpecError> {
        let Some(&name) = NAMES.iter().find(|&&n| n == self.name) else {
            return Err(SpecError::Unknown(self.name.clone()));
        };
        if let Some((option, owner)) = self.given().into_iter().find(|(_, w)| *w != name) {
            let takes: Vec<&str> = PARAMETERS
                .iter()
                .filter(|(_, w)| *w == name)
                .map(|(o, _)| *o)
                .collect();
            return Err(SpecError::Foreign {
                option,
                owner,
                name: name.to_owned(),
                takes: takes.join(", "),
            });
        }
        Ok(())
    }

    /// The spec a sweep uses when the user gave no size: a workload whose default size is too
    /// long to repeat over a whole grid gets a smaller one (raymesh: 500,000
    /// rays per table, so that the default sweep takes about a minute on 2 cores).
    pub fn for_sweep(mut self, size_given: bool) -> Self {
        if self.name == "raymesh" && !size_given && self.rays.is_none() {
            self.rays = Some(super::raymesh::SWEEP_RAYS);
        }
        self
    }
}

/// Prepares the workload `spec` names. `llc_bytes` sizes membw (its arrays are 4 × the
/// last-level cache by default).
///
/// # Errors
///
/// [`WorkloadError::BadParameter`] for an unknown name or a parameter out of range.
pub fn build(spec: &WorkloadSpec, llc_bytes: usize) -> Result<Box<dyn DynWorkload>, WorkloadError> {
    Ok(match spec.name.as_str() {
        "raymesh" => {
            let mut p = super::raymesh::Params::for_size(spec.size);
            if let Some(rays) = spec.rays {
                p.rays = rays;
            }
            Box::new(super::raymesh::RayMesh::new(p)?)
        }
        "membw" => {
            let mut p = super::membw::Params::for_size(spec.size, llc_bytes);
            if let Some(mib) = spec.mib {
                p.elements = mib << 17;
            }
            Box::new(super::membw::MemBw::new(p)?)
        }
        "mixed" => {
            let mut p = super::mixed::Params::for_size(spec.size);
            if let Some(tasks) = spec.tasks {
                p.tasks = tasks;
            }
            if let Some(us) = spec.compute_us {
                p.compute = Duration::from_micros(us);
            }
            if let Some(us) = spec.block_us {
                p.block = Duration::from_micros(us);
            }
            Box::new(super::mixed::Mixed::new(p)?)
        }
        "sum" => {
            let mut p = super::sum::Params::for_size(spec.size);
            if let Some(count) = spec.count {
                p.count = count;
            }
            if let Some(repeat) = spec.repeat {
                p.repeat = repeat;
            }
            Box::new(super::sum::Sum::new(p)?)
        }
        "spawn" => {
            let mut p = super::spawn::Params::for_size(spec.size);
            if let Some(items) = spec.items {
                p.items = items;
            }
            if let Some(pool) = &spec.pool {
                p.pool = pool
                    .parse()
                    .map_err(|message| WorkloadError::BadParameter {
                        workload: "spawn",
                        message,
                    })?;
            }
            p.batch = spec.batch;
            Box::new(super::spawn::Spawn::new(p)?)
        }
        other => {
            return Err(WorkloadError::BadParameter {
                workload: "workload",
                message: format!(
                    "unknown workload '{other}' (built in: {})",
                    NAMES.join(", ")
                ),
            });
        }
    })
}
