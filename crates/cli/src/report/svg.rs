//! SVG plots (plotters' SVG backend, text as `<text>` elements: no fonts needed to render).
//!
//! From the summary: wall time against threads (one line per family — every axis but the
//! thread count, `grid::Family`, labelled by `family_label` — whiskers = the
//! bootstrap 95% interval), speedup and efficiency against the ideal line, and a heat map of
//! family × thread count shaded by the sweep's objective. From a monitored run ([`RunView`]): per-CPU utilisation over time, one small
//! graph per CPU ordered and titled by NUMA node / L3 / core, and a thread × CPU residency map
//! with each thread's migrations. From the adaptive-throttle runs ([`RunView::throttle_traces`]):
//! the limit and the measured throughput over each run's time, one line per run. When the sweep
//! optimises something besides wall time (`--objective`): that objective against threads, and
//! with two or more objectives the first two against each other, the Pareto front joined.
//!
//! Every plot is 800 px wide, axis labels carry units.

use std::collections::BTreeMap;

use coretune_core::SweepReport;
use coretune_core::fleet::FleetReport;
use coretune_core::sweep::{ConfigRow, Objective, Quantity, RunView};
use coretune_core::workload::ThrottleSample;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Reporter;

const WIDTH: u32 = 800;
const FONT: &str = "sans-serif";

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing: {e:?}")
}

/// A family's label: its placement, then every other axis where it is not the default — CPU
/// set, throttle, copies (ranks under a launcher), memory policy, then any axis the reports do
/// not name (`super::other_axes`) — so that no two families of
/// a sweep share one (`os`, `os, 2 copies, mem local`, `compact, cpus 'all ~pu:0'`).
fn family_label(c: &ConfigRow) -> String {
    let f = &c.config;
    let mut parts = vec![f.family.place.to_string()];
    if !f.family.cpus.is_all() {
        parts.push(format!("cpus '{}'", f.family.cpus));
    }
    if f.family.throttle.is_set() {
        parts.push(format!("throttle {}", f.family.throttle));
    }
    if f.family.instances > 1 {
        let what = if c.launch.is_some() {
            "ranks"
        } else {
            "copies"
        };
        parts.push(format!("{} {what}", f.family.instances));
    }
    if !f.family.mem.is_default() {
        parts.push(format!("mem {}", f.family.mem));
    }
    super::with_other_axes(parts.join(", "), &f.family)
}

/// The report's rows grouped by family (every axis but the thread count; in first-seen order),
/// each with its label and its rows sorted by threads.
fn families(report: &SweepReport) -> Vec<(String, Vec<&ConfigRow>)> {
    let mut out: Vec<(coretune_core::grid::Family, String, Vec<&ConfigRow>)> = Vec::new();
    for c in &report.configs {
        let family = &c.config.family;
        match out.iter_mut().find(|(f, _, _)| f == family) {
            Some((_, _, rows)) => rows.push(c),
            None => out.push((family.clone(), family_label(c), vec![c])),
        }
    }
    out.into_iter()
        .map(|(_, label, mut rows)| {
            rows.sort_by_key(|c| c.config.threads);
            (label, rows)
        })
        .collect()
}

fn thread_counts(report: &SweepReport) -> Vec<usize> {
    let mut v: Vec<usize> = report.configs.iter().map(|c| c.config.threads).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn colour(i: usize) -> RGBColor {
    // Palette99 has light yellows early on; a fixed set of readable colours first.
    const FIRST: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    FIRST.get(i).copied().unwrap_or_else(|| {
        let c = Palette99::pick(i).to_rgba();
        RGBColor(c.0, c.1, c.2)
    })
}

/// White → blue for 0 → 1.
fn heat(x: f64) -> RGBColor {
    let x = x.clamp(0.0, 1.0);
    let mix = |from: f64, to: f64| (from + (to - from) * x).round().clamp(0.0, 255.0) as u8;
    RGBColor(mix(247.0, 8.0), mix(251.0, 48.0), mix(255.0, 107.0))
}

/// Axis upper bound with some headroom.
fn top(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * 1.1
    } else {
        1.0
    }
}

/// A point of a line: threads, value, optional interval.
type Point = (usize, f64, Option<(f64, f64)>);

/// One line per family, plus an optional ideal line.
struct LinePlot<'a> {
    title: &'a str,
    y_desc: &'a str,
    series: Vec<(String, Vec<Point>)>,
    ideal: Option<(&'a str, &'a dyn Fn(f64) -> f64)>,
    x_max: usize,
}

