//! `coretune topo`: what this machine (or a described one) is, and the CPU budget this process has.
//!
//! The tree follows `lstopo-no-graphics`' text form (a chain of single children joined with
//! ` + `, NUMA nodes listed first under the object they attach to), shows only the levels that
//! matter for placement (packages, dies, groups, NUMA nodes, L3, shared L2, cores, PUs), and
//! collapses a run of three or more siblings of identical shape into its first member and one
//! line naming the rest, so that a 384-PU machine fits a screen. `--full` expands everything.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use coretune_core::Topology;
use coretune_core::cpuset::format_list;
use coretune_core::topology::{Facts, NodeKind, TopoNode};

use crate::input::TopologyArgs;

#[derive(Debug, Args)]
pub(crate) struct TopoArgs {
    #[command(flatten)]
    topology: TopologyArgs,
    /// Print the facts as JSON (schema in docs/topo.schema.json).
    #[arg(long, conflicts_with_all = ["xml", "full"])]
    json: bool,
    /// Print every object instead of collapsing runs of identical siblings.
    #[arg(long)]
    full: bool,
    /// Print the topology as hwloc XML (what `lstopo --of xml` writes), to save or share it.
    #[arg(long)]
    xml: bool,
    /// With --xml: keep every object hwloc reports (I/O devices, Misc objects, instruction
    /// caches, disallowed PUs), as hwloc-calc loads topologies. coretune's own children use it.
    #[arg(long, hide = true, requires = "xml")]
    all_objects: bool,
}

