//! Replaying recorded runs through the search: [`Replay`] (`tune --replay SOURCE`).
//!
//! The engine's stages and rounds (`engine.rs`) ask for one run of a configuration at a time;
//! a replay answers with the configuration's next *recorded* run instead of running anything.
//! The same strategy, tolerance and recommendation rule (`search.rs`, `recommend.rs`) then decide
//! as they would on the machine the runs were recorded on, so that a search can be judged on
//! exhaustive sweeps of machines this one is not ([`Replay::evaluate`]): which configuration it
//! picks, how far that is from the exhaustive answer, and what it cost.
//!
//! # Sources
//!
//! - A coretune results folder (`sweep.json` and `runs.jsonl`, best an exhaustive sweep): its
//!   grid and objectives are the folder's.
//! - A JSON-lines file, one run per line: coretune's own `runs.jsonl` lines, or the minimal
//!   form `{"threads": 8, "place": "compact", "cpus": "all", "time_s": 1.234}` with the other
//!   axes of a configuration optional (the fields of [`Family`], as `tune` writes them: `mem`,
//!   `instances`, `throttle`, ...), `ok` (`false`: a failed run) and any other numeric field
//!   kept as a metric of that name. An absent axis is as [`Family::new`] has it (`place` `os`,
//!   `cpus` `all`). The grid is every combination of the values the file names.
//!
//! Warm-up lines are left out: a replay makes no warm-up runs. A configuration of the grid with
//! no recorded run is replayed as a failed run (`not recorded`), so it is never recommended.
//!
//! # Which recorded run
//!
//! The k-th run asked of a configuration with n recorded runs is recorded run
//! `(offset + k) mod n`, where the offset is a hash of the seed and the configuration: the
//! runs cycle when a search asks for more than were recorded, and a seed gives the same answer
//! every time while different seeds draw the runs in different orders.
//!
//! # The answer
//!
//! The search's pick is compared with the recommendation from *all* recorded runs (same rule,
//! same tolerance) and with the truly best configuration, each configuration judged on its
//! *true objective*: the mean of all its successful recorded runs. The costs are of the
//! replayed search and of an exhaustive sweep replayed with the same `runs` and seed (the same
//! number of runs per configuration, so that the two are comparable).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::design::Design;
use super::engine::execute;
use super::error::SweepError;
use super::log::{Outcome, RunLine, RunLog, Status};
use super::objective::Objective;
use super::recommend::{pareto, recommend_on};
use super::search::Strategy;
use super::summary::{ConfigSummary, summarize};
use super::target::SweepSpec;
use crate::grid::{Config, Family, Grid};
use crate::measure::{Measurement, MigrationSource, Noise, RssSource};
use crate::placement::Policy;
use crate::workload::{RunRecord, Throughput, Unit};

/// Recorded runs to replay through the search, read from a results folder or a JSON-lines file.
#[derive(Clone, Debug)]
pub struct Replay {
    /// The folder or file they were read from.
    source: PathBuf,
    /// The configurations the search chooses from.
    grid: Grid,
    /// What the recorded sweep optimised (empty: a [`Design`]'s default).
    objectives: Vec<Objective>,
    /// The measured runs of each configuration, in file order.
    runs: BTreeMap<Config, Vec<RunLine>>,
    /// The PUs of each CPU set, as the recorded sweep counted them (`Design::pus`; empty for a
    /// JSON-lines file and a folder from before it).
    pus: BTreeMap<String, usize>,
}

/// What a replayed search did, against the exhaustive answer (`tune --replay --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The folder or file replayed.
    pub source: PathBuf,
    /// The strategy replayed.
    pub strategy: Strategy,
    /// Measured runs per configuration the strategy asked for.
    pub runs: usize,
    /// The tie tolerance, in percent.
    pub tolerance_pct: f64,
    /// The seed that chose which recorded runs were handed out.
    pub seed: u64,
    /// The objective judged (`time`, `throughput`, a metric's name).
    pub objective: String,
    /// Configurations of the grid with no recorded run (replayed as failed runs).
    pub unrecorded: usize,
    /// What the replayed strategy recommends.
    pub recommendation: Pick,
    /// What the same rule recommends from every recorded run.
    pub exhaustive: Pick,
    /// The configuration with the best true objective.
    pub best: Pick,
    /// How much worse the recommendation's true objective is than the exhaustive
    /// recommendation's, in percent (positive: the search's pick is slower).
    pub gap_pct: f64,
    /// What the replayed strategy and an exhaustive sweep cost.
    pub cost: Costs,
}

