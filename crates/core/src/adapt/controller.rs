//! The controller: a state machine fed one [`Observation`] per interval, answering which
//! setting to apply next and why ([`Step`]). It knows no program, clock or OS: the session
//! feeds it, and the unit tests feed it simulated services. The rules, and why each is there,
//! are in the module documentation of `adapt`.

use serde::{Deserialize, Serialize};

use super::setting::{Setting, Space};
use crate::measure::stats::{bootstrap_median_ci, mad, median};

/// Which way the figure is better.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Higher is better (throughput, CPU progress).
    #[default]
    Max,
    /// Lower is better (latency, time per operation).
    Min,
}

/// The controller's parameters; [`Tuning::default`] says where each default comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    /// Which way the figure is better.
    pub direction: Direction,
    /// A gain or loss smaller than this share is a tie (0.03: `tune`'s default tolerance).
    pub tolerance: f64,
    /// The latency bound (`--p99-max`): a probe whose latency exceeds it is rolled back at
    /// once; an incumbent above it for `step_window` intervals in a row is re-explored from.
    pub bound: Option<f64>,
    /// Intervals not counted after each change of the applied setting (the program moving
    /// over, caches refilling).
    pub settle: usize,
    /// Counted intervals per block of a trial.
    pub block: usize,
    /// Counted intervals of the incumbent needed before a probe (and after a re-exploration).
    pub baseline: usize,
    /// Counted intervals a newly accepted setting is held before anything else is probed.
    pub dwell: usize,
    /// A change of the incumbent's figure larger than this share, seen in `step_window`
    /// intervals in a row, is a step change (load, neighbours): everything is probed again.
    pub step: f64,
    /// Intervals in a row that make a step change (and a bound broken by the incumbent).
    pub step_window: usize,
    /// Intervals after convergence before the neighbours are probed again.
    pub recheck: usize,
    /// The share of intervals that may be spent on probes, over the long run.
    pub budget_share: f64,
    /// The probe intervals that may be spent at once (the budget's bucket).
    pub budget_burst: f64,
}

impl Default for Tuning {
    /// Tolerance 3% (`tune`'s); 1 interval to settle; blocks of 2, so a trial is 3 blocks of 3
    /// intervals (probe, incumbent, probe), 5 when the probe is better so far (at most 9 on
    /// the probe); a baseline of 4; a dwell of 6 (an accepted setting stays at least a trial
    /// and a dwell: ≤ 1 change per 21 intervals, 42 s at 2 s); a step is 15% (5 times the
    /// tolerance) in 3 intervals in a row; a recheck every 150 intervals (5 minutes at 2 s); a
    /// budget of 20% of the intervals, 24 at once (2 full trials and more: what a bad start
    /// needs to reach its best neighbour).
    fn default() -> Self {
        Self {
            direction: Direction::Max,
            tolerance: 0.03,
            bound: None,
            settle: 1,
            block: 2,
            baseline: 4,
            dwell: 6,
            step: 0.15,
            step_window: 3,
            recheck: 150,
            budget_share: 0.2,
            budget_burst: 24.0,
        }
    }
}

/// What was measured over one interval under the setting applied.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observation {
    /// The figure, or `None` when it could not be had (a probe command that failed).
    pub figure: Option<f64>,
    /// The latency the bound applies to, when there is one.
    pub latency: Option<f64>,
}

/// What the controller decided after an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The incumbent stays applied and is measured.
    Hold,
    /// A trial of a neighbour: started, or going on (its blocks and the incumbent's between
    /// them).
    Probe,
    /// The neighbour probed is better beyond noise: it is the incumbent now.
    Accept,
    /// The trial ends with the incumbent applied again: the neighbour was worse, broke the
    /// bound, tied, or gave no figure.
    Rollback,
    /// The incumbent's figure changed by a step (or it broke the bound): its neighbours are
    /// probed again.
    ReExplore,
    /// No figure this interval: nothing counted.
    Skip,
}

impl Decision {
    /// Its name in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Hold => "hold",
            Decision::Probe => "probe",
            Decision::Accept => "accept",
            Decision::Rollback => "rollback",
            Decision::ReExplore => "re-explore",
            Decision::Skip => "skip",
        }
    }
}

