//! One module per output format of a sweep's report. The report itself is data, built by the
//! engine in core ([`SweepReport`], [`RunView`]).
//!
//! Every file format is a [`Reporter`]: data in, bytes out, errors returned. [`write_all`] is the
//! one place that writes them into a sweep's folder (hyperfine's `export/mod.rs` layout); the
//! terminal table is separate because it is printed, not saved.

pub(crate) mod csv;
pub(crate) mod fleet;
pub(crate) mod html;
pub(crate) mod hyperfine;
pub(crate) mod json;
pub(crate) mod md;
pub(crate) mod plan;
pub(crate) mod svg;
pub(crate) mod table;

use std::path::Path;

use anyhow::Context;
use coretune_core::SweepReport;
use coretune_core::grid::{Family, Grid};
use coretune_core::sweep::{ConfigRow, Objective, Quantity, RunView};
use serde::Serialize;

/// One output file.
pub(crate) trait Reporter {
    /// Its name in the sweep folder.
    fn file_name(&self) -> &'static str;
    /// Its bytes.
    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>>;
}

/// Every file reporter that needs only the summary.
pub(crate) fn reporters() -> Vec<Box<dyn Reporter>> {
    let mut v: Vec<Box<dyn Reporter>> = vec![
        Box::new(json::Json),
        Box::new(csv::Csv),
        Box::new(md::Markdown),
        Box::new(hyperfine::Hyperfine),
    ];
    for p in svg::summary_plots() {
        v.push(Box::new(p));
    }
    v
}

/// Writes every report file into `dir`: the summary formats, the plots and `report.html`.
///
/// # Errors
///
/// The first rendering or writing error, naming the file.
pub(crate) fn write_all(dir: &Path, report: &SweepReport, view: &RunView) -> anyhow::Result<()> {
    // Each file whole or not at all (a full disk leaves the last good one, never an empty one).
    let write = |name: &str, bytes: &[u8]| -> anyhow::Result<()> {
        Ok(coretune_core::sweep::write_file(&dir.join(name), bytes)?)
    };
    for r in reporters() {
        let bytes = r
            .render(report)
            .with_context(|| format!("rendering {}", r.file_name()))?;
        write(r.file_name(), &bytes)?;
    }
    let mut figures = Vec::new();
    if !report.configs.is_empty() {
        let captions = [
            "Median wall time per thread count, one line per family (the placement and every \
             other axis that varies: CPU set, copies or ranks, memory policy); whiskers are the \
             bootstrap 95% interval of the median.",
            "Speedup over the same family's 1-thread median; dashed: perfect scaling.",
            "Efficiency = speedup / threads; dashed: 100%.",
            "Every configuration measured, one cell each: the median of the objective the \
             recommendation is taken on and the speedup over its family's 1-thread figure, \
             shaded by that objective (the best darkest, whichever way is better).",
        ];
        let ids = [
            "plot-time",
            "plot-speedup",
            "plot-efficiency",
            "plot-heatmap",
        ];
        for ((p, caption), id) in svg::summary_plots().iter().zip(captions).zip(ids) {
            figures.push(html::Figure {
                id,
                caption: caption.into(),
                svg: (p.draw)(report).with_context(|| format!("rendering {}", p.file))?,
            });
        }
    }
    let objective = report.design.objectives().swap_remove(0);
    if !objective.is_time() {
        if let Some(f) = figures.iter_mut().find(|f| f.id == "plot-speedup") {
            f.caption = format!(
                "Speedup of {} over the same family's 1-thread median (a rate's ratio, or a \
                 lower-is-better figure's inverse ratio); dashed: perfect scaling.",
                objective.name()
            );
        }
    }
    let per_run = [
        (
            "objective.svg",
            "plot-objective",
            svg::objective_plot(report).context("rendering objective.svg")?,
            "The objective the recommendation is taken on (--objective), median per thread count, \
             one line per family; whiskers are the bootstrap 95% interval of the median.",
        ),
        (
            "pareto.svg",
            "plot-pareto",
            svg::pareto_plot(report).context("rendering pareto.svg")?,
            "Each configuration's medians of the first two objectives, each point labelled; the \
             line joins the Pareto front, the configurations no other one beats on all \
             objectives; grey points are beaten on both.",
        ),
        (
            "utilisation.svg",
            "plot-utilisation",
            svg::utilisation_plot(view).context("rendering utilisation.svg")?,
            "Busy share of each CPU while the run ran (coretune tune --monitor), grouped by NUMA \
             node, L3 and core.",
        ),
        (
            "residency.svg",
            "plot-residency",
            svg::residency_plot(view).context("rendering residency.svg")?,
            "Share of each thread's samples on each CPU, with its migrations (with several \
             copies, each thread named with its copy).",
        ),
        (
            "throttle.svg",
            "plot-throttle",
            svg::throttle_plot(view).context("rendering throttle.svg")?,
            "The adaptive throttle in each run (--throttle adaptive): the limit it chose over time \
             (top) and the throughput it measured in each sample (bottom); at most the first 8 \
             runs are drawn, all are in runs.jsonl.",
        ),
    ];
    // The objective's own plots lead the page: they are what the recommendation was taken on.
    let mut leading = 0;
    for (file, id, svg, caption) in per_run {
        if let Some(svg) = svg {
            write(file, svg.as_bytes())?;
            let figure = html::Figure {
                id,
                caption: caption.into(),
                svg,
            };
            if matches!(id, "plot-objective" | "plot-pareto") {
                figures.insert(leading, figure);
                leading += 1;
            } else {
                figures.push(figure);
            }
        }
    }
    let mut page = html::render(report, &figures);
    if view.samples.is_empty() && !report.configs.is_empty() {
        // Say why the per-CPU plot is missing rather than leave a silent gap.
        page = page.replacen(
            "\n<script>",
            "\n<p class=\"sub\">No per-CPU utilisation plot: this sweep was not monitored \
             (coretune tune --monitor).</p>\n\n<script>",
            1,
        );
    }
    write("report.html", page.as_bytes())
}