/// A configuration chosen, with its true objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// The configuration.
    pub config: Config,
    /// The mean of its successful recorded runs' objective values.
    pub true_objective: f64,
    /// How much worse that is than the best configuration's, in percent.
    pub gap_to_best_pct: f64,
    /// The recommendation's reason, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The cost of the replayed strategy and of an exhaustive sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// The replayed strategy's.
    pub search: Cost,
    /// An exhaustive sweep's, replayed with the same runs per configuration and seed.
    pub exhaustive: Cost,
}

/// What a replayed sweep cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Runs made.
    pub runs: usize,
    /// Configurations measured.
    pub configs: usize,
    /// The recorded time of those runs, summed (seconds).
    pub summed_time_s: f64,
}

/// One run in the minimal form: the configuration's axes are among `other`, each absent one
/// as [`Family::new`]`(Policy::Os)` has it.
#[derive(Deserialize)]
struct Minimal {
    threads: usize,
    time_s: f64,
    #[serde(default = "yes")]
    ok: bool,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

fn yes() -> bool {
    true
}

impl Minimal {
    /// The run as a log line.
    fn into_line(mut self) -> Result<RunLine, String> {
        if self.threads == 0 {
            return Err("threads must be at least 1".to_owned());
        }
        let serde_json::Value::Object(mut axes) = serde_json::to_value(Family::new(Policy::Os))
            .expect("a family is plain data that serializes")
        else {
            unreachable!("a family serializes as an object");
        };
        for name in Family::field_names() {
            if let Some(value) = self.other.remove(*name) {
                axes.insert((*name).to_owned(), value);
            }
        }
        let family: Family =
            serde_json::from_value(serde_json::Value::Object(axes)).map_err(|e| e.to_string())?;
        if family.instances == 0 {
            return Err("instances must be at least 1".to_owned());
        }
        let wall = Duration::try_from_secs_f64(self.time_s)
            .map_err(|_| format!("time_s {} is not a number of seconds", self.time_s))?;
        let metrics = self
            .other
            .iter()
            .filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v)))
            .collect();
        #[allow(clippy::cast_precision_loss)]
        let throughput = family.instances as f64 / self.time_s.max(1e-12);
        let measurement = Measurement {
            wall,
            user: None,
            sys: None,
            voluntary_ctx_switches: None,
            involuntary_ctx_switches: None,
            migrations: None,
            migrations_source: MigrationSource::Unavailable,
            peak_rss_bytes: None,
            peak_rss_source: RssSource::Run,
            threads: Vec::new(),
        };
        let throughput = Throughput {
            value: throughput,
            unit: Unit::RunsPerSec,
        };
        let record = RunRecord::verified(measurement, throughput, metrics);
        let (status, error) = if self.ok {
            (Status::Ok, None)
        } else {
            (Status::Failed, Some("recorded as failed".to_owned()))
        };
        Ok(RunLine {
            seq: 0,
            config: family.at(self.threads),
            warmup: false,
            status,
            error,
            stderr_tail: None,
            record: Some(record),
            noise: Noise::default(),
            ended_at: 0.0,
        })
    }
}

/// One line of a replay file: coretune's own `runs.jsonl` line (it has a `status`), or the
/// minimal form.
fn parse_line(text: &str) -> Result<RunLine, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".to_owned());
    };
    if object.contains_key("status") {
        return serde_json::from_value(value).map_err(|e| format!("not a coretune run: {e}"));
    }
    for key in ["threads", "time_s"] {
        if !object.contains_key(key) {
            return Err(format!("no \"{key}\" (a run needs threads and time_s)"));
        }
    }
    serde_json::from_value::<Minimal>(value)
        .map_err(|e| e.to_string())?
        .into_line()
}

