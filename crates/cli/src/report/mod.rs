//! A sweep's results as data ([`SweepReport`]), and one module per output format.
//!
//! Every file format is a [`Reporter`]: data in, bytes out, errors returned. [`write_all`] is the
//! one place that writes them into a sweep's folder (hyperfine's `export/mod.rs` layout); the
//! terminal table is separate because it is printed, not saved.

pub(crate) mod csv;
pub(crate) mod html;
pub(crate) mod hyperfine;
pub(crate) mod json;
pub(crate) mod md;
pub(crate) mod svg;
pub(crate) mod table;

use std::path::Path;

use anyhow::Context;
use coretune_core::machine::MachineRecord;
use coretune_core::stats::{UslFit, usl_fit};
use coretune_core::sweep::recommend::{Recommendation, recommend};
use coretune_core::sweep::{Config, ConfigSummary, Family, Plan, RunLine, Status, summarize};
use coretune_core::watch::{CpuPlace, Sample};
use coretune_core::workload::{Throughput, WorkloadSpec};
use serde::{Deserialize, Serialize};

/// Version of `summary.json`; see `docs/summary.schema.json`.
pub(crate) const SCHEMA: &str = "coretune-summary/1";

/// What was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(crate) enum Target {
    /// A built-in workload.
    Workload {
        /// Which, and its parameters.
        spec: WorkloadSpec,
        /// Its description.
        description: String,
    },
    /// An external command (with `{threads}`, `{cpus}`, `{place}` placeholders).
    Command {
        /// The command and its arguments as given.
        argv: Vec<String>,
        /// Run through `sh -c`.
        shell: bool,
    },
}

impl Target {
    /// A short label for tables and the hyperfine export.
    pub(crate) fn label(&self) -> String {
        match self {
            Target::Workload { spec, .. } => spec.name.clone(),
            Target::Command { argv, .. } => argv.join(" "),
        }
    }
}

/// One configuration's row, as `summary.json`'s `configs` entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ConfigRow {
    pub(crate) threads: usize,
    pub(crate) place: String,
    pub(crate) cpus: String,
    pub(crate) throttle: Option<usize>,
    /// Median wall time of the successful runs, seconds (null when none succeeded).
    pub(crate) median_s: Option<f64>,
    /// Bootstrap 95% interval of the median, seconds.
    pub(crate) ci_s: Option<(f64, f64)>,
    pub(crate) mean_s: Option<f64>,
    pub(crate) stddev_s: Option<f64>,
    pub(crate) min_s: Option<f64>,
    pub(crate) max_s: Option<f64>,
    pub(crate) mad_s: Option<f64>,
    /// Mean user CPU time of the successful runs, seconds.
    pub(crate) user_s: Option<f64>,
    /// Mean system CPU time of the successful runs, seconds.
    pub(crate) sys_s: Option<f64>,
    /// Successful measured runs.
    pub(crate) runs: usize,
    /// Failed, timed-out or unverified measured runs.
    pub(crate) failed: usize,
    pub(crate) speedup: Option<f64>,
    pub(crate) efficiency: Option<f64>,
    pub(crate) throughput: Option<Throughput>,
    pub(crate) voluntary_ctx_switches: Option<f64>,
    pub(crate) involuntary_ctx_switches: Option<f64>,
    pub(crate) migrations: Option<f64>,
    /// Runs taken while other processes used the CPUs.
    pub(crate) busy_runs: usize,
    /// Runs flagged as outliers (modified z-score > 3.5).
    pub(crate) outliers: usize,
    /// Run times fall in two separated clusters.
    pub(crate) bimodal: bool,
    /// Wall times of the successful runs, seconds, in the order they ran.
    pub(crate) times_s: Vec<f64>,
}

impl ConfigRow {
    fn of(s: &ConfigSummary, lines: &[RunLine]) -> Self {
        let w = s.wall.as_ref();
        let ok: Vec<&RunLine> = lines
            .iter()
            .filter(|l| !l.warmup && l.config == s.config && l.status == Status::Ok)
            .collect();
        let times_s = ok.iter().filter_map(|l| l.wall_s()).collect();
        let mean_of = |f: &dyn Fn(&coretune_core::workload::RunRecord) -> f64| {
            let v: Vec<f64> = ok.iter().filter_map(|l| l.record.as_ref()).map(f).collect();
            coretune_core::stats::mean(&v)
        };
        Self {
            threads: s.config.threads,
            place: s.config.place.clone(),
            cpus: s.config.cpus.clone(),
            throttle: s.config.throttle,
            median_s: w.map(|w| w.median),
            ci_s: w.map(|w| w.ci),
            mean_s: w.map(|w| w.mean),
            stddev_s: w.map(|w| w.stddev),
            min_s: w.map(|w| w.min),
            max_s: w.map(|w| w.max),
            mad_s: w.map(|w| w.mad),
            user_s: mean_of(&|r| r.measurement.user.as_secs_f64()),
            sys_s: mean_of(&|r| r.measurement.sys.as_secs_f64()),
            runs: s.runs,
            failed: s.failed,
            speedup: s.speedup,
            efficiency: s.efficiency,
            throughput: s.throughput,
            voluntary_ctx_switches: s.voluntary_ctx_switches,
            involuntary_ctx_switches: s.involuntary_ctx_switches,
            migrations: s.migrations,
            busy_runs: s.busy_runs,
            outliers: w.map_or(0, |w| w.outliers.len()),
            bimodal: w.is_some_and(|w| w.bimodal),
            times_s,
        }
    }

