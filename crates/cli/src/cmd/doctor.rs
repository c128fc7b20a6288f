//! `coretune doctor`: which coretune this is (version, commit, target) and what this machine
//! lets it do — hwloc and its plugins, the pinning library, perf events, cgroups, systemd, the
//! process-event connector, Slurm — each with what was found and, where something is missing,
//! what coretune does instead (`coretune_core::doctor`). Missing parts are not errors: the exit
//! status is 0 whenever the report is written.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use coretune_core::doctor::{Check, checks};
use serde::Serialize;

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print the report as JSON: `coretune` (version, commit, target) and `checks` (topic, ok,
    /// found, instead).
    #[arg(long)]
    json: bool,
}

/// This binary: set by cargo and by `build.rs`.
#[derive(Serialize)]
struct Build {
    version: &'static str,
    commit: &'static str,
    target: &'static str,
    profile: &'static str,
}

const BUILD: Build = Build {
    version: env!("CARGO_PKG_VERSION"),
    commit: env!("CORETUNE_COMMIT"),
    target: env!("CORETUNE_TARGET"),
    // Optimised or not (crates/cli/build.rs), also with debug assertions on as `make test` builds.
    profile: env!("CORETUNE_PROFILE"),
};

#[derive(Serialize)]
struct Report {
    coretune: Build,
    checks: Vec<Check>,
}

pub(crate) fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let report = Report {
        coretune: BUILD,
        checks: checks(),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report).context("writing JSON")?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let b = &report.coretune;
    writeln!(
        out,
        "coretune {} (commit {}), {} build for {}",
        b.version, b.commit, b.profile, b.target
    )?;
    let width = report
        .checks
        .iter()
        .map(|c| c.topic.len())
        .max()
        .unwrap_or(0);
    for check in &report.checks {
        let state = if check.ok { "ok" } else { "missing" };
        writeln!(out, "{state:<8} {:<width$}  {}", check.topic, check.found)?;
        if let Some(instead) = check.instead {
            writeln!(out, "{:<8} {:<width$}  instead: {instead}", "", "")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