/// A stable hash of the seed and a configuration (FNV-1a over its text), for the first
/// recorded run it is handed.
fn offset(seed: u64, config: &Config) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for b in config.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

impl Replay {
    /// Reads recorded runs from a results folder or a JSON-lines file (see the module docs).
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`] when the file cannot be read; [`SweepError::Malformed`] naming the
    /// file and line of a line that is not a run, or the file when it holds no measured run;
    /// a folder's `sweep.json` errors as [`SweepSpec::read`] has them.
    pub fn read(source: &Path) -> Result<Self, SweepError> {
        let (file, spec) = if source.is_dir() {
            let spec = SweepSpec::read(&source.join("sweep.json"))?;
            (source.join("runs.jsonl"), Some(spec))
        } else {
            (source.to_path_buf(), None)
        };
        let lines = if spec.is_some() {
            RunLog::read(&file)?.lines().to_vec()
        } else {
            Self::read_file(&file)?
        };
        let lines: Vec<RunLine> = lines.into_iter().filter(|l| !l.warmup).collect();
        if lines.is_empty() {
            return Err(SweepError::Malformed {
                path: file,
                line: 0,
                message: "no measured run in it".to_owned(),
            });
        }
        let (grid, objectives, pus) = match spec {
            Some(spec) => (spec.design.grid, spec.design.objectives, spec.design.pus),
            None => {
                let grid = Grid::spanning(lines.iter().map(|line| &line.config));
                (grid, Vec::new(), BTreeMap::new())
            }
        };
        let mut runs: BTreeMap<Config, Vec<RunLine>> = BTreeMap::new();
        for line in lines {
            runs.entry(line.config.clone()).or_default().push(line);
        }
        Ok(Self {
            source: source.to_path_buf(),
            grid,
            objectives,
            runs,
            pus,
        })
    }

    /// Every line of a JSON-lines file as a run; blank lines are skipped.
    fn read_file(path: &Path) -> Result<Vec<RunLine>, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|error| SweepError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                parse_line(l).map_err(|message| SweepError::Malformed {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message,
                })
            })
            .collect()
    }

    /// The configurations the search chooses from.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// What the recorded sweep optimised (empty: wall time, or throughput with instances).
    pub fn objectives(&self) -> &[Objective] {
        &self.objectives
    }

    /// Recorded measured runs in all.
    pub fn recorded_runs(&self) -> usize {
        self.runs.values().map(Vec::len).sum()
    }

    /// Replays `design` (its grid replaced by the recording's, no warm-up, the recording's
    /// objectives and PUs per CPU set when it names none) with `seed`, and compares its
    /// recommendation with the exhaustive answer.
    ///
    /// # Errors
    ///
    /// [`SweepError::Malformed`] naming the source when no configuration has a successful
    /// recorded run (there is nothing to recommend).
    pub fn evaluate(&self, design: &Design, seed: u64) -> Result<ReplayReport, SweepError> {
        let mut design = design.clone();
        design.grid = self.grid.clone();
        design.warmup = 0;
        if design.objectives.is_empty() {
            design.objectives.clone_from(&self.objectives);
        }
        if design.pus.is_empty() {
            design.pus.clone_from(&self.pus);
        }
        let objectives = design.objectives();
        let objective = &objectives[0];
        let nothing = || SweepError::Malformed {
            path: self.source.clone(),
            line: 0,
            message: "no configuration has a successful recorded run: nothing to recommend"
                .to_owned(),
        };

        // The truth: every recorded run.
        let all: Vec<RunLine> = self.runs.values().flatten().cloned().collect();
        let summaries = summarize(&all, &objectives, design.ignore_failure);
        let truth: BTreeMap<&Config, f64> = summaries
            .iter()
            .filter(|s| s.out.is_none())
            .filter_map(|s| {
                let mean = s.objectives.first()?.as_ref()?.mean;
                Some((&s.config, objective.cost(mean)))
            })
            .collect();
        let (best, best_cost) = truth
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(c, v)| ((*c).clone(), *v))
            .ok_or_else(nothing)?;
        let exhaustive = recommend_on(
            &summaries,
            design.tolerance,
            &objectives,
            &pareto(&summaries, &objectives),
            None,
            &design.pus,
        )
        .ok_or_else(nothing)?;

        let (search_lines, search_cost) = self.replay(&design, seed)?;
        let search_summaries = summarize(&search_lines, &objectives, design.ignore_failure);
        let chosen = recommend_on(
            &search_summaries,
            design.tolerance,
            &objectives,
            &pareto(&search_summaries, &objectives),
            design.deciding_base(),
            &design.pus,
        )
        .ok_or_else(nothing)?;
        // The reference is the grid's bound: every configuration with `runs` runs, no deciding
        // runs (those are the search's cost, and `--exhaustive`'s beyond the bound).
        let mut all_of_it = design.clone();
        all_of_it.strategy = Strategy::Exhaustive;
        all_of_it.max_runs = 0;
        let exhaustive_cost = if all_of_it == design {
            search_cost.clone()
        } else {
            self.replay(&all_of_it, seed)?.1
        };

        let true_cost = |c: &Config| -> f64 {
            truth.get(c).copied().unwrap_or_else(|| {
                // Out of the running over all its runs, but recommended by the search (which
                // did not see the failed run): judged on its successful runs alone.
                true_of(&summaries, c, objective).unwrap_or(f64::INFINITY)
            })
        };
        let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
        let pick = |config: &Config, reason: Option<String>| {
            let cost = true_cost(config);
            Pick {
                config: config.clone(),
                true_objective: objective_value(objective, cost),
                gap_to_best_pct: pct(cost, best_cost),
                reason,
            }
        };
        let recommendation = pick(&chosen.config, Some(chosen.reason.clone()));
        let exhaustive_pick = pick(&exhaustive.config, Some(exhaustive.reason.clone()));
        Ok(ReplayReport {
            source: self.source.clone(),
            strategy: design.strategy,
            runs: design.runs,
            tolerance_pct: design.tolerance * 100.0,
            seed,
            objective: objective.name().to_owned(),
            unrecorded: self.unrecorded(),
            gap_pct: pct(true_cost(&chosen.config), true_cost(&exhaustive.config)),
            recommendation,
            exhaustive: exhaustive_pick,
            best: pick(&best, None),
            cost: Costs {
                search: search_cost,
                exhaustive: exhaustive_cost,
            },
        })
    }

    /// Configurations of the grid with no recorded run.
    pub fn unrecorded(&self) -> usize {
        self.grid
            .configs()
            .iter()
            .filter(|c| !self.runs.contains_key(c))
            .count()
    }

    /// Runs `design` through the engine on the recorded runs: the log it made, and its cost.
    fn replay(&self, design: &Design, seed: u64) -> Result<(Vec<RunLine>, Cost), SweepError> {
        let mut log = RunLog::in_memory();
        let mut served: BTreeMap<Config, u64> = BTreeMap::new();
        let mut summed = 0.0;
        execute(
            design,
            None,
            &mut log,
            &mut |c| {
                let Some(runs) = self.runs.get(c) else {
                    return Outcome::Failed("not recorded".to_owned());
                };
                let k = served.entry(c.clone()).or_insert(0);
                let n = runs.len() as u64;
                let i = usize::try_from(offset(seed, c).wrapping_add(*k) % n).unwrap_or(0);
                *k += 1;
                let line = &runs[i];
                summed += line
                    .record
                    .as_ref()
                    .map_or(0.0, |r| r.measurement.wall.as_secs_f64());
                outcome(line)
            },
            &mut |_| {},
            &|| false,
        )?;
        let lines = log.lines().to_vec();
        let configs: BTreeSet<&Config> = lines.iter().map(|l| &l.config).collect();
        let cost = Cost {
            runs: lines.len(),
            configs: configs.len(),
            summed_time_s: summed,
        };
        Ok((lines, cost))
    }
}

/// The true cost of `config` from its successful runs, whether or not it is in the running.
fn true_of(summaries: &[ConfigSummary], config: &Config, objective: &Objective) -> Option<f64> {
    let s = summaries.iter().find(|s| &s.config == config)?;
    Some(objective.cost(s.objectives.first()?.as_ref()?.mean))
}

/// A cost back as the objective's value (the inverse of [`Objective::cost`]).
fn objective_value(objective: &Objective, cost: f64) -> f64 {
    if objective.higher_is_better && cost > 0.0 {
        1.0 / cost
    } else {
        cost
    }
}

/// The recorded run handed back as the runner's outcome.
fn outcome(line: &RunLine) -> Outcome {
    let why = || line.error.clone().unwrap_or_else(|| "failed".to_owned());
    match (line.status, &line.record) {
        (Status::Timeout, _) => Outcome::Timeout,
        // Unverified and mismatched runs carry their record, which says so.
        (Status::Ok | Status::Unverified | Status::Mismatch, Some(r)) => {
            let mut r = r.clone();
            if line.status == Status::Mismatch && r.audit.as_ref().is_none_or(|a| a.is_clean()) {
                return Outcome::Failed(why());
            }
            if line.status == Status::Unverified {
                r.verified = false;
            }
            Outcome::Done(r)
        }
        (Status::Ok, None) => Outcome::Failed("recorded without measurements".to_owned()),
        _ => Outcome::ProgramFailed {
            error: why(),
            stderr_tail: line.stderr_tail.clone(),
        },
    }
}

#[cfg(test)]
mod test {
    use std::io::Write as _;

    use super::*;

    /// `tests/data/replay/hand-made.jsonl`: an exhaustive sweep of 1, 2, 4, 8 threads × os,
    /// compact, 3 runs each with ±1% spread; compact at 4 threads (1.2 s) is the fastest by
    /// 20%, beyond the tolerance.
    fn hand_made() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/replay/hand-made.jsonl")
    }

    fn design(strategy: Strategy) -> Design {
        // The grid is replaced by the recording's.
        let mut d = Design::one(&config(1, "os"), 3, 0);
        d.strategy = strategy;
        d
    }

    fn config(threads: usize, place: &str) -> Config {
        Config::new(threads, place.parse().unwrap())
    }

    #[test]
    fn the_exhaustive_answer_of_a_hand_made_sweep_is_found_by_the_search() {
        let replay = Replay::read(&hand_made()).unwrap();
        assert_eq!(replay.grid().threads, vec![1, 2, 4, 8]);
        assert_eq!(replay.grid().configs().len(), 8);
        assert_eq!(replay.recorded_runs(), 24);
        assert_eq!(replay.unrecorded(), 0);
        for strategy in [Strategy::Search, Strategy::Exhaustive] {
            let report = replay.evaluate(&design(strategy), 7).unwrap();
            let best = config(4, "compact");
            assert_eq!(report.exhaustive.config, best, "{strategy:?}");
            assert_eq!(report.best.config, best);
            assert_eq!(report.recommendation.config, best, "{strategy:?}");
            assert!(report.gap_pct.abs() < 1e-9);
            assert!((report.best.true_objective - 1.2).abs() < 1e-9);
            // Exhaustive replay: every configuration, 3 runs each.
            assert_eq!(report.cost.exhaustive.runs, 24);
            assert_eq!(report.cost.exhaustive.configs, 8);
            assert!(report.cost.search.runs <= report.cost.exhaustive.runs);
        }
        // The search explores with one run and measures only the contenders fully.
        let search = replay.evaluate(&design(Strategy::Search), 7).unwrap();
        assert!(search.cost.search.runs < search.cost.exhaustive.runs);
    }

    #[test]
    fn a_slower_pick_has_a_positive_gap() {
        // os at 2 threads is within the 3% tolerance of compact at 4 (2.0 vs 1.95) and simpler:
        // the rule picks it, and its true objective is 2.6% slower than the best.
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for (threads, place, t) in [(2, "os", 2.0), (4, "compact", 1.95), (1, "os", 4.0)] {
            for spread in [0.999, 1.0, 1.001] {
                writeln!(
                    f,
                    r#"{{"threads":{threads},"place":"{place}","time_s":{}}}"#,
                    t * spread
                )
                .unwrap();
            }
        }
        let replay = Replay::read(f.path()).unwrap();
        // The grid is every combination: 1, 2, 4 × os, compact, of which three are recorded.
        assert_eq!(replay.unrecorded(), 3);
        let report = replay.evaluate(&design(Strategy::Exhaustive), 0).unwrap();
        assert_eq!(report.recommendation.config, config(2, "os"));
        assert_eq!(report.best.config, config(4, "compact"));
        assert!((report.recommendation.gap_to_best_pct - (2.0 / 1.95 - 1.0) * 100.0).abs() < 1e-9);
        assert!(
            report.gap_pct.abs() < 1e-9,
            "the same rule on all runs picks the same"
        );
        // The unrecorded configurations cost a run each and nothing else.
        assert_eq!(report.cost.exhaustive.runs, 9 + 3);
        assert!((report.cost.exhaustive.summed_time_s - 3.0 * (2.0 + 1.95 + 4.0)).abs() < 1e-9);
    }

    #[test]
    fn a_tie_within_the_tolerance_is_taken_only_once_more_runs_show_it() {
        // 2 threads is 1.5% slower than 4 by median, each with about 1% spread: three runs
        // cannot show the tie within 3% (the bound is near 4%), ten can (near 2.5%).
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let wobble = [0.99, 1.0, 1.01, 0.995, 1.005, 0.985, 1.015, 1.0, 0.99, 1.01];
        for (threads, base) in [(1, 2.0), (2, 1.015), (4, 1.0)] {
            for w in wobble {
                let t = base * w;
                writeln!(f, r#"{{"threads":{threads},"place":"os","time_s":{t}}}"#).unwrap();
            }
        }
        let replay = Replay::read(f.path()).unwrap();
        let mut unshown = 0;
        for seed in 0..20 {
            let mut d = design(Strategy::Exhaustive);
            let old = replay.evaluate(&d, seed).unwrap();
            let old_reason = old.recommendation.reason.clone().unwrap();
            d.max_runs = 10;
            let new = replay.evaluate(&d, seed).unwrap();
            let reason = new.recommendation.reason.clone().unwrap();
            if old_reason.contains("cannot show it within the 3% tolerance") {
                // Without more runs the fastest, 4 threads, is recommended; with them, the tie.
                unshown += 1;
                assert_eq!(old.recommendation.config, config(4, "os"), "{old_reason}");
                assert_eq!(old.cost.search.runs, 9, "3 runs each, no more");
                assert_eq!(
                    new.recommendation.config,
                    config(2, "os"),
                    "seed {seed}: {reason}"
                );
                assert!(reason.contains("at most"), "{reason}");
                assert!(reason.contains("Decided by more runs"), "{reason}");
                // The extra runs are the replay's cost: 1 thread is no question.
                assert!(new.cost.search.runs > old.cost.search.runs);
                assert!(new.cost.search.runs <= 3 + 10 + 10);
            } else {
                assert_eq!(new, old, "seed {seed}: no question, no more runs");
            }
        }
        assert!(unshown > 0, "no seed left the tie unshown with 3 runs");
    }

    #[test]
    fn recorded_runs_cycle_in_an_order_fixed_by_the_seed() {
        let replay = Replay::read(&hand_made()).unwrap();
        let mut d = design(Strategy::Exhaustive);
        d.runs = 7; // more than the 3 recorded: they cycle
        d.grid = replay.grid().clone();
        let order = |seed| {
            let (lines, _) = replay.replay(&d, seed).unwrap();
            lines
                .iter()
                .filter(|l| l.config == config(4, "compact"))
                .map(|l| l.wall_s().unwrap())
                .collect::<Vec<f64>>()
        };
        let a = order(1);
        assert_eq!(a.len(), 7);
        assert_eq!(a, order(1), "the same seed, the same runs");
        for i in 3..7 {
            assert_eq!(a[i], a[i - 3], "run {i} is run {} again", i - 3);
        }
        let firsts: BTreeSet<u64> = (0..16).map(|s| order(s)[0].to_bits()).collect();
        assert!(
            firsts.len() > 1,
            "seeds start at different runs: {firsts:?}"
        );
        assert_eq!(
            replay.evaluate(&d, 5).unwrap(),
            replay.evaluate(&d, 5).unwrap()
        );
    }

    #[test]
    fn the_minimal_form_reads_every_axis_and_keeps_other_numbers_as_metrics() {
        let line = parse_line(
            r#"{"threads": 2, "time_s": 0.5, "mem": "local", "instances": 2, "throttle": 1,
                "instructions": 3e9}"#,
        )
        .unwrap();
        let want = Family::new(Policy::Os)
            .with_throttle(crate::grid::ThrottleSpec::Limit(1))
            .with_mem("local".parse().unwrap())
            .with_instances(2)
            .at(2);
        assert_eq!(line.config, want);
        let record = line.record.unwrap();
        // The axes are not metrics; two copies in 0.5 s are 4 runs a second.
        assert_eq!(record.metrics.keys().collect::<Vec<_>>(), ["instructions"]);
        assert!((record.throughput.value - 4.0).abs() < 1e-9);
        let e = parse_line(r#"{"threads": 1, "time_s": 1.0, "instances": 0}"#).unwrap_err();
        assert_eq!(e, "instances must be at least 1");
    }

    #[test]
    fn a_bad_line_is_refused_naming_the_file_and_line() {
        for (bad, says) in [
            ("not json", "not JSON"),
            (r#"{"threads": 2, "place": "os"}"#, "time_s"),
            (r#"{"place": "os", "time_s": 1.0}"#, "threads"),
            (
                r#"{"threads": 2, "place": "nowhere", "time_s": 1.0}"#,
                "nowhere",
            ),
            (
                r#"{"threads": 0, "time_s": 1.0}"#,
                "threads must be at least 1",
            ),
            ("[1, 2]", "not a JSON object"),
        ] {
            let mut f = tempfile::NamedTempFile::new().unwrap();
            writeln!(f, r#"{{"threads": 1, "time_s": 1.0}}"#).unwrap();
            writeln!(f).unwrap();
            writeln!(f, "{bad}").unwrap();
            let e = Replay::read(f.path()).unwrap_err().to_string();
            let at = format!("{}:3: ", f.path().display());
            assert!(e.starts_with(&at), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = Replay::read(Path::new("/nonexistent/runs.jsonl")).unwrap_err();
        assert!(
            e.to_string().starts_with("/nonexistent/runs.jsonl: "),
            "{e}"
        );
    }

    #[test]
    fn coretune_lines_are_read_and_failed_runs_never_recommended() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let line = |threads: usize, wall: f64, status: &str, warmup: bool| {
            let mut l = RunLine {
                seq: 0,
                config: config(threads, "os"),
                warmup,
                status: Status::Ok,
                error: None,
                stderr_tail: None,
                record: Some(crate::sweep::test::record(wall, 0)),
                noise: Noise::default(),
                ended_at: 0.0,
            };
            if status == "failed" {
                l.status = Status::Failed;
                l.record = None;
                l.error = Some("exited with status 1".to_owned());
            }
            serde_json::to_string(&l).unwrap()
        };
        writeln!(f, "{}", line(1, 9.0, "ok", true)).unwrap();
        for _ in 0..3 {
            writeln!(f, "{}", line(1, 2.0, "ok", false)).unwrap();
            writeln!(f, "{}", line(2, 1.0, "ok", false)).unwrap();
        }
        writeln!(f, "{}", line(2, 0.0, "failed", false)).unwrap();
        // The minimal form mixes in.
        writeln!(f, r#"{{"threads": 4, "time_s": 1.5}}"#).unwrap();
        let replay = Replay::read(f.path()).unwrap();
        assert_eq!(replay.recorded_runs(), 8, "the warm-up run is left out");
        let report = replay.evaluate(&design(Strategy::Exhaustive), 3).unwrap();
        assert_eq!(report.exhaustive.config, config(4, "os"));
        assert_eq!(report.best.config, config(4, "os"));
    }
}
