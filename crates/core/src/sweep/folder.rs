//! A sweep's results folder, as far as the engine owns it: `sweep.json` (what to measure),
//! `runs.jsonl` (every run), `machine.json` and `topology.xml` (where it was measured) and
//! `monitor/<seq>.jsonl` (a run's monitor samples). The report files written beside them
//! (`summary.*`, plots, `report.html`) are the caller's.
//!
//! A folder is created for a new sweep ([`SweepFolder::create`], which refuses a folder that
//! already holds one), opened to continue it ([`SweepFolder::resume`]), or read without being
//! changed ([`SweepFolder::read`], for reporting a folder copied from elsewhere).

use std::path::{Path, PathBuf};

use super::engine::{Progress, Sweep};
use super::error::SweepError;
use super::files::{monitor_file, write_file};
use super::log::{RunLine, RunLog};
use super::report::{RunView, SweepReport};
use super::run::Runner;
use super::target::SweepSpec;
use crate::program::watch::CpuPlace;
use crate::topology::MachineRecord;
use crate::topology::{Topology, TopologySource};

/// The files of a results folder.
const SWEEP_FILE: &str = "sweep.json";
const RUNS_FILE: &str = "runs.jsonl";
const MACHINE_FILE: &str = "machine.json";
const TOPOLOGY_FILE: &str = "topology.xml";
const SUMMARY_FILE: &str = "summary.json";

/// A results folder and the sweep in it.
#[derive(Debug)]
pub struct SweepFolder {
    dir: PathBuf,
    sweep: Sweep,
}

impl SweepFolder {
    /// Creates `dir` (and its parents) for a new sweep and writes its `sweep.json`.
    ///
    /// # Errors
    ///
    /// [`SweepError::AlreadyASweep`] when `dir` already holds a sweep's runs, and the I/O
    /// errors of creating the folder and its files, naming them.
    pub fn create(dir: &Path, spec: SweepSpec) -> Result<Self, SweepError> {
        if dir.join(RUNS_FILE).exists() || dir.join(SWEEP_FILE).exists() {
            return Err(SweepError::AlreadyASweep {
                dir: dir.to_path_buf(),
            });
        }
        claim_dir(dir)?;
        write_json(&dir.join(SWEEP_FILE), &spec)?;
        let log = RunLog::open(&dir.join(RUNS_FILE))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            sweep: Sweep::in_folder(spec, log, dir),
        })
    }

    /// Opens the sweep in `dir` to continue it: its runs so far count, and a last run cut
    /// short by a crash is dropped from `runs.jsonl`.
    ///
    /// # Errors
    ///
    /// `dir` is not a folder, or its `sweep.json` or `runs.jsonl` cannot be read.
    pub fn resume(dir: &Path) -> Result<Self, SweepError> {
        let spec = Self::spec_of(dir)?;
        let log = RunLog::open(&dir.join(RUNS_FILE))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            sweep: Sweep::in_folder(spec, log, dir),
        })
    }

    /// Reads the sweep in `dir` without changing anything there.
    ///
    /// # Errors
    ///
    /// As [`SweepFolder::resume`].
    pub fn read(dir: &Path) -> Result<Self, SweepError> {
        let spec = Self::spec_of(dir)?;
        let log = RunLog::read(&dir.join(RUNS_FILE))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            sweep: Sweep::in_folder(spec, log, dir),
        })
    }

    fn spec_of(dir: &Path) -> Result<SweepSpec, SweepError> {
        if !dir.is_dir() {
            return Err(SweepError::NotAFolder {
                dir: dir.to_path_buf(),
            });
        }
        SweepSpec::read(&dir.join(SWEEP_FILE))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the sweep measures.
    pub fn spec(&self) -> &SweepSpec {
        self.sweep.spec()
    }

    /// Every run logged so far.
    pub fn lines(&self) -> &[RunLine] {
        self.sweep.lines()
    }

    /// Whether the sweep is complete: continuing it (`tune --resume`) would make no run.
    pub fn is_complete(&self) -> bool {
        self.sweep.is_complete()
    }

    /// Records where the sweep runs: `machine.json`, and `topology.xml` when the topology can
    /// be exported.
    ///
    /// # Errors
    ///
    /// Writing either file, naming it.
    pub fn write_machine(
        &self,
        machine: &MachineRecord,
        topology: &Topology,
    ) -> Result<(), SweepError> {
        write_json(&self.dir.join(MACHINE_FILE), machine)?;
        if let Ok(xml) = topology.to_xml() {
            write_file(&self.dir.join(TOPOLOGY_FILE), xml.as_bytes())?;
        }
        Ok(())
    }

    /// The machine the sweep ran on (`machine.json`).
    ///
    /// # Errors
    ///
    /// The file is missing or not a machine record.
    pub fn machine(&self) -> Result<MachineRecord, SweepError> {
        read_json(&self.dir.join(MACHINE_FILE))
    }

    /// The sweep machine's topology (`topology.xml`), when the folder has one that loads.
    pub fn topology(&self) -> Option<Topology> {
        load_topology(&self.dir)
    }

    /// The folder's `summary.json`, when it has one that reads.
    pub fn previous_report(&self) -> Option<SweepReport> {
        read_json(&self.dir.join(SUMMARY_FILE)).ok()
    }

    /// Runs the sweep ([`Sweep::execute`]): every run is appended to `runs.jsonl` as it
    /// finishes and its monitor samples saved in `monitor/`.
    ///
    /// # Errors
    ///
    /// As [`Sweep::execute`].
    pub fn execute(
        &mut self,
        runner: &Runner<'_>,
        progress: &mut dyn FnMut(&Progress<'_>),
        stop: &dyn Fn() -> bool,
    ) -> Result<(), SweepError> {
        self.sweep.execute(runner, progress, stop)
    }

    /// The sweep's results so far, to report.
    pub fn results(&self) -> SweepResults<'_> {
        SweepResults {
            dir: &self.dir,
            spec: self.sweep.spec(),
            lines: self.lines(),
        }
    }
}

