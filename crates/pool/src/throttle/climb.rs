//! The adaptive limit: its settings, the throughput samples it takes and the hill climber
//! that moves the limit on them. The algorithm in prose, why it is this one and the
//! measurements behind its defaults are in `README.md` in this folder.

use std::collections::VecDeque;
use std::time::Duration;

/// Settings of the adaptive limit of [`Throttle::adaptive`](crate::Throttle::adaptive).
/// `Default` gives a 1..=available-parallelism climb starting at the top.
///
/// ```
/// use coretune_pool::{AdaptiveConfig, Throttle};
/// let throttle = Throttle::adaptive(AdaptiveConfig { min: 1, max: 4, initial: Some(2), ..AdaptiveConfig::default() });
/// assert_eq!(throttle.limit(), 2);
/// assert!(throttle.is_adaptive());
/// ```
///
/// # How the limit moves
///
/// The completions reported with
/// [`Throttle::record_completions`](crate::Throttle::record_completions) are cut into
/// *samples* of throughput: a sample closes once [`sample_interval`](Self::sample_interval)
/// has passed and [`min_completions`](Self::min_completions) completions arrived, or after
/// [`max_sample_interval`](Self::max_sample_interval) with fewer. A hill climber moves the
/// limit on them:
///
/// 1. It measures the limit in force over [`samples_per_step`](Self::samples_per_step)
///    samples, after discarding the first sample after a move (it straddles the change) and,
///    at the start, `samples_per_step + 1` (thread start-up and ramp). Samples under half or
///    over twice the level's median (stalls) are left out; the level is judged by its
///    median.
/// 2. The first measured level is the *best*. The climb starts at
///    [`initial`](Self::initial), by default [`max`](Self::max) (no limit in force), and
///    probes downwards first.
/// 3. A probed limit wins only if its median exceeds the best's by more than
///    [`noise_factor`](Self::noise_factor) standard errors of the difference (each level's
///    own, or the noise pooled over the run if larger, the factor widened for the few
///    samples behind them) and by at least [`min_gain`](Self::min_gain). A winner becomes
///    the best and the climb goes on in the same direction.
/// 4. Until the first probe fails, a probe halves (or doubles) the limit; after that every
///    move is one step.
/// 5. A probe that does not win sends the limit back to the best and turns the direction
///    round. After a failed probe on each side the climber is *settled*: it re-measures the
///    best and, every [`settle_steps`](Self::settle_steps) measurements, probes one step to
///    one side.
///
/// A settled throttle so stays within one step of the best limit, unless a probe wins.
/// It aims at throughput, not at a latency target. How it compares with every fixed limit
/// on real workloads is measured in BENCHMARKS.md, "Adaptive throttle against every fixed
/// limit"; how to choose [`max`](Self::max) for work that waits on I/O: the
/// [`throttle`](crate::throttle#an-adaptive-limit) module's docs.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveConfig {
    /// Smallest limit the climber may choose (at least 1); 1 by default.
    pub min: usize,
    /// Largest limit the climber may choose; by default the available parallelism, which
    /// suits work that computes. For threads that mostly wait (I/O, a remote backend) set
    /// it to the most that may be in flight, e.g. the pool's thread count: the limit never
    /// goes above it.
    pub max: usize,
    /// Limit to start from (clamped to `min..=max`); `None`, the default, starts at `max`:
    /// no limit in force, the best fixed limit on every workload measured in BENCHMARKS.md,
    /// "Adaptive throttle against every fixed limit".
    pub initial: Option<usize>,
    /// Shortest throughput sample; 0.5 ms by default (see
    /// [`AdaptiveConfig::min_completions`] for which of the two decides a sample's length).
    pub sample_interval: Duration,
    /// Longest sample: one closes after this long even with fewer than `min_completions`
    /// (100 ms by default), so rare completions still give samples.
    pub max_sample_interval: Duration,
    /// Fewest completions in a sample; 8 by default. A sample's counting error is then at
    /// most 1/8, and a sample lasts 8 units of work or `sample_interval`, whichever is
    /// longer. With 0.5 ms these are the shortest samples at which the unit tests still
    /// find their synthetic optima (samples half as long are √2 times noisier), and the
    /// climb settles within about 5 % of a default-size run of the built-in workloads
    /// (BENCHMARKS.md, "Adaptive throttle against every fixed limit").
    pub min_completions: u64,
    /// Samples per measured level (after the discarded first one); 4 by default, the
    /// fewest with which the unit tests' 25 % steps under 3 % noise are found reliably.
    pub samples_per_step: usize,
    /// How many standard errors a difference must exceed to count; 2 (≈ 95 %) by default.
    pub noise_factor: f64,
    /// Smallest relative gain that counts as better, e.g. 0.02 (the default) for 2 %.
    pub min_gain: f64,
    /// Measurements of the best level between two probes once settled; 4 by default.
    pub settle_steps: usize,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        let max = std::thread::available_parallelism().map_or(1, |n| n.get());
        AdaptiveConfig {
            min: 1,
            max,
            initial: None,
            sample_interval: Duration::from_micros(500),
            min_completions: 8,
            max_sample_interval: Duration::from_millis(100),
            samples_per_step: 4,
            noise_factor: 2.0,
            min_gain: 0.02,
            settle_steps: 4,
        }
    }
}

