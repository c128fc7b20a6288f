//! `summary.md`: the table, the recommendation and how to apply it, for pasting into an issue or
//! a pull request.

use std::fmt::Write as _;

use coretune_core::SweepReport;

use super::Reporter;

pub(crate) struct Markdown;

impl Reporter for Markdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }

    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>> {
        let mut s = String::new();
        writeln!(s, "# coretune: {}", report.target.label())?;
        writeln!(s)?;
        writeln!(
            s,
            "Machine: {} ({}; kernel {}).",
            report.machine.topology, report.machine.cpu_model, report.machine.kernel
        )?;
        writeln!(
            s,
            "{} measured runs ({} failed, {} on a busy machine), {} warm-up.",
            report.runs.measured, report.runs.failed, report.runs.busy, report.runs.warmup
        )?;
        writeln!(s)?;
        if let Some(line) = super::incomplete_line(report) {
            writeln!(s, "> **{line}**")?;
            writeln!(s)?;
        }
        let extra = super::extra_objectives(report);
        let launch = super::has_launch(report);
        writeln!(
            s,
            "| Threads | Place | CPUs | Throttle | Median [s] | 95% CI [s] |{} Speedup | Efficiency | Runs |{}",
            extra
                .iter()
                .map(|(_, o)| format!(" {} |", super::objective_heading(o)))
                .collect::<String>(),
            if launch { " Launch |" } else { "" }
        )?;
        writeln!(
            s,
            "|---:|---|---|---:|---:|---|{}---:|---:|---:|{}",
            "---:|".repeat(extra.len()),
            if launch { "---|" } else { "" }
        )?;
        let chosen = report.recommended_row().map(|c| &c.config);
        for c in &report.configs {
            let mark = if Some(&c.config) == chosen {
                " **←**"
            } else {
                ""
            };
            let [throttle, median, ci, speedup, efficiency] = super::cells(c);
            writeln!(
                s,
                "| {} | {} | `{}` | {} | {}{mark} | {} |{} {} | {} | {}{} |{}",
                super::threads_cell(c),
                super::place_cell(c),
                c.config.family.cpus,
                throttle,
                median,
                ci,
                extra
                    .iter()
                    .map(|(i, o)| format!(
                        " {}{} |",
                        super::objective_cell(c, *i, o),
                        if c.pareto { " ◆" } else { "" }
                    ))
                    .collect::<String>(),
                speedup,
                efficiency,
                c.runs,
                match (c.failed, &c.out) {
                    (0, None) => String::new(),
                    (0, Some(_)) => " (out)".to_owned(),
                    (n, None) => format!(" (+{n} {})", c.failure_word()),
                    (n, Some(_)) => format!(" (+{n} {}, out)", c.failure_word()),
                },
                match (&c.launch, launch) {
                    (Some(l), _) => format!(" `{l}` |"),
                    (None, true) => " |".to_owned(),
                    (None, false) => String::new(),
                }
            )?;
        }
        let out = super::out_lines(report);
        if !out.is_empty() {
            writeln!(s, "\n{}\n", super::OUT_HEADING)?;
            for line in out {
                writeln!(s, "- {line}")?;
            }
        }
        if let Some(note) = super::speedup_note(report) {
            writeln!(s, "\n{note}")?;
        }
        if let Some(note) = super::throttled_note(report) {
            writeln!(s, "\n{note}")?;
        }
        if let Some(front) = super::pareto_line(report) {
            writeln!(s, "\n{front} (◆ in the table).")?;
        }
        if let Some(r) = &report.recommendation {
            writeln!(s)?;
            let heading = if report.complete {
                "Recommendation"
            } else {
                "Recommendation so far (incomplete sweep)"
            };
            writeln!(s, "## {heading}: {}", r.config)?;
            writeln!(s)?;
            writeln!(s, "{}", r.reason)?;
            for w in &r.warnings {
                writeln!(s, "\n> {w}")?;
            }
            if !r.apply.is_empty() {
                writeln!(s, "\n```")?;
                for line in &r.apply {
                    writeln!(s, "{line}")?;
                }
                writeln!(s, "```")?;
            }
        } else {
            writeln!(s, "\n{}", report.nothing_to_recommend())?;
        }
        Ok(s.into_bytes())
    }
}