/// One line naming the configurations a cgroup CPU quota throttled, with the median time a run
/// spent throttled; `None` when none was (the table's and `summary.md`'s note).
pub(crate) fn throttled_note(report: &coretune_core::SweepReport) -> Option<String> {
    let parts: Vec<String> = report
        .configs
        .iter()
        .filter_map(|c| {
            let t = c.throttled_s?;
            Some(format!("{} ({:.1} ms a run)", c.config, t * 1e3))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "The cgroup CPU quota throttled {}: those runs were held off the CPUs, and their \
             times include it.",
            parts.join(", ")
        )
    })
}

/// The cells both tables print for a row: throttle, median, interval, speedup, efficiency.
/// A row with no successful run says how its runs ended (`failed`, `timed out`).
pub(crate) fn cells(c: &ConfigRow) -> [String; 5] {
    [
        c.config.family.throttle.to_string(),
        c.median_s.map_or_else(|| c.failure_word().to_owned(), secs),
        c.ci_s.map_or(String::new(), |(lo, hi)| {
            format!("{} – {}", secs(lo), secs(hi))
        }),
        c.speedup.map_or(String::new(), |x| format!("{x:.2}×")),
        c.efficiency
            .map_or(String::new(), |x| format!("{:.0}%", x * 100.0)),
    ]
}

/// The columns the tables add after the time's: the sweep's objectives other than wall time
/// (with their index in the plan), then every other metric read from the program's output
/// (`None`: not an objective), so that a server's report shows its requests/s and its p99
/// whichever one it was tuned on.
pub(crate) fn extra_objectives(report: &SweepReport) -> Vec<(Option<usize>, Objective)> {
    let objectives = report.design.objectives();
    let mut columns: Vec<(Option<usize>, Objective)> = objectives
        .iter()
        .cloned()
        .enumerate()
        .filter(|(_, o)| !o.is_time())
        .map(|(i, o)| (Some(i), o))
        .collect();
    let named = |name: &str| objectives.iter().any(|o| o.name() == name);
    for m in report.metrics.iter().filter(|m| !named(&m.name)) {
        columns.push((
            None,
            Objective {
                quantity: Quantity::Metric(m.name.clone()),
                higher_is_better: m.higher_is_better,
                unit: m.unit.clone(),
            },
        ));
    }
    columns
}

/// The Pareto front as one line (`Pareto front of eps and cpu (better on one costs on another):
/// …`), when the sweep has two or more objectives.
pub(crate) fn pareto_line(report: &SweepReport) -> Option<String> {
    let objectives = report.design.objectives();
    if objectives.len() < 2 {
        return None;
    }
    let names: Vec<&str> = objectives.iter().map(Objective::name).collect();
    let front: Vec<String> = report
        .configs
        .iter()
        .filter(|c| c.pareto)
        .map(|c| c.config.to_string())
        .collect();
    Some(format!(
        "Pareto front of {} (no other configuration is better on all of them): {}",
        names.join(" and "),
        if front.is_empty() {
            "none measured".to_owned()
        } else {
            front.join("; ")
        }
    ))
}

/// A column heading for an objective: its name, its unit, and which way is better
/// (`eps events/s ↑`).
pub(crate) fn objective_heading(o: &Objective) -> String {
    let arrow = if o.higher_is_better { "↑" } else { "↓" };
    match (&o.quantity, &o.unit) {
        (Quantity::Rss, _) => format!("rss MiB {arrow}"),
        (_, Some(u)) => format!("{} {u} {arrow}", o.name()),
        (_, None) => format!("{} {arrow}", o.name()),
    }
}

/// A row's cell for objective `i` of the plan (`None`: the metric `o` names): its median,
/// without the unit the heading has.
pub(crate) fn objective_cell(c: &ConfigRow, i: Option<usize>, o: &Objective) -> String {
    let value = match i {
        Some(i) => c.objective_median(i),
        None => c.metrics.get(o.name()).map(|m| m.median),
    };
    let Some(v) = value else {
        return "–".into();
    };
    match o.quantity {
        Quantity::Rss => format!("{:.1}", v / f64::from(1u32 << 20)),
        Quantity::Cpu | Quantity::Time => secs(v),
        Quantity::Metric(_) | Quantity::Throughput => {
            let shown = o.show(v);
            o.unit
                .as_ref()
                .and_then(|u| shown.strip_suffix(u.as_str()))
                .map_or(shown.clone(), |n| n.trim_end().to_owned())
        }
    }
}

