//! What a fleet measures: its targets ([`SlurmTarget`], each a partition, a constraint or a
//! node list), the sweep each node runs ([`NodeSweep`]) and how its jobs are submitted
//! ([`FleetSpec`], `fleet.json`'s `spec`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::FleetError;

/// How a target names its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// Any node of a partition (`--partition`).
    Partition,
    /// Any node with a feature (`--constraint`).
    Constraint,
    /// Each node of a host list (`--nodelist`).
    Nodelist,
}

/// One node type to measure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmTarget {
    /// How it names its nodes.
    pub kind: TargetKind,
    /// The partition, constraint or host list.
    pub value: String,
}

impl SlurmTarget {
    /// Its folder's name: the partition's name, `constraint-C`, `nodes-LIST` (characters other
    /// than letters, digits, `.`, `_` and `-` become `_`).
    pub fn name(&self) -> String {
        let clean: String = self
            .value
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        match self.kind {
            TargetKind::Partition => clean,
            TargetKind::Constraint => format!("constraint-{clean}"),
            TargetKind::Nodelist => format!("nodes-{clean}"),
        }
    }

    /// `partition debug`, `constraint skylake`, `nodes n[01-04]`.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            TargetKind::Partition => "partition",
            TargetKind::Constraint => "constraint",
            TargetKind::Nodelist => "nodes",
        };
        format!("{kind} {}", self.value)
    }
}

/// What a fleet measures and how its jobs are submitted (`fleet.json`'s `spec`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSpec {
    /// The node types.
    pub targets: Vec<SlurmTarget>,
    /// Nodes to measure per partition or constraint target.
    pub nodes: usize,
    /// Extra `#SBATCH` lines, verbatim (`--qos=debug`).
    pub sbatch_args: Vec<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--time` (Slurm's time format).
    pub time: Option<String>,
    /// The coretune binary the jobs run (on the shared file system).
    pub coretune: PathBuf,
    /// The sweep every node runs.
    #[serde(flatten)]
    pub sweep: NodeSweep,
}

/// The sweep every node of a fleet runs, as `fleet.json`'s `spec` keeps it.
///
/// A fleet keeps the sweep's options as they were given, not resolved: `--threads pus` or
/// `--cpus 'all ~pu:0'` mean each node's own topology, so each node resolves them itself
/// (`coretune tune --fleet-node`, which reads them back from here). What the options are is the
/// cli's: core keeps them as the JSON object the cli wrote (its serde derive of the options,
/// so an option added to the cli is carried to the nodes without a line here).
// Fleets written before the options were kept (`fleet.json` version 1) hold the argv each
// node's batch script repeated instead; they are read, resumed and resubmitted as they were.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeSweep {
    /// The sweep's options, as the cli serialized them (`spec.sweep`).
    #[serde(rename = "sweep")]
    Options(serde_json::Value),
    /// The `coretune tune` arguments of every node's sweep, without `--out` (`spec.sweep_args`,
    /// in fleets of `fleet.json` version 1).
    #[serde(rename = "sweep_args")]
    Args(Vec<String>),
}

impl FleetSpec {
    /// Checks the spec: at least one target, no two with the same folder, at least one node
    /// each, site options that are one `#SBATCH` line each.
    ///
    /// # Errors
    ///
    /// [`FleetError::BadTarget`] saying what is wrong.
    pub fn check(&self) -> Result<(), FleetError> {
        if self.targets.is_empty() {
            return Err(FleetError::BadTarget(
                "--slurm needs a target: --partition, --constraint or --nodelist".into(),
            ));
        }
        if self.nodes == 0 {
            return Err(FleetError::BadTarget("--nodes must be at least 1".into()));
        }
        for (i, t) in self.targets.iter().enumerate() {
            if t.value.trim().is_empty() {
                return Err(FleetError::BadTarget(format!(
                    "an empty {} target",
                    t.describe().trim()
                )));
            }
            if let Some(other) = self.targets[..i].iter().find(|o| o.name() == t.name()) {
                return Err(FleetError::BadTarget(format!(
                    "{} and {} would share the folder '{}'",
                    other.describe(),
                    t.describe(),
                    t.name()
                )));
            }
        }
        let one_line = |what: &str, v: &str| {
            if v.contains('\n') || v.trim().is_empty() {
                Err(FleetError::BadTarget(format!(
                    "{what} '{v}' is not one #SBATCH option"
                )))
            } else {
                Ok(())
            }
        };
        for arg in &self.sbatch_args {
            one_line("--sbatch-arg", arg)?;
            if !arg.starts_with('-') {
                return Err(FleetError::BadTarget(format!(
                    "--sbatch-arg '{arg}' is not an sbatch option (they start with -)"
                )));
            }
        }
        if let Some(a) = &self.account {
            one_line("--account", a)?;
        }
        if let Some(t) = &self.time {
            one_line("--time", t)?;
        }
        Ok(())
    }
}