    /// "4 threads, place spread, cpus 'all ~pu:0', throttle 2".
    pub(crate) fn label(&self) -> String {
        let mut s = format!(
            "{} thread{}, place {}",
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.place
        );
        if self.cpus != "all" {
            s.push_str(&format!(", cpus '{}'", self.cpus));
        }
        if let Some(k) = self.throttle {
            s.push_str(&format!(", throttle {k}"));
        }
        s
    }

    /// The cells both tables print: throttle, median, interval, speedup, efficiency.
    pub(crate) fn cells(&self) -> [String; 5] {
        [
            self.throttle.map_or("none".into(), |k| k.to_string()),
            self.median_s.map_or("failed".into(), secs),
            self.ci_s.map_or(String::new(), |(lo, hi)| {
                format!("{} – {}", secs(lo), secs(hi))
            }),
            self.speedup.map_or(String::new(), |x| format!("{x:.2}×")),
            self.efficiency
                .map_or(String::new(), |x| format!("{:.0}%", x * 100.0)),
        ]
    }

    /// The key two sweeps' rows are matched on.
    pub(crate) fn key(&self) -> (usize, String, String, Option<usize>) {
        (
            self.threads,
            self.place.clone(),
            self.cpus.clone(),
            self.throttle,
        )
    }
}

/// A Universal Scalability Law fit of one family's speedup curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct UslRow {
    pub(crate) place: String,
    pub(crate) cpus: String,
    pub(crate) throttle: Option<usize>,
    #[serde(flatten)]
    pub(crate) fit: UslFit,
}

/// Run counts of the whole sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunCounts {
    /// Measured runs (warm-ups excluded).
    pub(crate) measured: usize,
    pub(crate) ok: usize,
    pub(crate) failed: usize,
    pub(crate) busy: usize,
    pub(crate) warmup: usize,
}

/// Everything `summary.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweepReport {
    pub(crate) schema: String,
    pub(crate) tool_version: String,
    /// Unix time the summary was made, seconds.
    pub(crate) created_at: f64,
    pub(crate) target: Target,
    pub(crate) machine: MachineRecord,
    pub(crate) plan: Plan,
    pub(crate) configs: Vec<ConfigRow>,
    pub(crate) usl: Vec<UslRow>,
    pub(crate) recommendation: Option<Recommendation>,
    pub(crate) runs: RunCounts,
}

impl SweepReport {
    /// Builds the report from the run log.
    pub(crate) fn build(
        target: Target,
        machine: MachineRecord,
        plan: Plan,
        lines: &[RunLine],
        summaries: &[ConfigSummary],
        recommendation: Option<Recommendation>,
    ) -> Self {
        let configs: Vec<ConfigRow> = summaries.iter().map(|s| ConfigRow::of(s, lines)).collect();
        let mut families: Vec<Family> = summaries.iter().map(|s| s.config.family()).collect();
        families.sort();
        families.dedup();
        let usl = families
            .into_iter()
            .filter_map(|f| {
                let points: Vec<(usize, f64)> = summaries
                    .iter()
                    .filter(|s| s.config.family() == f)
                    .filter_map(|s| Some((s.config.threads, s.speedup?)))
                    .collect();
                Some(UslRow {
                    place: f.place,
                    cpus: f.cpus,
                    throttle: f.throttle,
                    fit: usl_fit(&points)?,
                })
            })
            .collect();
        let measured: Vec<&RunLine> = lines.iter().filter(|l| !l.warmup).collect();
        let runs = RunCounts {
            measured: measured.len(),
            ok: measured.iter().filter(|l| l.status == Status::Ok).count(),
            failed: measured.iter().filter(|l| l.status != Status::Ok).count(),
            busy: measured.iter().filter(|l| l.noise.busy).count(),
            warmup: lines.len() - measured.len(),
        };
        Self {
            schema: SCHEMA.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            target,
            machine,
            plan,
            configs,
            usl,
            recommendation,
            runs,
        }
    }

    /// The recommended configuration's row.
    pub(crate) fn recommended_row(&self) -> Option<&ConfigRow> {
        let r = self.recommendation.as_ref()?;
        self.configs.iter().find(|c| {
            c.key()
                == (
                    r.config.threads,
                    r.config.place.clone(),
                    r.config.cpus.clone(),
                    r.config.throttle,
                )
        })
    }
}

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

