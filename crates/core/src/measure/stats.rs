//! Statistics of repeated measurements, each with its formula and source.
//!
//! Floats are ordered with `f64::total_cmp`, so a NaN (which no measurement should produce) sorts
//! last instead of poisoning the order. Functions take samples in any order and return `None`
//! where the statistic is undefined for so few values.

use serde::{Deserialize, Serialize};

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of sorted values.
fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median: the middle value, or the mean of the two middle values of an even count
/// (Hyndman & Fan 1996, type 7 at p = 0.5). `None` when empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| median_sorted(&sorted(values)))
}

/// The arithmetic mean. `None` when empty.
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The sample standard deviation, `sqrt(Σ(x − mean)² / (n − 1))` (Bessel's correction).
/// `None` for fewer than 2 values.
pub(crate) fn stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    #[allow(clippy::cast_precision_loss)]
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    Some(var.sqrt())
}

/// The median absolute deviation, `median(|x − median(x)|)`, unscaled.
pub(crate) fn mad(values: &[f64]) -> Option<f64> {
    let m = median(values)?;
    median(&values.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

/// Modified z-scores, `0.6745 · (x − median) / MAD` (Iglewicz & Hoaglin 1993, "How to Detect and
/// Handle Outliers"), in input order. All zero when the MAD is zero.
pub(crate) fn modified_z_scores(values: &[f64]) -> Vec<f64> {
    let (Some(m), Some(d)) = (median(values), mad(values)) else {
        return Vec::new();
    };
    values
        .iter()
        .map(|x| if d > 0.0 { 0.6745 * (x - m) / d } else { 0.0 })
        .collect()
}

/// Iglewicz & Hoaglin's recommended cut-off for [`modified_z_scores`] (also hyperfine's).
pub(crate) const OUTLIER_Z: f64 = 3.5;

/// Which values are outliers by the modified z-score (`|z| > 3.5`), in input order.
pub(crate) fn outliers(values: &[f64]) -> Vec<bool> {
    modified_z_scores(values)
        .into_iter()
        .map(|z| z.abs() > OUTLIER_Z)
        .collect()
}

/// A small, fast, reproducible generator (splitmix64, Steele et al. 2014) for the bootstrap: the
/// same samples always give the same interval.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-32 for these sizes).
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let wide = (u128::from(self.next()) * u128::from(n)) >> 64;
        usize::try_from(wide).unwrap_or(0)
    }
}

/// Resamples of the bootstrap: 2,000 is Efron & Tibshirani's (1993, §13.3) guidance for
/// percentile intervals.
pub(crate) const BOOTSTRAP_RESAMPLES: usize = 2000;

/// A 95% percentile-bootstrap interval of the median (Efron & Tibshirani 1993, ch. 13):
/// the 2.5th and 97.5th percentiles of the medians of [`BOOTSTRAP_RESAMPLES`] resamples with
/// replacement, with a fixed seed so that the same runs always give the same interval.
/// `None` when empty; a single value gives a zero-width interval.
pub(crate) fn bootstrap_median_ci(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut rng = SplitMix64(0x636f_7265_7475_6e65); // "coretune"
    let mut resample = vec![0.0; values.len()];
    let mut medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for slot in &mut resample {
                *slot = values[rng.below(values.len())];
            }
            resample.sort_by(f64::total_cmp);
            median_sorted(&resample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    Some((
        percentile_sorted(&medians, 0.025),
        percentile_sorted(&medians, 0.975),
    ))
}

/// The `p`-quantile of sorted values by linear interpolation (Hyndman & Fan type 7, numpy's
/// default).
fn percentile_sorted(v: &[f64], p: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let h = (v.len() - 1) as f64 * p;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - h.floor()) * (v[hi] - v[lo])
}