pub(crate) fn run(args: &TopoArgs) -> anyhow::Result<ExitCode> {
    let topo = if args.all_objects {
        Topology::load_with(
            &args.topology.source()?,
            &coretune_core::topology::LoadOptions::hwloc_calc(true),
        )?
    } else if args.xml {
        // What lstopo keeps: instruction caches, Misc objects, the important I/O devices.
        Topology::load_with(
            &args.topology.source()?,
            &coretune_core::topology::LoadOptions::lstopo(),
        )?
    } else {
        args.topology.load()?
    };
    let mut out = std::io::stdout().lock();
    if args.xml {
        let xml = topo
            .to_xml()
            .map_err(|e| anyhow::anyhow!("{}: cannot export XML: {e}", topo.source()))?;
        out.write_all(xml.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let facts = Facts::gather(&topo);
    if args.json {
        serde_json::to_writer_pretty(&mut out, &facts).context("writing JSON")?;
        writeln!(out)?;
    } else {
        out.write_all(render_text(&topo, &facts, args.full).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn render_text(topo: &Topology, facts: &Facts, full: bool) -> String {
    let mut s = String::new();
    let source = if facts.this_system {
        "This machine"
    } else {
        &facts.source
    };
    let _ = writeln!(s, "{source}: {}", facts.summary);
    let root = topo.tree();
    let mut machine = String::from("Machine");
    if let Some(total) = root.memory_bytes {
        let _ = write!(machine, " ({} total)", bytes(total));
    }
    let _ = writeln!(s, "{machine}");
    render_children(&mut s, &root, 1, full);

    for matrix in &facts.distances {
        let n = matrix.os_indexes.len();
        let _ = writeln!(s, "NUMA distances ({}, by OS index):", matrix.name);
        let head: String = matrix
            .os_indexes
            .iter()
            .map(|i| format!("{:>5}", i.map_or("?".into(), |i| format!("P#{i}"))))
            .collect();
        let _ = writeln!(s, "       {head}");
        for (row, os) in matrix.os_indexes.iter().enumerate() {
            let cells: String = matrix.values[row * n..(row + 1) * n]
                .iter()
                .map(|v| format!("{v:>5}"))
                .collect();
            let label = os.map_or("?".into(), |i| format!("P#{i}"));
            let _ = writeln!(s, "  {label:>5}{cells}");
        }
    }
    if facts.cpu_kinds.len() > 1 {
        let _ = writeln!(
            s,
            "CPU kinds (most power-efficient first, as hwloc ranks them):"
        );
        for kind in &facts.cpu_kinds {
            let extra: Vec<String> = kind
                .infos
                .iter()
                .filter(|(k, _)| k.as_str() != "CoreType")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(
                s,
                "  cpukind:{} {}: PUs {} ({}){}",
                kind.index,
                kind.label(),
                format_list(&kind.pus),
                kind.pus.len(),
                if extra.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", extra.join(", "))
                }
            );
        }
    }
    if !facts.offline_pus.is_empty() {
        let _ = writeln!(s, "Offline PUs: {}", format_list(&facts.offline_pus));
    }
    if !facts.disallowed_pus.is_empty() {
        let _ = writeln!(
            s,
            "Disallowed PUs: {} (online, but outside this process's cpuset)",
            format_list(&facts.disallowed_pus)
        );
    }
    let groups = &facts.processor_groups;
    if groups.source == "windows" || groups.groups.len() > 1 {
        let how = if groups.source == "windows" {
            "as Windows numbers them"
        } else {
            "as Windows would make them for this machine"
        };
        let _ = writeln!(
            s,
            "Windows processor groups ({how}): {}",
            groups.groups.len()
        );
        for g in &groups.groups {
            let mut sorted = g.pus.clone();
            sorted.sort_unstable();
            let _ = writeln!(
                s,
                "  group {}: {} PUs ({})",
                g.group,
                g.pus.len(),
                format_list(&sorted)
            );
        }
    }
    if let Some(budget) = &facts.budget {
        let _ = writeln!(s, "CPU budget: {}", budget.explanation);
    }
    s
}

/// The shape of a subtree without indexes: what makes two siblings "identical".
fn shape(node: &TopoNode) -> String {
    let mut s = node.kind.to_string();
    if let Some(size) = node.cache_bytes {
        let _ = write!(s, "{size}");
    } else if matches!(node.kind, NodeKind::L2 | NodeKind::L3) {
        s.push('0');
    }
    if !node.children.is_empty() {
        s.push('(');
        for c in &node.children {
            s.push_str(&shape(c));
            s.push(',');
        }
        s.push(')');
    }
    s
}

fn label(node: &TopoNode) -> String {
    let mut s = format!("{} L#{}", node.kind, node.logical_index);
    match node.kind {
        NodeKind::Pu => {
            if let Some(os) = node.os_index {
                let _ = write!(s, " (P#{os})");
            }
        }
        NodeKind::NumaNode => {
            let os = node.os_index.map_or("?".into(), |i| i.to_string());
            match node.memory_bytes {
                Some(mem) => {
                    let _ = write!(s, " (P#{os} {})", bytes(mem));
                }
                None => {
                    let _ = write!(s, " (P#{os})");
                }
            }
        }
        _ => {
            if let Some(size) = node.cache_bytes {
                let _ = write!(s, " ({})", bytes(size));
            }
        }
    }
    s
}

/// One object's line: a chain of single children joined with " + " (as lstopo does), and a
/// core's PUs inline.
fn render_object(s: &mut String, node: &TopoNode, depth: usize, full: bool) {
    let mut line = label(node);
    let mut cur = node;
    loop {
        if cur.kind == NodeKind::Core && cur.children.len() > 1 {
            let pus: Vec<String> = cur.children.iter().map(label).collect();
            let _ = write!(line, ": {}", pus.join(", "));
            let _ = writeln!(s, "{}{line}", "  ".repeat(depth));
            return;
        }
        match cur.children.as_slice() {
            [only] if only.kind != NodeKind::NumaNode => {
                let _ = write!(line, " + {}", label(only));
                cur = only;
            }
            _ => {
                let _ = writeln!(s, "{}{line}", "  ".repeat(depth));
                render_children(s, cur, depth + 1, full);
                return;
            }
        }
    }
}

fn render_children(s: &mut String, node: &TopoNode, depth: usize, full: bool) {
    let children = &node.children;
    let mut i = 0;
    while i < children.len() {
        let first = &children[i];
        let mut run = 1;
        if !full {
            let sig = shape(first);
            while i + run < children.len()
                && children[i + run].kind == first.kind
                && shape(&children[i + run]) == sig
            {
                run += 1;
            }
        }
        if run < 3 {
            for child in &children[i..i + run] {
                render_object(s, child, depth, full);
            }
        } else {
            render_object(s, first, depth, full);
            let rest = &children[i + 1..i + run];
            let mut pus: Vec<usize> = rest.iter().flat_map(|n| n.pus.iter().copied()).collect();
            pus.sort_unstable();
            let (a, b) = (rest[0].logical_index, rest[rest.len() - 1].logical_index);
            let _ = writeln!(
                s,
                "{}... {} more {} like L#{} (L#{a}-{b}, PUs P#{})",
                "  ".repeat(depth),
                rest.len(),
                first.kind,
                first.logical_index,
                format_list(&pus)
            );
        }
        i += run;
    }
}

/// Bytes in binary units, as `free -h` prints them: exact when whole, else one decimal.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if n % scale == 0 {
        format!("{} {}", n / scale, UNITS[unit])
    } else {
        #[allow(clippy::cast_precision_loss)] // display only
        let x = n as f64 / scale as f64;
        format!("{x:.1} {}", UNITS[unit])
    }
}
