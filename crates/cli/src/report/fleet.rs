//! The fleet report's files and text. The model is core's ([`FleetReport`], built from a
//! [`FleetFolder`]); here it becomes bytes: per node type the usual files in the type's folder
//! (its `summary.json`, which `coretune compare` reads, plots and `report.html`), and in the
//! fleet folder `fleet-summary.json`, `fleet.md`, `fleet-speedup.svg` (every type's speedup
//! curve on one plot) and a `report.html` for the whole fleet.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Context;
use coretune_core::fleet::{FleetFolder, FleetReport, SlurmFleet};
use coretune_core::program::watch::cpu_places;

use super::html;

/// Reads the fleet folder `dir`, writes its report files and prints the report (or with
/// `json`, `fleet-summary.json`'s content). The nodes' Slurm jobs are named when the folder has
/// a `fleet.json`.
///
/// # Errors
///
/// Reading the folder, writing a file.
pub(crate) fn report_dir(dir: &Path, json: bool) -> anyhow::Result<FleetReport> {
    let folder = FleetFolder::read(dir)?;
    let mut report = folder.report()?;
    if SlurmFleet::is_fleet(dir) {
        SlurmFleet::open(dir)?.annotate(&mut report);
    }
    write_all(&folder, &report)?;
    let mut out = std::io::stdout().lock();
    if json {
        // Bytes first, so that a closed stdout is an I/O error (not an error) like elsewhere.
        let mut bytes = serde_json::to_vec_pretty(&report)?;
        bytes.push(b'\n');
        out.write_all(&bytes)?;
    } else {
        out.write_all(text(&report, false).as_bytes())?;
        writeln!(out, "\nReport: {}", dir.join("report.html").display())?;
    }
    out.flush()?;
    Ok(report)
}

/// Writes every type's files into its folder and the fleet's files into the fleet folder.
///
/// # Errors
///
/// The first rendering or writing error, naming the file.
pub(crate) fn write_all(folder: &FleetFolder, report: &FleetReport) -> anyhow::Result<()> {
    for (i, t) in report.types.iter().enumerate() {
        let Some(dir) = folder.type_dir(i) else {
            continue;
        };
        let places = folder
            .first_node(i)
            .and_then(coretune_core::SweepFolder::topology)
            .map(|t| cpu_places(&t))
            .unwrap_or_default();
        let view = folder.run_view(i, &t.report, &places);
        super::write_all(dir, &t.report, &view)?;
    }
    // Each file whole or not at all, as a sweep's (a full disk leaves the last good one).
    let write = |name: &str, bytes: &[u8]| -> anyhow::Result<()> {
        Ok(coretune_core::sweep::write_file(
            &folder.dir().join(name),
            bytes,
        )?)
    };
    let mut json = serde_json::to_vec_pretty(report)?;
    json.push(b'\n');
    write("fleet-summary.json", &json)?;
    write("fleet.md", text(report, true).as_bytes())?;
    let plot = super::svg::fleet_speedup_plot(report).context("rendering fleet-speedup.svg")?;
    write("fleet-speedup.svg", plot.as_bytes())?;
    let figure = html::Figure {
        id: "plot-fleet-speedup",
        caption: "Speedup over each node type's own 1-thread time, of the fleet-wide setting's \
                  placement (else the type's recommended one); dashed: perfect scaling."
            .into(),
        svg: plot,
    };
    write(
        "report.html",
        html::render_fleet(report, &[figure]).as_bytes(),
    )
}

