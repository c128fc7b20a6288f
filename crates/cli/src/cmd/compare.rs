//! `coretune compare A B`: how sweep B's times compare with sweep A's, configuration by
//! configuration, with a geometric mean over all of them (the statistics are core's
//! `sweep::compare`).
//!
//! Each argument is a `summary.json` or a results folder holding one. A case is marked `faster`
//! or `slower` only when the ratio is beyond the threshold (3% by default) *and* its interval
//! excludes 1. With `--fail-above X`, the exit status is 1 when the geometric mean says B is more
//! than X% worse — the change the summary line prints, in the objective's terms (slower for a
//! time, lower for a rate) — for CI regression gates, and when A and B have no configuration in
//! common, so that a gate never passes having compared nothing. `--json` names the objective,
//! its unit and direction, and each case's medians in that unit (`a_median`, `b_median`). Sweeps of different programs (or of one
//! workload with different parameters) are compared with a warning.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use coretune_core::SweepReport;
use coretune_core::sweep::{Comparison, DEFAULT_TOLERANCE_PCT, SUMMARY_SCHEMA, Verdict};

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The baseline: a summary.json or a results folder.
    a: PathBuf,
    /// The sweep compared with it.
    b: PathBuf,
    /// Percent change under which a case is "unchanged".
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_PCT, value_name = "PCT")]
    threshold: f64,
    /// Exit with status 1 when B is more than PCT percent worse than A overall — the geometric
    /// mean's change as printed: slower for a time, lower for a rate (or when A and B have no
    /// configuration in common).
    #[arg(long, value_name = "PCT")]
    fail_above: Option<f64>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
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

pub(crate) fn run(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        bail!("--threshold must be a non-negative percentage");
    }
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    if let Some(what) = Comparison::different_targets(&a, &b) {
        eprintln!("coretune: warning: A and B measured different things ({what})");
    }
    let cmp = Comparison::of(&a, &b, args.threshold / 100.0)?;
    let (better, worse) = cmp.words();
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
        let objective = cmp.criterion();
        if !objective.is_time() {
            writeln!(
                out,
                "compared on {}; B/A is of the cost (below 1 = B better)",
                objective.heading()
            )?;
        }
        let unit = if objective.is_time() {
            "s".to_owned()
        } else {
            objective.name().to_owned()
        };
        writeln!(
            out,
            "{:<width$}  {:>10} {:>10}  {:>7}  {:>17}  change",
            "configuration",
            format!("A median {unit}"),
            format!("B median {unit}"),
            "B/A",
            "B/A 95% interval"
        )?;
        for c in &cmp.cases {
            let mark = match c.verdict {
                Verdict::Faster => format!("▼ {:.1}% {better}", c.change_pct),
                Verdict::Slower => format!("▲ {:.1}% {worse}", -c.change_pct),
                Verdict::Unchanged => "unchanged".into(),
            };
            writeln!(
                out,
                "{:<width$}  {:>10.4} {:>10.4}  {:>7.3}  {:>17}  {mark}",
                c.config,
                c.a_median,
                c.b_median,
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
        match (cmp.geomean, cmp.change_pct) {
            (Some(g), Some(change)) => writeln!(
                out,
                "geometric mean B/A: {g:.3} ({} over {} configurations)",
                if change < 0.0 {
                    format!("{:.1}% {worse}", -change)
                } else {
                    format!("{change:.1}% {better}")
                },
                cmp.cases.len()
            )?,
            _ => writeln!(out, "no configuration in common")?,
        }
    }
    if let (Some(_), None) = (args.fail_above, cmp.geomean) {
        // A gate that compared nothing must not pass.
        eprintln!(
            "coretune: A and B have no configuration in common with a successful run: nothing to \
             gate on with --fail-above"
        );
        return Ok(ExitCode::from(crate::exit::FAILED));
    }
    // On the figure printed: a rate's change, not its cost ratio's.
    if let (Some(limit), Some(true)) = (
        args.fail_above,
        args.fail_above.and_then(|l| cmp.is_worse_than(l)),
    ) {
        eprintln!(
            "coretune: B is {:.1}% {worse} than A (geometric mean), above --fail-above {limit}%",
            -cmp.change_pct.unwrap_or_default()
        );
        return Ok(ExitCode::from(crate::exit::FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