/// A sweep's results at one moment — its folder, what it measures and the runs logged — from
/// which its report is built (also while the sweep runs, from a [`Progress`]'s lines).
#[derive(Clone, Copy, Debug)]
pub struct SweepResults<'a> {
    /// The results folder (for the monitor samples).
    pub dir: &'a Path,
    /// What the sweep measures.
    pub spec: &'a SweepSpec,
    /// The runs logged.
    pub lines: &'a [RunLine],
}

impl SweepResults<'_> {
    /// The report of these runs. For a sweep on this machine pass its `topology` (the apply
    /// lines are computed on it); for a folder reported elsewhere, the lines are kept from
    /// `previous` when it recommends the same configuration, else computed on the folder's own
    /// `topology.xml`, else left out. Under a launcher each row gets the launcher's line for
    /// its configuration (`launch`), on the same topology.
    pub fn report(
        &self,
        machine: MachineRecord,
        topology: Option<&Topology>,
        previous: Option<&SweepReport>,
    ) -> SweepReport {
        let own = topology
            .is_none()
            .then(|| load_topology(self.dir))
            .flatten();
        let topology = topology.or(own.as_ref());
        let spec = self.spec;
        let mut report = SweepReport::build(
            spec.target.clone(),
            machine,
            spec.design.clone(),
            self.lines,
            &|c| {
                if let Some(r) = previous.and_then(|p| p.recommendation.as_ref()) {
                    if &r.config == c {
                        return r.apply.clone();
                    }
                }
                topology.map_or_else(Vec::new, |t| {
                    super::apply::apply_lines_for(t, &spec.target, c, &spec.settings)
                })
            },
        );
        report.metrics.clone_from(&spec.settings.metrics);
        if let (Some(launcher), Some(t)) = (spec.settings.launcher, topology) {
            for row in &mut report.configs {
                row.launch = launcher.words(t, &row.config).ok().map(|w| w.join(" "));
            }
        }
        report
    }

    /// What the per-run plots of `report` draw ([`RunView::choose`]), from the folder's
    /// monitor samples; `places` groups the CPUs.
    pub fn run_view(&self, report: &SweepReport, places: &[CpuPlace]) -> RunView {
        RunView::choose(
            report,
            self.lines,
            &|seq| {
                let path = self.dir.join(monitor_file(seq));
                path.is_file()
                    .then(|| RunLog::read_jsonl(&path).unwrap_or_default())
            },
            places,
        )
    }
}

