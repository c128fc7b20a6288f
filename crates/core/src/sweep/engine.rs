//! The engine: [`Sweep::execute`] runs a [`Design`](super::design::Design) in stages and rounds,
//! logging every run ([`Progress`] after each), and the questions asked of a log (complete?
//! how many runs planned? which configurations are out of the running?).
//!
//! A stage is a list of configurations, each with the measured runs it should have: the
//! search's exploring stages ask for one run each, its contenders and every configuration of an
//! exhaustive sweep for `Design::runs` (and `--min-time`'s). After the search's stages come the
//! deciding stages (`Design::max_runs`): each measures the simpler configuration whose tie with
//! the fastest is undecided and the fastest (`search::undecided`) once more, in a fixed order,
//! so that their runs alternate, up to `max_runs` each for this comparison (one that already
//! has them, from an earlier comparison, keeps them and the other catches up); every stage is
//! decided from the log alone, so a resumed sweep continues them.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::design::Design;
use super::error::SweepError;
use super::files;
use super::log::{Outcome, RunLine, RunLog, Status};
use super::objective::Objective;
use super::run::Runner;
use super::search::{self, Estimate, Strategy};
use super::target::SweepSpec;
use crate::grid::Config;
use crate::measure::{NoiseProbe, Summary};
use crate::program::watch::Sample;

