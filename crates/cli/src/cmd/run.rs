//! `coretune run -- CMD ARGS...`: start a program on a CPU set with its thread-count variables
//! set — with `--place`, each of its threads on its own place through the preloaded pinning
//! library — or rebind (`--cpus`) or re-pin (`--place`) a running process (`--pid`).

use crate::choices::one_of;
use std::io::Write as _;
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::cpuset::{format_list, set_to_vec};
use coretune_core::memory::MemPolicy;
use coretune_core::program;
use coretune_core::program::pin::SkipMask;
use coretune_core::program::pin::{inspect_program, per_thread};
use coretune_core::program::{PlacedCommand, exit_code, find_program, rebind_process};
use coretune_core::program::{pin, repin_process, thread_count};
use coretune_core::topology::LoadOptions;
use coretune_core::{Binding, PlaceSpec, Policy, plan_spec};
use coretune_core::{Topology, TopologySource};

use crate::input::cpus_option;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Run on these CPUs (a CPU-set expression, e.g. 'numa:0' or 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Object indexes in --cpus are OS (physical) indexes.
    #[arg(long)]
    physical: bool,
    /// Thread count to announce through OMP_NUM_THREADS, RAYON_NUM_THREADS and the others
    /// (with --pid: how many places to plan; default, the threads the process has).
    #[arg(long, short = 't', allow_negative_numbers = true,
          value_parser = crate::numbers::whole(1, coretune_core::placement::MAX_THREADS))]
    threads: Option<usize>,
    /// Placement policy for --threads: the main thread on the first place, the k-th thread it
    /// creates on place k+1, through the preloaded pinning library (or OpenMP's places, or the
    /// process CPU set where it cannot reach the program: said before it runs). Or an ordered
    /// CPU list as likwid-pin's -c takes it, thread k on its k-th CPU (0,2,1,3, S0:0-1@S1:0-1,
    /// E:N:4:1:2).
    #[arg(long, allow_hyphen_values = true, value_parser = one_of(Policy::ALL.map(PlaceSpec::Policy)))]
    place: Option<PlaceSpec>,
    /// Each thread's set with --place: its PU, its core, one set shared by all threads, or its
    /// own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu", requires = "place", value_parser = one_of(Binding::ALL))]
    bind: Binding,
    /// Skip mask with --place, likwid-pin's -s: hex, bit i = the i-th pthread_create makes a
    /// helper thread left unpinned (default: the program's OpenMP runtime's).
    #[arg(long, value_name = "MASK", requires = "place")]
    skip: Option<SkipMask>,
    /// Memory policy the program starts with, as numactl sets it: local (--localalloc),
    /// interleave or interleave:NODES (every node without NODES), bind or bind:NODES (--membind;
    /// the nodes near the CPUs it runs on without NODES), preferred:NODE. NODES: 0-1 (nodes by
    /// OS index, as numactl numbers them), numa:0-1, package:1, near.
    #[arg(long, value_name = "POLICY", conflicts_with = "pid")]
    mem: Option<MemPolicy>,
    /// Rebind (--cpus) or re-pin one by one (--place, in the order the threads were created)
    /// this running process instead of starting a command; alone, print its CPU set (as
    /// `taskset -p`), each thread's with --threads.
    #[arg(long, conflicts_with = "command")]
    pid: Option<u32>,
    /// Kill the program and everything it started after this many seconds, and exit 124 (as
    /// GNU timeout does). The program then runs in a process tree of its own: a process group
    /// on Linux (as `timeout` without --foreground: a program reading the terminal stops), a job
    /// object on Windows.
    #[arg(long, value_name = "SECONDS", conflicts_with = "pid")]
    timeout: Option<f64>,
    /// The command and its arguments: after `--`, or directly after the options, as taskset,
    /// numactl and hwloc-bind take it (everything from the first word on is the command's).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

