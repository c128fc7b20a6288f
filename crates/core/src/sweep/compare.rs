//! Two sweeps compared configuration by configuration (`coretune compare A B`), with a geometric
//! mean over all of them.
//!
//! Configurations are matched on (threads, place, cpus, throttle); those in only one sweep are
//! listed, not compared. They are compared on A's first objective (wall time unless the sweep
//! chose another), as a cost: for a higher-is-better metric the cost is its reciprocal, so the
//! ratio is `A's value / B's value`. For each match the ratio is `B median / A median` of the
//! costs (below 1 = B is faster, or better), with an interval from the two bootstrap intervals: `[B low / A high, B high / A
//! low]`, the widest ratio the two intervals allow. A case is `faster` or `slower` only when the
//! ratio is beyond the threshold *and* its interval excludes 1; otherwise it is unchanged. The
//! geometric mean of the ratios is the one-number summary (Fleming & Wallace 1986: the only mean
//! of ratios that does not depend on which sweep is the reference).

use serde::Serialize;

use super::objective::Objective;
use super::report::ConfigRow;

/// How one configuration changed from A to B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// B is faster beyond the threshold and the noise.
    Faster,
    /// B is slower beyond the threshold and the noise.
    Slower,
    /// Within the threshold, or within the noise.
    Unchanged,
}

/// One configuration measured in both sweeps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Case {
    /// The configuration, as the table writes it.
    pub config: String,
    /// A's median of the objective (wall seconds for a time sweep).
    pub a_median_s: f64,
    /// B's median of the objective.
    pub b_median_s: f64,
    /// B / A of the costs: below 1, B is faster (better).
    pub ratio: f64,
    /// The widest ratio the two bootstrap intervals allow, `[B low / A high, B high / A low]`.
    pub ratio_ci: Option<(f64, f64)>,
    /// What the ratio and its interval say.
    pub verdict: Verdict,
}

/// Sweep B against sweep A: `coretune compare --json`'s object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Every configuration both measured successfully, in A's order.
    pub cases: Vec<Case>,
    /// The geometric mean of the ratios; `None` with no case in common.
    pub geomean: Option<f64>,
    /// Configurations only A measured.
    pub only_in_a: Vec<String>,
    /// Configurations only B measured.
    pub only_in_b: Vec<String>,
    /// Configurations with no successful run in one of the sweeps.
    pub not_comparable: Vec<String>,
}

/// Compares sweep B's rows with sweep A's on `objective`, the first objective both were
/// summarised on; `threshold` is the relative change under which a case is unchanged (0.03 for
/// 3%).
pub fn compare(
    a: &[ConfigRow],
    b: &[ConfigRow],
    threshold: f64,
    objective: &Objective,
) -> Comparison {
    let mut cases = Vec::new();
    let mut not_comparable = Vec::new();
    let mut only_in_a = Vec::new();
    for ra in a {
        let Some(rb) = b.iter().find(|rb| rb.config == ra.config) else {
            only_in_a.push(ra.config.to_string());
            continue;
        };
        let (Some((ma, ca)), Some((mb, cb))) = (ra.objective(), rb.objective()) else {
            not_comparable.push(ra.config.to_string());
            continue;
        };
        let cost = |v: f64| objective.cost(v);
        let interval = |(lo, hi): (f64, f64)| {
            let (lo, hi) = (cost(lo), cost(hi));
            (lo.min(hi), lo.max(hi))
        };
        let ratio = cost(mb) / cost(ma);
        let ratio_ci = match (ca.map(interval), cb.map(interval)) {
            (Some((alo, ahi)), Some((blo, bhi))) if alo > 0.0 => Some((blo / ahi, bhi / alo)),
            _ => None,
        };
        let excludes_one = ratio_ci.is_none_or(|(lo, hi)| lo > 1.0 || hi < 1.0);
        let verdict = if ratio > 1.0 + threshold && excludes_one {
            Verdict::Slower
        } else if ratio < 1.0 / (1.0 + threshold) && excludes_one {
            Verdict::Faster
        } else {
            Verdict::Unchanged
        };
        cases.push(Case {
            config: ra.config.to_string(),
            a_median_s: ma,
            b_median_s: mb,
            ratio,
            ratio_ci,
            verdict,
        });
    }
    let only_in_b = b
        .iter()
        .filter(|rb| !a.iter().any(|ra| ra.config == rb.config))
        .map(|rb| rb.config.to_string())
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let geomean = (!cases.is_empty())
        .then(|| (cases.iter().map(|c| c.ratio.ln()).sum::<f64>() / cases.len() as f64).exp());
    Comparison {
        cases,
        geomean,
        only_in_a,
        only_in_b,
        not_comparable,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn row(threads: usize, median: f64, ci: (f64, f64)) -> ConfigRow {
        ConfigRow {
            config: crate::grid::Config {
                threads,
                place: crate::placement::Policy::Os,
                cpus: crate::grid::Cpus::All,
                throttle: crate::grid::ThrottleSpec::None,
                mem: crate::grid::Mem::Default,
                instances: 1,
            },
            median_s: Some(median),
            ci_s: Some(ci),
            mean_s: Some(median),
            stddev_s: Some(0.0),
            min_s: Some(ci.0),
            max_s: Some(ci.1),
            mad_s: Some(0.0),
            user_s: None,
            sys_s: None,
            runs: 5,
            failed: 0,
            timed_out: 0,
            out: None,
            speedup: None,
            efficiency: None,
            throughput: None,
            voluntary_ctx_switches: None,
            involuntary_ctx_switches: None,
            migrations: None,
            busy_runs: 0,
            outliers: 0,
            bimodal: false,
            pinning: None,
            off_place_runs: 0,
            throttled_s: None,
            times_s: vec![],
            cpu_s: None,
            peak_rss_bytes: None,
            objectives: Vec::new(),
            metrics: std::collections::BTreeMap::new(),
            pareto: false,
            launch: None,
        }
    }

    #[test]
    fn markers_only_beyond_threshold_and_noise() {
        let a = vec![
            row(1, 1.00, (0.99, 1.01)),
            row(2, 1.00, (0.99, 1.01)),
            row(4, 1.00, (0.90, 1.10)),
            row(8, 1.00, (0.99, 1.01)),
        ];
        let b = vec![
            row(1, 1.10, (1.09, 1.11)), // 10% slower, intervals apart
            row(2, 0.80, (0.79, 0.81)), // 20% faster
            row(4, 1.10, (1.00, 1.20)), // 10% slower but within noise
            row(16, 1.0, (0.99, 1.01)), // only in B
        ];
        let c = compare(&a, &b, 0.03, &Objective::time());
        let verdicts: Vec<Verdict> = c.cases.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            vec![Verdict::Slower, Verdict::Faster, Verdict::Unchanged]
        );
        // geomean(1.1, 0.8, 1.1) = (0.968)^(1/3) = 0.98921
        assert!((c.geomean.unwrap() - (1.1f64 * 0.8 * 1.1).cbrt()).abs() < 1e-12);
        assert_eq!(c.only_in_a, vec!["8 threads, place os"]);
        assert_eq!(c.only_in_b, vec!["16 threads, place os"]);
    }

    #[test]
    fn a_two_percent_change_is_unchanged_at_three_percent() {
        let c = compare(
            &[row(1, 1.0, (0.999, 1.001))],
            &[row(1, 1.02, (1.019, 1.021))],
            0.03,
            &Objective::time(),
        );
        assert_eq!(c.cases[0].verdict, Verdict::Unchanged);
    }
}
