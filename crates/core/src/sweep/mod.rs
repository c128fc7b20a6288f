//! The sweep engine: a [`Design`] (a grid of configurations, a search strategy, repeats) run by a
//! [`Runner`] through [`Sweep::execute`] with warm-up, repeats and interleaved order, every
//! finished run appended to a [`RunLog`] so that nothing finished is lost; the results folder
//! ([`SweepFolder`]), statistics ([`summarize`]), the [`Recommendation`] with its apply lines,
//! the report model ([`SweepReport`]), and two sweeps compared ([`compare`]).
//!
//! # Lifecycle
//!
//! 1. A [`Design`] says what to measure and how ([`Strategy`], runs, warm-up, minimum time).
//! 2. [`Sweep::execute`] asks the strategy for a *stage* of configurations, runs each stage in
//!    *rounds* — round `r` runs every configuration that needs an `r`-th run once, in an order
//!    shuffled per round, so that drift (thermal, other tenants) hits every configuration alike
//!    — and asks for the next stage until the strategy has nothing more. Warm-up runs come first
//!    for each configuration and are logged but never summarised.
//! 3. Every run, successful or not, becomes one [`RunLine`], appended to `runs.jsonl` and
//!    flushed before the next run starts ([`RunLog`]). A crash or Ctrl-C loses at most the run
//!    in flight.
//! 4. Resuming reads the log back: runs already there count towards each configuration's runs,
//!    and since the stages are a function of the results, the same stages come out and only the
//!    missing runs are made.
//!
//! A failed run (the workload or program failed, crashed, timed out, or its result did not
//! verify; any status but `ok`) is logged with its status and never enters the statistics. It
//! also puts its configuration *out of the running*, as hyperfine stops at the first non-zero
//! exit: the configuration gets no further runs, is never recommended, takes no part in ties
//! or the Pareto front, and the search does not count it as a contender (a thread count that
//! exposes a race must not be rewarded for the runs that happened to pass). With
//! [`Design::ignore_failure`] (`tune -i`) failed runs are only left out of the statistics and
//! the configuration stays eligible; a configuration that timed out gets no further runs either
//! way (repeating it would only spend the timeout again).
//!
//! # Where each step lives
//!
//! | step | file |
//! |---|---|
//! | grid values and configurations | `crate::grid` |
//! | what is measured, `sweep.json` | `target.rs` ([`SweepSpec`], [`Target`]) |
//! | one run of one configuration | `run.rs` ([`Runner`]) |
//! | which configurations next | `search.rs` ([`Strategy`]) |
//! | the stages and rounds, the log | this module ([`Sweep`], [`RunLog`]) |
//! | the results folder | `folder.rs` ([`SweepFolder`]) |
//! | a program's own figures, the objectives, the Pareto front | `objective.rs` ([`MetricSpec`], [`Objective`]) |
//! | statistics per configuration | this module ([`summarize`]) |
//! | the recommendation | `recommend.rs` ([`recommend`]) |
//! | its apply lines | `apply.rs` ([`apply_lines`]) |
//! | the report model (`summary.json`, plot data) | `report.rs` ([`SweepReport`]) |
//! | what a design costs before it runs | `cost.rs` ([`DesignEstimate`]) |
//! | one configuration on its own (`bench --json`) | `bench.rs` ([`BenchReport`]) |
//! | two sweeps compared | `compare.rs` ([`Comparison`]) |
//!
//! Several node types' sweeps merged into one report are `crate::fleet`'s.

mod apply;
mod bench;
mod compare;
mod cost;
mod folder;
mod launcher;
mod objective;
mod recommend;
mod report;
mod run;
mod search;
mod target;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use apply::{apply_lines, apply_lines_for};
pub use bench::{BenchReport, CtxSwitches, TracePoint};
pub use compare::{Case, Comparison, Verdict, compare};
pub use cost::{DesignCost, DesignEstimate};
pub use folder::{
    SweepFolder, SweepResults, claim_dir, claim_timestamped_dir, timestamped_dir, write_file,
};
pub use launcher::{Launcher, RankPlan};
pub use objective::{
    BUILTIN_OBJECTIVES, MetricError, MetricRead, MetricSource, MetricSpec, Objective, Quantity,
    pareto_front,
};
pub use recommend::{Recommendation, recommend};
pub use report::{
    ConfigRow, ObjectiveStat, RunCounts, RunView, SUMMARY_SCHEMA, SweepReport, ThreadView,
    ThrottleTrace, UslRow,
};
pub use run::{RunResult, Runner, substitute};
pub use search::{Estimate, Strategy};
pub use target::{ProgramFile, RunSettings, SWEEP_SCHEMA, ServerSettings, SweepSpec, Target};

use crate::grid::{Config, ConfigError, Family, Grid};
use crate::measure::{Noise, NoiseProbe, Summary};
use crate::program::watch::Sample;
use crate::workload::{RunRecord, Throughput};

/// How a run ended. Every status but [`Status::Ok`] is a failed run, treated alike: left out of
/// the statistics, and (without [`Design::ignore_failure`]) its configuration out of the
/// running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Completed and verified.
    Ok,
    /// Completed, but the result did not verify.
    Unverified,
    /// Failed or crashed.
    Failed,
    /// Exceeded the per-run timeout.
    Timeout,
    /// Completed, but coretune's audit found that it did not run as its configuration says
    /// (a thread or process off its CPUs, another memory policy, another server answering,
    /// processes left running): the error says what.
    Mismatch,
}