/// A summary of one configuration's run times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Runs summarised.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one run).
    pub stddev: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Median absolute deviation.
    pub mad: f64,
    /// Bootstrap 95% interval of the median.
    pub ci: (f64, f64),
    /// Indexes (in input order) of outliers by modified z-score.
    pub outliers: Vec<usize>,
    /// Whether the values fall in two separated clusters (a gap wider than either cluster).
    pub bimodal: bool,
}

impl Summary {
    /// Summarises `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Self> {
        let v = sorted(values);
        Some(Self {
            n: values.len(),
            median: median(values)?,
            mean: mean(values)?,
            stddev: stddev(values).unwrap_or(0.0),
            min: *v.first()?,
            max: *v.last()?,
            mad: mad(values)?,
            ci: bootstrap_median_ci(values)?,
            outliers: outliers(values)
                .iter()
                .enumerate()
                .filter_map(|(i, &o)| o.then_some(i))
                .collect(),
            bimodal: bimodal(values).is_some(),
        })
    }
}

/// Two clusters found by [`bimodal`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Clusters {
    /// Mean of the lower cluster.
    pub low_mean: f64,
    /// Mean of the upper cluster.
    pub high_mean: f64,
    /// How many values are in the lower cluster.
    pub low_count: usize,
    /// Ashman's D of the split.
    pub ashman_d: f64,
}

/// Whether run times fall in two separated clusters — typical of placement effects (a thread
/// sometimes sharing a core) and noisy machines, and invisible to a MAD outlier test, which
/// sees a wide spread, not two modes.
///
/// Method: the best 1-D split into two groups (the one minimising the within-group sum of
/// squares, i.e. optimal 2-means on sorted data), accepted when each group has at least 2 values
/// (and 20% of them), the groups are well separated by Ashman's D > 2 (Ashman, Bird & Zepf 1994:
/// D = √2·|μ₁ − μ₂| / √(σ₁² + σ₂²)), the empty gap between them is wider than either group's own
/// range (D alone accepts any split of an evenly spread sample), and the means differ by more
/// than 3% of the overall median (smaller differences do not change a recommendation). Needs at
/// least 5 values.
pub(crate) fn bimodal(values: &[f64]) -> Option<Clusters> {
    let n = values.len();
    if n < 5 {
        return None;
    }
    let v = sorted(values);
    let min_group = 2.max(n.div_ceil(5));
    let mut best: Option<(f64, usize)> = None;
    for k in min_group..=n - min_group {
        let ss = |s: &[f64]| {
            let m = mean(s).unwrap_or(0.0);
            s.iter().map(|x| (x - m).powi(2)).sum::<f64>()
        };
        let within = ss(&v[..k]) + ss(&v[k..]);
        if best.is_none_or(|(b, _)| within < b) {
            best = Some((within, k));
        }
    }
    let (_, k) = best?;
    let (lo, hi) = (&v[..k], &v[k..]);
    let (m1, m2) = (mean(lo)?, mean(hi)?);
    let var = |s: &[f64], m: f64| {
        #[allow(clippy::cast_precision_loss)]
        let n = s.len() as f64;
        s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n
    };
    let spread = (var(lo, m1) + var(hi, m2)).sqrt();
    let d = if spread > 0.0 {
        std::f64::consts::SQRT_2 * (m2 - m1).abs() / spread
    } else if m2 > m1 {
        f64::INFINITY
    } else {
        0.0
    };
    let median = median_sorted(&v);
    let gap = hi[0] - lo[lo.len() - 1];
    let widest = (lo[lo.len() - 1] - lo[0]).max(hi[hi.len() - 1] - hi[0]);
    (d > 2.0 && gap > widest && (m2 - m1) > 0.03 * median.abs()).then_some(Clusters {
        low_mean: m1,
        high_mean: m2,
        low_count: k,
        ashman_d: d,
    })
}

/// Speedup of a time against the baseline time: `baseline / time`.
pub(crate) fn speedup(baseline: f64, time: f64) -> f64 {
    baseline / time
}

/// Parallel efficiency: speedup per thread, `speedup / threads`.
pub(crate) fn efficiency(baseline: f64, time: f64, threads: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = threads.max(1) as f64;
    speedup(baseline, time) / n
}

