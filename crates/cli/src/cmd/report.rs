//! `coretune report DIR`: regenerates a sweep folder's summaries, plots and `report.html` from
//! its `runs.jsonl`, `sweep.json` and `machine.json` — so a folder copied from another machine
//! can be reported here, without this machine's topology.
//!
//! The recommendation's apply lines need the sweep's topology: they are kept from the folder's
//! `summary.json` when it recommends the same configuration, else recomputed from the folder's
//! `topology.xml` when it loads, else left out. The per-CPU plots are grouped by the same
//! `topology.xml` when it loads.
//!
//! A fleet folder (`coretune tune --slurm`'s, or any folder of per-node sweep folders, one level
//! of node types above them) gets one fleet report: per type the merged report in the type's
//! folder, and in DIR the configuration × node type table, every type's speedup curve on one
//! plot and the fleet-wide setting (`report::fleet`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use coretune_core::SweepFolder;
use coretune_core::fleet::FleetFolder;
use coretune_core::program::watch::cpu_places;

use crate::report::{self, table};

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A results folder written by `coretune tune`, or a fleet folder (per-node folders).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print the summary as JSON (summary.json's, or for a fleet fleet-summary.json's, content)
    /// instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    if FleetFolder::is_fleet(&args.dir) {
        crate::report::fleet::report_dir(&args.dir, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.dir.is_dir() && !args.dir.join("sweep.json").exists() {
        // Neither: nothing is written there.
        anyhow::bail!(
            "{}: not a results folder (no sweep.json) nor a fleet folder (fleet.json, or only \
             per-node results folders and a fleet report's files)",
            args.dir.display()
        );
    }
    let folder = SweepFolder::read(&args.dir)?;
    let machine = folder.machine()?;
    let previous = folder.previous_report();
    let topo = folder.topology();
    let places = topo.as_ref().map(cpu_places).unwrap_or_default();
    let results = folder.results();
    let report = results.report(machine, None, previous.as_ref());
    let view = results.run_view(&report, &places);
    report::write_all(folder.dir(), &report, &view)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", report.machine.topology)?;
        out.write_all(table::render(&report, table::color_stdout()).as_bytes())?;
        writeln!(
            out,
            "\nReport: {}",
            folder.dir().join("report.html").display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