/// One line of `runs.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLine {
    /// Position in the log (0-based).
    pub seq: usize,
    /// The configuration.
    #[serde(flatten)]
    pub config: Config,
    /// Whether this was a warm-up run.
    pub warmup: bool,
    /// How it ended.
    pub status: Status,
    /// What went wrong, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The end of a failed program's stderr (its last 4 KiB, from a
    /// whole line), where it says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// The measurements, when the run completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RunRecord>,
    /// The machine's state around the run.
    pub noise: Noise,
    /// Unix time the run ended, in seconds.
    pub ended_at: f64,
}

impl RunLine {
    /// The last non-empty line a failed program wrote to stderr, trimmed.
    pub fn last_stderr_line(&self) -> Option<&str> {
        self.stderr_tail
            .as_deref()?
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
    }

    /// Why the run failed, in a few words (`None` for a successful run): the error, with the
    /// last line of the program's stderr in brackets when the error does not end quoting it
    /// (`./flaky.sh exited with status 134 (race detected, aborting)`, `timed out after 2.0 s`).
    pub fn failure(&self) -> Option<String> {
        if self.status == Status::Ok {
            return None;
        }
        let error = self.error.clone().unwrap_or_else(|| match self.status {
            Status::Timeout => "timed out".to_owned(),
            Status::Unverified => "its result did not verify".to_owned(),
            _ => "failed".to_owned(),
        });
        Some(match self.last_stderr_line() {
            Some(last) if !error.ends_with(last) => format!("{error} ({last})"),
            _ => error,
        })
    }

    /// Wall time in seconds of a successful run.
    pub fn wall_s(&self) -> Option<f64> {
        match (&self.status, &self.record) {
            (Status::Ok, Some(r)) => Some(r.measurement.wall.as_secs_f64()),
            _ => None,
        }
    }
}

/// How a runner's attempt ended, before it is logged.
// One per run, moved once into the log: boxing the record would save nothing measurable.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Outcome {
    /// The run completed (verified or not: the record says).
    Done(RunRecord),
    /// It failed; the message says how.
    Failed(String),
    /// The program ran and failed: how, and the end of what it wrote to stderr.
    ProgramFailed {
        /// How it ended (`sort exited with status 2`).
        error: String,
        /// The end of its stderr, if it wrote any.
        stderr_tail: Option<String>,
    },
    /// It exceeded the timeout.
    Timeout,
    /// The program was ended by SIGINT or SIGTERM: someone is stopping the sweep (Ctrl-C,
    /// `scancel`), and the run is the run in flight, not a measurement; it is not logged and the
    /// sweep stops with [`SweepError::Interrupted`] (the message says what ended).
    Stopped(String),
    /// It exceeded the timeout inside this process and cannot be stopped: logged as timed out,
    /// then the sweep stops with [`SweepError::Abandoned`] (the message says what ran).
    Abandoned(String),
}

/// The append-only run log: `runs.jsonl` of a results folder, or a log kept in memory (a
/// `coretune bench`, which writes no folder).
#[derive(Debug)]
pub struct RunLog {
    /// The file, and how many bytes of it hold whole lines (where a failed append is cut back to).
    file: Option<(PathBuf, File, u64)>,
    lines: Vec<RunLine>,
}

impl RunLog {
    /// A log kept in memory only.
    pub fn in_memory() -> Self {
        Self {
            file: None,
            lines: Vec::new(),
        }
    }

