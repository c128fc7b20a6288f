//! `coretune place`: which CPUs each of N threads gets, and how to tell other tools.

use crate::choices::one_of;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use coretune_core::cpuset::{cpus_named, set_to_vec};
use coretune_core::memory::MemPolicy;
use coretune_core::topology::groups::windows_lines;
use coretune_core::topology::groups::{GroupSource, ProcessorGroups};
use coretune_core::{Binding, PlaceSpec, Placement, Policy, plan_spec};
use serde::Serialize;

use crate::input::{TopologyArgs, cpus_option};

#[derive(Debug, Args)]
pub(crate) struct PlaceArgs {
    /// Number of threads.
    #[arg(long, short = 't')]
    threads: usize,
    /// Policy: os is no pinning, spread is hwloc-distrib's; or an ordered CPU list as
    /// likwid-pin's -c takes it, thread k on its k-th CPU (0,2,1,3, S0:0-1@S1:0-1, E:N:4:1:2).
    #[arg(
        long,
        short = 'p',
        visible_alias = "place",
        default_value = "spread",
        allow_hyphen_values = true,
        value_parser = one_of(Policy::ALL.map(PlaceSpec::Policy))
    )]
    policy: PlaceSpec,
    /// Limit the placement to these CPUs (a CPU-set expression, e.g. 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Object indexes in --cpus are OS (physical) indexes.
    #[arg(long)]
    physical: bool,
    /// Each thread's set: its PU, its whole core, one set shared by all threads (shared), or its
    /// own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu", value_parser = one_of(Binding::ALL))]
    bind: Binding,
    /// The memory policy to go with it, as `run --mem` takes it: local, interleave or
    /// interleave:NODES, bind or bind:NODES (the nodes near the placement's CPUs without NODES),
    /// preferred:NODE (NODES: 0-1 as numactl numbers nodes, numa:0-1, package:1, near); shown
    /// as numactl's options and in the run line.
    #[arg(long, value_name = "POLICY")]
    mem: Option<MemPolicy>,
    /// Print the placement as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    topology: TopologyArgs,
}

/// `--mem` resolved for the placement.
#[derive(Serialize)]
struct MemJson {
    /// The policy as given (`interleave:numa:0-1`).
    policy: String,
    /// The nodes it names (OS indexes; empty for local).
    nodes: Vec<usize>,
    /// numactl's options for it (`--interleave=0,1`).
    numactl: String,
}

#[derive(Serialize)]
struct ThreadJson<'a> {
    thread: usize,
    #[serde(flatten)]
    place: &'a coretune_core::placement::ThreadPlacement,
    /// Its Windows processor group(s) and mask(s) (`G:HEX`), on the machine's groups (modelled
    /// for a machine not seen on Windows).
    windows: Vec<String>,
    /// The threads it steals from first (same core, L3, NUMA node); the others follow in ring
    /// order. The whole order would be quadratic in the thread count.
    steal_first: Vec<usize>,
}

#[derive(Serialize)]
struct PlaceJson<'a> {
    policy: Policy,
    binding: Binding,
    threads: Vec<ThreadJson<'a>>,
    omp_places: Option<String>,
    omp_proc_bind: &'static str,
    taskset: String,
    likwid_pin: Option<String>,
    numa_nodes: Vec<usize>,
    numactl: Option<String>,
    /// With `--mem`: the memory policy resolved (then `numactl` applies it).
    #[serde(skip_serializing_if = "Option::is_none")]
    mem: Option<MemJson>,
    /// How to start a program on the placement's CPUs on Windows (`start /affinity`,
    /// PowerShell, or `coretune run` across processor groups).
    windows: Vec<String>,
}