/// One entry of the adaptive throttle's trace
/// ([`Throttle::trace`](crate::Throttle::trace)).
///
/// ```
/// use coretune_pool::{AdaptiveConfig, Throttle};
/// use std::time::Duration;
/// let throttle = Throttle::adaptive(AdaptiveConfig {
///     sample_interval: Duration::from_millis(1),
///     ..AdaptiveConfig::default()
/// });
/// std::thread::sleep(Duration::from_millis(2));
/// throttle.record_completions(40); // at least `min_completions` (8)
/// throttle.sample();
/// let first = throttle.trace()[0];
/// assert!(first.at >= Duration::from_millis(1) && first.throughput > 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSample {
    /// Time since the throttle was created.
    pub at: Duration,
    /// Limit in force during the sample.
    pub limit: usize,
    /// Completions per second during the sample.
    pub throughput: f64,
}

/// Cuts the count of completions into samples, keeps them as the trace and feeds them to
/// the climber. The throttle keeps it under a lock of its own.
#[derive(Debug)]
pub(super) struct Sampler {
    climber: HillClimb,
    /// When the last sample closed (time since the throttle's creation).
    last_at: Duration,
    /// Completions reported in all when the last sample closed.
    last_completions: u64,
    /// The last [`TRACE_SAMPLES`] samples, oldest first.
    trace: VecDeque<TraceSample>,
}

/// How many samples an adaptive throttle keeps ([`crate::Throttle::trace`]): the last
/// 16,384, 512 KiB, at least 8 s of samples at the default `sample_interval`; older ones
/// are dropped, so a throttle that runs for hours holds no more.
pub(super) const TRACE_SAMPLES: usize = 16_384;

/// A sample closed by [`Sampler::close`].
#[derive(Debug)]
pub(super) struct Closed {
    /// No sample can be due before this (time since the throttle's creation).
    pub(super) next_due: Duration,
    /// The climber's new limit, if it moved.
    pub(super) new_limit: Option<usize>,
}

impl Sampler {
    pub(super) fn new(config: AdaptiveConfig) -> Self {
        Sampler {
            climber: HillClimb::new(config),
            last_at: Duration::ZERO,
            last_completions: 0,
            trace: VecDeque::new(),
        }
    }

    /// The limit the climber wants now.
    pub(super) fn limit(&self) -> usize {
        self.climber.limit()
    }

    /// The largest limit the climber may choose (`AdaptiveConfig::max`, at least `min`
    /// and 1).
    pub(super) fn max_limit(&self) -> usize {
        self.climber.config.max
    }

    /// Closes a sample at `now` (time since the throttle's creation), with `completions`
    /// reported in all so far, if one is due: `sample_interval` has passed since the last
    /// one and `min_completions` arrived, or `max_sample_interval` passed. `None` if not.
    pub(super) fn close(&mut self, now: Duration, completions: u64) -> Option<Closed> {
        let config = &self.climber.config;
        let interval = config.sample_interval;
        let elapsed = now.saturating_sub(self.last_at);
        let counted = completions - self.last_completions;
        if elapsed < interval
            || (counted < config.min_completions && elapsed < config.max_sample_interval)
        {
            return None;
        }
        let throughput = counted as f64 / elapsed.as_secs_f64();
        if self.trace.len() == TRACE_SAMPLES {
            self.trace.pop_front();
        }
        self.trace.push_back(TraceSample {
            at: now,
            limit: self.climber.limit(),
            throughput,
        });
        self.last_at = now;
        self.last_completions = completions;
        Some(Closed {
            next_due: now + interval,
            new_limit: self.climber.on_sample(throughput),
        })
    }