    /// Opens (creating if needed) the log at `path` and reads the runs already in it. A last
    /// line cut short by a crash is dropped (and overwritten by the next run).
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`]/[`SweepError::Write`] naming the file, and
    /// [`SweepError::Malformed`] for a malformed line other than the last.
    pub fn open(path: &Path) -> Result<Self, SweepError> {
        let (lines, good_bytes) = if path.exists() {
            Self::parse(path)?
        } else {
            (Vec::new(), 0)
        };
        let write_error = |error| SweepError::Write {
            path: path.to_path_buf(),
            error,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(write_error)?;
        // Drop a torn last line so the next append starts on a fresh line.
        file.set_len(good_bytes).map_err(write_error)?;
        Ok(Self {
            file: Some((path.to_path_buf(), file, good_bytes)),
            lines,
        })
    }

    /// Reads the log at `path` without changing the file (a torn last line is skipped); runs
    /// appended afterwards stay in memory.
    ///
    /// # Errors
    ///
    /// As [`RunLog::open`].
    pub fn read(path: &Path) -> Result<Self, SweepError> {
        let (lines, _) = Self::parse(path)?;
        Ok(Self { file: None, lines })
    }

    /// The runs in the file and how many bytes of it hold whole lines.
    fn parse(path: &Path) -> Result<(Vec<RunLine>, u64), SweepError> {
        let (mut lines, good_bytes) = Self::read_lines::<RunLine>(path)?;
        for (i, line) in lines.iter_mut().enumerate() {
            line.seq = i;
        }
        Ok((lines, good_bytes))
    }

    /// Reads a JSON-lines file (`runs.jsonl`, monitor samples) without changing it; a last line
    /// cut short by a crash is skipped.
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`] naming the file, [`SweepError::Malformed`] naming a malformed line
    /// other than the last.
    pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, SweepError> {
        Self::read_lines(path).map(|(v, _)| v)
    }

    fn read_lines<T: serde::de::DeserializeOwned>(
        path: &Path,
    ) -> Result<(Vec<T>, u64), SweepError> {
        let read_error = |error| SweepError::Read {
            path: path.to_path_buf(),
            error,
        };
        let reader = BufReader::new(File::open(path).map_err(read_error)?);
        let raw: Vec<String> = reader
            .lines()
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        let last = raw.len().saturating_sub(1);
        let mut out = Vec::new();
        let mut good_bytes = 0u64;
        for (i, line) in raw.iter().enumerate() {
            if line.trim().is_empty() {
                good_bytes += line.len() as u64 + 1;
                continue;
            }
            match serde_json::from_str::<T>(line) {
                Ok(value) => {
                    out.push(value);
                    good_bytes += line.len() as u64 + 1;
                }
                Err(_) if i == last => break,
                Err(e) => {
                    return Err(SweepError::Malformed {
                        path: path.to_path_buf(),
                        line: i + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok((out, good_bytes))
    }

    /// The runs logged so far.
    pub fn lines(&self) -> &[RunLine] {
        &self.lines
    }

    /// Appends a run and flushes it to the operating system. An append that fails (a full
    /// disk) is cut back off the file, so that no torn line is left behind, and the run is not
    /// kept: the log holds what the file holds.
    ///
    /// # Errors
    ///
    /// [`SweepError::Write`] naming the file.
    pub fn append(&mut self, mut line: RunLine) -> Result<(), SweepError> {
        line.seq = self.lines.len();
        if let Some((path, file, good_bytes)) = &mut self.file {
            let write_error = |error| SweepError::Write {
                path: path.clone(),
                error,
            };
            let mut text =
                serde_json::to_string(&line).map_err(|e| write_error(std::io::Error::other(e)))?;
            text.push('\n');
            if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
                // Part of the line may be in the file: cut it off (shrinking needs no space).
                let _ = file.set_len(*good_bytes);
                return Err(write_error(e));
            }
            *good_bytes += text.len() as u64;
        }
        self.lines.push(line);
        Ok(())
    }
}

/// A sweep: what it measures and every run made so far, kept in memory or in a results folder
/// ([`SweepFolder`]). [`Sweep::execute`] is how every sweep runs: `tune`'s in a folder,
/// `bench`'s one configuration in memory.
#[derive(Debug)]
pub struct Sweep {
    spec: SweepSpec,
    log: RunLog,
    /// The results folder whose `monitor/` keeps each run's monitor samples, if any.
    folder: Option<PathBuf>,
}

impl Sweep {
    /// A sweep whose runs are kept in memory only (the monitor samples are dropped).
    pub fn in_memory(spec: SweepSpec) -> Self {
        Self {
            spec,
            log: RunLog::in_memory(),
            folder: None,
        }
    }

    /// A sweep logged in `log` whose monitor samples go to `folder`'s `monitor/`.
    pub(crate) fn in_folder(spec: SweepSpec, log: RunLog, folder: &Path) -> Self {
        Self {
            spec,
            log,
            folder: Some(folder.to_path_buf()),
        }
    }

    /// What the sweep measures.
    pub fn spec(&self) -> &SweepSpec {
        &self.spec
    }

    /// Every run logged so far.
    pub fn lines(&self) -> &[RunLine] {
        self.log.lines()
    }

    /// Whether the sweep is complete: continuing it would make no run.
    pub fn is_complete(&self) -> bool {
        is_complete(&self.spec.design, self.lines())
    }

    /// Runs the sweep's design with `runner` until it is complete, `stop` says so, or a run is
    /// abandoned (the stages and rounds of the module docs). `progress` is told after each run.
    ///
    /// # Errors
    ///
    /// [`SweepError::Write`] when the log or a run's monitor samples cannot be written,
    /// [`SweepError::Interrupted`] when `stop` said so, [`SweepError::Abandoned`] after a run
    /// that could not be stopped at its timeout. Every finished run is in the log.
    pub fn execute(
        &mut self,
        runner: &Runner<'_>,
        progress: &mut dyn FnMut(&Progress<'_>),
        stop: &dyn Fn() -> bool,
    ) -> Result<(), SweepError> {
        let samples: RefCell<Option<Vec<Sample>>> = RefCell::new(None);
        let save_error: RefCell<Option<SweepError>> = RefCell::new(None);
        let folder = self.folder.clone();
        let result = execute(
            &self.spec.design,
            runner.settings().timeout,
            &mut self.log,
            &mut |c| -> Outcome {
                let r = runner.run(c);
                *samples.borrow_mut() = (!r.monitor.is_empty()).then_some(r.monitor);
                r.outcome
            },
            &mut |p| {
                if let (Some(dir), Some(s)) = (&folder, samples.borrow_mut().take()) {
                    if let Err(e) = folder::save_monitor(dir, p.line.seq, &s) {
                        save_error.borrow_mut().get_or_insert(e);
                    }
                }
                progress(p);
            },
            &|| stop() || save_error.borrow().is_some(),
        );
        match save_error.into_inner() {
            Some(e) => Err(e),
            None => result,
        }
    }
}

/// What to measure and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The grid.
    pub grid: Grid,
    /// Which configurations of it.
    pub strategy: Strategy,
    /// Measured runs per configuration (at least).
    pub runs: usize,
    /// Warm-up runs per configuration.
    pub warmup: usize,
    /// Keep adding runs until each configuration has this much measured time (at most 10 ×
    /// `runs` runs); zero = exactly `runs`.
    #[serde(with = "crate::measure::seconds")]
    pub min_time: Duration,
    /// Relative difference under which configurations tie (0.03 = 3%).
    pub tolerance: f64,
    /// What the search, statistics and recommendation optimise, the first foremost
    /// (`--objective`; absent = wall time alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objectives: Vec<Objective>,
    /// `tune -i`/`--ignore-failure` (hyperfine's flag): a failed run is only left out of the
    /// statistics, and its configuration stays eligible and gets its remaining runs (absent =
    /// false: a failed run puts its configuration out of the running; see the module docs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_failure: bool,
}

/// The tie tolerance when none is given, in percent: configurations whose medians are within
/// 3% of each other tie and the simpler one is recommended (DESIGN.md's default, about the
/// run-to-run spread of a quiet machine); `tune --tolerance`, `compare --threshold`, `bench`
/// and a fleet report whose sweeps say nothing use it.
pub const DEFAULT_TOLERANCE_PCT: f64 = 3.0;

impl Design {
    /// One configuration, measured `runs` times after `warmup` warm-up runs, no minimum time:
    /// what `coretune bench` runs.
    pub fn one(config: &Config, runs: usize, warmup: usize) -> Self {
        Self {
            grid: Grid {
                threads: vec![config.threads],
                places: vec![config.place],
                cpus: vec![config.cpus.clone()],
                throttles: vec![config.throttle],
                mems: vec![config.mem.clone()],
                instances: vec![config.instances],
            },
            strategy: Strategy::Exhaustive,
            runs,
            warmup,
            min_time: Duration::ZERO,
            tolerance: DEFAULT_TOLERANCE_PCT / 100.0,
            objectives: Vec::new(),
            ignore_failure: false,
        }
    }

    /// The objectives: when none was named, wall time, or the throughput of all instances
    /// together when the grid runs several (the time of P copies is not comparable with one's).
    pub fn objectives(&self) -> Vec<Objective> {
        if self.objectives.is_empty() {
            if self.grid.has_instances() {
                vec![Objective::throughput()]
            } else {
                vec![Objective::time()]
            }
        } else {
            self.objectives.clone()
        }
    }
}

/// Progress reported after each run.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// The run just logged.
    pub line: &'a RunLine,
    /// Runs made in this invocation.
    pub done: usize,
    /// Runs planned in the current stage that are still to come.
    pub remaining_in_stage: usize,
    /// Stage number (0-based).
    pub stage: usize,
    /// Every run in the log so far (including earlier invocations').
    pub lines: &'a [RunLine],
    /// Whether failed runs leave their configuration in the running ([`Design::ignore_failure`]).
    pub ignore_failure: bool,
}

/// How many failed runs of one configuration are told one by one as they happen; after them,
/// one line says that the rest are in `runs.jsonl` (a configuration failing every run under
/// `tune -i` must not flood the terminal).
const FAILURES_TOLD: usize = 3;

impl Progress<'_> {
    /// The line to show at once when the run just logged failed, as hyperfine shows an exit
    /// code (`2 threads, place os: run 3 failed: ./flaky.sh exited with status 134 (race
    /// detected, aborting)`); after three of one configuration, once, that its
    /// further failures are in `runs.jsonl`; `None` for a successful run and after that.
    pub fn failure_note(&self) -> Option<String> {
        let line = self.line;
        let why = line.failure()?;
        let of_config = |l: &&RunLine| l.config == line.config;
        let failures = self
            .lines
            .iter()
            .filter(of_config)
            .filter(|l| l.status != Status::Ok)
            .count();
        if failures > FAILURES_TOLD + 1 {
            return None;
        }
        if failures == FAILURES_TOLD + 1 {
            return Some(format!(
                "{}: further failures of it are in runs.jsonl",
                line.config
            ));
        }
        let run = if line.warmup {
            "warm-up run".to_owned()
        } else {
            let k = self
                .lines
                .iter()
                .filter(of_config)
                .filter(|l| !l.warmup)
                .count();
            format!("run {k}")
        };
        let (verb, why) = match line.status {
            Status::Timeout => match why.strip_prefix("timed out") {
                Some(rest) => ("timed out", rest.trim_start().to_owned()),
                None => ("timed out", why),
            },
            Status::Unverified => ("did not verify", why),
            _ => ("failed", why),
        };
        let sep = if why.is_empty() || why.starts_with("after ") {
            " "
        } else {
            ": "
        };
        let what = format!("{}: {run} {verb}{sep}{why}", line.config);
        let what = what.trim_end().to_owned();
        Some(match (line.status, self.ignore_failure) {
            (Status::Timeout, _) => format!("{what}; no more runs of it"),
            (_, true) => what,
            (_, false) => format!("{what}; no more runs of it (-i keeps going)"),
        })
    }
}

/// Why a sweep could not start, or stopped early. Every variant keeps the path, program or
/// configuration it is about, and its message is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A results file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The default results folder cannot be made in the working directory (read-only, another
    /// user's): the way out is to say where (`--out DIR`).
    #[error("cannot create {} here: {error}; use --out DIR", base.display())]
    NoFolderHere {
        /// The folder the results go under by default (`coretune-results`).
        base: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A results file could not be written.
    #[error("writing {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A results file is not what it should be.
    #[error("{}{}: {message}", path.display(), if *line > 0 { format!(":{line}") } else { String::new() })]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 when not known).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A results file of another version.
    #[error("{}: a '{found}' file, not {expected}", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// The schema it says it has.
        found: String,
        /// The schema this coretune reads.
        expected: &'static str,
    },
    /// A folder with no sweep folder one or two levels below it.
    #[error("{}: no sweep folders in it (a fleet folder holds TYPE/NODE/sweep.json)", dir.display())]
    NotAFleet {
        /// The folder.
        dir: PathBuf,
    },
    /// Not a folder.
    #[error("{}: not a folder", dir.display())]
    NotAFolder {
        /// The path given.
        dir: PathBuf,
    },
    /// A new sweep was pointed at a folder that holds other files.
    #[error(
        "{} is not empty: --out takes a new or empty folder, so that coretune's files are not \
         mixed with others (nor written over them)",
        dir.display()
    )]
    NotEmpty {
        /// The folder.
        dir: PathBuf,
    },
    /// A new sweep was pointed at a folder that already holds one.
    #[error(
        "{} already holds a sweep; continue it with --resume {}, or choose another --out",
        dir.display(),
        dir.display()
    )]
    AlreadyASweep {
        /// The folder.
        dir: PathBuf,
    },
    /// No command to run.
    #[error("no command given")]
    NoCommand,
    /// An argument holds what looks like a misspelt placeholder.
    #[error(
        "'{arg}': {{{name}}} is not a placeholder; did you mean {{{known}}}? (placeholders: {{threads}}, {{cpus}}, {{place}})"
    )]
    Placeholder {
        /// The argument.
        arg: String,
        /// The name between the braces.
        name: String,
        /// The placeholder it is closest to.
        known: &'static str,
    },
    /// The program word is a whole command line (`-- 'sort f | wc -l'`) that no file matches.
    #[error(
        "'{program}': command not found: that is a whole command line in one word; run it \
         through sh -c with --shell, or give its words separately"
    )]
    WholeCommandLine {
        /// The word given.
        program: String,
    },
    /// The workload cannot be built.
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// The program cannot be started.
    #[error(transparent)]
    Launch(#[from] crate::program::LaunchError),
    /// A server's readiness test that is neither `tcp:HOST:PORT` nor a command.
    #[error(transparent)]
    Ready(#[from] crate::program::server::ParseReadyError),
    /// A server cannot be measured here (its port already answers).
    #[error(transparent)]
    Server(#[from] crate::program::server::ServerError),
    /// A configuration cannot run on this machine.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A `--metric-from` file exists before the sweep runs.
    #[error(
        "--metric-from {}: the file exists; coretune removes this file between runs (so that \
         an old figure never passes for a new one) and will not remove one it did not write: \
         move it away (a file left by an interrupted run too) or choose another name",
        path.display()
    )]
    MetricFileExists {
        /// The file.
        path: PathBuf,
    },
    /// A resumed sweep's program is not the file the sweep measured.
    #[error(
        "'{name}' is not the file this sweep measured ({}: {differs}): put that one back, or \
         give --force to go on with this one (its runs would be pooled with the others')",
        path.display()
    )]
    NotTheSameProgram {
        /// The program as the command names it.
        name: String,
        /// The file the sweep measured.
        path: PathBuf,
        /// What differs (`its size, mtime and hash differ`), or `it is gone`.
        differs: String,
    },
    /// A resumed sweep's working directory is gone.
    #[error(
        "the sweep ran in {}, which is gone: recreate it, or give --force to run from here",
        dir.display()
    )]
    WorkingDirGone {
        /// The directory the sweep ran in.
        dir: PathBuf,
    },
    /// The caller asked to stop (Ctrl-C); finished runs are in the log.
    #[error("interrupted")]
    Interrupted,
    /// A run exceeded the timeout and could not be stopped; it is logged as timed out.
    #[error("{0}")]
    Abandoned(String),
}