/// The answer to one observation.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What was decided.
    pub decision: Decision,
    /// Why, in words.
    pub reason: String,
    /// The setting to apply now, when it changes.
    pub apply: Option<Setting>,
}

impl Step {
    fn new(decision: Decision, reason: impl Into<String>) -> Self {
        Self {
            decision,
            reason: reason.into(),
            apply: None,
        }
    }

    fn applying(mut self, setting: &Setting) -> Self {
        self.apply = Some(setting.clone());
        self
    }
}

/// A trial of one neighbour: probe, incumbent, probe blocks; two more (incumbent, probe) to
/// confirm a probe that is better so far.
#[derive(Clone, Debug)]
struct Trial {
    probe: Setting,
    /// 0, 2 and 4: the probe's blocks; 1 and 3: the incumbent's.
    block: usize,
    /// Counted intervals in the current block.
    counted: usize,
    /// The probe's counted figures.
    probe_figures: Vec<f64>,
    /// The incumbent's: its last `baseline` before the trial, and its block within it.
    incumbent_figures: Vec<f64>,
}

/// The controller: see the module documentation.
#[derive(Clone, Debug)]
pub struct Controller {
    tuning: Tuning,
    space: Space,
    incumbent: Setting,
    applied: Setting,
    trial: Option<Trial>,
    /// Intervals since the applied setting last changed.
    since_switch: usize,
    /// The incumbent's counted figures since it became the incumbent (or since the last
    /// re-exploration), the newest last.
    history: Vec<f64>,
    /// Counted incumbent intervals since it was last applied again.
    held: usize,
    /// How many `held` the next trial waits for.
    hold_needed: usize,
    /// Neighbours probed since the last exploration began (and the incumbent just left).
    tried: Vec<Setting>,
    /// The interval at which every neighbour had been tried.
    converged_at: Option<usize>,
    /// Incumbent intervals in a row above the bound.
    over_bound: usize,
    tokens: f64,
    intervals: usize,
    probe_intervals: usize,
    trials: usize,
    changes: usize,
}

/// Most incumbent figures kept (the step test reads the last few dozen).
const HISTORY: usize = 64;

impl Controller {
    /// A controller starting from `start`, the setting applied now, moving within `space`.
    pub fn new(tuning: Tuning, space: Space, start: Setting) -> Self {
        let tokens = tuning.budget_burst;
        let hold_needed = tuning.baseline;
        Self {
            tuning,
            space,
            applied: start.clone(),
            incumbent: start,
            trial: None,
            since_switch: 0,
            history: Vec::new(),
            held: 0,
            hold_needed,
            tried: Vec::new(),
            converged_at: None,
            over_bound: 0,
            tokens,
            intervals: 0,
            probe_intervals: 0,
            trials: 0,
            changes: 0,
        }
    }

    /// The setting applied now.
    pub fn applied(&self) -> &Setting {
        &self.applied
    }

    /// The best setting known: the one applied outside trials.
    pub fn incumbent(&self) -> &Setting {
        &self.incumbent
    }

    /// Intervals observed.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// Intervals spent on a probe's setting.
    pub fn probe_intervals(&self) -> usize {
        self.probe_intervals
    }

    /// Trials begun.
    pub fn trials(&self) -> usize {
        self.trials
    }

    /// Accepted changes of the incumbent.
    pub fn changes(&self) -> usize {
        self.changes
    }

    /// The probe intervals a full trial spends.
    #[allow(clippy::cast_precision_loss)] // a few intervals
    fn trial_cost(&self) -> f64 {
        (3 * (self.tuning.settle + self.tuning.block)) as f64
    }

    /// Takes the figure of the interval just ended (measured under [`Controller::applied`])
    /// and answers what to do now.
    pub fn observe(&mut self, obs: Observation) -> Step {
        self.intervals += 1;
        self.tokens = (self.tokens + self.tuning.budget_share).min(self.tuning.budget_burst);
        let on_probe = self.applied != self.incumbent;
        if on_probe {
            self.probe_intervals += 1;
            self.tokens -= 1.0;
        }
        let settling = self.since_switch < self.tuning.settle;
        self.since_switch += 1;
        if self.trial.is_some() {
            self.observe_trial(obs, on_probe, settling)
        } else {
            self.observe_incumbent(obs, settling)
        }
    }