fn line_plot(p: &LinePlot<'_>) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let x_max = p.x_max.max(2) as f64;
        let mut y_max = p
            .series
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|&(_, y, ci)| ci.map_or(y, |c| c.1.max(y))))
            .fold(0.0f64, f64::max);
        if let Some((_, f)) = p.ideal {
            y_max = y_max.max(f(x_max).min(y_max.max(1.0) * 1.5));
        }
        let mut chart = ChartBuilder::on(&root)
            .caption(p.title, (FONT, 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.5f64..x_max + 0.5, 0f64..top(y_max))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("threads")
            .y_desc(p.y_desc)
            .x_labels(p.x_max.clamp(2, 16))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        if let Some((label, f)) = p.ideal {
            let grey = RGBColor(120, 120, 120);
            chart
                .draw_series(DashedLineSeries::new(
                    [1.0, x_max].into_iter().map(|x| (x, f(x))),
                    8,
                    6,
                    grey.stroke_width(2),
                ))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
        }
        for (i, (label, pts)) in p.series.iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|&(x, y, _)| (x as f64, y)),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(
                    pts.iter()
                        .map(|&(x, y, _)| Circle::new((x as f64, y), 4, c.filled())),
                )
                .map_err(err)?;
            chart
                .draw_series(pts.iter().filter_map(|&(x, y, ci)| {
                    let (lo, hi) = ci?;
                    Some(ErrorBar::new_vertical(
                        x as f64,
                        lo,
                        y,
                        hi,
                        c.stroke_width(1),
                        10,
                    ))
                }))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// One line per family, of the points `point` gives for its rows.
fn series(
    report: &SweepReport,
    point: impl Fn(&ConfigRow) -> Option<Point>,
) -> Vec<(String, Vec<Point>)> {
    families(report)
        .into_iter()
        .map(|(label, rows)| (label, rows.into_iter().filter_map(&point).collect()))
        .collect()
}

/// Median wall time against threads, whiskers = 95% interval of the median.
pub(crate) fn time_plot(report: &SweepReport) -> anyhow::Result<String> {
    let series = series(report, |c| Some((c.config.threads, c.median_s?, c.ci_s)));
    line_plot(&LinePlot {
        title: "Wall time (median, 95% interval)",
        y_desc: "wall time (s)",
        series,
        ideal: None,
        x_max: thread_counts(report).last().copied().unwrap_or(1),
    })
}

/// The first objective's median against threads when it is not wall time (whiskers = 95%
/// interval); `None` for a time sweep, whose time plot is this.
pub(crate) fn objective_plot(report: &SweepReport) -> anyhow::Result<Option<String>> {
    let objective = report.design.objectives().swap_remove(0);
    if objective.is_time() {
        return Ok(None);
    }
    let (scale, unit) = axis_unit(&objective);
    let series = series(report, |c| {
        let (median, ci) = c.objective()?;
        Some((
            c.config.threads,
            median / scale,
            ci.map(|(lo, hi)| (lo / scale, hi / scale)),
        ))
    });
    let title = format!("{}: median, 95% interval", objective.heading());
    let y_desc = format!("{} ({unit})", objective.name());
    line_plot(&LinePlot {
        title: &title,
        y_desc: &y_desc,
        series,
        ideal: None,
        x_max: thread_counts(report).last().copied().unwrap_or(1),
    })
    .map(Some)
}

/// How an objective's values are drawn: the divisor and the unit of its axis (peak memory in
/// MiB, a metric in its `--unit`).
fn axis_unit(o: &Objective) -> (f64, String) {
    match (&o.quantity, &o.unit) {
        (Quantity::Rss, _) => (f64::from(1u32 << 20), "MiB".to_owned()),
        (_, Some(u)) => (1.0, u.clone()),
        (_, None) => (1.0, "value".to_owned()),
    }
}