/// Whether a sweep with `plan` and the runs `lines` is complete: continuing it would make no
/// run. The plan is executed on a copy of the log until it asks for its first run.
pub(crate) fn is_complete(plan: &Design, lines: &[RunLine]) -> bool {
    let mut log = RunLog {
        file: None,
        lines: lines.to_vec(),
    };
    let wanted = std::cell::Cell::new(false);
    let result = execute(
        plan,
        None,
        &mut log,
        &mut |_| {
            wanted.set(true);
            Outcome::Failed(String::new())
        },
        &mut |_| {},
        &|| wanted.get(),
    );
    result.is_ok() && !wanted.get()
}

/// How many measured runs the whole sweep makes, given the runs `lines` made so far, when the
/// plan says so before the results are in: an exhaustive plan without a minimum time (each
/// configuration of the grid gets its runs, or those it made before a failure put it out).
/// `None` when the search or `--min-time` decides it from the results.
pub(crate) fn planned_runs(plan: &Design, lines: &[RunLine]) -> Option<usize> {
    if plan.strategy != Strategy::Exhaustive || !plan.min_time.is_zero() {
        return None;
    }
    Some(
        plan.grid
            .configs()
            .iter()
            .map(|c| {
                let made = lines.iter().filter(|l| &l.config == c && !l.warmup).count();
                if is_out(lines, c, plan.ignore_failure) {
                    made
                } else {
                    made.max(plan.runs)
                }
            })
            .sum(),
    )
}