    fn switch_to(&mut self, setting: Setting) {
        self.applied = setting;
        self.since_switch = 0;
    }

    fn roll_back(&mut self, reason: String) -> Step {
        self.trial = None;
        let incumbent = self.incumbent.clone();
        let switched = self.applied != incumbent;
        if switched {
            self.switch_to(incumbent.clone());
        }
        self.held = 0;
        self.hold_needed = self.tuning.block;
        let step = Step::new(Decision::Rollback, reason);
        if switched {
            step.applying(&incumbent)
        } else {
            step
        }
    }

    fn is_over_bound(&self, obs: &Observation) -> bool {
        matches!((obs.latency, self.tuning.bound), (Some(l), Some(b)) if l > b)
    }

    fn observe_trial(&mut self, obs: Observation, on_probe: bool, settling: bool) -> Step {
        if on_probe && self.is_over_bound(&obs) {
            return self.roll_back(format!(
                "the probe's latency {} is above the bound {}",
                show(obs.latency.unwrap_or(f64::NAN)),
                show(self.tuning.bound.unwrap_or(f64::NAN))
            ));
        }
        let Some(figure) = obs.figure else {
            return self.roll_back("no figure during the trial".to_owned());
        };
        let Some(trial) = self.trial.as_mut() else {
            return Step::new(Decision::Hold, "no trial");
        };
        if settling {
            return Step::new(Decision::Probe, format!("{}: settling", trial_part(trial)));
        }
        trial.counted += 1;
        if on_probe {
            trial.probe_figures.push(figure);
        } else {
            trial.incumbent_figures.push(figure);
            self.history.push(figure);
        }
        let (probe, incumbent) = (trial.probe_figures.clone(), trial.incumbent_figures.clone());
        // A step of the incumbent's own figure during the trial (a neighbour started, the load
        // changed): the trial compares two different machines, so it is dropped and
        // everything probed again.
        if !on_probe && let Some(reason) = self.step_change() {
            self.trial = None;
            return self.re_explore(format!("{reason}; the trial under way is dropped"));
        }
        let Some(trial) = self.trial.as_mut() else {
            return Step::new(Decision::Hold, "no trial");
        };
        let tolerance = self.tuning.tolerance;
        let direction = self.tuning.direction;
        if on_probe
            && probe.len() >= self.tuning.block
            && let Some(loss) = beyond_noise(&incumbent, &probe, direction, tolerance)
        {
            return self.roll_back(format!(
                "worse beyond noise: {} against {} ({:.1}% worse)",
                median_text(&probe),
                median_text(&incumbent),
                loss * 100.0
            ));
        }
        if trial.counted < self.tuning.block {
            return Step::new(Decision::Probe, trial_part(trial));
        }
        trial.block += 1;
        trial.counted = 0;
        let verdict = || beyond_noise(&probe, &incumbent, direction, tolerance);
        // A gain so far beyond noise after the first pair that confirming it only delays it.
        let far = (trial.block == 3)
            .then(|| far_beyond_noise(&probe, &incumbent, direction, tolerance))
            .flatten();
        match trial.block {
            3 if let Some(gain) = far => self.accept(&probe, &incumbent, gain, "far beyond noise"),
            1 | 3 if trial.block == 1 || verdict().is_some() => {
                let first = trial.block == 1;
                let incumbent = self.incumbent.clone();
                self.switch_to(incumbent.clone());
                let why = if first {
                    "re-measuring the incumbent between probe blocks"
                } else {
                    "better so far: re-measuring the incumbent to confirm"
                };
                Step::new(Decision::Probe, why).applying(&incumbent)
            }
            2 | 4 => {
                let probe = trial.probe.clone();
                self.switch_to(probe.clone());
                Step::new(Decision::Probe, "the probe's next block").applying(&probe)
            }
            _ => match verdict().filter(|_| trial.block > 3) {
                Some(gain) => self.accept(&probe, &incumbent, gain, "beyond noise"),
                None => self.roll_back(format!(
                    "no gain beyond noise ({} against {}): a tie stays with the incumbent",
                    median_text(&probe),
                    median_text(&incumbent)
                )),
            },
        }
    }

