//! `hyperfine.json`: the results in hyperfine's `--export-json` format, so that scripts written
//! for hyperfine read coretune's sweeps. Each configuration is one "command", its settings are
//! hyperfine `parameters` (as `--parameter-scan`/`--parameter-list` record them).

use std::collections::BTreeMap;

use serde::Serialize;

use coretune_core::SweepReport;

use super::Reporter;

pub(crate) struct Hyperfine;

/// hyperfine's `BenchmarkResult` (src/benchmark/benchmark_result.rs), field for field.
#[derive(Serialize)]
struct Result {
    command: String,
    mean: f64,
    stddev: Option<f64>,
    median: f64,
    user: f64,
    system: f64,
    min: f64,
    max: f64,
    times: Vec<f64>,
    exit_codes: Vec<Option<i32>>,
    parameters: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Export {
    results: Vec<Result>,
}

impl Reporter for Hyperfine {
    fn file_name(&self) -> &'static str {
        "hyperfine.json"
    }

    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>> {
        let label = report.target.label();
        let results = report
            .configs
            .iter()
            .filter_map(|c| {
                let mut parameters = BTreeMap::new();
                parameters.insert("threads".into(), c.config.threads.to_string());
                parameters.insert("place".into(), c.config.family.place.to_string());
                parameters.insert("cpus".into(), c.config.family.cpus.to_string());
                parameters.insert("throttle".into(), c.config.family.throttle.to_string());
                parameters.extend(super::other_axes(&c.config.family));
                Some(Result {
                    command: format!("{label} ({})", c.config),
                    mean: c.mean_s?,
                    stddev: (c.times_s.len() > 1).then_some(c.stddev_s).flatten(),
                    median: c.median_s?,
                    user: c.user_s?,
                    system: c.sys_s?,
                    min: c.min_s?,
                    max: c.max_s?,
                    times: c.times_s.clone(),
                    exit_codes: vec![Some(0); c.times_s.len()],
                    parameters,
                })
            })
            .collect();
        let mut bytes = serde_json::to_vec_pretty(&Export { results })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