/// Whether configuration `c` is out of the running in the runs `lines`: it timed out, or
/// (without `ignore_failure`) any of its runs, warm-up included, failed. It gets no further
/// runs, and (but for a timeout under `ignore_failure`) no recommendation.
pub(crate) fn is_out(lines: &[RunLine], c: &Config, ignore_failure: bool) -> bool {
    lines.iter().any(|l| {
        &l.config == c
            && match l.status {
                Status::Ok => false,
                Status::Timeout => true,
                // Every other way a run can fail (and any added later, such as an audit
                // that finds the run did not measure its configuration) counts alike.
                _ => !ignore_failure,
            }
    })
}

/// Per-configuration estimates for the search, from the successful measured runs of the
/// configurations still in the running (a configuration put out by a failed run is no
/// contender, however fast its other runs were).
pub(crate) fn estimates(
    lines: &[RunLine],
    objective: &Objective,
    ignore_failure: bool,
) -> BTreeMap<Config, Estimate> {
    let mut values: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
    let failed: BTreeSet<&Config> = lines
        .iter()
        .filter(|l| l.status != Status::Ok)
        .map(|l| &l.config)
        .collect();
    for line in lines.iter().filter(|l| !l.warmup && l.status == Status::Ok) {
        if !ignore_failure && failed.contains(&line.config) {
            continue;
        }
        if let Some(v) = line.record.as_ref().and_then(|r| objective.value(r)) {
            values.entry(line.config.clone()).or_default().push(v);
        }
    }
    values
        .into_iter()
        .filter_map(|(c, v)| Some((c, objective.estimate(&Summary::of(&v)?))))
        .collect()
}