/// The exit code of a program killed at `--timeout`, as GNU timeout's.
const TIMED_OUT: u8 = 124;

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let timeout = match args.timeout {
        Some(t) => match Duration::try_from_secs_f64(t) {
            Ok(d) if t > 0.0 => Some(d),
            _ => bail!("--timeout {t}: give a positive number of seconds"),
        },
        None => None,
    };
    // Binding only makes sense on the machine this runs on; devices are loaded when --cpus may
    // name one (`os=eth0`).
    let topo = Topology::load_with(
        &TopologySource::Live,
        &LoadOptions::default().io(args.cpus.is_some()),
    )?;
    let cpus = cpus_option(&topo, args.cpus.as_deref(), args.physical)?;
    if let Some(pid) = args.pid {
        return repin(args, &topo, pid, cpus);
    }
    let Some((program, rest)) = args.command.split_first() else {
        bail!("run: no command given (coretune run [OPTIONS] [--] CMD ARGS...)");
    };
    let path = find_program(program)?;
    if let (Some(spec), Some(expr)) = (&args.place, &args.cpus) {
        let left_out = spec.left_out_by(&topo, cpus.as_ref(), args.physical);
        if !left_out.is_empty() {
            eprintln!(
                "coretune: warning: --cpus '{expr}' leaves out {} of --place '{spec}': the \
                 threads written for them go round-robin over the rest of the list",
                coretune_core::cpuset::cpus_named(&left_out)
            );
        }
    }
    let placement = match (args.threads, &args.place) {
        (Some(n), Some(spec)) => Some(
            plan_spec(&topo, n, spec, cpus.as_ref(), args.physical, args.bind).context("run")?,
        ),
        (None, Some(_)) => bail!("--place needs --threads (how many threads to place)"),
        _ => None,
    };
    let process_set = match &placement {
        Some(p) if p.is_pinned() => Some(p.union()),
        _ => cpus,
    };
    if let Some(n) = args.threads {
        // More threads than PUs to run them: say so, as the places wrap around.
        let pus = set_to_vec(process_set.as_ref().unwrap_or(&topo.cpuset())).len();
        if n > pus {
            eprintln!(
                "coretune: warning: {n} threads on {pus} PU{}: oversubscribed, threads share PUs{}",
                if pus == 1 { "" } else { "s" },
                if placement.as_ref().is_some_and(|p| p.is_pinned()) {
                    " (the places wrap around)"
                } else {
                    ""
                }
            );
        }
    }
    let mut cmd = Command::new(program);
    cmd.args(rest);
    let mem = match &args.mem {
        Some(policy) => {
            let near = process_set.clone().unwrap_or_else(|| topo.cpuset());
            let mem = policy.plan(&topo, &near, args.physical)?;
            if let Some(note) = &mem.note {
                eprintln!("coretune: warning: {note}");
            }
            Some(mem)
        }
        None => None,
    };
    let per_thread = match (&placement, args.threads) {
        (Some(p), Some(_)) if p.is_pinned() => {
            let library = pin::find_library();
            let how = per_thread(
                &inspect_program(&path),
                library.as_deref().map_err(String::as_str),
                p,
                args.skip,
            );
            if let Some(warning) = &how.warning {
                eprintln!("coretune: warning: {warning}");
            }
            if let Some(note) = &how.note {
                eprintln!("coretune: {note}");
            }
            Some(how)
        }
        _ => None,
    };
    let mut placed = PlacedCommand::new(cmd)
        .cpus(process_set.clone())
        .memory(mem);
    if let Some(n) = args.threads {
        placed = placed.threads(n, placement.as_ref(), per_thread.as_ref());
    }
    let Some(status) = placed.run(timeout).context("run")? else {
        eprintln!(
            "coretune: run: {program} killed after the timeout ({:.1} s), with everything it started",
            timeout.map_or(0.0, |t| t.as_secs_f64())
        );
        return Ok(ExitCode::from(TIMED_OUT));
    };
    let code = exit_code(status);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `--pid`: every thread to one set (`--cpus`), or each to its place (`--place`).
fn repin(
    args: &RunArgs,
    topo: &Topology,
    pid: u32,
    cpus: Option<coretune_core::CpuSet>,
) -> anyhow::Result<ExitCode> {
    let Some(spec) = &args.place else {
        return match cpus {
            Some(cpus) => bind_all(pid, &cpus),
            None => show_binding(pid, args.threads.is_some()),
        };
    };
    let n = match args.threads {
        Some(n) => n,
        None => thread_count(pid).context("run --pid")?,
    };
    let placement =
        plan_spec(topo, n, spec, cpus.as_ref(), args.physical, args.bind).context("run --pid")?;
    if !placement.is_pinned() || args.bind == Binding::Shared {
        return bind_all(pid, &placement.union());
    }
    let pinned = repin_process(pid, &placement.cpusets(), args.skip.unwrap_or_default())
        .context("run --pid")?;
    eprintln!(
        "coretune: pid {pid}: {} thread{} pinned one by one, in creation order:",
        pinned.len(),
        if pinned.len() == 1 { "" } else { "s" }
    );
    for (tid, set) in pinned {
        eprintln!("  thread {tid} -> CPUs {}", format_list(&set_to_vec(&set)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `run --pid PID` alone: the process's CPU set, as `taskset -p` and `hwloc-bind --get` show it
/// (the main thread's); with `--threads`, each thread's, one line each, main thread first.
fn show_binding(pid: u32, per_thread: bool) -> anyhow::Result<ExitCode> {
    let threads = program::process_binding(pid).context("run --pid")?;
    let mut out = std::io::stdout().lock();
    if per_thread {
        for (tid, set) in &threads {
            writeln!(out, "thread {tid}: {}", format_list(&set_to_vec(set)))?;
        }
    } else if let Some((_, set)) = threads.first() {
        writeln!(out, "pid {pid}: {}", format_list(&set_to_vec(set)))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every thread of `pid` to `cpus`, as `taskset -a -p` does (on Windows, across processor
/// groups, each thread to one group's part: then each part is listed).
fn bind_all(pid: u32, cpus: &coretune_core::CpuSet) -> anyhow::Result<ExitCode> {
    let bound = rebind_process(pid, cpus).context("run --pid")?;
    let mut parts: Vec<(String, usize)> = Vec::new();
    for (_, set) in &bound {
        let list = format_list(&set_to_vec(set));
        match parts.iter_mut().find(|(l, _)| *l == list) {
            Some((_, n)) => *n += 1,
            None => parts.push((list, 1)),
        }
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if let [(list, n)] = &parts[..] {
        eprintln!(
            "coretune: pid {pid}: {n} thread{} bound to CPUs {list}",
            plural(*n)
        );
    } else {
        eprintln!(
            "coretune: pid {pid}: {} threads bound, each within one processor group:",
            bound.len()
        );
        for (list, n) in parts {
            eprintln!("  {n} thread{} to CPUs {list}", plural(n));
        }
    }
    Ok(ExitCode::SUCCESS)
}