/// The first two objectives against each other, one point per configuration, the Pareto front
/// joined and labelled; `None` with fewer than two objectives.
pub(crate) fn pareto_plot(report: &SweepReport) -> anyhow::Result<Option<String>> {
    let objectives = report.design.objectives();
    if objectives.len() < 2 {
        return Ok(None);
    }
    let (ox, oy) = (&objectives[0], &objectives[1]);
    let scale = |o: &Objective| axis_unit(o).0;
    let axis = |o: &Objective| {
        let unit = axis_unit(o).1;
        let way = if o.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        format!("{} ({unit}, {way} is better)", o.name())
    };
    let points: Vec<(f64, f64, bool, String)> = report
        .configs
        .iter()
        .filter_map(|c| {
            Some((
                c.objective_median(0)? / scale(ox),
                c.objective_median(1)? / scale(oy),
                c.pareto,
                format!("{}{}", c.config.threads, short_family(c)),
            ))
        })
        .collect();
    if points.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (x_max, y_max) = points
            .iter()
            .fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("Pareto front: {} against {}", ox.name(), oy.name()),
                (FONT, 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..top(x_max), 0f64..top(y_max))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(axis(ox))
            .y_desc(axis(oy))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        let grey = RGBColor(150, 150, 150);
        let front_colour = colour(0);
        // The beaten configurations are labelled too, in grey: which ones they are matters as
        // much as that they are beaten.
        chart
            .draw_series(points.iter().filter(|p| !p.2).map(|p| {
                EmptyElement::at((p.0, p.1))
                    + Circle::new((0, 0), 4, grey.filled())
                    + Text::new(
                        p.3.clone(),
                        (6, 4),
                        TextStyle::from((FONT, 11).into_font()).color(&grey),
                    )
            }))
            .map_err(err)?
            .label("beaten on both (grey labels)")
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, grey.filled()));
        let mut front: Vec<&(f64, f64, bool, String)> = points.iter().filter(|p| p.2).collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(
                front.iter().map(|p| (p.0, p.1)),
                front_colour.stroke_width(2),
            ))
            .map_err(err)?
            .label("Pareto front")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], front_colour.stroke_width(2))
            });
        chart
            .draw_series(front.iter().map(|p| {
                EmptyElement::at((p.0, p.1))
                    + Circle::new((0, 0), 5, front_colour.filled())
                    + Text::new(p.3.clone(), (7, -14), (FONT, 13).into_font())
            }))
            .map_err(err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(Some(out))
}

/// A point's label after its thread count: its family's (`4 compact`, `2 os, 2 copies, mem
/// local`).
fn short_family(c: &ConfigRow) -> String {
    format!(" {}", family_label(c))
}

/// Speedup over 1 thread against threads, with the ideal (linear) line.
pub(crate) fn speedup_plot(report: &SweepReport) -> anyhow::Result<String> {
    let series = series(report, |c| Some((c.config.threads, c.speedup?, None)));
    line_plot(&LinePlot {
        title: "Speedup over 1 thread",
        y_desc: "speedup (×)",
        series,
        ideal: Some(("ideal (linear)", &|x| x)),
        x_max: thread_counts(report).last().copied().unwrap_or(1),
    })
}

/// Efficiency (speedup per thread) against threads, with the ideal 100% line.
pub(crate) fn efficiency_plot(report: &SweepReport) -> anyhow::Result<String> {
    let series = series(report, |c| {
        Some((c.config.threads, c.efficiency? * 100.0, None))
    });
    line_plot(&LinePlot {
        title: "Parallel efficiency",
        y_desc: "efficiency (%)",
        series,
        ideal: Some(("ideal (100%)", &|_| 100.0)),
        x_max: thread_counts(report).last().copied().unwrap_or(1),
    })
}

/// Every node type's speedup curve on one plot (the families [`FleetReport::speedup_curves`]
/// chooses), with the ideal line.
pub(crate) fn fleet_speedup_plot(report: &FleetReport) -> anyhow::Result<String> {
    let series: Vec<(String, Vec<Point>)> = report
        .speedup_curves()
        .into_iter()
        .map(|(label, pts)| (label, pts.into_iter().map(|(t, s)| (t, s, None)).collect()))
        .collect();
    let x_max = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .max()
        .unwrap_or(1);
    line_plot(&LinePlot {
        title: "Speedup over 1 thread, per node type",
        y_desc: "speedup (×)",
        series,
        ideal: Some(("ideal (linear)", &|x| x)),
        x_max,
    })
}

/// A grid of coloured cells with a value written in each.
struct Grid<'a> {
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    columns: Vec<String>,
    rows: Vec<String>,
    /// (column, row) → (shade 0–1, text).
    cells: BTreeMap<(usize, usize), (f64, String)>,
    y_label_width: u32,
}