    /// The last [`TRACE_SAMPLES`] samples, oldest first.
    pub(super) fn trace(&self) -> Vec<TraceSample> {
        self.trace.iter().copied().collect()
    }

    /// The samples the trace has room for without growing.
    #[cfg(test)]
    pub(super) fn trace_capacity(&self) -> usize {
        self.trace.capacity()
    }
}

/// The median of `samples` (not empty).
fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// A sample under half or over twice its level's median: on a shared machine, a sample
/// in which the whole process was descheduled (README.md, "Noise"), or the burst of
/// completions right after one. Within one limit throughput does not halve or double
/// otherwise (moves are followed by a discarded sample), so these are noise of another kind
/// than the spread the standard errors describe: the climber leaves them out of a level,
/// judged against the median of all the level's samples so far.
fn is_outlier(sample: f64, centre: f64) -> bool {
    sample < centre / 2.0 || sample > centre * 2.0
}

/// √(π/2): the standard error of a median over that of a mean, for normal noise.
const MEDIAN_SE_FACTOR: f64 = 1.253_314_137_315_500_3;

/// The samples taken at one limit: their median, and its standard error.
///
/// The median, because a sample in which the whole process was descheduled (another
/// program's burst on a shared machine) reads a tenth of its neighbours; one such sample
/// among four moves the median little, the mean a quarter. Its standard error is taken as
/// √(π/2) ≈ 1.25 times the mean's (the median's asymptotic relative efficiency under
/// normal noise); an outlier inflates it, so the test errs towards not moving.
#[derive(Debug, Clone, Copy)]
struct LimitStats {
    limit: usize,
    centre: f64,
    std_error: f64,
    /// Samples behind `centre`.
    samples: usize,
    /// The samples' variance relative to the squared mean (0 for one sample).
    relative_variance: f64,
}

impl LimitStats {
    fn measure(limit: usize, samples: &[f64]) -> Self {
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = if samples.len() > 1 {
            samples.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        LimitStats {
            limit,
            centre: median(samples),
            std_error: MEDIAN_SE_FACTOR * (variance / n).sqrt(),
            samples: samples.len(),
            relative_variance: if mean == 0.0 {
                0.0
            } else {
                variance / (mean * mean)
            },
        }
    }
}

/// The run's noise so far: the relative variance of samples pooled over every measured
/// level (each level's deviations from its own mean, so real differences between limits
/// do not count as noise).
///
/// A level's own standard error from 4 samples is itself very uncertain: samples that
/// happen to agree give a tiny one, and a 2-standard-error test would then accept a chance
/// difference far more often than 2.5 % of the time (Student's t for 3 degrees of freedom
/// needs 3.2, not 2). The climber therefore uses, for each level, the larger of its own
/// standard error and the pooled one, whose degrees of freedom grow with the run, and
/// widens the test for them ([`PooledNoise::critical`]).
#[derive(Debug, Default, Clone, Copy)]
struct PooledNoise {
    sum: f64,
    degrees_of_freedom: usize,
}

impl PooledNoise {
    fn add(&mut self, level: &LimitStats) {
        if level.samples > 1 {
            self.sum += level.relative_variance * (level.samples - 1) as f64;
            self.degrees_of_freedom += level.samples - 1;
        }
    }

    /// `z` standard errors corrected for estimating them from `degrees_of_freedom`
    /// samples: the Cornish–Fisher expansion of Student's t quantile to first order,
    /// t ≈ z + (z³ + z) / (4 df) (Abramowitz & Stegun 26.7.5); for z = 2 and 4 degrees
    /// of freedom 2.63 (exact 2.78), for 40 degrees 2.06 (exact 2.02).
    fn critical(&self, z: f64) -> f64 {
        let df = self.degrees_of_freedom.max(1) as f64;
        z + (z * z * z + z) / (4.0 * df)
    }

