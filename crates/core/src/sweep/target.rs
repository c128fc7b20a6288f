//! What a sweep measures ([`Target`]) and how every run of it is made ([`RunSettings`]), and the
//! two together with the plan: [`SweepSpec`], the `sweep.json` of a results folder.
//!
//! A new sweep also records where it ran and what it ran ([`SweepSpec::record`]): the absolute
//! working directory, the program file ([`ProgramFile`]: its resolved path, size, modification
//! time and a CRC-32 of its content) and the variables coretune sets for its runs. `--resume`
//! runs from that directory and refuses a program that is not the same file
//! ([`SweepSpec::check_program`]), so that the runs of two programs are never pooled; folders
//! written before these fields were recorded resume and report as they did.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::design::Design;
use super::error::SweepError;
use super::objective::MetricSpec;
use crate::grid::{Grid, MachineCounts};
use crate::placement::Binding;
use crate::program::pin::SkipMask;
use crate::topology::Topology;
use crate::workload::{DynWorkload, WorkloadError, WorkloadSpec};

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
    /// The grid a sweep of it measures unless its options say otherwise: a built-in workload's
    /// own (each knows the thread counts and CPU sets that matter to it), [`Grid::default_for`]
    /// the machine for a program.
    ///
    /// # Errors
    ///
    /// [`WorkloadError`] for a workload's parameter out of range.
    pub fn default_grid(
        &self,
        topology: &Topology,
        machine: MachineCounts,
    ) -> Result<Grid, WorkloadError> {
        Ok(match self {
            Target::Workload { spec, .. } => build_workload(spec, topology)?.default_grid(machine),
            Target::Command { .. } => Grid::default_for(machine),
        })
    }

    /// Whether the command runs through `sh -c` (`--shell`, `--server`).
    pub fn is_shell(&self) -> bool {
        matches!(self, Target::Command { shell: true, .. })
    }

    /// A short label for tables and the hyperfine export: the workload's name, or the command.
    pub fn label(&self) -> String {
        match self {
            Target::Workload { spec, .. } => spec.name.clone(),
            Target::Command { argv, .. } => argv.join(" "),
        }
    }
}

/// Prepares the built-in workload `spec` names for `topology` (membw sizes its arrays from the
/// last-level cache: 32 MiB where the topology knows none).
pub(crate) fn build_workload(
    spec: &WorkloadSpec,
    topology: &Topology,
) -> Result<Box<dyn DynWorkload>, WorkloadError> {
    let llc = topology.last_level_cache_bytes().unwrap_or(32 << 20);
    crate::workload::build(spec, llc)
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
    /// The absolute working directory the sweep ran in: `--resume` runs from it (absent in
    /// folders of coretune before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The program file the sweep measured (absent for a built-in workload, a program whose
    /// name holds a placeholder, a shell command whose first word is not a program, and in
    /// folders of coretune before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramFile>,
    /// The variables coretune sets for the runs: name → value where every configuration gets
    /// the same, null where it varies with the configuration (`OMP_NUM_THREADS`, the pinning
    /// plan); empty for a built-in workload.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Option<String>>,
}

/// A program file as a sweep measured it: enough to tell, on `--resume`, whether `./app` is
/// still the same file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramFile {
    /// The program as the command names it (`./app`, `sysbench`).
    pub name: String,
    /// The file it resolved to, absolute, links resolved.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its last modification, nanoseconds since the Unix epoch (absent where the system does
    /// not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<u64>,
    /// A hash of its content, `crc32:` and 8 hex digits (CRC-32/IEEE: a check that the bytes
    /// are the same, not a defence against someone forging a file).
    pub hash: String,
}