pub(crate) fn run(args: &PlaceArgs) -> anyhow::Result<ExitCode> {
    let topo = args.topology.load_with_devices()?;
    let cpus = cpus_option(&topo, args.cpus.as_deref(), args.physical)?;
    let left_out = args.policy.left_out_by(&topo, cpus.as_ref(), args.physical);
    if let (false, Some(expr)) = (left_out.is_empty(), &args.cpus) {
        eprintln!(
            "coretune: warning: --cpus '{expr}' leaves out {} of --place '{}': the threads \
             written for them go round-robin over the rest of the list",
            cpus_named(&left_out),
            args.policy
        );
    }
    let placement = plan_spec(
        &topo,
        args.threads,
        &args.policy,
        cpus.as_ref(),
        args.physical,
        args.bind,
    )
    .context("place")?;
    // `--mem`: planned near the placement's CPUs; numactl then says this policy.
    let mem = match &args.mem {
        Some(policy) => {
            let plan = policy
                .plan(&topo, &placement.union(), args.physical)
                .context("place --mem")?;
            if let Some(note) = &plan.note {
                eprintln!("coretune: warning: {note}");
            }
            Some(MemJson {
                policy: policy.to_string(),
                nodes: plan.nodes.clone(),
                numactl: plan.numactl(),
            })
        }
        None => None,
    };
    let numactl = match &mem {
        Some(m) if placement.is_pinned() => Some(format!(
            "numactl --physcpubind={} {}",
            placement.taskset_list(),
            m.numactl
        )),
        Some(m) => Some(format!("numactl {}", m.numactl)),
        None => placement.numactl(&topo),
    };
    // Buffered: stdout is line-buffered, and a big plan's JSON is many lines.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let groups = ProcessorGroups::of(&topo);
    let windows = windows_lines(&groups, &set_to_vec(&placement.union()), "CMD");
    if args.json {
        let near = placement.steal_near();
        let json = PlaceJson {
            policy: placement.policy,
            binding: placement.binding,
            threads: placement
                .threads
                .iter()
                .enumerate()
                .zip(near)
                .map(|((i, place), steal_first)| ThreadJson {
                    thread: i,
                    place,
                    windows: groups
                        .split(&place.pus)
                        .0
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                    steal_first,
                })
                .collect(),
            omp_places: placement.omp_places(),
            omp_proc_bind: placement.omp_proc_bind(),
            taskset: placement.taskset_list(),
            likwid_pin: placement.likwid_pin(),
            numa_nodes: placement.memory_nodes(&topo),
            numactl,
            mem,
            windows,
        };
        serde_json::to_writer_pretty(&mut out, &json).context("writing JSON")?;
        writeln!(out)?;
    } else {
        let run = run_line(args);
        let text = render_text(&placement, &args.policy, &run, numactl, &groups, &windows);
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `coretune run` line that applies this placement to a program, thread by thread.
fn run_line(args: &PlaceArgs) -> String {
    let place = match &args.policy {
        PlaceSpec::Policy(policy) => policy.to_string(),
        PlaceSpec::List(list) => format!("'{list}'"),
    };
    let mut line = format!("coretune run --threads {} --place {place}", args.threads);
    if args.bind != Binding::Pu {
        line.push_str(&format!(" --bind {}", args.bind));
    }
    if let Some(cpus) = &args.cpus {
        line.push_str(&format!(" --cpus '{cpus}'"));
        if args.physical {
            line.push_str(" --physical");
        }
    }
    if let Some(mem) = &args.mem {
        line.push_str(&format!(" --mem {mem}"));
    }
    line.push_str(" -- CMD");
    line
}

fn render_text(
    p: &Placement,
    spec: &PlaceSpec,
    run: &str,
    numactl: Option<String>,
    groups: &ProcessorGroups,
    windows: &[String],
) -> String {
    use coretune_core::cpuset::format_list;
    use std::fmt::Write as _;
    let mut s = String::new();
    let policy = match spec {
        PlaceSpec::Policy(policy) => policy.to_string(),
        PlaceSpec::List(list) => format!("round-robin over the list {list}"),
    };
    let _ = writeln!(
        s,
        "{}, policy {policy}, bound per {}",
        coretune_core::cpuset::counted(p.len(), "thread"),
        p.binding
    );
    let opt = |v: Option<usize>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    // The group column where the machine has several (or is a Windows machine).
    let show_groups = groups.len() > 1 || groups.source() == GroupSource::Windows;
    for (i, t) in p.threads.iter().enumerate() {
        let group = if show_groups {
            let parts: Vec<String> = groups
                .split(&t.pus)
                .0
                .iter()
                .map(|m| m.group.to_string())
                .collect();
            format!(" group {}", parts.join(","))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "thread {i:>3}: cpus {:<12} core {:<4} numa {:<3} l3 {}{group}",
            format_list(&t.pus),
            opt(t.core),
            opt(t.numa),
            opt(t.l3)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "coretune:   {run}");
    match p.omp_places() {
        Some(places) => {
            let _ = writeln!(
                s,
                "OpenMP:     OMP_NUM_THREADS={} OMP_PLACES='{places}' OMP_PROC_BIND={}",
                p.len(),
                p.omp_proc_bind()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "OpenMP:     OMP_NUM_THREADS={} OMP_PROC_BIND=false",
                p.len()
            );
        }
    }
    let _ = writeln!(s, "taskset:    taskset -c {} CMD", p.taskset_list());
    if let Some(likwid) = p.likwid_pin() {
        let _ = writeln!(s, "likwid-pin: likwid-pin -c {likwid} CMD");
    }
    if let Some(numactl) = numactl {
        let _ = writeln!(s, "memory:     {numactl} CMD");
    }
    for line in windows {
        let _ = writeln!(s, "Windows:    {line}");
    }
    s
}
