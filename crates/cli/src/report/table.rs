//! The terminal table: one row per configuration with speedup and efficiency, the recommended
//! one marked; colour when stdout is a terminal that is not `TERM=dumb` and `NO_COLOR` is not
//! set, plain otherwise.

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use anstyle::{AnsiColor, Style};

use coretune_core::SweepReport;
use coretune_core::sweep::ConfigRow;

/// Whether the table on stdout is coloured: a terminal, not a dumb one (`TERM=dumb`: Emacs'
/// shell buffers, some CI logs, which show escape codes as text), and no `NO_COLOR`
/// (no-color.org: set to anything but the empty string turns colour off).
pub(crate) fn color_stdout() -> bool {
    color_for(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

fn color_for(
    terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    terminal
        && no_color.is_none_or(std::ffi::OsStr::is_empty)
        && term != Some(std::ffi::OsStr::new("dumb"))
}

/// Renders the table, the recommendation, its reason and how to apply it.
pub(crate) fn render(report: &SweepReport, color: bool) -> String {
    let paint = |style: Style, text: &str| {
        if color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let bold = Style::new().bold();
    let green = Style::new().fg_color(Some(AnsiColor::Green.into())).bold();
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let dim = Style::new().dimmed();
    let chosen = report.recommended_row().map(|c| &c.config);
    let fastest = report.recommendation.as_ref().map(|r| &r.fastest);
    let first = report.design.objectives().swap_remove(0);
    let (by_time, objective) = (first.is_time(), first.name().to_owned());
    // The placement, with any axis the table has no column for (`super::other_axes`).
    let place_text =
        |c: &ConfigRow| super::with_other_axes(c.config.family.place.to_string(), &c.config.family);
    let place_width = report
        .configs
        .iter()
        .map(|c| place_text(c).chars().count())
        .max()
        .unwrap_or(11)
        .max(11);
    let cpus_width = report
        .configs
        .iter()
        .map(|c| c.config.family.cpus.as_str().chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    // A memory column when the grid tried memory policies.
    let mem_width = report
        .design
        .grid
        .mems
        .iter()
        .any(|m| !m.is_default())
        .then(|| {
            report
                .configs
                .iter()
                .map(|c| c.config.family.mem.to_string().chars().count())
                .max()
                .unwrap_or(3)
                .max(3)
        });
    let mem_cell = |text: &str| mem_width.map_or(String::new(), |w| format!(" {text:<w$}"));
    // Under a launcher, the line that started each configuration's ranks, last.
    let launch_width = report
        .configs
        .iter()
        .filter_map(|c| c.launch.as_ref())
        .map(|l| l.chars().count())
        .max();
    let launch_cell = |text: &str| launch_width.map_or(String::new(), |w| format!("  {text:<w$}"));
    let mut s = String::new();
    // Objectives besides time get a column each, after the time's.
    let extra = super::extra_objectives(report);
    let headings: Vec<String> = extra
        .iter()
        .map(|(_, o)| super::objective_heading(o))
        .collect();
    let extra_cells = |c: &ConfigRow| -> String {
        extra
            .iter()
            .zip(&headings)
            .map(|((i, o), h)| {
                format!(
                    "  {:>w$}",
                    super::objective_cell(c, *i, o),
                    w = h.chars().count().max(8)
                )
            })
            .collect()
    };
    // "P×T" for P instances of T threads each.
    let (threads_heading, tw) = if report.design.grid.has_instances() {
        ("inst×thr", 8)
    } else {
        ("threads", 7)
    };
    let header = format!(
        "{:>tw$}  {:<place_width$} {:<cpus_width$} {:>8}{}  {:>10} {:>21}{}  {:>7} {:>6}  {:>9}  {:>5}{}",
        threads_heading,
        "place",
        "cpus",
        "throttle",
        mem_cell("mem"),
        "median s",
        "95% interval",
        headings
            .iter()
            .map(|h| format!("  {h:>8}"))
            .collect::<String>(),
        "speedup",
        "eff.",
        "invol.cs",
        "runs",
        launch_cell("launch"),
    );
    if let Some(line) = super::incomplete_line(report) {
        let _ = writeln!(s, "{}", paint(red, &line));
    }
    let _ = writeln!(s, "{}", paint(bold, &header));
    for c in &report.configs {
        let mark = match (Some(&c.config) == chosen, Some(&c.config) == fastest) {
            (true, true) if by_time => "  ← recommended, fastest".to_owned(),
            (true, true) => format!("  ← recommended, best {objective}"),
            (true, false) => "  ← recommended".to_owned(),
            (false, true) if by_time => "  (fastest)".to_owned(),
            (false, true) => format!("  (best {objective})"),
            _ => String::new(),
        };
        let flags = format!(
            "{}{}{}{}{}",
            if c.out.is_some() { " out" } else { "" },
            if c.pareto { " pareto" } else { "" },
            if c.bimodal { " bimodal" } else { "" },
            if c.busy_runs > 0 { " busy" } else { "" },
            if c.off_place_runs > 0 {
                " off-place"
            } else {
                ""
            }
        );
        let [throttle, median, ci, speedup, efficiency] = super::cells(c);
        let row = format!(
            "{:>tw$}  {:<place_width$} {:<cpus_width$} {:>8}{}  {:>10} {:>21}{}  {:>7} {:>6}  {:>9}  {:>5}{}",
            super::threads_cell(c),
            place_text(c),
            c.config.family.cpus,
            throttle,
            mem_cell(&c.config.family.mem.to_string()),
            median,
            ci,
            extra_cells(c),
            speedup,
            efficiency,
            c.involuntary_ctx_switches
                .map_or(String::new(), |x| format!("{x:.0}")),
            if c.failed > 0 {
                format!("{}+{}✗", c.runs, c.failed)
            } else {
                c.runs.to_string()
            },
            launch_cell(c.launch.as_deref().unwrap_or("")),
        );
        let style = if Some(&c.config) == chosen {
            green
        } else if c.median_s.is_none() || c.out.is_some() {
            red
        } else {
            Style::new()
        };
        let _ = writeln!(s, "{}{}{}", paint(style, &row), mark, paint(dim, &flags));
    }
    let out = super::out_lines(report);
    if !out.is_empty() {
        let _ = writeln!(s, "{}", paint(red, super::OUT_HEADING));
        for line in out {
            let _ = writeln!(s, "  {line}");
        }
    }
    if let Some(note) = super::speedup_note(report) {
        let _ = writeln!(s, "{note}");
    }
    if let Some(note) = super::throttled_note(report) {
        let _ = writeln!(s, "{}", paint(red, &note));
    }
    if let Some(front) = super::pareto_line(report) {
        let _ = writeln!(s, "{front}");
    }
    match &report.recommendation {
        Some(r) => {
            let _ = writeln!(s);
            let heading = if report.complete {
                "Recommendation:"
            } else {
                "Recommendation so far (incomplete sweep):"
            };
            let _ = writeln!(s, "{} {}", paint(bold, heading), r.config);
            let _ = writeln!(s, "{}", r.reason);
            for w in &r.warnings {
                let _ = writeln!(s, "{} {w}", paint(red, "warning:"));
            }
            if !r.apply.is_empty() {
                let _ = writeln!(s, "{}", paint(bold, "Apply it:"));
                for line in &r.apply {
                    let _ = writeln!(s, "  {line}");
                }
            }
        }
        None => {
            let _ = writeln!(s, "\n{}", report.nothing_to_recommend());
        }
    }
    s
}

#[cfg(test)]
mod test {
    use super::color_for;
    use std::ffi::OsStr;

    #[test]
    fn no_color_turns_colour_off_unless_empty() {
        let xterm = Some(OsStr::new("xterm-256color"));
        assert!(color_for(true, None, xterm));
        assert!(color_for(true, Some(OsStr::new("")), xterm));
        assert!(!color_for(true, Some(OsStr::new("1")), xterm));
        assert!(!color_for(false, None, xterm));
        // A terminal that says it is dumb shows escape codes as text.
        assert!(!color_for(true, None, Some(OsStr::new("dumb"))));
        assert!(color_for(true, None, None));
    }
}