/// The configurations out of the running, one line each with why (`2 threads, place os: 1 of
/// 3 runs failed: ./app exited with status 134 (race detected)`): every table's note.
pub(crate) fn out_lines(report: &SweepReport) -> Vec<String> {
    report
        .configs
        .iter()
        .filter_map(|c| Some(format!("{}: {}", c.config, c.out.as_deref()?)))
        .collect()
}

/// The heading of the note that lists [`out_lines`].
pub(crate) const OUT_HEADING: &str =
    "Out of the running, never recommended (a run failed; tune -i keeps such configurations):";

/// What the speedup is taken over, when that is not the obvious 1-thread run of the same row's
/// family: with instances, one copy of one thread.
pub(crate) fn speedup_note(report: &SweepReport) -> Option<&'static str> {
    report.design.grid.has_instances().then_some(
        "Speedup: over one copy of 1 thread of the same placement, so that the gain from \
         splitting shows; efficiency: per thread of all copies.",
    )
}

/// The line every output starts its results with when the sweep is incomplete.
pub(crate) fn incomplete_line(report: &SweepReport) -> Option<String> {
    report.incomplete().map(|so_far| {
        format!(
            "Incomplete sweep ({so_far}): what follows is provisional; coretune tune --resume on \
             its folder continues it."
        )
    })
}

/// Whether the rows have a launcher's line (`tune --launcher`): the tables' last column.
pub(crate) fn has_launch(report: &SweepReport) -> bool {
    report.configs.iter().any(|c| c.launch.is_some())
}

/// A row's thread count; `P×T` for P instances of T threads each (`tune --instances`).
pub(crate) fn threads_cell(c: &ConfigRow) -> String {
    if c.config.family.instances > 1 {
        format!("{}×{}", c.config.family.instances, c.config.threads)
    } else {
        c.config.threads.to_string()
    }
}

/// A row's placement with its memory policy when it sets one (`compact, mem interleave`), and
/// any [`other_axes`]: the place column of `summary.md` and the HTML table.
pub(crate) fn place_cell(c: &ConfigRow) -> String {
    let place = if c.config.family.mem.is_default() {
        c.config.family.place.to_string()
    } else {
        format!("{}, mem {}", c.config.family.place, c.config.family.mem)
    };
    with_other_axes(place, &c.config.family)
}

/// The fields of [`Family`] that the reports show one by one, each in its own way (a column, a
/// word, `P×T` for instances). An axis added to `Family` later needs no edit here: it is one of
/// the [`other_axes`], shown wherever a family is (the place cells, the curves' labels, a CSV
/// column, hyperfine's parameters) when it is not at its default.
const AXES_BY_NAME: [&str; 5] = ["place", "cpus", "throttle", "mem", "instances"];

/// The lists of [`Grid`] that the plan and the HTML report show one by one; a list added later
/// is one of the [`other_grid_lists`].
const GRID_LISTS_BY_NAME: [&str; 6] = [
    "threads",
    "places",
    "cpus",
    "throttles",
    "mems",
    "instances",
];

/// A family's axes that no report names ([`AXES_BY_NAME`]), as `(name, value)` in name order,
/// taken from the family's JSON: an axis at its default is absent there (`skip_serializing_if`,
/// which every axis has so that results written before it read back), so only set ones show.
pub(crate) fn other_axes(f: &Family) -> Vec<(String, String)> {
    json_fields(f, &AXES_BY_NAME)
}

/// A grid's lists that no report names ([`GRID_LISTS_BY_NAME`]), as `(name, values)`.
pub(crate) fn other_grid_lists(g: &Grid) -> Vec<(String, String)> {
    json_fields(g, &GRID_LISTS_BY_NAME)
}

/// `text` followed by `, NAME VALUE` for each of `f`'s [`other_axes`].
pub(crate) fn with_other_axes(mut text: String, f: &Family) -> String {
    for (name, value) in other_axes(f) {
        text.push_str(&format!(", {name} {value}"));
    }
    text
}

/// The fields of `value`'s JSON object not in `named`, each as text (a string as it is, a list
/// joined with ", ", anything else as JSON).
fn json_fields(value: &impl Serialize, named: &[&str]) -> Vec<(String, String)> {
    fn text(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(items) => {
                items.iter().map(text).collect::<Vec<_>>().join(", ")
            }
            other => other.to_string(),
        }
    }
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(fields)) => fields
            .iter()
            .filter(|(name, _)| !named.contains(&name.as_str()))
            .map(|(name, v)| (name.clone(), text(v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Formats a number of seconds with 3 significant decimals where they matter.
pub(crate) fn secs(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

#[cfg(test)]
mod test;
