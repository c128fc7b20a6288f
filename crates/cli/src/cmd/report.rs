//! `coretune report DIR`: regenerates a sweep folder's summaries, plots and `report.html` from
//! its `runs.jsonl`, `sweep.json` and `machine.json` — so a folder copied from another machine
//! can be reported here, without this machine's topology.
//!
//! The recommendation's apply lines need the sweep's topology: they are kept from the folder's
//! `summary.json` when it recommends the same configuration, else recomputed from the folder's
//! `topology.xml` when it loads, else left out. The per-CPU plots are grouped by the same
//! `topology.xml` when it loads.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::machine::MachineRecord;
use coretune_core::sweep::RunLine;
use coretune_core::topology::{Topology, TopologySource};

use super::tune::{SWEEP_SCHEMA, SweepFile, apply_lines};
use crate::report::{self, SweepReport, table};

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A results folder written by `coretune tune`.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print the summary as JSON (summary.json's content) instead of the table.
    #[arg(long)]
    json: bool,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
}

pub(crate) fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    if !dir.is_dir() {
        bail!("{}: not a folder", dir.display());
    }
    let sweep: SweepFile = read_json(&dir.join("sweep.json"))?;
    if sweep.schema != SWEEP_SCHEMA {
        bail!(
            "{}: a {} file, not {SWEEP_SCHEMA}",
            dir.join("sweep.json").display(),
            sweep.schema
        );
    }
    let machine: MachineRecord = read_json(&dir.join("machine.json"))?;
    let lines: Vec<RunLine> = report::read_jsonl(&dir.join("runs.jsonl"))?;
    let old: Option<SweepReport> = read_json(&dir.join("summary.json")).ok();
    let xml = dir.join("topology.xml");
    let topo = xml
        .is_file()
        .then(|| Topology::load(&TopologySource::XmlFile(xml)).ok())
        .flatten();
    let places = topo
        .as_ref()
        .map(coretune_core::watch::cpu_places)
        .unwrap_or_default();
    let apply = |c: &coretune_core::sweep::Config| -> Vec<String> {
        if let Some(r) = old.as_ref().and_then(|o| o.recommendation.as_ref()) {
            if &r.config == c {
                return r.apply.clone();
            }
        }
        topo.as_ref()
            .map(|t| apply_lines(t, &sweep.target, c, sweep.binding))
            .unwrap_or_default()
    };
    let report = report::finish(
        dir,
        (&sweep.target, &machine, &sweep.plan),
        &lines,
        &apply,
        &places,
    )?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", report.machine.topology)?;
        out.write_all(table::render(&report, std::io::stdout().is_terminal()).as_bytes())?;
        writeln!(out, "\nReport: {}", dir.join("report.html").display())?;
    }
    Ok(ExitCode::SUCCESS)
}
