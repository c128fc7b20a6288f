//! `coretune compare A B`: how sweep B's times compare with sweep A's, configuration by
//! configuration, with a geometric mean over all of them.
//!
//! Each argument is a `summary.json` or a results folder holding one. Configurations are matched
//! on (threads, place, cpus, throttle); those in only one sweep are listed, not compared. For each
//! match the ratio is `B median / A median` (below 1 = B is faster), with an interval from the two
//! bootstrap intervals: `[B low / A high, B high / A low]`, the widest ratio the two intervals
//! allow. A case is marked `faster` or `slower` only when the ratio is beyond the threshold (3% by
//! default) *and* its interval excludes 1; otherwise it is unchanged. The geometric mean of the
//! ratios is the one-number summary (Fleming & Wallace 1986: the only mean of ratios that does not
//! depend on which sweep is the reference). With `--fail-above X`, the exit status is 1 when the
//! geometric mean says B is more than X% slower, for CI regression gates.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;

use coretune_core::SweepReport;
use coretune_core::sweep::{ConfigRow, SUMMARY_SCHEMA};

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The baseline: a summary.json or a results folder.
    a: PathBuf,
    /// The sweep compared with it.
    b: PathBuf,
    /// Percent change under which a case is "unchanged".
    #[arg(long, default_value_t = 3.0, value_name = "PCT")]
    threshold: f64,
    /// Exit with status 1 when B's geometric mean is more than PCT percent slower than A's.
    #[arg(long, value_name = "PCT")]
    fail_above: Option<f64>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

/// How one case changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Faster,
    Slower,
    Unchanged,
}

#[derive(Debug, Serialize)]
pub(crate) struct Case {
    config: String,
    a_median_s: f64,
    b_median_s: f64,
    /// B / A.
    ratio: f64,
    ratio_ci: Option<(f64, f64)>,
    verdict: Verdict,
}

#[derive(Debug, Serialize)]
pub(crate) struct Comparison {
    cases: Vec<Case>,
    geomean: Option<f64>,
    only_in_a: Vec<String>,
    only_in_b: Vec<String>,
    /// Cases with no successful run in one of the sweeps.
    not_comparable: Vec<String>,
}

fn load(path: &Path) -> anyhow::Result<SweepReport> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("{}", file.display()))?;
    let report: SweepReport = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a coretune summary.json", file.display()))?;
    if report.schema != SUMMARY_SCHEMA {
        bail!(
            "{}: schema '{}' is not {}",
            file.display(),
            report.schema,
            SUMMARY_SCHEMA
        );
    }
    Ok(report)
}

/// Compares two sets of rows.
pub(crate) fn compare(a: &[ConfigRow], b: &[ConfigRow], threshold: f64) -> Comparison {
    let mut cases = Vec::new();
    let mut not_comparable = Vec::new();
    let mut only_in_a = Vec::new();
    for ra in a {
        let Some(rb) = b.iter().find(|rb| rb.config == ra.config) else {
            only_in_a.push(ra.config.to_string());
            continue;
        };
        let (Some(ma), Some(mb)) = (ra.median_s, rb.median_s) else {
            not_comparable.push(ra.config.to_string());
            continue;
        };
        let ratio = mb / ma;
        let ratio_ci = match (ra.ci_s, rb.ci_s) {
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

pub(crate) fn run(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        bail!("--threshold must be a non-negative percentage");
    }
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let cmp = compare(&a.configs, &b.configs, args.threshold / 100.0);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &cmp)?;
        writeln!(out)?;
    } else {
        writeln!(out, "A: {} ({})", args.a.display(), a.machine.topology)?;
        writeln!(out, "B: {} ({})", args.b.display(), b.machine.topology)?;
        let width = cmp
            .cases
            .iter()
            .map(|c| c.config.len())
            .max()
            .unwrap_or(13)
            .max(13);
        writeln!(
            out,
            "{:<width$}  {:>10} {:>10}  {:>7}  {:>17}  change",
            "configuration", "A median s", "B median s", "B/A", "B/A 95% interval"
        )?;
        for c in &cmp.cases {
            let mark = match c.verdict {
                Verdict::Faster => format!("▼ {:.1}% faster", (1.0 - c.ratio) * 100.0),
                Verdict::Slower => format!("▲ {:.1}% slower", (c.ratio - 1.0) * 100.0),
                Verdict::Unchanged => "unchanged".into(),
            };
            writeln!(
                out,
                "{:<width$}  {:>10.4} {:>10.4}  {:>7.3}  {:>17}  {mark}",
                c.config,
                c.a_median_s,
                c.b_median_s,
                c.ratio,
                c.ratio_ci
                    .map_or(String::new(), |(lo, hi)| format!("{lo:.3} – {hi:.3}")),
            )?;
        }
        for (what, list) in [
            ("only in A", &cmp.only_in_a),
            ("only in B", &cmp.only_in_b),
            ("no successful run in one of them", &cmp.not_comparable),
        ] {
            if !list.is_empty() {
                writeln!(out, "{what}: {}", list.join("; "))?;
            }
        }
        match cmp.geomean {
            Some(g) => writeln!(
                out,
                "geometric mean B/A: {g:.3} ({} over {} configurations)",
                if g > 1.0 {
                    format!("{:.1}% slower", (g - 1.0) * 100.0)
                } else {
                    format!("{:.1}% faster", (1.0 - g) * 100.0)
                },
                cmp.cases.len()
            )?,
            None => writeln!(out, "no configuration in common")?,
        }
    }
    if let (Some(limit), Some(g)) = (args.fail_above, cmp.geomean) {
        if g > 1.0 + limit / 100.0 {
            eprintln!(
                "coretune: B is {:.1}% slower than A (geometric mean), above --fail-above {limit}%",
                (g - 1.0) * 100.0
            );
            return Ok(ExitCode::from(crate::exit::FAILED));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod test {
    use super::*;

    fn row(threads: usize, median: f64, ci: (f64, f64)) -> ConfigRow {
        ConfigRow {
            config: coretune_core::grid::Config {
                threads,
                place: coretune_core::Policy::Os,
                cpus: coretune_core::grid::Cpus::All,
                throttle: coretune_core::grid::ThrottleSpec::None,
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
            times_s: vec![],
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
        let c = compare(&a, &b, 0.03);
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
        );
        assert_eq!(c.cases[0].verdict, Verdict::Unchanged);
    }
}