/// A sweep: what it measures and every run made so far, kept in memory or in a results folder
/// ([`SweepFolder`](super::SweepFolder)). [`Sweep::execute`] is how every sweep runs: `tune`'s in a folder,
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
                    if let Err(e) = files::save_monitor(dir, p.line.seq, &s) {
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

/// Whether a sweep with `plan` and the runs `lines` is complete: continuing it would make no
/// run. The plan is executed on a copy of the log until it asks for its first run.
pub(crate) fn is_complete(plan: &Design, lines: &[RunLine]) -> bool {
    let mut log = RunLog::of_lines(lines.to_vec());
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
/// `None` when the search or `--min-time` decides it from the results, and once deciding runs
/// (`Design::max_runs`) have begun: how many more the tie needs is not known. The runs planned
/// before them do not count the deciding runs a tie may need at the end.
pub(crate) fn planned_runs(plan: &Design, lines: &[RunLine]) -> Option<usize> {
    if plan.strategy != Strategy::Exhaustive || !plan.min_time.is_zero() {
        return None;
    }
    let made = |c: &Config| lines.iter().filter(|l| &l.config == c && !l.warmup).count();
    let configs = plan.grid.configs();
    if configs.iter().any(|c| made(c) > plan.runs) {
        return None;
    }
    Some(
        configs
            .iter()
            .map(|c| {
                if is_out(lines, c, plan.ignore_failure) {
                    made(c)
                } else {
                    made(c).max(plan.runs)
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
#[cfg(test)]
pub(crate) fn estimates(
    lines: &[RunLine],
    objective: &Objective,
    ignore_failure: bool,
) -> BTreeMap<Config, Estimate> {
    estimates_cached(lines, objective, ignore_failure, &mut BTreeMap::new())
}

/// [`estimates`], reusing from `cache` the estimate of every configuration whose number of
/// values has not changed since it was made (a log only grows, so the same count is the same
/// values): a stage of the deciding runs changes two configurations, and a bootstrap interval
/// for each of the others at every stage would cost more than a replayed run.
fn estimates_cached(
    lines: &[RunLine],
    objective: &Objective,
    ignore_failure: bool,
    cache: &mut BTreeMap<Config, (usize, Estimate)>,
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
        .filter_map(|(c, v)| {
            if let Some((n, e)) = cache.get(&c) {
                if *n == v.len() {
                    return Some((c, *e));
                }
            }
            let e = objective.estimate(&Summary::of(&v)?);
            cache.insert(c.clone(), (v.len(), e));
            Some((c, e))
        })
        .collect()
}

/// The configurations a deciding stage measures once more each (`search::undecided`: a simpler
/// configuration whose tie with the fastest is undecided, and the fastest), when `plan` allows
/// more runs ([`Design::max_runs`]): of the two, those in the running with fewer measured runs
/// than that. The bound is per comparison: a fastest that got its runs deciding an earlier tie
/// keeps them, and the other is measured until it has as many. `None`: the sweep is complete.
fn undecided_pair(
    plan: &Design,
    lines: &[RunLine],
    measured: &BTreeMap<Config, Estimate>,
) -> Option<Vec<Config>> {
    if plan.max_runs <= plan.runs {
        return None;
    }
    let below = |c: &Config| {
        !is_out(lines, c, plan.ignore_failure)
            && lines.iter().filter(|l| &l.config == c && !l.warmup).count() < plan.max_runs
    };
    let in_running = |c: &Config| !is_out(lines, c, plan.ignore_failure);
    let over = |c: &Config| plan.oversubscribed(c).is_some();
    let (a, b) = search::undecided(measured, plan.tolerance, &over, &|a, b| {
        in_running(a) && in_running(b) && (below(a) || below(b))
    })?;
    Some([a, b].into_iter().filter(|c| below(c)).collect())
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
    let mut cache = BTreeMap::new();
    for stage in 0.. {
        if stop() {
            return Err(SweepError::Interrupted);
        }
        let count = |lines: &[RunLine], c: &Config, warm: bool| {
            lines
                .iter()
                .filter(|l| &l.config == c && l.warmup == warm)
                .count()
        };
        // Tried: measured, or out of the running (a configuration with only its warm-up run
        // made, in an interrupted sweep, is asked for again and makes its measured runs).
        let tried: BTreeSet<Config> = log
            .lines()
            .iter()
            .filter(|l| !l.warmup || is_out(log.lines(), &l.config, plan.ignore_failure))
            .map(|l| l.config.clone())
            .collect();
        let measured = estimates_cached(log.lines(), &objective, plan.ignore_failure, &mut cache);
        let mut configs: Vec<(Config, usize)> = search::next_configs(
            &plan.grid,
            plan.strategy,
            &measured,
            &tried,
            plan.tolerance,
            plan.runs,
        );
        // Configurations of earlier stages that still lack runs (an interrupted sweep): every
        // configuration of an exhaustive sweep, and the search's contenders (those with more
        // than the one run it explores with).
        let started = match plan.strategy {
            Strategy::Exhaustive => 0,
            Strategy::Search => 2,
        };
        for c in &tried {
            let n = count(log.lines(), c, false);
            if !configs.iter().any(|(d, _)| d == c)
                && !is_out(log.lines(), c, plan.ignore_failure)
                && n >= started
                && n < plan.runs
            {
                configs.push((c.clone(), plan.runs));
            }
        }
        // The deciding stage: the search is done, but a simpler configuration's tie with the
        // fastest is undecided (`search::undecided`): one more run of each of the two.
        let deciding = configs.is_empty();
        if deciding {
            let Some(pair) = undecided_pair(plan, log.lines(), &measured) else {
                return Ok(());
            };
            // Each gets one run more, or (resumed after only the first of a pair ran) the
            // other the run it lacks: the pair stays in step.
            let made: Vec<usize> = pair.iter().map(|c| count(log.lines(), c, false)).collect();
            let most = made.iter().copied().max().unwrap_or(0);
            let want = most + usize::from(made.iter().all(|&n| n == most));
            configs = pair.into_iter().map(|c| (c, want)).collect();
        }
        configs.sort();
        for round in 0.. {
            let needs = |lines: &[RunLine], c: &Config, want: usize| -> Option<bool> {
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
                // `--min-time` is for the runs that are compared, not the search's one-run
                // exploration.
                let timed = want >= plan.runs && !deciding;
                (n < want || (timed && time < plan.min_time.as_secs_f64() && n < max_runs))
                    .then_some(false)
            };
            let mut todo: Vec<(Config, bool)> = configs
                .iter()
                .filter_map(|(c, want)| needs(log.lines(), c, *want).map(|w| (c.clone(), w)))
                .collect();
            if todo.is_empty() {
                if round == 0 {
                    // Nothing of this stage can run, and the next stage would be this one again
                    // (it depends only on the log): the sweep is as complete as it can be.
                    return Ok(());
                }
                break;
            }
            // A deciding stage's two runs keep one order (A, B, A, B…): interleaved alike.
            if !deciding {
                shuffle(&mut todo, (stage as u64) << 32 | round as u64);
            }
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
