//! `summary.csv`: one row per configuration, the same fields as `summary.json`'s `configs`
//! (the interval as two columns, per-run times left out), then three columns per metric of the
//! program's output (`NAME_median`, `NAME_ci_low`, `NAME_ci_high`). `instances` is the last
//! fixed column (it came after the others), `threads` being per instance. An axis that no
//! report names (`super::other_axes`: one added to `Family` after this file) gets a column of
//! its own after `instances`, empty where it is at its default, so that older columns keep
//! their places.

use std::collections::BTreeSet;

use serde::Serialize;

use coretune_core::SweepReport;
use coretune_core::grid::ThrottleSpec;
use coretune_core::sweep::ConfigRow;

use super::Reporter;

pub(crate) struct Csv;

/// The CSV row: [`ConfigRow`] flattened to scalars.
#[derive(Serialize)]
struct Row<'a> {
    threads: usize,
    place: &'a str,
    cpus: &'a str,
    throttle: ThrottleSpec,
    mem: String,
    median_s: Option<f64>,
    ci_low_s: Option<f64>,
    ci_high_s: Option<f64>,
    mean_s: Option<f64>,
    stddev_s: Option<f64>,
    min_s: Option<f64>,
    max_s: Option<f64>,
    mad_s: Option<f64>,
    runs: usize,
    failed: usize,
    speedup: Option<f64>,
    efficiency: Option<f64>,
    throughput: Option<f64>,
    throughput_unit: Option<String>,
    voluntary_ctx_switches: Option<f64>,
    involuntary_ctx_switches: Option<f64>,
    migrations: Option<f64>,
    busy_runs: usize,
    outliers: usize,
    bimodal: bool,
    recommended: bool,
    cpu_s: Option<f64>,
    peak_rss_bytes: Option<f64>,
    pareto: bool,
    instances: usize,
}

impl<'a> Row<'a> {
    fn of(c: &'a ConfigRow, recommended: bool) -> Self {
        Self {
            threads: c.config.threads,
            place: c.config.family.place.as_str(),
            cpus: c.config.family.cpus.as_str(),
            throttle: c.config.family.throttle,
            mem: c.config.family.mem.to_string(),
            median_s: c.median_s,
            ci_low_s: c.ci_s.map(|c| c.0),
            ci_high_s: c.ci_s.map(|c| c.1),
            mean_s: c.mean_s,
            stddev_s: c.stddev_s,
            min_s: c.min_s,
            max_s: c.max_s,
            mad_s: c.mad_s,
            runs: c.runs,
            failed: c.failed,
            speedup: c.speedup,
            efficiency: c.efficiency,
            throughput: c.throughput.map(|t| t.value),
            throughput_unit: c.throughput.map(|t| t.unit.to_string()),
            voluntary_ctx_switches: c.voluntary_ctx_switches,
            involuntary_ctx_switches: c.involuntary_ctx_switches,
            migrations: c.migrations,
            busy_runs: c.busy_runs,
            outliers: c.outliers,
            bimodal: c.bimodal,
            recommended,
            cpu_s: c.cpu_s,
            peak_rss_bytes: c.peak_rss_bytes,
            pareto: c.pareto,
            instances: c.config.family.instances,
        }
    }
}

impl Reporter for Csv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>> {
        let chosen = report.recommended_row().map(|c| &c.config);
        // The program's metrics follow the fixed columns: median and interval of each, by name.
        let names: BTreeSet<&str> = report
            .configs
            .iter()
            .flat_map(|c| c.metrics.keys().map(String::as_str))
            .collect();
        // Axes this file does not name, by name, each a column after the fixed ones.
        let axes: BTreeSet<String> = report
            .configs
            .iter()
            .flat_map(|c| super::other_axes(&c.config.family))
            .map(|(name, _)| name)
            .collect();
        let Some(first) = report.configs.first() else {
            return Ok(Vec::new());
        };
        // The fixed columns' names, as serde writes them for a row.
        let mut head = ::csv::Writer::from_writer(Vec::new());
        head.serialize(Row::of(first, false))?;
        let head = String::from_utf8(head.into_inner()?)?;
        let mut header: Vec<String> = head
            .lines()
            .next()
            .unwrap_or_default()
            .split(',')
            .map(str::to_owned)
            .collect();
        header.extend(axes.iter().cloned());
        for name in &names {
            header.extend([
                format!("{name}_median"),
                format!("{name}_ci_low"),
                format!("{name}_ci_high"),
            ]);
        }
        let mut w = ::csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        w.write_record(&header)?;
        for c in &report.configs {
            let metrics: Vec<Option<f64>> = names
                .iter()
                .flat_map(|n| {
                    let m = c.metrics.get(*n);
                    [
                        m.map(|m| m.median),
                        m.and_then(|m| m.ci).map(|ci| ci.0),
                        m.and_then(|m| m.ci).map(|ci| ci.1),
                    ]
                })
                .collect();
            let values = super::other_axes(&c.config.family);
            let values: Vec<String> = axes
                .iter()
                .map(|a| {
                    values
                        .iter()
                        .find(|(name, _)| name == a)
                        .map_or_else(String::new, |(_, v)| v.clone())
                })
                .collect();
            w.serialize((Row::of(c, Some(&c.config) == chosen), values, metrics))?;
        }
        Ok(w.into_inner()?)
    }
}
