//! `report.html`: one self-contained page (CSS and SVG inline, no scripts or fonts fetched) with
//! the machine, the grid, the recommendation, the table and the plots. The page itself is
//! `templates/report.html`; `{{name}}` placeholders are filled here.

use std::fmt::Write as _;

use coretune_core::SweepReport;
use coretune_core::fleet::FleetReport;
use coretune_core::sweep::Target;

use super::secs;

const TEMPLATE: &str = include_str!("templates/report.html");

/// One plot for the page: its element id, caption and SVG text.
#[derive(Debug)]
pub(crate) struct Figure {
    pub(crate) id: &'static str,
    pub(crate) caption: String,
    pub(crate) svg: String,
}

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "–".to_owned(), f)
}

fn machine(report: &SweepReport) -> String {
    let m = &report.machine;
    let mut s = String::from("<dl>\n");
    let mut row = |k: &str, v: &str| {
        let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    };
    row("Host", &m.hostname);
    row("Topology", &m.topology);
    row("CPU", &m.cpu_model);
    row("Kernel", &m.kernel);
    row("Governor", m.governor.as_deref().unwrap_or("not exposed"));
    row("coretune", &m.tool_version);
    s.push_str("</dl>\n");
    s
}

fn grid(report: &SweepReport) -> String {
    let g = &report.design.grid;
    let throttles: Vec<String> = g.throttles.iter().map(ToString::to_string).collect();
    let threads: Vec<String> = g.threads.iter().map(ToString::to_string).collect();
    let mut s = String::from("<dl>\n");
    let mut row = |k: &str, v: &str| {
        let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    };
    row("Target", &report.target.label());
    if let Target::Workload { description, .. } = &report.target {
        row("Workload", description);
    }
    // What the recommendation is taken on, and every figure read from the program's output.
    let objectives: Vec<String> = report
        .design
        .objectives()
        .iter()
        .map(coretune_core::sweep::Objective::heading)
        .collect();
    row(
        if objectives.len() > 1 {
            "Objectives"
        } else {
            "Objective"
        },
        &objectives.join("; "),
    );
    if !report.metrics.is_empty() {
        let metrics: Vec<String> = report.metrics.iter().map(metric).collect();
        row("Metrics", &metrics.join("; "));
    }
    row("Threads", &threads.join(", "));
    row("Placements", &join(&g.places, ", "));
    row("CPU sets", &join(&g.cpus, " | "));
    row("Throttles", &throttles.join(", "));
    if g.mems.iter().any(|m| !m.is_default()) {
        row("Memory policies", &join(&g.mems, ", "));
    }
    if g.has_instances() {
        row("Instances", &join(&g.instances, ", "));
    }
    for (k, v) in super::other_grid_lists(g) {
        row(&k, &v);
    }
    if let Some(launch) = report.configs.iter().find_map(|c| c.launch.as_deref()) {
        let launcher = launch.split_whitespace().next().unwrap_or(launch);
        row(
            "Launcher",
            &format!("{launcher} (each row's line in the table's last column)"),
        );
    }
    row(
        "Runs",
        &format!(
            "{} per configuration after {} warm-up; {:?} strategy; ties within {:.0}%",
            report.design.runs,
            report.design.warmup,
            report.design.strategy,
            report.design.tolerance * 100.0
        ),
    );
    row(
        "Measured",
        &format!(
            "{} ({} failed, {} on a busy machine), {} warm-up",
            coretune_core::cpuset::counted(report.runs.measured, "run"),
            report.runs.failed,
            report.runs.busy,
            report.runs.warmup
        ),
    );
    s.push_str("</dl>\n");
    s
}

/// How a metric was read: `eps: /events per second:\s+([0-9.]+)/ in stdout, events/s, higher
/// is better`.
fn metric(m: &coretune_core::sweep::MetricSpec) -> String {
    use coretune_core::sweep::MetricRead;
    let rule = match &m.read {
        MetricRead::Regex(re) => format!("/{re}/ (last match)"),
        MetricRead::Json(path) => format!("json:{path}"),
    };
    let way = if m.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    let unit = m
        .unit
        .as_ref()
        .map_or_else(String::new, |u| format!(", {u}"));
    format!("{}: {rule} in {}{unit}, {way} is better", m.name, m.from)
}

/// A launcher's line as HTML that wraps between its options only: each option with its value
/// (`--map-by slot:PE=2`, `-x OMP_NUM_THREADS=2`) in a span that does not break.
fn launch_cell(line: &str) -> String {
    let mut groups: Vec<String> = Vec::new();
    for word in line.split_whitespace() {
        match groups.last_mut() {
            Some(last)
                if last.starts_with('-')
                    && !last.contains(' ')
                    && !word.starts_with('-')
                    && !last.contains('=') =>
            {
                last.push(' ');
                last.push_str(word);
            }
            _ => groups.push(word.to_owned()),
        }
    }
    let spans: Vec<String> = groups
        .iter()
        .map(|g| format!("<span>{}</span>", escape(g)))
        .collect();
    format!("<code>{}</code>", spans.join(" "))
}