/// A Universal Scalability Law fit (Gunther 2007, *Guerrilla Capacity Planning*, ch. 4):
/// relative capacity `C(N) = N / (1 + σ(N − 1) + κN(N − 1))`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention (serial fraction), σ ≥ 0.
    pub sigma: f64,
    /// Coherency (crosstalk), κ ≥ 0.
    pub kappa: f64,
    /// Thread count of peak capacity, `√((1 − σ) / κ)`; `None` when κ = 0 (no peak) or σ ≥ 1.
    pub peak_threads: Option<f64>,
}

impl UslFit {
    /// Predicted relative capacity at `n` threads.
    pub fn capacity(&self, n: f64) -> f64 {
        n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// Fits the USL to (threads, speedup) points, speedup relative to 1 thread.
///
/// Gunther's linearisation: `N / C(N) − 1 = σ(N − 1) + κN(N − 1)`, a least-squares fit without
/// intercept on x₁ = N − 1, x₂ = N(N − 1). A coefficient that comes out negative is set to zero
/// and the other refitted alone (both are physical quantities). Needs points at 3 or more
/// distinct thread counts, one of them above 1.
pub(crate) fn usl_fit(points: &[(usize, f64)]) -> Option<UslFit> {
    let mut distinct: Vec<usize> = points.iter().map(|p| p.0).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 3 || points.iter().any(|p| p.1 <= 0.0 || p.0 == 0) {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(n, c)| {
            let n = n as f64;
            (n - 1.0, n * (n - 1.0), n / c - 1.0)
        })
        .collect();
    let s11: f64 = rows.iter().map(|r| r.0 * r.0).sum();
    let s12: f64 = rows.iter().map(|r| r.0 * r.1).sum();
    let s22: f64 = rows.iter().map(|r| r.1 * r.1).sum();
    let s1y: f64 = rows.iter().map(|r| r.0 * r.2).sum();
    let s2y: f64 = rows.iter().map(|r| r.1 * r.2).sum();
    let det = s11 * s22 - s12 * s12;
    let (mut sigma, mut kappa) = if det.abs() > f64::EPSILON * s11 * s22 {
        ((s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det)
    } else {
        (s1y / s11, 0.0)
    };
    if kappa < 0.0 {
        kappa = 0.0;
        sigma = s1y / s11;
    }
    if sigma < 0.0 {
        sigma = 0.0;
        kappa = (s2y / s22).max(0.0);
    }
    let peak_threads = (kappa > 0.0 && sigma < 1.0).then(|| ((1.0 - sigma) / kappa).sqrt());
    Some(UslFit {
        sigma,
        kappa,
        peak_threads,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn location_and_spread_by_hand() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        // Σ(x − 3)² = 4 + 1 + 9 = 14; 14 / 2 = 7.
        assert!(close(stddev(&[1.0, 2.0, 6.0]).unwrap(), 7f64.sqrt(), 1e-12));
        assert_eq!(stddev(&[1.0]), None);
        // |x − 2| = 1, 0, 4, 1, 0 → sorted 0,0,1,1,4 → MAD 1.
        assert_eq!(mad(&[1.0, 2.0, 6.0, 3.0, 2.0]), Some(1.0));
    }

    #[test]
    fn modified_z_flags_the_far_value_only() {
        let v = [10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 14.0];
        // median 10.0, MAD 0.1 → z(14.0) = 0.6745 · 4 / 0.1 = 26.98.
        let z = modified_z_scores(&v);
        assert!(close(z[6], 26.98, 1e-9));
        assert_eq!(
            outliers(&v),
            vec![false, false, false, false, false, false, true]
        );
        // A MAD of zero flags nothing rather than dividing by zero.
        assert_eq!(outliers(&[1.0, 1.0, 1.0, 5.0]), vec![false; 4]);
    }

    #[test]
    fn bootstrap_interval_brackets_the_median_and_is_reproducible() {
        let v = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00, 1.04, 0.96];
        let (lo, hi) = bootstrap_median_ci(&v).unwrap();
        let m = median(&v).unwrap();
        assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
        assert!(lo >= 0.96 && hi <= 1.04);
        assert_eq!(bootstrap_median_ci(&v), Some((lo, hi)));
        assert_eq!(bootstrap_median_ci(&[2.0]), Some((2.0, 2.0)));
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        // numpy.percentile([1, 2, 3, 4], [2.5, 97.5]) = [1.075, 3.925]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert!(close(percentile_sorted(&v, 0.025), 1.075, 1e-12));
        assert!(close(percentile_sorted(&v, 0.975), 3.925, 1e-12));
    }

    #[test]
    fn two_clusters_are_bimodal_a_spread_is_not() {
        let two = [1.00, 1.01, 0.99, 1.00, 1.30, 1.31, 1.29, 1.30];
        let c = bimodal(&two).unwrap();
        assert_eq!(c.low_count, 4);
        assert!(close(c.low_mean, 1.0, 1e-9) && close(c.high_mean, 1.3, 1e-9));
        // Evenly spread values have no gap: D stays below 2.
        let spread: Vec<f64> = (0..10).map(|i| 1.0 + f64::from(i) * 0.03).collect();
        assert_eq!(bimodal(&spread), None);
        // Two clusters 1% apart do not matter.
        assert_eq!(bimodal(&[1.0, 1.0, 1.0, 1.01, 1.01, 1.01]), None);
        assert_eq!(bimodal(&[1.0, 2.0, 1.0, 2.0]), None, "too few values");
    }

    #[test]
    fn speedup_and_efficiency() {
        assert!(close(speedup(10.0, 4.0), 2.5, 1e-12));
        assert!(close(efficiency(10.0, 4.0, 4), 0.625, 1e-12));
    }

    #[test]
    fn usl_recovers_known_coefficients() {
        let truth = UslFit {
            sigma: 0.05,
            kappa: 0.002,
            peak_threads: None,
        };
        let points: Vec<(usize, f64)> = [1, 2, 4, 8, 16, 32, 64]
            .iter()
            .map(|&n| (n, truth.capacity(n as f64)))
            .collect();
        let fit = usl_fit(&points).unwrap();
        assert!(close(fit.sigma, 0.05, 1e-9), "{fit:?}");
        assert!(close(fit.kappa, 0.002, 1e-9), "{fit:?}");
        // √((1 − 0.05) / 0.002) = √475 = 21.79
        assert!(close(fit.peak_threads.unwrap(), 475f64.sqrt(), 1e-6));
    }

    #[test]
    fn usl_linear_scaling_has_no_peak_and_needs_three_counts() {
        let points = [(1, 1.0), (2, 2.0), (4, 4.0)];
        let fit = usl_fit(&points).unwrap();
        assert!(close(fit.sigma, 0.0, 1e-12) && close(fit.kappa, 0.0, 1e-12));
        assert_eq!(fit.peak_threads, None);
        assert_eq!(usl_fit(&[(1, 1.0), (2, 1.9)]), None);
    }

    proptest::proptest! {
        #[test]
        fn summary_invariants(values in proptest::collection::vec(1e-6f64..1e6, 1..40)) {
            let s = Summary::of(&values).unwrap();
            proptest::prop_assert!(s.min <= s.median && s.median <= s.max);
            proptest::prop_assert!(s.min <= s.mean && s.mean <= s.max);
            proptest::prop_assert!(s.min <= s.ci.0 && s.ci.0 <= s.ci.1 && s.ci.1 <= s.max);
            proptest::prop_assert!(s.mad >= 0.0 && s.stddev >= 0.0);
        }
    }

    #[test]
    fn summary_orders_min_median_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0, 2.5]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 10.0));
        assert!(s.ci.0 <= s.median && s.median <= s.ci.1);
        assert_eq!(Summary::of(&[]), None);
    }
}