fn grid_plot(g: &Grid<'_>) -> anyhow::Result<String> {
    let mut out = String::new();
    let row_px = 34u32;
    let height = 140 + row_px * u32::try_from(g.rows.len().max(1)).unwrap_or(u32::MAX / 64);
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (nc, nr) = (g.columns.len().max(1), g.rows.len().max(1));
        // Cell (column c, row r) spans [c, c+1] × [nr-r-1, nr-r]: row 0 on top. The axes carry
        // no tick labels of their own; the column and row names are drawn at the cell centres.
        let mut chart = ChartBuilder::on(&root)
            .caption(g.title, (FONT, 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(g.y_label_width)
            .build_cartesian_2d(0f64..nc as f64, 0f64..nr as f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(g.x_desc)
            .y_desc(g.y_desc)
            .x_labels(0)
            .y_labels(0)
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(err)?;
        let top = |r: usize| (nr - r) as f64;
        chart
            .draw_series(g.cells.iter().map(|(&(c, r), (shade, _))| {
                Rectangle::new(
                    [(c as f64, top(r)), (c as f64 + 1.0, top(r) - 1.0)],
                    heat(*shade).filled(),
                )
            }))
            .map_err(err)?;
        let centre = Pos::new(HPos::Center, VPos::Center);
        chart
            .draw_series(g.cells.iter().map(|(&(c, r), (shade, text))| {
                let ink: &'static RGBColor = if *shade > 0.55 { &WHITE } else { &BLACK };
                Text::new(
                    text.clone(),
                    (c as f64 + 0.5, top(r) - 0.5),
                    TextStyle::from((FONT, 13).into_font())
                        .color(ink)
                        .pos(centre),
                )
            }))
            .map_err(err)?;
        let label = TextStyle::from((FONT, 14).into_font());
        for (c, name) in g.columns.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(c as f64 + 0.5, 0.0));
            root.draw(&Text::new(
                name.clone(),
                (x, y + 8),
                label.pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        for (r, name) in g.rows.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(0.0, top(r) - 0.5));
            root.draw(&Text::new(
                name.clone(),
                (x - 8, y),
                label.pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Family × thread count, a cell per configuration (every axis but the thread count in the
/// rows), shaded by the sweep's objective — the best darkest, whichever way is better — each
/// cell showing the objective's median and the speedup.
pub(crate) fn heatmap_plot(report: &SweepReport) -> anyhow::Result<String> {
    let threads = thread_counts(report);
    let fams = families(report);
    let objective = report.design.objectives().swap_remove(0);
    // Shaded by the objective relative to the best configuration (speedups are relative to
    // each family's own 1-thread figure, so they do not rank families against each other):
    // the best cost over this one's, 1 for the best.
    let cost = |c: &ConfigRow| c.objective_median(0).map(|v| objective.cost(v));
    let best = report
        .configs
        .iter()
        .filter_map(cost)
        .filter(|c| c.is_finite() && *c > 0.0)
        .fold(f64::INFINITY, f64::min);
    let mut cells = BTreeMap::new();
    for (row, (_, rows)) in fams.iter().enumerate() {
        for c in rows {
            let Some(col) = threads.iter().position(|&t| t == c.config.threads) else {
                continue;
            };
            let value = c.objective_median(0).map(|v| {
                if objective.is_time() {
                    format!("{} s", super::secs(v))
                } else {
                    objective.show(v)
                }
            });
            let text = match (value, c.speedup) {
                (Some(v), Some(s)) => format!("{v} ×{s:.2}"),
                (Some(v), None) => v,
                _ => "failed".into(),
            };
            let shade = match cost(c) {
                Some(k) if k > 0.0 && k.is_finite() && best.is_finite() => best / k,
                _ => 0.0,
            };
            cells.insert((col, row), (shade, text));
        }
    }
    let longest = fams.iter().map(|(l, _)| l.len()).max().unwrap_or(4);
    let title = if objective.is_time() {
        "Median wall time and speedup (darker = faster; darkest = fastest)".to_owned()
    } else {
        format!(
            "Median {} and speedup (darkest = best)",
            objective.heading()
        )
    };
    grid_plot(&Grid {
        title: &title,
        x_desc: "threads",
        y_desc: "configuration",
        columns: threads.iter().map(ToString::to_string).collect(),
        rows: fams.into_iter().map(|(l, _)| l).collect(),
        cells,
        y_label_width: label_width(longest),
    })
}

fn label_width(chars: usize) -> u32 {
    u32::try_from(chars * 8 + 40).unwrap_or(300).clamp(70, 320)
}

/// The CPUs a run view shows, ordered by NUMA node, L3, core, number, with their labels.
fn view_cpus(view: &RunView) -> Vec<(usize, String)> {
    {
        let this = view;
        let mut cpus: Vec<usize> = this
            .samples
            .iter()
            .flat_map(|s| s.cpus.iter().map(|c| c.cpu))
            .chain(this.threads.iter().flat_map(|t| t.1.keys().copied()))
            .chain(this.places.iter().map(|p| p.cpu))
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        let place = |cpu: usize| this.places.iter().find(|p| p.cpu == cpu);
        cpus.sort_by_key(|&c| {
            place(c).map_or((usize::MAX, usize::MAX, usize::MAX, c), |p| {
                (
                    p.numa.unwrap_or(0),
                    p.l3.unwrap_or(0),
                    p.core.unwrap_or(c),
                    c,
                )
            })
        });
        cpus.into_iter()
            .map(|c| {
                let mut label = format!("CPU {c}");
                if let Some(p) = place(c) {
                    let parts: Vec<String> = [("NUMA", p.numa), ("L3", p.l3), ("core", p.core)]
                        .into_iter()
                        .filter_map(|(k, v)| Some(format!("{k} {}", v?)))
                        .collect();
                    if !parts.is_empty() {
                        label.push_str(&format!(" ({})", parts.join(", ")));
                    }
                }
                (c, label)
            })
            .collect()
    }
}

/// Per-CPU utilisation over time, one small graph per CPU (None without samples).
pub(crate) fn utilisation_plot(view: &RunView) -> anyhow::Result<Option<String>> {
    if view.samples.is_empty() {
        return Ok(None);
    }
    let cpus = view_cpus(view);
    let cols = if cpus.len() <= 2 {
        cpus.len()
    } else if cpus.len() <= 8 {
        2
    } else {
        4
    };
    let rows = cpus.len().div_ceil(cols.max(1));
    let cell_h = 170u32;
    let title_h = 40u32;
    let height = title_h + cell_h * u32::try_from(rows).unwrap_or(64);
    let t_max = view
        .samples
        .iter()
        .map(|s| s.t_s)
        .fold(0.0f64, f64::max)
        .max(0.001);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root
            .titled(
                &format!("Per-CPU utilisation over time — {}", view.label),
                (FONT, 20),
            )
            .map_err(err)?;
        let areas: Vec<DrawingArea<SVGBackend<'_>, Shift>> = root.split_evenly((rows, cols));
        for (area, (cpu, label)) in areas.iter().zip(&cpus) {
            let mut chart = ChartBuilder::on(area)
                .caption(label, (FONT, 14))
                .margin(6)
                .x_label_area_size(32)
                .y_label_area_size(48)
                .build_cartesian_2d(0f64..t_max, 0f64..100f64)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc("busy (%)")
                .x_labels(5)
                .y_labels(3)
                .label_style((FONT, 11))
                .axis_desc_style((FONT, 11))
                .draw()
                .map_err(err)?;
            let pts: Vec<(f64, f64)> = view
                .samples
                .iter()
                .filter_map(|s| {
                    s.cpus
                        .iter()
                        .find(|c| c.cpu == *cpu)
                        .map(|c| (s.t_s, c.busy_pct))
                })
                .collect();
            let c = colour(0);
            chart
                .draw_series(AreaSeries::new(pts.iter().copied(), 0.0, c.mix(0.25)))
                .map_err(err)?;
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(Some(out))
}

/// Thread × CPU residency: share of each thread's samples per CPU, with its migrations
/// (None when there are no threads).
pub(crate) fn residency_plot(view: &RunView) -> anyhow::Result<Option<String>> {
    if view.threads.is_empty() {
        return Ok(None);
    }
    let cpus = view_cpus(view);
    let mut cells = BTreeMap::new();
    let mut rows = Vec::new();
    for (row, (label, seen, migrations)) in view.threads.iter().enumerate() {
        let total: u64 = seen.values().sum();
        rows.push(match migrations {
            Some(m) => format!("{label} ({m} migr.)"),
            None => label.clone(),
        });
        for (col, (cpu, _)) in cpus.iter().enumerate() {
            let n = seen.get(cpu).copied().unwrap_or(0);
            #[allow(clippy::cast_precision_loss)]
            let share = if total > 0 {
                n as f64 / total as f64
            } else {
                0.0
            };
            cells.insert((col, row), (share, format!("{:.0}%", share * 100.0)));
        }
    }
    let longest = rows.iter().map(String::len).max().unwrap_or(4);
    Ok(Some(grid_plot(&Grid {
        title: &format!("Where each thread ran — {}", view.label),
        x_desc: "CPU (share of the thread's samples)",
        y_desc: "thread",
        columns: cpus.iter().map(|(c, _)| c.to_string()).collect(),
        rows,
        cells,
        y_label_width: label_width(longest),
    })?))
}

/// One panel of the throttle plot: where, its y axis' label and top, what it draws of a
/// sample.
type Panel<'a, 'b> = (
    &'a DrawingArea<SVGBackend<'b>, Shift>,
    &'static str,
    f64,
    &'a dyn Fn(&ThrottleSample) -> f64,
);

/// Runs drawn in the throttle plot at most (the first ones; the caption says so).
pub(crate) const MAX_TRACES_SHOWN: usize = 8;

/// The adaptive throttle over time: its limit (top) and the throughput measured in each sample
/// (bottom), one line per run (None when no run kept a trace).
pub(crate) fn throttle_plot(view: &RunView) -> anyhow::Result<Option<String>> {
    let traces: Vec<_> = view.throttle_traces.iter().take(MAX_TRACES_SHOWN).collect();
    if traces.is_empty() {
        return Ok(None);
    }
    let samples = || traces.iter().flat_map(|t| t.samples.iter());
    let t_max = samples().map(|s| s.t_s).fold(0.0, f64::max).max(1e-3);
    #[allow(clippy::cast_precision_loss)]
    let limit_max = samples().map(|s| s.limit).max().unwrap_or(1) as f64;
    let tput_max = samples().map(|s| s.throughput).fold(0.0, f64::max);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root
            .titled(
                "Adaptive throttle: limit and throughput over time",
                (FONT, 22),
            )
            .map_err(err)?;
        let (upper, lower) = root.split_vertically(300);
        #[allow(clippy::cast_precision_loss)]
        let limit_of = |s: &ThrottleSample| s.limit as f64;
        let throughput_of = |s: &ThrottleSample| s.throughput;
        let panels: [Panel<'_, '_>; 2] = [
            (&upper, "limit (workers at once)", top(limit_max), &limit_of),
            (
                &lower,
                "throughput (units/s)",
                top(tput_max),
                &throughput_of,
            ),
        ];
        for (panel, (area, y_desc, y_max, value)) in panels.into_iter().enumerate() {
            let mut chart = ChartBuilder::on(area)
                .margin(15)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(0f64..t_max * 1.02, 0f64..y_max)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("time since the run started (s)")
                .y_desc(y_desc)
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 16))
                .draw()
                .map_err(err)?;
            for (i, trace) in traces.iter().enumerate() {
                let c = colour(i);
                // The limit is a step function: it holds from one sample to the next.
                let points: Vec<(f64, f64)> = if panel == 0 {
                    trace
                        .samples
                        .windows(2)
                        .flat_map(|w| [(w[0].t_s, value(&w[0])), (w[1].t_s, value(&w[0]))])
                        .chain(trace.samples.last().map(|s| (s.t_s, value(s))))
                        .collect()
                } else {
                    trace.samples.iter().map(|s| (s.t_s, value(s))).collect()
                };
                let series = chart
                    .draw_series(LineSeries::new(points, c.stroke_width(2)))
                    .map_err(err)?;
                if panel == 0 {
                    series.label(trace.label.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                }
            }
            if panel == 0 {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .label_font((FONT, 13))
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Some(out))
}

/// A summary plot as a file reporter.
pub(crate) struct Plot {
    pub(crate) file: &'static str,
    pub(crate) draw: fn(&SweepReport) -> anyhow::Result<String>,
}

impl Reporter for Plot {
    fn file_name(&self) -> &'static str {
        self.file
    }

    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>> {
        Ok((self.draw)(report)?.into_bytes())
    }
}

/// The summary plots, in the order the HTML report shows them.
pub(crate) fn summary_plots() -> [Plot; 4] {
    [
        Plot {
            file: "time.svg",
            draw: time_plot,
        },
        Plot {
            file: "speedup.svg",
            draw: speedup_plot,
        },
        Plot {
            file: "efficiency.svg",
            draw: efficiency_plot,
        },
        Plot {
            file: "heatmap.svg",
            draw: heatmap_plot,
        },
    ]
}
