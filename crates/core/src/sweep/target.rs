//! What a sweep measures ([`Target`]) and how every run of it is made ([`RunSettings`]), and the
//! two together with the plan: [`SweepSpec`], the `sweep.json` of a results folder.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::objective::MetricSpec;
use super::{Design, SweepError};
use crate::placement::Binding;
use crate::program::pin::SkipMask;
use crate::workload::WorkloadSpec;

/// What a sweep measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Target {
    /// A built-in workload.
    Workload {
        /// Which, and its parameters.
        spec: WorkloadSpec,
        /// Its description (filled in when the workload is prepared).
        description: String,
    },
    /// An external command, with `{threads}`, `{cpus}` and `{place}` placeholders.
    Command {
        /// The command and its arguments as given.
        argv: Vec<String>,
        /// Run through `sh -c` (its words joined with spaces).
        shell: bool,
    },
}

impl Target {
    /// A short label for tables and the hyperfine export: the workload's name, or the command.
    pub fn label(&self) -> String {
        match self {
            Target::Workload { spec, .. } => spec.name.clone(),
            Target::Command { argv, .. } => argv.join(" "),
        }
    }
}

/// How every run of a sweep is made, besides its configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Each pinned thread's set: its PU, its core, or one set shared by all threads.
    pub binding: Binding,
    /// The longest a run may take.
    #[serde(rename = "timeout_s", with = "optional_seconds", default)]
    pub timeout: Option<Duration>,
    /// A shell command run before each run of an external program, not measured.
    #[serde(default)]
    pub prepare: Option<String>,
    /// Sample per-CPU utilisation and each thread's CPU during every run, this often (`--monitor`;
    /// absent in folders that were not monitored).
    #[serde(
        rename = "monitor_ms",
        with = "optional_millis",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub monitor: Option<Duration>,
    /// The skip mask for the pinning library (`--skip`; absent: the OpenMP runtime's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipMask>,
    /// The figures read from a program's output after each run (`--metric`; absent in folders
    /// without).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
    /// The program is a server measured under a load generator (`--server`, `--ready`,
    /// `--client`; absent for programs that run to their end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSettings>,
    /// The program's copies are started by a launcher (`--launcher mpirun|srun`: the
    /// configuration's instances are its ranks), not by coretune; absent: coretune starts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<super::Launcher>,
}

/// How a server target is run: each run starts the target's command (the server) with the
/// configuration, waits until it is ready, runs the client (the load generator) once, reads the
/// metrics from the client's output and stops the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSettings {
    /// When the server is ready: `tcp:HOST:PORT` (it accepts a connection) or a shell command
    /// that succeeds.
    pub ready: String,
    /// The longest the server may take to be ready, seconds.
    pub ready_timeout_s: f64,
    /// The client's shell command (placeholders substituted).
    pub client: String,
    /// The CPUs the client runs on, as a CPU-set expression (absent: those the server's
    /// configuration does not use, or all when it uses every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<String>,
}

/// `sweep.json`: everything needed to continue or re-report a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// [`SWEEP_SCHEMA`].
    pub schema: String,
    /// The grid and how to search it (`plan` in `sweep.json`).
    #[serde(rename = "plan")]
    pub design: Design,
    /// What is measured.
    pub target: Target,
    /// How each run is made.
    #[serde(flatten)]
    pub settings: RunSettings,
}

/// Version of `sweep.json`.
pub const SWEEP_SCHEMA: &str = "coretune-sweep/1";

impl SweepSpec {
    /// A spec of the current schema.
    pub fn new(design: Design, target: Target, settings: RunSettings) -> Self {
        Self {
            schema: SWEEP_SCHEMA.into(),
            design,
            target,
            settings,
        }
    }

    /// Reads a `sweep.json`.
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`] when the file cannot be read, [`SweepError::Malformed`] when it is not
    /// a sweep file, [`SweepError::Schema`] when it is one of another version.
    pub fn read(path: &Path) -> Result<Self, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|error| SweepError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| SweepError::Malformed {
                path: path.to_path_buf(),
                line: e.line(),
                message: e.to_string(),
            })?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
        if schema != SWEEP_SCHEMA {
            return Err(SweepError::Schema {
                path: path.to_path_buf(),
                found: schema.to_owned(),
                expected: SWEEP_SCHEMA,
            });
        }
        serde_json::from_value(value).map_err(|e| SweepError::Malformed {
            path: path.to_path_buf(),
            line: 0,
            message: e.to_string(),
        })
    }
}

/// Serde helper: an optional `Duration` as fractional seconds (`timeout_s`).
mod optional_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Serde helper: an optional `Duration` as whole milliseconds (`monitor_ms`).
mod optional_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