impl ProgramFile {
    /// The file `name` resolves to now (as `execvp` would find it, from the current
    /// directory), read whole for its hash.
    ///
    /// # Errors
    ///
    /// The program is not found, or its file cannot be read.
    pub fn of(name: &str) -> Result<Self, SweepError> {
        let found = crate::program::find_program(name)?;
        let path = std::fs::canonicalize(&found)
            .or_else(|_| std::path::absolute(&found))
            .unwrap_or(found);
        let read = |error| SweepError::Read {
            path: path.clone(),
            error,
        };
        let meta = std::fs::metadata(&path).map_err(read)?;
        let mut file = std::fs::File::open(&path).map_err(read)?;
        let mut crc = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(read)?;
            if n == 0 {
                break;
            }
            crc.update(&buf[..n]);
        }
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_nanos()).ok());
        Ok(Self {
            name: name.to_owned(),
            path,
            size: meta.len(),
            mtime_ns,
            hash: format!("crc32:{:08x}", crc.finalize()),
        })
    }

    /// What differs between this record and `now`, the same program found again (`path`,
    /// `size`, `mtime`, `hash`); empty when it is the same file. A file copied or touched
    /// (a new mtime) but of the same path, size and content is the same program.
    pub fn differences(&self, now: &Self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.path != now.path {
            out.push("path");
        }
        if self.size != now.size {
            out.push("size");
        }
        if self.mtime_ns != now.mtime_ns {
            out.push("mtime");
        }
        if self.hash != now.hash {
            out.push("hash");
        }
        if out == ["mtime"] {
            out.clear();
        }
        out
    }
}

/// Version of `sweep.json`.
pub const SWEEP_SCHEMA: &str = "coretune-sweep/1";

impl SweepSpec {
    /// A spec of the current schema, recording nothing of where it runs ([`SweepSpec::record`]
    /// does).
    pub fn new(design: Design, target: Target, settings: RunSettings) -> Self {
        Self {
            schema: SWEEP_SCHEMA.into(),
            design,
            target,
            settings,
            cwd: None,
            program: None,
            env: BTreeMap::new(),
        }
    }

    /// Records what a new sweep measures, here and now: the current directory, the program
    /// file, and `env`, the variables its runs get (`Runner::env_set`).
    ///
    /// # Errors
    ///
    /// The current directory cannot be read, or the program's file cannot be.
    pub fn record(&mut self, env: BTreeMap<String, Option<String>>) -> Result<(), SweepError> {
        let cwd = std::env::current_dir().map_err(|error| SweepError::Read {
            path: PathBuf::from("."),
            error,
        })?;
        self.cwd = Some(cwd);
        self.program = match self.program_name() {
            Some(name) => match ProgramFile::of(&name) {
                Ok(file) => Some(file),
                // A shell command's first word that is no program (`cd`, `i=0;`).
                Err(SweepError::Launch(_)) if self.target.is_shell() => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        self.env = env;
        Ok(())
    }

    /// The program the target starts, as named: a command's first word, or a shell command's
    /// (a server's) first word; `None` for a built-in workload or a name with a placeholder,
    /// which is another program per configuration.
    fn program_name(&self) -> Option<String> {
        let Target::Command { argv, shell } = &self.target else {
            return None;
        };
        let first = if *shell {
            argv.join(" ").split_whitespace().next()?.to_owned()
        } else {
            argv.first()?.clone()
        };
        (!first.contains('{')).then_some(first)
    }

    /// The directory a resumed sweep runs from: the one it ran in, for a program (its
    /// relative paths, `--metric-from` files and `--prepare` are relative to it); `None` for a
    /// built-in workload and for folders that did not record it.
    pub fn working_dir(&self) -> Option<&Path> {
        match self.target {
            Target::Command { .. } => self.cwd.as_deref(),
            Target::Workload { .. } => None,
        }
    }

    /// Checks, before a resumed sweep runs (from [`SweepSpec::working_dir`]), that its program
    /// is the file it measured.
    ///
    /// # Errors
    ///
    /// [`SweepError::NotTheSameProgram`] naming what differs, or that it is gone.
    pub fn check_program(&self) -> Result<(), SweepError> {
        let Some(then) = &self.program else {
            return Ok(());
        };
        let differs = match ProgramFile::of(&then.name) {
            Ok(now) => match then.differences(&now).as_slice() {
                [] => return Ok(()),
                [one] => format!("its {one} differs"),
                [init @ .., last] => format!("its {} and {last} differ", init.join(", ")),
            },
            Err(_) => "it is gone".to_owned(),
        };
        Err(SweepError::NotTheSameProgram {
            name: then.name.clone(),
            path: then.path.clone(),
            differs,
        })
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