/// Shuffles `v` with a seeded splitmix64 Fisher–Yates (a fixed order for a given seed, so a
/// resumed sweep makes its remaining runs in the same order).
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut state = seed ^ 0x5eed_5eed_5eed_5eed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..v.len()).rev() {
        let j = usize::try_from(next() % (i as u64 + 1)).unwrap_or(0);
        v.swap(i, j);
    }
}

/// Runs the plan, appending every run to `log` (which may already hold runs from an earlier,
/// interrupted invocation: those count). `run` makes one run of a configuration; `progress` is
/// told after each; `stop` is polled between runs (Ctrl-C). `timeout` is the runs' time limit,
/// for the log's word on a run that exceeded it.
///
/// # Errors
///
/// [`SweepError::Write`] when the log cannot be written, [`SweepError::Interrupted`] when `stop`
/// said so, [`SweepError::Abandoned`] after a run that could not be stopped at its timeout.
/// Every finished run is in the log.
pub(crate) fn execute(
    plan: &Design,
    timeout: Option<Duration>,
    log: &mut RunLog,
    run: &mut dyn FnMut(&Config) -> Outcome,
    progress: &mut dyn FnMut(&Progress<'_>),
    stop: &dyn Fn() -> bool,
) -> Result<(), SweepError> {
    let mut done = 0;
    let max_runs = plan.runs.max(1) * 10;
    let objective = plan.objectives().swap_remove(0);
    for stage in 0.. {
        if stop() {
            return Err(SweepError::Interrupted);
        }
        let tried: BTreeSet<Config> = log.lines().iter().map(|l| l.config.clone()).collect();
        let measured = estimates(log.lines(), &objective, plan.ignore_failure);
        let mut configs: Vec<Config> =
            search::next_configs(&plan.grid, plan.strategy, &measured, &tried, plan.tolerance);
        // Configurations of earlier stages that still lack runs (an interrupted sweep).
        let count = |lines: &[RunLine], c: &Config, warm: bool| {
            lines
                .iter()
                .filter(|l| &l.config == c && l.warmup == warm)
                .count()
        };
        for c in &tried {
            if !configs.contains(c)
                && !is_out(log.lines(), c, plan.ignore_failure)
                && count(log.lines(), c, false) < plan.runs
            {
                configs.push(c.clone());
            }
        }
        if configs.is_empty() {
            return Ok(());
        }
        configs.sort();
        for round in 0.. {
            let needs = |lines: &[RunLine], c: &Config| -> Option<bool> {
                if is_out(lines, c, plan.ignore_failure) {
                    return None;
                }
                if count(lines, c, true) < plan.warmup {
                    return Some(true);
                }
                let measured: Vec<&RunLine> = lines
                    .iter()
                    .filter(|l| &l.config == c && !l.warmup)
                    .collect();
                let n = measured.len();
                let time: f64 = measured.iter().filter_map(|l| l.wall_s()).sum();
                (n < plan.runs || (time < plan.min_time.as_secs_f64() && n < max_runs))
                    .then_some(false)
            };
            let mut todo: Vec<(Config, bool)> = configs
                .iter()
                .filter_map(|c| needs(log.lines(), c).map(|w| (c.clone(), w)))
                .collect();
            if todo.is_empty() {
                if round == 0 {
                    // Nothing of this stage can run, and the next stage would be this one again
                    // (it depends only on the log): the sweep is as complete as it can be.
                    return Ok(());
                }
                break;
            }
            shuffle(&mut todo, (stage as u64) << 32 | round as u64);
            let total = todo.len();
            for (i, (config, warmup)) in todo.into_iter().enumerate() {
                if stop() {
                    return Err(SweepError::Interrupted);
                }
                let noise = NoiseProbe::start();
                let outcome = run(&config);
                let noise = noise.finish();
                // A run cut short by Ctrl-C is the run in flight: dropped, not logged as failed.
                // The program may see the signal before this process's handler has said so.
                if matches!(outcome, Outcome::Stopped(_))
                    || (stop() && !matches!(outcome, Outcome::Done(_)))
                {
                    return Err(SweepError::Interrupted);
                }
                let mut abandoned = None;
                let mut stderr_tail = None;
                let (status, error, record) = match outcome {
                    Outcome::Done(r) if r.audit.as_ref().is_some_and(|a| !a.is_clean()) => {
                        let why = r.audit.as_ref().map(|a| a.mismatches.join("; "));
                        (Status::Mismatch, why, Some(r))
                    }
                    Outcome::Done(r) if r.verified => (Status::Ok, None, Some(r)),
                    Outcome::Done(r) => (Status::Unverified, r.verify_error.clone(), Some(r)),
                    Outcome::Failed(e) | Outcome::Stopped(e) => (Status::Failed, Some(e), None),
                    Outcome::ProgramFailed {
                        error,
                        stderr_tail: tail,
                    } => {
                        stderr_tail = tail;
                        (Status::Failed, Some(error), None)
                    }
                    Outcome::Timeout => (
                        Status::Timeout,
                        Some(timeout.map_or_else(
                            || "timed out".to_owned(),
                            |t| format!("timed out after {:.1} s", t.as_secs_f64()),
                        )),
                        None,
                    ),
                    Outcome::Abandoned(why) => {
                        abandoned = Some(why.clone());
                        (Status::Timeout, Some(why), None)
                    }
                };
                let ended_at = crate::sys::since_epoch().as_secs_f64();
                log.append(RunLine {
                    seq: 0,
                    config,
                    warmup,
                    status,
                    error,
                    stderr_tail,
                    record,
                    noise,
                    ended_at,
                })?;
                done += 1;
                let lines = log.lines();
                progress(&Progress {
                    line: lines.last().expect("just appended"),
                    done,
                    remaining_in_stage: total - i - 1,
                    stage,
                    lines,
                    ignore_failure: plan.ignore_failure,
                });
                if let Some(why) = abandoned {
                    return Err(SweepError::Abandoned(why));
                }
            }
        }
    }
    Ok(())
}

/// What a sweep found for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    /// The configuration.
    #[serde(flatten)]
    pub config: Config,
    /// Successful measured runs.
    pub runs: usize,
    /// Measured runs that failed, timed out or did not verify.
    pub failed: usize,
    /// Of those, the measured runs that timed out.
    #[serde(default)]
    pub timed_out: usize,
    /// Why the configuration is out of the running (a run of it failed, and the sweep does not
    /// ignore failures; or it timed out and has no successful run): `3 of 8 runs failed:
    /// ./flaky.sh exited with status 134 (race detected, aborting)`. `None`: eligible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// The first failed run's reason, warm-up included (`None` when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Statistics of the successful runs' wall times (seconds).
    pub wall: Option<Summary>,
    /// Statistics of each objective the summaries were made for, in their order (`None` where
    /// no successful run has it).
    pub objectives: Vec<Option<Summary>>,
    /// Statistics of every metric read from the program's output, by name.
    pub metrics: BTreeMap<String, Summary>,
    /// Median workload throughput.
    pub throughput: Option<Throughput>,
    /// Speedup over the 1-thread configuration of the same family — with instances, over one
    /// copy of one thread of that placement family, so that the gain from splitting shows —
    /// or, failing that, over 1 thread placed by the OS.
    pub speedup: Option<f64>,
    /// Speedup per thread (every copy's threads counted).
    pub efficiency: Option<f64>,
    /// The configuration the speedup is taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Config>,
    /// Median voluntary context switches per run.
    pub voluntary_ctx_switches: Option<f64>,
    /// Median involuntary context switches per run.
    pub involuntary_ctx_switches: Option<f64>,
    /// Median CPU migrations per run.
    pub migrations: Option<f64>,
    /// Runs flagged as taken on a busy machine.
    pub busy_runs: usize,
}