/// The report as text: plain for the terminal, or Markdown (`fleet.md`).
pub(crate) fn text(report: &FleetReport, markdown: bool) -> String {
    let mut s = String::new();
    let h = |level: usize| {
        if markdown {
            "#".repeat(level) + " "
        } else {
            String::new()
        }
    };
    let types: Vec<String> = report
        .types
        .iter()
        .map(|t| {
            let n = t.nodes.len();
            format!("{} ({n} node{})", t.name, if n == 1 { "" } else { "s" })
        })
        .collect();
    let _ = writeln!(
        s,
        "{}Fleet: {}, {} node types: {}",
        h(1),
        report.target.label(),
        report.types.len(),
        types.join(", ")
    );
    for t in &report.types {
        let _ = writeln!(s, "\n{}{}: {}", h(2), t.name, t.report.machine.topology);
        for n in &t.nodes {
            let state = if n.complete { "complete" } else { "INCOMPLETE" };
            let job = n.job.as_ref().map_or(String::new(), |j| format!("; {j}"));
            let _ = writeln!(
                s,
                "{}node {}: {} measured runs, {state}{job}",
                if markdown { "- " } else { "  " },
                n.name,
                n.runs
            );
        }
        match &t.report.recommendation {
            Some(r) => {
                let interval = t.report.recommended_row().and_then(|c| {
                    let (lo, hi) = c.ci_s?;
                    Some(format!(
                        " ({} s median, 95% interval {} – {} s)",
                        super::secs(c.median_s?),
                        super::secs(lo),
                        super::secs(hi)
                    ))
                });
                let _ = writeln!(
                    s,
                    "\nRecommended: {}{}\n{}",
                    r.config,
                    interval.unwrap_or_default(),
                    r.reason
                );
            }
            None => {
                let _ = writeln!(s, "\nNo configuration completed a verified run.");
            }
        }
    }
    let _ = writeln!(s, "\n{}Configurations × node types", h(2));
    let names: Vec<&str> = report.types.iter().map(|t| t.name.as_str()).collect();
    let width = report
        .configs
        .iter()
        .map(|r| r.config.to_string().chars().count())
        .max()
        .unwrap_or(13)
        .max(13);
    let cell = |c: &Option<coretune_core::fleet::FleetCell>| {
        c.map_or("–".to_owned(), |c| {
            format!("{} s ({:.2}×)", super::secs(c.median_s), c.ratio)
        })
    };
    let geo = |g: Option<f64>| g.map_or("–".to_owned(), |g| format!("{g:.3}×"));
    let chosen = report.fleet.as_ref().map(|f| &f.config);
    if markdown {
        let _ = writeln!(
            s,
            "\nMedian time and ratio to the type's fastest.\n\n| configuration | {} | geometric mean |",
            names.join(" | ")
        );
        let _ = writeln!(s, "|---|{}---:|", "---:|".repeat(names.len()));
        for r in &report.configs {
            let cells: Vec<String> = r.cells.iter().map(cell).collect();
            let mark = if Some(&r.config) == chosen {
                " **←**"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "| {} | {} | {}{mark} |",
                r.config,
                cells.join(" | "),
                geo(r.geomean)
            );
        }
    } else {
        let _ = write!(s, "{:<width$}", "configuration");
        for n in &names {
            let _ = write!(s, "  {n:>18}");
        }
        let _ = writeln!(s, "  {:>10}", "geomean");
        for r in &report.configs {
            let _ = write!(s, "{:<width$}", r.config.to_string());
            for c in &r.cells {
                let _ = write!(s, "  {:>18}", cell(c));
            }
            let mark = if Some(&r.config) == chosen {
                "  ← fleet-wide"
            } else {
                ""
            };
            let _ = writeln!(s, "  {:>10}{mark}", geo(r.geomean));
        }
    }
    match &report.fleet {
        Some(f) => {
            let _ = writeln!(s, "\n{}Fleet-wide setting: {}", h(2), f.config);
            let _ = writeln!(s, "{}", f.reason);
            for l in &f.losses {
                let _ = writeln!(
                    s,
                    "\n{}{}: {:+.1}% against its fastest{}",
                    h(3),
                    l.name,
                    (l.ratio - 1.0) * 100.0,
                    match (&l.recommended, l.ratio_to_recommended) {
                        (Some(own), Some(r)) if own != &f.config => format!(
                            ", {:+.1}% against its own recommended {own}",
                            (r - 1.0) * 100.0
                        ),
                        _ => String::new(),
                    }
                );
                if !l.apply.is_empty() {
                    if markdown {
                        let _ = writeln!(s, "\n```");
                    }
                    for line in &l.apply {
                        let _ = writeln!(s, "{}{line}", if markdown { "" } else { "  " });
                    }
                    if markdown {
                        let _ = writeln!(s, "```");
                    }
                }
            }
        }
        None => {
            let _ = writeln!(s, "\nNo fleet-wide setting.");
        }
    }
    for w in &report.warnings {
        let _ = writeln!(s, "{}warning: {w}", if markdown { "\n> " } else { "" });
    }
    s
}
