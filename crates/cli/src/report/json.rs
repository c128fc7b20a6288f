//! `summary.json`: the whole report, versioned (`docs/summary.schema.json`).

use coretune_core::SweepReport;

use super::Reporter;

pub(crate) struct Json;

impl Reporter for Json {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn render(&self, report: &SweepReport) -> anyhow::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(report)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