/// File name of a run's monitor samples inside a sweep folder.
pub(crate) fn monitor_file(seq: usize) -> String {
    format!("monitor/{seq}.jsonl")
}

/// Reads a JSON-lines file of monitor samples (a torn last line is skipped).
///
/// # Errors
///
/// Unreadable file, or a malformed line other than the last.
pub(crate) fn read_samples(path: &Path) -> anyhow::Result<Vec<Sample>> {
    read_jsonl(path)
}

/// Reads a JSON-lines file without changing it (`runs.jsonl`, monitor samples); a last line cut
/// short by a crash is skipped.
///
/// # Errors
///
/// Unreadable file, or a malformed line other than the last, naming the file and line.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let raw: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, line) in raw.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(s) => out.push(s),
            Err(_) if i + 1 == raw.len() => break,
            Err(e) => anyhow::bail!("{}:{}: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

/// The run the per-run plots show: the recommended configuration's (one that was monitored if
/// any was), else the last successful run; its monitor samples when `dir` has them, its
/// workers' own records of where they ran otherwise.
pub(crate) fn run_view(
    dir: &Path,
    report: &SweepReport,
    lines: &[RunLine],
    places: &[CpuPlace],
) -> svg::RunView {
    let chosen = report.recommendation.as_ref().map(|r| &r.config);
    let ok: Vec<&RunLine> = lines
        .iter()
        .filter(|l| !l.warmup && l.status == Status::Ok)
        .collect();
    let of_chosen: Vec<&RunLine> = ok
        .iter()
        .copied()
        .filter(|l| Some(&l.config) == chosen)
        .collect();
    let pool = if of_chosen.is_empty() {
        &ok
    } else {
        &of_chosen
    };
    let monitored = |l: &&&RunLine| dir.join(monitor_file(l.seq)).is_file();
    let Some(line) = pool.iter().rev().find(monitored).or(pool.last()) else {
        return svg::RunView::default();
    };
    let samples = read_samples(&dir.join(monitor_file(line.seq))).unwrap_or_default();
    let workers = line
        .record
        .as_ref()
        .map(|r| r.measurement.threads.clone())
        .unwrap_or_default();
    let threads = if workers.iter().any(|w| !w.cpus_seen.is_empty()) {
        workers
            .into_iter()
            .map(|w| {
                (
                    format!("worker {} (tid {})", w.worker, w.tid),
                    w.cpus_seen,
                    w.migrations,
                )
            })
            .collect()
    } else {
        coretune_core::watch::summarize(&samples)
            .threads
            .into_iter()
            .take(16)
            .map(|t| {
                (
                    format!("{} (tid {})", t.name, t.tid),
                    t.cpus_seen,
                    t.migrations,
                )
            })
            .collect()
    };
    svg::RunView {
        label: format!("run {}: {}", line.seq, line.config),
        samples,
        threads,
        places: places.to_vec(),
    }
}

/// Writes every report file into `dir`: the summary formats, the plots and `report.html`.
///
/// # Errors
///
/// The first rendering or writing error, naming the file.
pub(crate) fn write_all(
    dir: &Path,
    report: &SweepReport,
    view: &svg::RunView,
) -> anyhow::Result<()> {
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
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
            "Median wall time per thread count, one line per placement; whiskers are the \
             bootstrap 95% interval of the median.",
            "Speedup over the same placement's 1-thread median; dashed: perfect scaling.",
            "Efficiency = speedup / threads; dashed: 100%.",
            "Every configuration measured: median wall time and speedup over its own 1-thread time, shaded by speed (the fastest darkest).",
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
    let per_run = [
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
            "Share of each thread's samples on each CPU, with its migrations.",
        ),
    ];
    for (file, id, svg, caption) in per_run {
        if let Some(svg) = svg {
            write(file, svg.as_bytes())?;
            figures.push(html::Figure {
                id,
                caption: caption.into(),
                svg,
            });
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

/// From the run log to the folder's report files: summaries, the recommendation (with `apply`
/// filling its lines), the [`SweepReport`], and [`write_all`]. `coretune tune` calls it after
/// every stage and at the end; `coretune report` calls it on a finished folder.
///
/// # Errors
///
/// As [`write_all`].
pub(crate) fn finish(
    dir: &Path,
    sweep: (&Target, &MachineRecord, &Plan),
    lines: &[RunLine],
    apply: &dyn Fn(&Config) -> Vec<String>,
    places: &[CpuPlace],
) -> anyhow::Result<SweepReport> {
    let (target, machine, plan) = sweep;
    let summaries = summarize(lines);
    let mut rec = recommend(&summaries, plan.tolerance);
    if let Some(r) = rec.as_mut() {
        r.apply = apply(&r.config);
    }
    let report = SweepReport::build(
        target.clone(),
        machine.clone(),
        plan.clone(),
        lines,
        &summaries,
        rec,
    );
    let view = run_view(dir, &report, lines, places);
    write_all(dir, &report, &view)?;
    Ok(report)
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
