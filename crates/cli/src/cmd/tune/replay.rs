//! `coretune tune --replay SOURCE`: the search run on recorded runs ([`Replay`]), printed as a
//! short summary or, with `--json`, as the [`ReplayReport`]. Core decides everything; this file
//! reads the source, checks it against `--input`'s topology, and prints.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use coretune_core::Topology;
use coretune_core::cpuset::counted;
use coretune_core::grid::MachineCounts;
use coretune_core::sweep::{Cost, Pick, Replay, ReplayReport, Strategy};

use super::args::SweepOptions;

/// Replays `sweep`'s design on the runs recorded in `source` with `seed`; with `topo`
/// (`--input`) the recorded grid must resolve on it.
pub(super) fn run(
    source: &Path,
    sweep: &SweepOptions,
    seed: u64,
    topo: Option<&Topology>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let replay = Replay::read(source).context("--replay")?;
    if let Some(topo) = topo {
        replay
            .grid()
            .check(topo)
            .context("--replay: the recorded grid on --input's topology")?;
    }
    let design = sweep.design(replay.grid().clone());
    // --input's topology counts the PUs of each CPU set (else the recording's, if it has them).
    let design = match topo {
        Some(topo) => design.with_pus(topo, MachineCounts::of(topo)),
        None => design,
    };
    let report = replay.evaluate(&design, seed).context("--replay")?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(text(&report, replay.recorded_runs()).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The summary: what was replayed, the three picks, the gap and the costs.
fn text(r: &ReplayReport, recorded: usize) -> String {
    let strategy = match r.strategy {
        Strategy::Search => "the search",
        Strategy::Exhaustive => "an exhaustive sweep",
    };
    let pick = |p: &Pick| {
        format!(
            "{} (true {} {}, {:+.1}% against the best)",
            p.config,
            r.objective,
            significant(p.true_objective),
            p.gap_to_best_pct
        )
    };
    let cost = |c: &Cost| {
        format!(
            "{} of {}, {:.1} s of runs",
            counted(c.runs, "run"),
            counted(c.configs, "configuration"),
            c.summed_time_s
        )
    };
    let mut s = format!(
        "Replayed {} ({} recorded): {strategy}, {} per configuration, tolerance {}%, seed {}\n",
        r.source.display(),
        counted(recorded, "run"),
        counted(r.runs, "run"),
        r.tolerance_pct,
        r.seed
    );
    if r.unrecorded > 0 {
        s += &format!(
            "  {} of the grid without a recorded run (replayed as failed)\n",
            counted(r.unrecorded, "configuration")
        );
    }
    s += &format!("  picks:            {}\n", pick(&r.recommendation));
    s += &format!("  all runs pick:    {}\n", pick(&r.exhaustive));
    s += &format!("  best:             {}\n", pick(&r.best));
    s += &format!(
        "  gap: {:+.1}% (the pick's true {} against all runs' pick)\n",
        r.gap_pct, r.objective
    );
    #[allow(clippy::cast_precision_loss)]
    let share = if r.cost.exhaustive.summed_time_s > 0.0 {
        format!(
            " ({:.0}% of its time)",
            r.cost.search.summed_time_s / r.cost.exhaustive.summed_time_s * 100.0
        )
    } else {
        String::new()
    };
    s += &format!(
        "  cost: {}; exhaustive: {}{share}\n",
        cost(&r.cost.search),
        cost(&r.cost.exhaustive)
    );
    s
}

/// A value to four significant digits (`1.234`, `0.0007416`, `1234`).
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return v.to_string();
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}