fn load_topology(dir: &Path) -> Option<Topology> {
    let path = dir.join(TOPOLOGY_FILE);
    path.is_file()
        .then(|| Topology::load(&TopologySource::XmlFile(path)).ok())
        .flatten()
}

/// Writes `value` as pretty JSON with a final newline ([`write_file`]).
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), SweepError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| SweepError::Write {
        path: path.to_path_buf(),
        error: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    write_file(path, &bytes)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|error| SweepError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    serde_json::from_str(&text).map_err(|e| SweepError::Malformed {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })
}

/// Makes `dir` (and the folders on the way) a folder of new results — a sweep's, a `watch`'s, a
/// fleet's: created, or taken when it exists and is empty. One that holds anything is refused,
/// so that coretune never writes among (or over) files that are not its own.
///
/// # Errors
///
/// [`SweepError::NotEmpty`]; [`SweepError::Write`] when it cannot be created.
pub fn claim_dir(dir: &Path) -> Result<(), SweepError> {
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(SweepError::NotEmpty {
            dir: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|error| SweepError::Write {
        path: dir.to_path_buf(),
        error,
    })
}

/// A folder for new results: `base/<prefix><UTC date>T<time>` (`coretune-results/2026-11-21T21-58-15`,
/// `coretune-results/watch-2026-11-21T21-58-15`).
pub fn timestamped_dir(base: &Path, prefix: &str) -> PathBuf {
    base.join(format!(
        "{prefix}{}",
        timestamp(crate::sys::since_epoch().as_secs())
    ))
}

/// Creates and returns a new, empty folder `base/<prefix><date>T<time>` (UTC), with `-2`,
/// `-3`, … appended when another coretune took that name in the same second: the folder is
/// claimed by creating it, so two sweeps started at once never share one.
///
/// # Errors
///
/// [`SweepError::NoFolderHere`]: `base` or the folder cannot be created.
pub fn claim_timestamped_dir(base: &Path, prefix: &str) -> Result<PathBuf, SweepError> {
    let no_folder = |error| SweepError::NoFolderHere {
        base: base.to_path_buf(),
        error,
    };
    std::fs::create_dir_all(base).map_err(no_folder)?;
    let first = timestamped_dir(base, prefix);
    let mut n = 1;
    loop {
        let dir = if n == 1 {
            first.clone()
        } else {
            PathBuf::from(format!("{}-{n}", first.display()))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
            Err(e) => return Err(no_folder(e)),
        }
    }
}

/// Civil date and time (UTC) of a Unix time, for folder names.
fn timestamp(unix: u64) -> String {
    crate::sys::utc_text(std::time::Duration::from_secs(unix), '-', false)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn timestamps_are_civil_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00-00-00");
        // 2026-11-21 21:58:15 UTC
        assert_eq!(timestamp(1_795_298_295), "2026-11-21T21-58-15");
        // A leap day.
        assert_eq!(timestamp(951_782_400), "2000-02-29T00-00-00");
        let dir = timestamped_dir(Path::new("base"), "watch-");
        assert!(dir.starts_with("base"));
        // Claimed in the same second: each gets its own.
        let tmp = tempfile::tempdir().unwrap();
        let a = claim_timestamped_dir(tmp.path(), "x-").unwrap();
        let b = claim_timestamped_dir(tmp.path(), "x-").unwrap();
        assert_ne!(a, b);
        assert!(a.is_dir() && b.is_dir());
        assert!(
            dir.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("watch-2")),
            "{}",
            dir.display()
        );
    }
}
