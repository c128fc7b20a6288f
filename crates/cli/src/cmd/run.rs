//! `coretune run -- CMD ARGS...`: start a program on a CPU set with its thread-count variables
//! set, or rebind a running process (`--pid`).

use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::format_list;
use coretune_core::{Binding, Policy, plan};
use coretune_core::{LoadOptions, Topology, TopologySource, set_to_vec};
use coretune_core::{exit_code, find_program, rebind_process, run_program, thread_env};

use crate::input::cpus_option;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Run on these CPUs (a CPU-set expression, e.g. 'numa:0' or 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Object indexes in --cpus are OS (physical) indexes.
    #[arg(long)]
    physical: bool,
    /// Thread count to announce through OMP_NUM_THREADS, RAYON_NUM_THREADS and the others.
    #[arg(long, short = 't')]
    threads: Option<usize>,
    /// Placement policy for --threads: the process gets the placement's CPUs and OpenMP gets
    /// OMP_PLACES/OMP_PROC_BIND (os, compact, spread, cores, round-robin).
    #[arg(long, requires = "threads")]
    place: Option<Policy>,
    /// With --place: each thread's OpenMP place is its PU, its core, the shared set, or its own
    /// part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, requires = "place", default_value = "pu")]
    bind: Binding,
    /// Rebind this running process and all its threads instead of starting a command.
    #[arg(long, conflicts_with_all = ["threads", "place", "command"], requires = "cpus")]
    pid: Option<u32>,
    /// The command and its arguments.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    // Binding only makes sense on the machine this runs on; devices are loaded when --cpus may
    // name one (`os=eth0`).
    let topo = Topology::load_with(
        &TopologySource::Live,
        &LoadOptions::default().io(args.cpus.is_some()),
    )?;
    let cpus = cpus_option(&topo, args.cpus.as_deref(), args.physical)?;
    if let Some(pid) = args.pid {
        let cpus = cpus.context("--pid needs --cpus")?;
        let tids = rebind_process(pid, &cpus).context("run --pid")?;
        eprintln!(
            "coretune: pid {pid}: {} thread{} bound to CPUs {}",
            tids.len(),
            if tids.len() == 1 { "" } else { "s" },
            format_list(&set_to_vec(&cpus))
        );
        return Ok(ExitCode::SUCCESS);
    }
    let Some((program, rest)) = args.command.split_first() else {
        bail!("run: no command given (coretune run [OPTIONS] -- CMD ARGS...)");
    };
    find_program(program)?;
    let placement = match (args.threads, args.place) {
        (Some(n), Some(policy)) => {
            Some(plan(&topo, n, policy, cpus.as_ref(), args.bind).context("run")?)
        }
        _ => None,
    };
    let process_set = match &placement {
        Some(p) if p.is_pinned() => Some(p.union()),
        _ => cpus,
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    if let Some(n) = args.threads {
        cmd.envs(thread_env(n, placement.as_ref()));
    }
    let status = run_program(cmd, process_set.as_ref()).context("run")?;
    let code = exit_code(status);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
