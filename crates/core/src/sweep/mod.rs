//! Sweeps: a grid (threads × placement × CPU set × throttle) measured with warm-up, repeats and
//! interleaved order, every finished run appended to a log so that nothing finished is lost.
//!
//! # Lifecycle
//!
//! 1. A [`Plan`] says what to measure and how ([`Strategy`], runs, warm-up, minimum time).
//! 2. [`execute`] asks the strategy for a *stage* of configurations, runs each stage in
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
//! verify) is logged with its status and never enters the timing statistics.

pub mod config;
pub mod recommend;
pub mod search;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use config::{Config, Family, Grid, MachineCounts, default_threads, parse_threads};
pub use search::{Estimate, Strategy};

use crate::noise::{Noise, NoiseProbe};
use crate::stats::Summary;
use crate::workload::{RunRecord, Throughput};

/// How a run ended.
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
    /// The measurements, when the run completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RunRecord>,
    /// The machine's state around the run.
    pub noise: Noise,
    /// Unix time the run ended, in seconds.
    pub ended_at: f64,
}

impl RunLine {
    /// Wall time in seconds of a successful run.
    pub fn wall_s(&self) -> Option<f64> {
        match (&self.status, &self.record) {
            (Status::Ok, Some(r)) => Some(r.measurement.wall.as_secs_f64()),
            _ => None,
        }
    }
}

/// How a runner's attempt ended, before it is logged.
#[derive(Debug)]
pub enum Outcome {
    /// The run completed (verified or not: the record says).
    Done(RunRecord),
    /// It failed; the message says how.
    Failed(String),
    /// It exceeded the timeout.
    Timeout,
}

/// The append-only run log, `runs.jsonl`.
#[derive(Debug)]
pub struct RunLog {
    path: PathBuf,
    file: File,
    lines: Vec<RunLine>,
}