    /// The standard error of `level`'s median: its own, or the pooled one if larger.
    fn std_error(&self, level: &LimitStats) -> f64 {
        if self.degrees_of_freedom == 0 {
            return level.std_error;
        }
        let pooled = MEDIAN_SE_FACTOR
            * level.centre.abs()
            * (self.sum / self.degrees_of_freedom as f64 / level.samples as f64).sqrt();
        level.std_error.max(pooled)
    }
}

/// The hill climber (steps 1–5 of README.md, "Adaptive limit"), fed one throughput sample
/// at a time.
#[derive(Debug)]
pub(super) struct HillClimb {
    config: AdaptiveConfig,
    limit: usize,
    /// +1 or -1: the side of the next probe.
    direction: isize,
    /// Probes halve or double the limit until the first one fails (step 4).
    fast: bool,
    /// Samples at the current limit; the first one after a move is skipped.
    window: Vec<f64>,
    /// Samples still to discard before the window fills again.
    skip: usize,
    best: Option<LimitStats>,
    noise: PooledNoise,
    failed_probes: usize,
    settled_measurements: usize,
}

impl HillClimb {
    pub(super) fn new(mut config: AdaptiveConfig) -> Self {
        config.min = config.min.max(1);
        config.max = config.max.max(config.min);
        config.samples_per_step = config.samples_per_step.max(1);
        let limit = config
            .initial
            .unwrap_or(config.max)
            .clamp(config.min, config.max);
        let warm_up = config.samples_per_step + 1;
        HillClimb {
            // Downwards first from the top (step 2), else upwards.
            direction: if limit == config.max && limit > config.min {
                -1
            } else {
                1
            },
            config,
            limit,
            fast: true,
            window: Vec::new(),
            // The first sample includes whatever ran between the throttle's creation and the
            // first unit of work (thread start-up), and the next ones the workers' ramp (on
            // `mixed`, 32 threads computing at once before the first blocks): a level's worth
            // of warm-up, so the first probe is not judged against a start-up transient.
            skip: warm_up,
            best: None,
            noise: PooledNoise::default(),
            failed_probes: 0,
            settled_measurements: 0,
        }
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    fn is_settled(&self) -> bool {
        self.failed_probes >= 2
    }

    /// Feeds one sample; returns the new limit when the climber moves.
    pub(super) fn on_sample(&mut self, throughput: f64) -> Option<usize> {
        if self.skip > 0 {
            self.skip -= 1;
            return None;
        }
        self.window.push(throughput);
        // Stalls and the bursts after them (see `is_outlier`) do not count; a level waits
        // for `samples_per_step` others, up to twice that many samples in all.
        let centre = median(&self.window);
        let inliers: Vec<f64> = self
            .window
            .iter()
            .copied()
            .filter(|&s| !is_outlier(s, centre))
            .collect();
        if inliers.len() < self.config.samples_per_step
            && self.window.len() < 2 * self.config.samples_per_step
        {
            return None;
        }
        let current = LimitStats::measure(self.limit, &inliers);
        self.window.clear();
        self.noise.add(&current);
        let Some(best) = self.best else {
            self.best = Some(current);
            return self.probe();
        };
        if current.limit == best.limit {
            // Re-measured the best (after a failed probe, or while settled).
            self.best = Some(current);
            if self.is_settled() {
                self.settled_measurements += 1;
                if self.settled_measurements < self.config.settle_steps {
                    return None;
                }
                self.settled_measurements = 0;
            }
            return self.probe();
        }
        let noise = self.noise.critical(self.config.noise_factor)
            * self
                .noise
                .std_error(&best)
                .hypot(self.noise.std_error(&current));
        let gain = current.centre - best.centre;
        if gain > noise && gain > self.config.min_gain * best.centre.abs() {
            self.best = Some(current);
            self.failed_probes = 0;
            self.probe()
        } else {
            self.failed_probes += 1;
            self.fast = false;
            self.direction = -self.direction;
            self.move_to(best.limit)
        }
    }

    /// Moves from the best in `direction` — one step, or to half or double while fast —
    /// turning round at the bounds.
    fn probe(&mut self) -> Option<usize> {
        let from = self.best.map_or(self.limit, |best| best.limit);
        for _ in 0..2 {
            let target = match (self.fast, self.direction > 0) {
                (true, true) => from.saturating_mul(2).min(self.config.max),
                (true, false) => (from / 2).max(self.config.min),
                (false, true) => from.saturating_add(1),
                (false, false) => from.saturating_sub(1),
            };
            if target != from && (self.config.min..=self.config.max).contains(&target) {
                return self.move_to(target);
            }
            self.direction = -self.direction;
        }
        None // min == max: nothing to probe
    }

    fn move_to(&mut self, limit: usize) -> Option<usize> {
        if limit == self.limit {
            return None;
        }
        self.limit = limit;
        self.skip = 1;
        Some(limit)
    }
}