fn recommendation(report: &SweepReport) -> String {
    let Some(r) = &report.recommendation else {
        return format!("<p>{}</p>\n", escape(report.nothing_to_recommend()));
    };
    let mut s = String::from("<div class=\"rec\">\n");
    if !report.complete {
        s.push_str("<p class=\"warn\">Provisional: the sweep is incomplete.</p>\n");
    }
    let label = report
        .recommended_row()
        .map_or_else(|| r.config.to_string(), |c| c.config.to_string());
    let _ = writeln!(s, "<p class=\"choice\">{}</p>", escape(&label));
    let _ = writeln!(s, "<p>{}</p>", escape(&r.reason));
    for w in &r.warnings {
        let _ = writeln!(s, "<p class=\"warn\">⚠ {}</p>", escape(w));
    }
    if !r.apply.is_empty() {
        s.push_str("<p>To apply it:</p>\n<pre>");
        for line in &r.apply {
            let _ = writeln!(s, "{}", escape(line));
        }
        s.push_str("</pre>\n");
    }
    s.push_str("</div>\n");
    s
}

fn table(report: &SweepReport) -> String {
    let extra = super::extra_objectives(report);
    let mut s = format!(
        "<div class=\"scroll\">\n<table>\n<thead><tr><th>Threads</th><th class=\"l\">Place</th><th class=\"l\">CPUs</th>\
         <th>Throttle</th><th>Median [s]</th><th>95% CI [s]</th>{}<th>Speedup</th>\
         <th>Efficiency</th><th>Migrations</th><th>Runs</th>{}</tr></thead>\n<tbody>\n",
        extra
            .iter()
            .map(|(_, o)| format!("<th>{}</th>", escape(&super::objective_heading(o))))
            .collect::<String>(),
        if super::has_launch(report) {
            "<th class=\"l\">Launch</th>"
        } else {
            ""
        }
    );
    let chosen = report.recommended_row().map(|c| &c.config);
    for c in &report.configs {
        let class = if Some(&c.config) == chosen {
            " class=\"chosen\""
        } else {
            ""
        };
        let runs = match (c.failed, &c.out) {
            (0, None) => c.runs.to_string(),
            (0, Some(_)) => format!("{} (out)", c.runs),
            (n, None) => format!("{} ({n} {})", c.runs, c.failure_word()),
            (n, Some(_)) => format!("{} ({n} {}, out)", c.runs, c.failure_word()),
        };
        let _ = writeln!(
            s,
            "<tr{class}><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>\
             <td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
            super::threads_cell(c),
            escape(&super::place_cell(c)),
            escape(c.config.family.cpus.as_str()),
            if c.config.family.throttle.is_set() {
                c.config.family.throttle.to_string()
            } else {
                "–".into()
            },
            opt(c.median_s, secs),
            c.ci_s.map_or("–".into(), |(lo, hi)| format!(
                "{} – {}",
                secs(lo),
                secs(hi)
            )),
            extra
                .iter()
                .map(|(i, o)| format!(
                    "<td>{}{}</td>",
                    escape(&super::objective_cell(c, *i, o)),
                    if c.pareto {
                        " <span title=\"on the Pareto front\">◆</span>"
                    } else {
                        ""
                    }
                ))
                .collect::<String>(),
            opt(c.speedup, |x| format!("{x:.2}")),
            opt(c.efficiency, |x| format!("{:.0}%", x * 100.0)),
            opt(c.migrations, |x| format!("{x:.0}")),
            runs,
            if super::has_launch(report) {
                format!(
                    "<td class=\"l launch\">{}</td>",
                    launch_cell(c.launch.as_deref().unwrap_or(""))
                )
            } else {
                String::new()
            },
        );
    }
    s.push_str("</tbody>\n</table>\n</div>\n");
    let out = super::out_lines(report);
    if !out.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"warn\">{}</p>\n<ul class=\"out\">",
            escape(super::OUT_HEADING)
        );
        for line in out {
            let _ = writeln!(s, "<li>{}</li>", escape(&line));
        }
        s.push_str("</ul>\n");
    }
    if let Some(note) = super::speedup_note(report) {
        let _ = writeln!(s, "<p class=\"sub\">{}</p>", escape(note));
    }
    s
}

fn plots(figures: &[Figure]) -> String {
    let mut s = String::new();
    for f in figures {
        // plotters writes a bare `<svg ...>` element, which HTML accepts inline as it is.
        let svg = f.svg.trim_start_matches(|c: char| c != '<');
        let svg = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => svg,
        };
        let _ = writeln!(
            s,
            "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
            f.id,
            svg.trim_end(),
            escape(&f.caption)
        );
    }
    if figures.is_empty() {
        s.push_str("<p>No plots: no run completed.</p>\n");
    }
    s
}