impl RunLog {
    /// Opens (creating if needed) the log at `path` and reads the runs already in it. A last
    /// line cut short by a crash is dropped (and overwritten by the next run).
    ///
    /// # Errors
    ///
    /// I/O errors, and a malformed line other than the last, naming the file and line.
    pub fn open(path: &Path) -> Result<Self, String> {
        let mut lines = Vec::new();
        let mut good_bytes = 0u64;
        if path.exists() {
            let reader =
                BufReader::new(File::open(path).map_err(|e| format!("{}: {e}", path.display()))?);
            let raw: Vec<String> = reader
                .lines()
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let last = raw.len().saturating_sub(1);
            for (i, line) in raw.iter().enumerate() {
                if line.trim().is_empty() {
                    good_bytes += line.len() as u64 + 1;
                    continue;
                }
                match serde_json::from_str::<RunLine>(line) {
                    Ok(run) => {
                        lines.push(run);
                        good_bytes += line.len() as u64 + 1;
                    }
                    Err(_) if i == last => break,
                    Err(e) => return Err(format!("{}:{}: {e}", path.display(), i + 1)),
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // Drop a torn last line so the next append starts on a fresh line.
        file.set_len(good_bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, line) in lines.iter_mut().enumerate() {
            line.seq = i;
        }
        Ok(Self {
            path: path.to_path_buf(),
            file,
            lines,
        })
    }

    /// The runs logged so far.
    pub fn lines(&self) -> &[RunLine] {
        &self.lines
    }

    /// Appends a run and flushes it to the operating system.
    ///
    /// # Errors
    ///
    /// I/O errors, naming the file.
    pub fn append(&mut self, mut line: RunLine) -> Result<(), String> {
        line.seq = self.lines.len();
        let mut text = serde_json::to_string(&line).map_err(|e| e.to_string())?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.lines.push(line);
        Ok(())
    }
}

/// What to measure and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
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
}

/// Why a sweep stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The run log could not be written.
    #[error("{0}")]
    Log(String),
    /// The caller asked to stop (Ctrl-C); finished runs are in the log.
    #[error("interrupted")]
    Interrupted,
}

/// Per-configuration estimates for the search, from the successful measured runs.
pub fn estimates(lines: &[RunLine]) -> BTreeMap<Config, Estimate> {
    let mut times: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
    for line in lines.iter().filter(|l| !l.warmup) {
        if let Some(w) = line.wall_s() {
            times.entry(line.config.clone()).or_default().push(w);
        }
    }
    times
        .into_iter()
        .filter_map(|(c, v)| {
            let s = Summary::of(&v)?;
            Some((
                c,
                Estimate {
                    median: s.median,
                    ci: s.ci,
                },
            ))
        })
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
/// told after each; `stop` is polled between runs (Ctrl-C).
///
/// # Errors
///
/// [`SweepError::Log`] when the log cannot be written, [`SweepError::Interrupted`] when `stop`
/// said so. Either way every finished run is in the log.
pub fn execute(
    plan: &Plan,
    log: &mut RunLog,
    run: &mut dyn FnMut(&Config) -> Outcome,
    progress: &mut dyn FnMut(&Progress<'_>),
    stop: &dyn Fn() -> bool,
) -> Result<(), SweepError> {
    let mut done = 0;
    let max_runs = plan.runs.max(1) * 10;
    for stage in 0.. {
        let tried: BTreeSet<Config> = log.lines().iter().map(|l| l.config.clone()).collect();
        let measured = estimates(log.lines());
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
            if !configs.contains(c) && count(log.lines(), c, false) < plan.runs {
                configs.push(c.clone());
            }
        }
        if configs.is_empty() {
            return Ok(());
        }
        configs.sort();
        for round in 0.. {
            let needs = |lines: &[RunLine], c: &Config| -> Option<bool> {
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
                if stop() && !matches!(outcome, Outcome::Done(_)) {
                    return Err(SweepError::Interrupted);
                }
                let (status, error, record) = match outcome {
                    Outcome::Done(r) if r.verified => (Status::Ok, None, Some(r)),
                    Outcome::Done(r) => (Status::Unverified, r.verify_error.clone(), Some(r)),
                    Outcome::Failed(e) => (Status::Failed, Some(e), None),
                    Outcome::Timeout => (Status::Timeout, Some("timed out".into()), None),
                };
                let ended_at = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                log.append(RunLine {
                    seq: 0,
                    config,
                    warmup,
                    status,
                    error,
                    record,
                    noise,
                    ended_at,
                })
                .map_err(SweepError::Log)?;
                done += 1;
                let lines = log.lines();
                progress(&Progress {
                    line: lines.last().expect("just appended"),
                    done,
                    remaining_in_stage: total - i - 1,
                    stage,
                    lines,
                });
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
    /// Statistics of the successful runs' wall times (seconds).
    pub wall: Option<Summary>,
    /// Median workload throughput.
    pub throughput: Option<Throughput>,
    /// Speedup over the 1-thread configuration of the same family (or, failing that, over
    /// 1 thread placed by the OS).
    pub speedup: Option<f64>,
    /// Speedup per thread.
    pub efficiency: Option<f64>,
    /// Median voluntary context switches per run.
    pub voluntary_ctx_switches: Option<f64>,
    /// Median involuntary context switches per run.
    pub involuntary_ctx_switches: Option<f64>,
    /// Median CPU migrations per run.
    pub migrations: Option<f64>,
    /// Runs flagged as taken on a busy machine.
    pub busy_runs: usize,
}

/// Summarises the measured (non-warm-up) runs of the log per configuration, in configuration
/// order.
pub fn summarize(lines: &[RunLine]) -> Vec<ConfigSummary> {
    let mut by_config: BTreeMap<Config, Vec<&RunLine>> = BTreeMap::new();
    for line in lines.iter().filter(|l| !l.warmup) {
        by_config.entry(line.config.clone()).or_default().push(line);
    }
    let med = |v: Vec<f64>| crate::stats::median(&v);
    let mut out: Vec<ConfigSummary> = by_config
        .into_iter()
        .map(|(config, runs)| {
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
            #[allow(clippy::cast_precision_loss)]
            ConfigSummary {
                runs: ok.len(),
                failed: runs.len() - ok.len(),
                wall: Summary::of(&walls),
                throughput: ok.first().and_then(|first| {
                    Some(Throughput {
                        value: med(ok.iter().map(|r| r.throughput.value).collect())?,
                        unit: first.throughput.unit,
                    })
                }),
                speedup: None,
                efficiency: None,
                voluntary_ctx_switches: field(&|r| {
                    Some(r.measurement.voluntary_ctx_switches as f64)
                }),
                involuntary_ctx_switches: field(&|r| {
                    Some(r.measurement.involuntary_ctx_switches as f64)
                }),
                migrations: field(&|r| r.measurement.migrations.map(|m| m as f64)),
                busy_runs: runs.iter().filter(|l| l.noise.busy).count(),
                config,
            }
        })
        .collect();
    // Speedup and efficiency against the family's 1-thread median.
    let one_thread: BTreeMap<Family, f64> = out
        .iter()
        .filter(|s| s.config.threads == 1)
        .filter_map(|s| Some((s.config.family(), s.wall.as_ref()?.median)))
        .collect();
    let os_baseline = one_thread
        .iter()
        .find(|(f, _)| f.place == "os" && f.cpus == "all" && f.throttle.is_none())
        .map(|(_, &t)| t);
    for s in &mut out {
        let Some(wall) = &s.wall else { continue };
        let base = one_thread.get(&s.config.family()).copied().or(os_baseline);
        if let Some(base) = base {
            s.speedup = Some(crate::stats::speedup(base, wall.median));
            s.efficiency = Some(crate::stats::efficiency(
                base,
                wall.median,
                s.config.threads,
            ));
        }
    }
    out
}

#[cfg(test)]
mod test;