    /// The probe applied now is the incumbent.
    fn accept(&mut self, probe: &[f64], incumbent: &[f64], gain: f64, how: &str) -> Step {
        let old = std::mem::replace(&mut self.incumbent, self.applied.clone());
        self.trial = None;
        self.changes += 1;
        self.history = probe.to_vec();
        self.held = 0;
        self.hold_needed = self.tuning.dwell;
        self.tried = vec![old];
        self.converged_at = None;
        Step::new(
            Decision::Accept,
            format!(
                "better {how}: {} against {} ({:.1}% better)",
                median_text(probe),
                median_text(incumbent),
                gain * 100.0
            ),
        )
    }

    fn observe_incumbent(&mut self, obs: Observation, settling: bool) -> Step {
        let Some(figure) = obs.figure else {
            return Step::new(Decision::Skip, "no figure");
        };
        if settling {
            return Step::new(Decision::Hold, "settling after a change");
        }
        self.history.push(figure);
        if self.history.len() > HISTORY {
            self.history.remove(0);
        }
        self.held += 1;
        self.over_bound = if self.is_over_bound(&obs) {
            self.over_bound + 1
        } else {
            0
        };
        if self.over_bound >= self.tuning.step_window {
            self.over_bound = 0;
            return self.re_explore(format!(
                "the incumbent's latency is above the bound {} for {} intervals",
                show(self.tuning.bound.unwrap_or(f64::NAN)),
                self.tuning.step_window
            ));
        }
        if let Some(reason) = self.step_change() {
            return self.re_explore(reason);
        }
        if self.held < self.hold_needed || self.history.len() < self.tuning.baseline {
            return Step::new(Decision::Hold, "measuring the incumbent");
        }
        if let Some(at) = self.converged_at {
            if self.intervals - at < self.tuning.recheck {
                return Step::new(Decision::Hold, "converged: every neighbour was tried");
            }
            self.converged_at = None;
            self.tried.clear();
        }
        let next = self
            .space
            .neighbours(&self.incumbent)
            .into_iter()
            .find(|n| !self.tried.contains(n));
        let Some(probe) = next else {
            self.converged_at = Some(self.intervals);
            return Step::new(Decision::Hold, "converged: every neighbour was tried");
        };
        if self.tokens < self.trial_cost() {
            return Step::new(Decision::Hold, "the probe budget is spent for now");
        }
        let start = self.history.len().saturating_sub(self.tuning.baseline);
        self.trial = Some(Trial {
            probe: probe.clone(),
            block: 0,
            counted: 0,
            probe_figures: Vec::new(),
            incumbent_figures: self.history[start..].to_vec(),
        });
        self.tried.push(probe.clone());
        self.trials += 1;
        self.switch_to(probe.clone());
        Step::new(Decision::Probe, format!("probing {probe}")).applying(&probe)
    }

    /// Everything is probed again from the incumbent, measured afresh.
    fn re_explore(&mut self, reason: String) -> Step {
        let keep = self.history.len().saturating_sub(self.tuning.step_window);
        self.history.drain(..keep);
        self.tried.clear();
        self.converged_at = None;
        self.held = self.history.len();
        self.hold_needed = self.tuning.baseline;
        Step::new(Decision::ReExplore, reason)
    }

    /// A step change of the incumbent's figure: its last `step_window` figures all more than
    /// `step` away from the median of those before them (at most `2 × baseline` of them), on
    /// the same side. The median, not the range, of the ones before: a step seen in the middle
    /// of a trial has some of its figures among them already.
    fn step_change(&self) -> Option<String> {
        let k = self.tuning.step_window;
        let n = self.history.len();
        if n < k + self.tuning.baseline {
            return None;
        }
        let reference = &self.history[n - k - (n - k).min(2 * self.tuning.baseline)..n - k];
        let recent = &self.history[n - k..];
        let m_ref = median(reference)?;
        let (hi, lo) = (
            m_ref + m_ref.abs() * self.tuning.step,
            m_ref - m_ref.abs() * self.tuning.step,
        );
        let above = recent.iter().all(|&x| x > hi);
        let below = recent.iter().all(|&x| x < lo);
        let m_new = median(recent)?;
        (above || below).then(|| {
            format!(
                "step change: the incumbent's figure went from {} to {} ({}{:.0}%)",
                show(m_ref),
                show(m_new),
                if above { "+" } else { "-" },
                (m_new / m_ref - 1.0).abs() * 100.0
            )
        })
    }
}

