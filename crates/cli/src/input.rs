//! Options several commands share: `--input` (which topology a command works on) and `--cpus`
//! (a CPU-set expression limiting what a command uses).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::CpuSet;
use coretune_core::CpuSetExpr;
use coretune_core::cpuset::ResolveOptions;
use coretune_core::{Topology, TopologySource};

/// The topology option every topology-using command shares.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct TopologyArgs {
    /// Topology to use instead of this machine's: an hwloc XML file, a saved /sys + /proc tree
    /// (as hwloc-gather-topology writes), or an hwloc synthetic description such as
    /// 'pack:2 numa:2 l3:2 core:8 pu:2'.
    #[arg(long, value_name = "XML|DIR|SYNTHETIC", global = true)]
    pub(crate) input: Option<String>,
}

impl TopologyArgs {
    /// Where the topology comes from.
    pub(crate) fn source(&self) -> anyhow::Result<TopologySource> {
        Ok(match self.input.as_deref() {
            None => TopologySource::Live,
            Some(dir) if Path::new(dir).is_dir() => fsroot_to_xml(Path::new(dir))?,
            Some(input) => TopologySource::from_input(input),
        })
    }

    /// Loads the topology.
    pub(crate) fn load(&self) -> anyhow::Result<Topology> {
        let source = self.source()?;
        Ok(Topology::load(&source)?)
    }

    /// Loads the topology with its PCI and OS devices, so that CPU-set expressions can name the
    /// CPUs near a device (`os=eth0`, `pci=...`).
    pub(crate) fn load_with_devices(&self) -> anyhow::Result<Topology> {
        let source = self.source()?;
        Ok(Topology::load_with(
            &source,
            &coretune_core::topology::LoadOptions::default().io(true),
        )?)
    }
}

/// hwloc reads a saved /sys + /proc tree only through the `HWLOC_FSROOT` environment variable,
/// at load time. Setting the environment of a running (possibly multi-threaded) process is
/// unsound, so a child `coretune topo --xml` does the load with the variable set and hands back
/// XML, which loads here like any other XML.
fn fsroot_to_xml(dir: &Path) -> anyhow::Result<TopologySource> {
    if !dir.join("sys").is_dir() && !dir.join("proc").is_dir() {
        bail!(
            "{}: not a saved /sys + /proc tree (no sys/ or proc/ inside)",
            dir.display()
        );
    }
    saved_tree_to_xml(dir, SavedTree::Fsroot, false)
}

/// What a directory given as a topology holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SavedTree {
    /// A /sys + /proc tree (hwloc-gather-topology), read by hwloc's Linux backend.
    Fsroot,
    /// A CPUID dump (hwloc-gather-cpuid), read by hwloc's x86 backend.
    Cpuid,
}

/// Loads a saved tree in a child `coretune topo --xml` (hwloc takes it only from the
/// environment) and returns the XML the child exports. With `all_objects` the child keeps every
/// object hwloc reports (I/O devices, Misc, instruction caches, disallowed PUs) and uses only the
/// backends hwloc's own tools force for that input, so that the XML can be loaded again with any
/// filters.
pub(crate) fn saved_tree_to_xml(
    dir: &Path,
    kind: SavedTree,
    all_objects: bool,
) -> anyhow::Result<TopologySource> {
    let label = dir.display().to_string();
    let exe = std::env::current_exe().context("cannot find coretune's own executable")?;
    let mut cmd = Command::new(exe);
    cmd.args(["topo", "--xml"])
        .env("HWLOC_THISSYSTEM", "0")
        .env_remove("HWLOC_XMLFILE")
        .env_remove("HWLOC_SYNTHETIC");
    if all_objects {
        cmd.arg("--all-objects");
    }
    match kind {
        SavedTree::Fsroot => {
            cmd.env("HWLOC_FSROOT", dir);
            if all_objects {
                cmd.env("HWLOC_COMPONENTS", "linux,pci,stop")
                    .env("HWLOC_DUMPED_HWDATA_DIR", "/var/run/hwloc");
            }
        }
        SavedTree::Cpuid => {
            cmd.env("HWLOC_CPUID_PATH", dir)
                .env("HWLOC_COMPONENTS", "x86,stop");
        }
    }
    let out = cmd
        .output()
        .with_context(|| format!("{label}: cannot run coretune to read the tree"))?;
    if !out.status.success() {
        // hwloc's own lines, then the child's error about "this machine" (the tree, here): one
        // line, as every error is.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said: Vec<&str> = stderr
            .lines()
            .map(|l| {
                l.trim()
                    .trim_start_matches("coretune: ")
                    .trim_start_matches("could not discover this machine's topology: ")
                    .trim_end_matches('.')
            })
            .filter(|l| !l.is_empty())
            .collect();
        bail!(
            "{label}: hwloc could not read the tree: {}",
            said.join("; ")
        );
    }
    let xml = String::from_utf8(out.stdout).context("hwloc's XML export is not UTF-8")?;
    Ok(TopologySource::Xml { label, xml })
}

/// The CPU set `--cpus EXPR` names on `topo` (its usable CPUs), with its warnings printed to
/// stderr; `None` without the option.
pub(crate) fn cpus_option(
    topo: &Topology,
    expr: Option<&str>,
    physical: bool,
) -> anyhow::Result<Option<CpuSet>> {
    let Some(expr) = expr else { return Ok(None) };
    let resolved = expr
        .parse::<CpuSetExpr>()
        .and_then(|e| e.resolve(topo, &ResolveOptions { physical }))
        .context("--cpus")?;
    for warning in &resolved.warnings {
        eprintln!("coretune: warning: --cpus {warning}");
    }
    Ok(Some(resolved.usable(topo)))
}
