//! `coretune cpus EXPR...`: evaluate a CPU-set expression and print it in one format.

use crate::choices::one_of;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use coretune_core::CpuSetExpr;
use coretune_core::cpuset::set_to_vec;
use coretune_core::cpuset::{Format, ResolveOptions};
use coretune_core::topology::ObjKind;
use serde::Serialize;

use crate::input::TopologyArgs;

#[derive(Debug, Args)]
pub(crate) struct CpusArgs {
    /// The expression: CPU lists (0-3,8), masks (0xff, 0b1010, win:FC), objects (numa:1,
    /// core:0-3, numa:1.core:0-3, l3:2, pu:0, all), cpukind:N, pcores, ecores, with hwloc-calc's
    /// operators ~X (remove), xX (intersect), ^X (xor); several arguments apply left to right.
    #[arg(required = true, value_name = "EXPR")]
    expr: Vec<String>,
    /// Output format (`hex` is hwloc's).
    #[arg(long, default_value = "list", value_name = "FORMAT", value_parser = one_of(Format::ALL))]
    to: Format,
    /// Object indexes are OS (physical) indexes, as hwloc-calc --pi.
    #[arg(long)]
    physical: bool,
    /// Print the logical indexes of the objects of this type the set intersects (hwloc-calc -I).
    #[arg(long, value_name = "TYPE")]
    objects: Option<ObjectKind>,
    /// Print the set as JSON: its PUs, count, and every format --to knows (`formats`), with its
    /// warnings.
    #[arg(long, conflicts_with_all = ["to", "objects"])]
    json: bool,
    #[command(flatten)]
    topology: TopologyArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ObjectKind {
    Core,
    Numa,
    L3,
    Package,
}

impl ObjectKind {
    fn kind(self) -> ObjKind {
        match self {
            ObjectKind::Core => ObjKind::Core,
            ObjectKind::Numa => ObjKind::Numa,
            ObjectKind::L3 => ObjKind::L3,
            ObjectKind::Package => ObjKind::Package,
        }
    }
}

#[derive(Serialize)]
struct CpusJson {
    expr: String,
    pus: Vec<usize>,
    count: usize,
    list: String,
    hwloc: String,
    taskset: String,
    windows: String,
    /// Every format `--to` knows, by its name: the set written in it, or null where the format
    /// cannot express the set (PowerShell beyond processor group 0).
    formats: std::collections::BTreeMap<String, Option<String>>,
    warnings: Vec<String>,
}

pub(crate) fn run(args: &CpusArgs) -> anyhow::Result<ExitCode> {
    let topo = args.topology.load_with_devices()?;
    let expr = CpuSetExpr::from_args(&args.expr).context("cpus")?;
    let resolved = expr
        .resolve(
            &topo,
            &ResolveOptions {
                physical: args.physical,
            },
        )
        .context("cpus")?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = CpusJson {
            expr: expr.source().to_owned(),
            pus: set_to_vec(&resolved.set),
            count: set_to_vec(&resolved.set).len(),
            list: Format::List.render(&resolved.set)?,
            hwloc: Format::Hwloc.render(&resolved.set)?,
            taskset: Format::Taskset.render(&resolved.set)?,
            windows: Format::Windows.render_on(&resolved.set, &topo)?,
            formats: Format::ALL
                .into_iter()
                .map(|f| (f.to_string(), f.render_on(&resolved.set, &topo).ok()))
                .collect(),
            warnings: resolved.warnings.iter().map(ToString::to_string).collect(),
        };
        serde_json::to_writer_pretty(&mut out, &json).context("writing JSON")?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for warning in &resolved.warnings {
        eprintln!("coretune: warning: {warning}");
    }
    if let Some(kind) = args.objects {
        let indexes: Vec<String> = topo
            .indexes_intersecting(kind.kind(), &resolved.set, args.physical)
            .iter()
            .map(ToString::to_string)
            .collect();
        writeln!(out, "{}", indexes.join(","))?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{}",
        args.to.render_on(&resolved.set, &topo).context("cpus")?
    )?;
    Ok(ExitCode::SUCCESS)
}
