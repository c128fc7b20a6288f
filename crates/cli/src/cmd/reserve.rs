//! `coretune reserve [EXPR]`: keep a CPU set (CPU 0 by default) free of every process — through
//! systemd's slices, the cgroup cpuset files, or each process — and `--undo` it exactly.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::cpuset::ResolveOptions;
use coretune_core::enforce::reserve;
use coretune_core::enforce::reserve::{ReserveMethod, ReservePlan, ensure_not_reserved};
use coretune_core::{CpuSetExpr, Topology, TopologySource};

#[derive(Debug, Args)]
pub(crate) struct ReserveArgs {
    /// The CPUs to keep free (a CPU-set expression).
    #[arg(
        value_name = "EXPR",
        default_value = "pu:0",
        allow_hyphen_values = true
    )]
    cpus: String,
    /// Object indexes in EXPR are OS (physical) indexes.
    #[arg(long)]
    physical: bool,
    /// How: systemd (AllowedCPUs= on user.slice, system.slice, init.scope), cgroup (the cpuset
    /// files), rules (each process); default: the first that applies.
    #[arg(long, value_name = "METHOD", value_parser = ["systemd", "cgroup", "rules"])]
    via: Option<String>,
    /// A cgroup folder to limit (repeatable), instead of every top-level cgroup.
    #[arg(long, value_name = "DIR")]
    cgroup: Vec<PathBuf>,
    /// Where what was there is saved (default: /var/lib/coretune/reserve.json as root, else
    /// under $XDG_STATE_HOME).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Print what would change (or, with --undo, be restored), change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Put back exactly what was there before, from the saved state.
    #[arg(long, conflicts_with_all = ["via", "cgroup", "physical"])]
    undo: bool,
}

fn print_steps(plan: &ReservePlan, undo: bool) {
    if plan.steps.is_empty() {
        println!("  (nothing to change)");
    }
    if undo {
        for step in plan.steps.iter().rev() {
            println!("  {}", step.undo_text());
        }
    } else {
        for step in &plan.steps {
            println!("  {step}");
        }
    }
}

/// One line: these errors name their file or call themselves, and the OS error once.
fn flat(
    context: &str,
) -> impl FnOnce(coretune_core::enforce::reserve::ReserveError) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("{context}: {e}")
}

pub(crate) fn run(args: &ReserveArgs) -> anyhow::Result<ExitCode> {
    if !coretune_core::enforce::rules::keeping_in_force_is_supported() {
        bail!(
            "reserve: Linux only (cgroup cpusets and systemd slices); on Windows keep CPUs free \
             with CPU sets (Process Lasso) or start programs with `coretune run --cpus 'all ~pu:0'`"
        );
    }
    let state = args
        .state
        .clone()
        .unwrap_or_else(reserve::default_state_path);
    if args.undo {
        if args.dry_run {
            let plan = reserve::read_state(&state).map_err(flat("reserve --undo"))?;
            println!(
                "coretune reserve --undo would put back (through {}, saved in {}):",
                plan.method,
                state.display()
            );
            print_steps(&plan, true);
            return Ok(ExitCode::SUCCESS);
        }
        let plan = reserve::undo(&state).map_err(flat("reserve --undo"))?;
        println!(
            "coretune reserve --undo: CPUs {} are no longer kept free; put back (through {}):",
            plan.reserved, plan.method
        );
        print_steps(&plan, true);
        return Ok(ExitCode::SUCCESS);
    }
    // Reserving only makes sense on the machine this runs on.
    let topo = Topology::load(&TopologySource::Live)?;
    let reserved = args
        .cpus
        .parse::<CpuSetExpr>()
        .and_then(|e| {
            e.resolve(
                &topo,
                &ResolveOptions {
                    physical: args.physical,
                },
            )
        })
        .map(|r| r.usable(&topo))
        .with_context(|| format!("reserve '{}'", args.cpus))?;
    let via = args
        .via
        .as_deref()
        .map(str::parse::<ReserveMethod>)
        .transpose()
        .map_err(flat("--via"))?;
    if !args.dry_run {
        ensure_not_reserved(&state).map_err(flat("reserve"))?;
    }
    let plan = reserve::plan(&topo, &reserved, via, &args.cgroup).map_err(flat("reserve"))?;
    let verb = if args.dry_run {
        "would keep"
    } else {
        "keeping"
    };
    println!(
        "coretune reserve: {verb} CPUs {} free (everything else on {}) through {}: {}",
        plan.reserved, plan.allowed, plan.method, plan.reason
    );
    print_steps(&plan, false);
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    reserve::apply(&plan, &state).map_err(flat("reserve"))?;
    let state_arg = args
        .state
        .as_ref()
        .map(|s| format!(" --state {}", s.display()))
        .unwrap_or_default();
    println!(
        "saved what was there in {}; undo with: coretune reserve --undo{state_arg}",
        state.display()
    );
    if plan.method == ReserveMethod::Rules {
        println!(
            "processes started from now on are kept off CPUs {} by: coretune rules watch {}",
            plan.reserved,
            reserve::rules_path(&state).display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