/// How much better `a` is than `b` (as a share), when it is beyond noise: every figure of `a`
/// better than every figure of `b` (for 6 against 8 figures of one service, a chance of
/// 1 in 3,003), the 95% intervals of the medians apart (`tune`'s rule), and the medians more
/// than the tolerance apart and more than [`NOISE_SPREADS`] times `b`'s own spread (its
/// MAD as a standard deviation, relative to its median). `None` otherwise.
fn beyond_noise(a: &[f64], b: &[f64], direction: Direction, tolerance: f64) -> Option<f64> {
    let (ma, mb) = (median(a)?, median(b)?);
    let (ca, cb) = (bootstrap_median_ci(a)?, bootstrap_median_ci(b)?);
    let ((a_lo, a_hi), (b_lo, b_hi)) = (range(a), range(b));
    let (gain, apart, separated) = match direction {
        Direction::Max => (ma / mb - 1.0, ca.0 > cb.1, a_lo > b_hi),
        Direction::Min => (mb / ma - 1.0, ca.1 < cb.0, a_hi < b_lo),
    };
    let spread = MAD_TO_SD * mad(b)? / mb.abs();
    let needed = tolerance.max(NOISE_SPREADS * spread);
    (separated && apart && gain > needed).then_some(gain)
}

/// A gain accepted after the probe's first two blocks, without the confirming pair: beyond
/// noise ([`beyond_noise`], its 4 figures against the incumbent's 6: a chance of 1 in 210 that
/// all are better for two equal settings), and the probe's worst figure better than the
/// incumbent's best by more than [`FAR_TOLERANCES`] times the tolerance and
/// [`FAR_SPREADS`] times the incumbent's own spread. A bad start one CPU (or a quota) from
/// its best gains tens of percent, and is moved 6 intervals sooner (12 s at 2 s).
fn far_beyond_noise(a: &[f64], b: &[f64], direction: Direction, tolerance: f64) -> Option<f64> {
    let gain = beyond_noise(a, b, direction, tolerance)?;
    let ((a_lo, a_hi), (b_lo, b_hi)) = (range(a), range(b));
    let margin = match direction {
        Direction::Max if b_hi > 0.0 => a_lo / b_hi - 1.0,
        Direction::Min if a_hi > 0.0 => b_lo / a_hi - 1.0,
        _ => return None,
    };
    let spread = MAD_TO_SD * mad(b)? / median(b)?.abs();
    let needed = (FAR_TOLERANCES * tolerance).max(FAR_SPREADS * spread);
    (margin > needed).then_some(gain)
}

/// How many tolerances the worst probe figure must beat the best incumbent figure by, for an
/// accept without confirmation (9% at the default 3%).
const FAR_TOLERANCES: f64 = 3.0;

/// How many of the incumbent's standard deviations that margin must exceed too.
const FAR_SPREADS: f64 = 4.0;

/// A MAD times this estimates a normal distribution's standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// How many of the incumbent's standard deviations a gain must exceed: two figures of one
/// setting a tenth apart are still one setting on a service whose figures wander by a tenth.
/// With 2, the controller's false moves on a flat service with 5% noise went from 13 to 0
/// in 40 seeded runs of 3,000 intervals each, and a service one CPU from its best still
/// moves at once (`test.rs`).
const NOISE_SPREADS: f64 = 2.0;

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

fn median_text(v: &[f64]) -> String {
    format!(
        "median {} of {}",
        median(v).map_or("?".to_owned(), show),
        v.len()
    )
}

/// A figure with 4 significant digits.
pub(crate) fn show(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

fn trial_part(trial: &Trial) -> String {
    match trial.block {
        1 => "re-measuring the incumbent".to_owned(),
        _ => format!("probing {}", trial.probe),
    }
}