/// Why a configuration whose runs are `runs` (warm-up included, in log order) is out of the
/// running, when it is: a failed run without `ignore_failure`, or a timeout that left it no
/// successful run. `made` and the counts are of measured runs.
fn out_reason(runs: &[&RunLine], ignore_failure: bool) -> Option<String> {
    let first = runs.iter().find(|l| l.status != Status::Ok)?;
    let measured: Vec<&&RunLine> = runs.iter().filter(|l| !l.warmup).collect();
    let ok = measured.iter().filter(|l| l.status == Status::Ok).count();
    let timed_out = measured
        .iter()
        .filter(|l| l.status == Status::Timeout)
        .count();
    let failed = measured.len() - ok;
    if ignore_failure && !(timed_out > 0 && ok == 0) {
        return None;
    }
    let why = first.failure().unwrap_or_default();
    if first.warmup {
        return Some(match first.status {
            Status::Timeout => format!("its warm-up run {why}"),
            _ => format!("its warm-up run failed: {why}"),
        });
    }
    let of = format!("{failed} of {}", crate::sys::counted(measured.len(), "run"));
    Some(if timed_out == failed {
        // `timed out after 2.0 s`: said once, after the count.
        format!("{of} {why}")
    } else if timed_out == 0 {
        format!("{of} failed: {why}")
    } else {
        format!("{of} failed or timed out; the first: {why}")
    })
}