/// The page.
pub(crate) fn render(report: &SweepReport, figures: &[Figure]) -> String {
    let subtitle = format!(
        "{} configurations, {} measured runs on {}",
        report.configs.len(),
        report.runs.measured,
        report.machine.hostname
    );
    // An incomplete sweep says so first, above everything it shows.
    let subtitle = match super::incomplete_line(report) {
        Some(line) => format!(
            "{}</p>\n<p class=\"warn banner\">{}",
            escape(&subtitle),
            escape(&line)
        ),
        None => escape(&subtitle),
    };
    fill(&[
        ("{{version}}", escape(&report.tool_version)),
        ("{{title}}", escape(&report.target.label())),
        ("{{subtitle}}", subtitle),
        ("{{machine}}", machine(report)),
        ("{{grid}}", grid(report)),
        ("{{recommendation}}", recommendation(report)),
        ("{{table}}", table(report)),
        ("{{plots}}", plots(figures)),
        ("{{created}}", String::new()),
    ])
}

/// The fleet's page, in the same template: the node types where a sweep has its machine, the
/// first type's grid, the fleet-wide setting and each type's recommendation, the configuration
/// × node type table, and the plots.
pub(crate) fn render_fleet(report: &FleetReport, figures: &[Figure]) -> String {
    let nodes: usize = report.types.iter().map(|t| t.nodes.len()).sum();
    let subtitle = format!(
        "{} node types, {nodes} nodes, {} configurations",
        report.types.len(),
        report.configs.len()
    );
    let mut types = String::new();
    for t in &report.types {
        let nodes: Vec<String> = t
            .nodes
            .iter()
            .map(|n| {
                let mut s = format!("{} ({} runs", n.name, n.runs);
                if !n.complete {
                    s.push_str(", incomplete");
                }
                if let Some(j) = &n.job {
                    let _ = write!(s, "; {j}");
                }
                s.push(')');
                s
            })
            .collect();
        let _ = writeln!(
            types,
            "<h3>{}</h3>\n{}<p>Nodes: {}</p>",
            escape(&t.name),
            machine(&t.report),
            escape(&nodes.join(", "))
        );
    }
    let mut rec = String::new();
    match &report.fleet {
        Some(f) => {
            let _ = writeln!(
                rec,
                "<div class=\"rec\">\n<p class=\"choice\">Fleet-wide: {}</p>\n<p>{}</p>",
                escape(&f.config.to_string()),
                escape(&f.reason)
            );
            for l in &f.losses {
                let _ = writeln!(
                    rec,
                    "<p>{}: {:+.1}% against its fastest.</p>",
                    escape(&l.name),
                    (l.ratio - 1.0) * 100.0
                );
                if !l.apply.is_empty() {
                    rec.push_str("<pre>");
                    for line in &l.apply {
                        let _ = writeln!(rec, "{}", escape(line));
                    }
                    rec.push_str("</pre>\n");
                }
            }
            rec.push_str("</div>\n");
        }
        None => rec.push_str("<p>No configuration was measured on every node type.</p>\n"),
    }
    for w in &report.warnings {
        let _ = writeln!(rec, "<p class=\"warn\">⚠ {}</p>", escape(w));
    }
    for t in &report.types {
        let _ = writeln!(rec, "<h3>{}</h3>", escape(&t.name));
        rec.push_str(&recommendation(&t.report));
    }
    let mut table = String::from("<table>\n<thead><tr><th class=\"l\">Configuration</th>");
    for t in &report.types {
        let _ = write!(table, "<th>{} median [s] (× fastest)</th>", escape(&t.name));
    }
    table.push_str("<th>Geometric mean</th></tr></thead>\n<tbody>\n");
    let chosen = report.fleet.as_ref().map(|f| &f.config);
    for r in &report.configs {
        let class = if Some(&r.config) == chosen {
            " class=\"chosen\""
        } else {
            ""
        };
        let _ = write!(
            table,
            "<tr{class}><td class=\"l\">{}</td>",
            escape(&r.config.to_string())
        );
        for c in &r.cells {
            let _ = write!(
                table,
                "<td>{}</td>",
                c.map_or("–".into(), |c| format!(
                    "{} ({:.2}×)",
                    secs(c.median_s),
                    c.ratio
                ))
            );
        }
        let _ = writeln!(
            table,
            "<td>{}</td></tr>",
            opt(r.geomean, |g| format!("{g:.3}×"))
        );
    }
    table.push_str("</tbody>\n</table>\n");
    let grid = report
        .types
        .first()
        .map_or_else(String::new, |t| grid(&t.report));
    fill(&[
        ("{{version}}", escape(&report.tool_version)),
        (
            "{{title}}",
            escape(&format!("{} (fleet)", report.target.label())),
        ),
        ("{{subtitle}}", escape(&subtitle)),
        ("{{machine}}", types),
        ("{{grid}}", grid),
        ("{{recommendation}}", rec),
        ("{{table}}", table),
        ("{{plots}}", plots(figures)),
        ("{{created}}", String::new()),
    ])
}

/// The template with its placeholders filled, in one pass, so text inserted for one
/// placeholder is never scanned for another.
fn fill(fill: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(TEMPLATE.len() * 4);
    let mut rest = TEMPLATE;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        match fill.iter().find(|(k, _)| tail.starts_with(k)) {
            Some((k, v)) => {
                out.push_str(v);
                rest = &tail[k.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The items' texts joined with `sep`.
fn join<T: std::fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}