/// Summarises the measured (non-warm-up) runs of the log per configuration, in configuration
/// order, with statistics of each of `objectives` (their first gives the speedup when it is a
/// metric of the program: its own figure against its 1-thread figure). A configuration with a
/// failed run is marked out of the running ([`ConfigSummary::out`]) unless `ignore_failure`.
pub fn summarize(
    lines: &[RunLine],
    objectives: &[Objective],
    ignore_failure: bool,
) -> Vec<ConfigSummary> {
    let mut all_runs: BTreeMap<Config, Vec<&RunLine>> = BTreeMap::new();
    for line in lines {
        all_runs.entry(line.config.clone()).or_default().push(line);
    }
    let med = |v: Vec<f64>| crate::measure::stats::median(&v);
    let mut out: Vec<ConfigSummary> = all_runs
        .into_iter()
        // A configuration put out by its warm-up run has a row too, to say why.
        .filter(|(_, all)| all.iter().any(|l| !l.warmup || l.status != Status::Ok))
        .map(|(config, all)| {
            let runs: Vec<&RunLine> = all.iter().copied().filter(|l| !l.warmup).collect();
            let ok: Vec<&RunRecord> = runs
                .iter()
                .filter(|l| l.status == Status::Ok)
                .filter_map(|l| l.record.as_ref())
                .collect();
            #[allow(clippy::cast_precision_loss)]
            let field = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
                let v: Vec<f64> = ok.iter().filter_map(|r| f(r)).collect();
                if v.len() == ok.len() { med(v) } else { None }
            };
            let walls: Vec<f64> = ok
                .iter()
                .map(|r| r.measurement.wall.as_secs_f64())
                .collect();
            let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &ok {
                for (name, &v) in &r.metrics {
                    metrics.entry(name.clone()).or_default().push(v);
                }
            }
            #[allow(clippy::cast_precision_loss)]
            ConfigSummary {
                runs: ok.len(),
                failed: runs.len() - ok.len(),
                timed_out: runs.iter().filter(|l| l.status == Status::Timeout).count(),
                out: out_reason(&all, ignore_failure),
                first_failure: all.iter().find_map(|l| l.failure()),
                wall: Summary::of(&walls),
                objectives: objectives
                    .iter()
                    .map(|o| {
                        let v: Vec<f64> = ok.iter().filter_map(|r| o.value(r)).collect();
                        Summary::of(&v)
                    })
                    .collect(),
                metrics: metrics
                    .into_iter()
                    .filter_map(|(n, v)| Some((n, Summary::of(&v)?)))
                    .collect(),
                throughput: ok.first().and_then(|first| {
                    Some(Throughput {
                        value: med(ok.iter().map(|r| r.throughput.value).collect())?,
                        unit: first.throughput.unit,
                    })
                }),
                speedup: None,
                efficiency: None,
                baseline: None,
                voluntary_ctx_switches: field(&|r| {
                    r.measurement.voluntary_ctx_switches.map(|n| n as f64)
                }),
                involuntary_ctx_switches: field(&|r| {
                    r.measurement.involuntary_ctx_switches.map(|n| n as f64)
                }),
                migrations: field(&|r| r.measurement.migrations.map(|m| m as f64)),
                busy_runs: runs.iter().filter(|l| l.noise.busy).count(),
                config,
            }
        })
        .collect();
    // Speedup and efficiency against the family's 1-thread median — with instances, against
    // one copy of one thread of the same placement family — of the wall time, or of the
    // program's own figure when that is the objective (as a cost: a rate's speedup is the
    // ratio of the rates). A configuration out of the running is no baseline and gets none
    // (a crashing configuration's "182% efficiency" is no figure to show).
    let by_metric = objectives.first().filter(|o| {
        matches!(
            o.quantity,
            objective::Quantity::Metric(_) | objective::Quantity::Throughput
        )
    });
    let cost = |s: &ConfigSummary| -> Option<f64> {
        match by_metric {
            Some(o) => Some(o.cost(s.objectives.first()?.as_ref()?.median)),
            None => Some(s.wall.as_ref()?.median),
        }
    };
    let one_thread: BTreeMap<Family, (Config, f64)> = out
        .iter()
        .filter(|s| s.config.threads == 1 && s.out.is_none())
        .filter_map(|s| Some((s.config.family(), (s.config.clone(), cost(s)?))))
        .collect();
    let os_baseline = one_thread
        .iter()
        .find(|(f, _)| {
            !f.place.is_pinned()
                && f.cpus.is_all()
                && !f.throttle.is_set()
                && f.mem.is_default()
                && f.instances == 1
        })
        .map(|(_, base)| base.clone());
    for s in out.iter_mut().filter(|s| s.out.is_none()) {
        let Some(own) = cost(s) else { continue };
        let family = Family {
            instances: 1,
            ..s.config.family()
        };
        let base = one_thread.get(&family).cloned().or(os_baseline.clone());
        if let Some((base_config, base)) = base {
            let threads = s.config.threads * s.config.instances;
            s.speedup = Some(crate::measure::stats::speedup(base, own));
            s.efficiency = Some(crate::measure::stats::efficiency(base, own, threads));
            s.baseline = Some(base_config);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod test;
