//! hwloc-calc, reimplemented on hwloc's library: the engine behind `coretune calc`.
//!
//! `coretune calc` takes hwloc-calc's command line and prints what Debian's hwloc-calc 2.9
//! prints. The command line is the CLI's (it is a grammar); everything that needs the topology
//! is here: locations ([`Calc::apply`], the language of `hwloc-calc.h`), the outputs (a set in
//! one of four formats, `-N`, `-I`, `-H`, `--largest`, `--local-memory`, `--best-memattr`), the
//! filters applied before output (`--cpukind`, `--no-smt`, `--single`), and hwloc's bitmap
//! strings. hwloc-calc's messages come back as [`Message`]s on the stream hwloc-calc uses, so
//! the CLI prints them in order.
//!
//! Options hwloc added after 2.9 follow hwloc's documentation: `--cpuset-output-format` /
//! `--cof` and `--cpuset-input-format` / `--cif` (`hwloc`, `list`, `taskset`,
//! `systemd-dbus-api`), `--oo`.

use hwlocality::bitmap::Bitmap;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::attribute::{Initiator, MemoryAttribute, MemoryAttributeFlags};
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{OSDeviceType, ObjectType};

use super::bitmap::{Assertion, BitmapFormat};
use super::cnum::{atoi, strtoul};
use super::location::{self, LocationSettings, Message, cpus_of, nodes_of};
use super::types::{
    self, DEPTH_NUMANODE, DEPTH_OS_DEVICE, DEPTH_UNKNOWN, object_type_name, objects_at, parse_type,
    spec_depth, type_depth,
};

use crate::topology::Topology;

/// Where hwloc-calc stops early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CalcStop {
    /// hwloc-calc 2.9 (or libhwloc) fails an assertion here and dies with SIGABRT (status 134
    /// in a shell); the message is the assertion's.
    #[error("{0}")]
    Abort(String),
    /// hwloc-calc 2.9 dies with SIGSEGV here (status 139 in a shell); the message says why.
    #[error("{0}")]
    Crash(String),
    /// hwloc-calc exits with this status after printing its message.
    #[error("exit status {0}")]
    Exit(u8),
}

impl From<Assertion> for CalcStop {
    fn from(a: Assertion) -> Self {
        match a {
            Assertion::Abort(why) => CalcStop::Abort(why.to_owned()),
            Assertion::Crash(why) => CalcStop::Crash(why.to_owned()),
        }
    }
}

/// Reads a bitmap in hwloc's format as `hwloc_bitmap_sscanf` does (an unparsable string gives
/// the empty set), for `--restrict`.
///
/// # Errors
///
/// [`CalcStop::Abort`] where libhwloc 2.9 fails its assertion (a first word that is empty).
pub fn parse_hwloc_bitmap(s: &str) -> Result<Bitmap, CalcStop> {
    Ok(super::bitmap::parse_hwloc(s)?.0)
}

/// hwloc-calc's output options (everything after the topology options except the locations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSettings {
    /// Object indexes printed are logical (`--lo`, default) rather than OS indexes (`--po`).
    pub logical: bool,
    /// The set is a nodeset (`--no`).
    pub nodeset: bool,
    /// `--oo` (hwloc 2.11): object indexes are printed with their type, `Core:2`.
    pub object_output: bool,
    /// `--no-smt[=N]`: keep the N-th PU of each core (the first without `=N`).
    pub no_smt: Option<i32>,
    /// `--single`: keep the first CPU.
    pub single: bool,
    /// `--largest`: the largest objects that make up the set.
    pub largest: bool,
    /// `-N TYPE|DEPTH`: how many objects of a level intersect the set.
    pub number_of: Option<String>,
    /// `-I TYPE|DEPTH`: which objects of a level intersect the set.
    pub intersect: Option<String>,
    /// `-H TYPE1.TYPE2...`: the objects the set intersects, written hierarchically.
    pub hierarchical: Option<String>,
    /// `--local-memory` (or one of the two options below, which imply it).
    pub local_memory: bool,
    /// `--local-memory-flags`: `hwloc_get_local_numanode_objs` flags (default 3).
    pub local_memory_flags: u64,
    /// `--best-memattr NAME|ID`: only the best local node for this memory attribute.
    pub best_memattr: Option<String>,
    /// `--default-nodes` (hwloc-info ≥ 2.12's option, also taken by calc): only the local nodes
    /// that are default nodes (see `special_memory`).
    pub default_nodes: bool,
    /// `--sep`.
    pub sep: Option<String>,
    /// `--cof`/`--taskset`: how the set is written.
    pub format: BitmapFormat,
    /// An option of hwloc ≥ 2.10 was given (`--cof`, `--cif`): infinite sets are written as
    /// those releases write them (see `LocationSettings::newer_syntax`).
    pub newer_syntax: bool,
}

impl Default for OutputSettings {
    fn default() -> Self {
        Self {
            logical: true,
            nodeset: false,
            object_output: false,
            no_smt: None,
            single: false,
            largest: false,
            number_of: None,
            intersect: None,
            hierarchical: None,
            local_memory: false,
            local_memory_flags: 3,
            best_memattr: None,
            default_nodes: false,
            sep: None,
            format: BitmapFormat::Hwloc,
            newer_syntax: false,
        }
    }
}

/// A level of objects to count or list (`-N`, `-I`, a step of `-H`), resolved on the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ObjectLevel {
    depth: i32,
    /// OS devices of this kind only (`-I gpu`).
    osdev: Option<OSDeviceType>,
    /// hwloc 2.11's `numa[tier=1]`, `numa[HBM]`: only the objects the filter keeps (hwloc-calc
    /// 2.9 reads the type and ignores the brackets).
    filter: Option<location::Filter>,
}

impl ObjectLevel {
    fn keeps(&self, obj: &TopologyObject) -> bool {
        self.filter.as_ref().is_none_or(|f| f.keeps(obj))
    }
}

/// The output options resolved on the topology, ready for [`Calc::output`].
#[derive(Clone, Debug)]
pub struct PreparedOutput {
    settings: OutputSettings,
    number_of: Option<ObjectLevel>,
    intersect: Option<ObjectLevel>,
    hierarchical: Vec<ObjectLevel>,
    best_memattr: Option<BestAttr>,
}

/// A memory attribute for `--best-memattr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BestAttr {
    /// hwloc's built-in attributes: 0 Capacity, 1 Locality, 2 Bandwidth, 3 Latency, 4
    /// ReadBandwidth, 5 WriteBandwidth, 6 ReadLatency, 7 WriteLatency.
    BuiltIn(u32),
}

/// hwloc's built-in memory attributes, by id.
const MEMATTR_NAMES: [&str; 8] = [
    "Capacity",
    "Locality",
    "Bandwidth",
    "Latency",
    "ReadBandwidth",
    "WriteBandwidth",
    "ReadLatency",
    "WriteLatency",
];

/// hwloc-calc on one topology.
#[derive(Debug)]
pub struct Calc<'t> {
    topology: &'t Topology,
    /// `--cpukind`: the PUs kept before output.
    cpukind: Option<CpuSet>,
}

impl<'t> Calc<'t> {
    /// hwloc-calc on `topology` (loaded as hwloc-calc loads it: see
    /// [`LoadOptions::hwloc_calc`](crate::topology::LoadOptions::hwloc_calc)).
    pub fn new(topology: &'t Topology) -> Self {
        Self {
            topology,
            cpukind: None,
        }
    }

    /// `--cpukind N`: keep the PUs of CPU kind N (hwloc's rank, most efficient first). A
    /// negative N keeps everything, as in hwloc-calc.
    pub fn keep_cpukind(&mut self, index: i32, msgs: &mut Vec<Message>) {
        if index < 0 {
            return;
        }
        let hw = self.topology.hwloc();
        let kind = hw
            .cpu_kinds()
            .ok()
            .and_then(|mut kinds| kinds.nth(index as usize).map(|k| k.cpuset));
        if kind.is_none() {
            msgs.push(Message::Stderr(format!(
                "Couldn't find CPU kind #{index}, keeping no PU."
            )));
        }
        self.cpukind = Some(kind.unwrap_or_default());
    }

    /// `--cpukind NAME=VALUE`: keep the PUs of the kinds with that info attribute.
    pub fn keep_cpukind_info(&mut self, name: &str, value: &str, msgs: &mut Vec<Message>) {
        let mut set = CpuSet::new();
        if let Ok(kinds) = self.topology.hwloc().cpu_kinds() {
            for kind in kinds {
                let matches = kind.infos.iter().any(|info| {
                    info.name().to_bytes() == name.as_bytes()
                        && info.value().to_bytes() == value.as_bytes()
                });
                if matches {
                    set |= &kind.cpuset;
                }
            }
        }
        if set.is_empty() {
            msgs.push(Message::Stderr(format!(
                "Couldn't find any CPU kind matching {name}={value}, keeping no PU."
            )));
        }
        self.cpukind = Some(set);
    }

    /// Applies one location to `set` (`hwloc_calc_process_location_as_set`). `Ok(false)`: the
    /// location is not one (hwloc-calc then says "ignored unrecognized argument").
    ///
    /// # Errors
    ///
    /// [`CalcStop::Abort`] where hwloc-calc 2.9 dies on an assertion.
    pub fn apply(
        &self,
        set: &mut Bitmap,
        location: &str,
        settings: &LocationSettings,
        msgs: &mut Vec<Message>,
    ) -> Result<bool, CalcStop> {
        Ok(location::apply_location(
            self.topology.hwloc(),
            settings,
            set,
            location,
            msgs,
        )?)
    }

    /// Resolves the output options on the topology, as hwloc-calc does once its arguments are
    /// read.
    ///
    /// # Errors
    ///
    /// [`CalcStop::Exit`] with hwloc-calc's status (0 for a bad `-N`/`-I`/`-H` type, 1 for an
    /// unknown memory attribute) after the message saying why.
    pub fn prepare(
        &self,
        settings: &OutputSettings,
        msgs: &mut Vec<Message>,
    ) -> Result<PreparedOutput, CalcStop> {
        let mut level =
            |text: &Option<String>, caller: &str| -> Result<Option<ObjectLevel>, CalcStop> {
                let Some(text) = text else { return Ok(None) };
                match self.type_depth(text, caller) {
                    Ok(level) => Ok(Some(level)),
                    Err(message) => {
                        msgs.push(Message::Stderr(message));
                        Err(CalcStop::Exit(0))
                    }
                }
            };
        let number_of = level(&settings.number_of, "--number-of")?;
        let intersect = level(&settings.intersect, "--intersect")?;
        let mut hierarchical = Vec::new();
        if let Some(hier) = &settings.hierarchical {
            for part in hier.split('.') {
                let lvl = match self.type_depth(part, "--hierarchical") {
                    Ok(l) => l,
                    Err(message) => {
                        msgs.push(Message::Stderr(message));
                        return Err(CalcStop::Exit(0));
                    }
                };
                if lvl.depth < 0 && lvl.depth != DEPTH_NUMANODE {
                    msgs.push(Message::Stderr(format!(
                        "unsupported (non-normal) --hierarchical type {part}"
                    )));
                    return Err(CalcStop::Exit(0));
                }
                hierarchical.push(lvl);
            }
        }
        let best_memattr = match &settings.best_memattr {
            None => None,
            Some(name) => match parse_memattr(name) {
                Some(attr) => Some(attr),
                None => {
                    msgs.push(Message::Stderr(format!("unrecognized memattr {name}")));
                    return Err(CalcStop::Exit(1));
                }
            },
        };
        let mut settings = settings.clone();
        if settings.best_memattr.is_some() || settings.default_nodes {
            settings.local_memory = true;
        }
        Ok(PreparedOutput {
            settings,
            number_of: number_of.filter(|l| l.depth != -1),
            intersect: intersect.filter(|l| l.depth != -1),
            hierarchical,
            best_memattr,
        })
    }

    /// `hwloc_calc_type_depth`: a type name or a depth number for `-N`, `-I`, `-H`.
    fn type_depth(&self, text: &str, caller: &str) -> Result<ObjectLevel, String> {
        let hw = self.topology.hwloc();
        // `numa[tier=1]`: hwloc 2.11's filter after the type.
        let filter = text
            .split_once('[')
            .and_then(|(_, rest)| rest.strip_suffix(']'))
            .and_then(location::Filter::parse);
        let Some(spec) = parse_type(text) else {
            let (value, used) = strtoul(text.as_bytes(), 0);
            if used != text.len() {
                return Err(format!("unrecognized {caller} type or depth {text}"));
            }
            // A bare depth leaves hwloc-calc's attribute union zeroed: OS devices of type 0
            // (block) only.
            return Ok(ObjectLevel {
                depth: value as i32,
                osdev: Some(OSDeviceType::Storage),
                filter: None,
            });
        };
        let depth = spec_depth(hw, &spec);
        let name = types::type_string(spec.ty);
        if depth == DEPTH_UNKNOWN {
            return Err(format!("unavailable {caller} type {name}"));
        }
        if depth == types::DEPTH_MULTIPLE {
            return Err(format!(
                "cannot use {caller} type {name} with multiple depth, please use the relevant depth"
            ));
        }
        Ok(ObjectLevel {
            depth,
            osdev: spec.osdev,
            filter,
        })
    }

    /// Prints the set as hwloc-calc's options say (`hwloc_calc_output`), into `msgs`. Returns
    /// hwloc-calc's status for this output (1 when `--largest` finds no object for some CPUs).
    ///
    /// # Errors
    ///
    /// [`CalcStop`] where hwloc-calc stops: an assertion, or a set the systemd format cannot
    /// express.
    pub fn output(
        &self,
        out: &PreparedOutput,
        mut set: Bitmap,
        msgs: &mut Vec<Message>,
    ) -> Result<u8, CalcStop> {
        let hw = self.topology.hwloc();
        let s = &out.settings;
        if let Some(kind) = &self.cpukind {
            let kind: &Bitmap = kind.as_ref();
            set &= kind;
        }
        if let Some(which) = s.no_smt {
            if !s.nodeset {
                if type_depth(hw, ObjectType::Core) == DEPTH_UNKNOWN {
                    msgs.push(Message::Stderr(
                        "Topology has no Core object, ignoring --no-smt".to_owned(),
                    ));
                } else {
                    let mut cpus = CpuSet::from(set);
                    cpus.singlify_per_core(hw, which as u32 as usize);
                    set = Bitmap::from(cpus);
                }
            }
        }
        if s.single {
            set.singlify();
        }
        let index = |obj: &TopologyObject, logical: bool| -> String {
            let idx = if logical {
                Some(obj.logical_index())
            } else {
                obj.os_index()
            };
            idx.filter(|&i| i != u32::MAX as usize)
                .map_or_else(|| "-1".to_owned(), |i| i.to_string())
        };
        if s.largest {
            if s.nodeset {
                return Err(CalcStop::Abort(
                    "hwloc-calc.c:167: hwloc_calc_output: Assertion `!nodeseto' failed.".to_owned(),
                ));
            }
            let sep = s.sep.as_deref().unwrap_or(" ");
            let mut remaining = set;
            let mut line = String::new();
            while !remaining.is_empty() {
                let Some(obj) = first_largest_inside(hw.root_object(), &remaining) else {
                    if !line.is_empty() {
                        msgs.push(Message::StdoutPartial(line));
                    }
                    msgs.push(Message::Stderr(
                        "No object included in this cpuset".to_owned(),
                    ));
                    return Ok(1);
                };
                if !line.is_empty() {
                    line.push_str(sep);
                }
                let name = object_type_name(obj, true);
                match obj.os_index().filter(|_| !s.logical) {
                    _ if s.logical => line.push_str(&format!("{name}:{}", obj.logical_index())),
                    Some(os) if os != u32::MAX as usize => line.push_str(&format!("{name}:{os}")),
                    _ => line.push_str(&name),
                }
                if let Some(cpus) = obj.cpuset() {
                    let cpus: &CpuSet = &cpus;
                    let cpus: &Bitmap = cpus.as_ref();
                    remaining -= cpus;
                }
            }
            msgs.push(Message::Stdout(line));
        } else if let Some(level) = &out.number_of {
            let n = covering(hw, &set, s.nodeset, level).count();
            msgs.push(Message::Stdout(n.to_string()));
        } else if let Some(level) = &out.intersect {
            let sep = s.sep.as_deref().unwrap_or(",");
            let parts: Vec<String> = covering(hw, &set, s.nodeset, level)
                .map(|obj| {
                    let prefix = if s.object_output {
                        format!("{}:", object_type_name(obj, false))
                    } else {
                        String::new()
                    };
                    format!("{prefix}{}", index(obj, s.logical))
                })
                .collect();
            msgs.push(Message::Stdout(parts.join(sep)));
        } else if !out.hierarchical.is_empty() {
            let sep = s.sep.as_deref().unwrap_or(" ");
            let mut line = String::new();
            hierarchical(
                hw,
                &out.hierarchical,
                s.logical,
                "",
                sep,
                hw.root_object(),
                &set,
                0,
                &mut line,
            );
            msgs.push(Message::Stdout(line));
        } else if s.local_memory {
            let sep = s.sep.as_deref().unwrap_or(",");
            let mut nodes = local_numa_nodes(hw, &set, s.local_memory_flags).unwrap_or_default();
            if s.default_nodes {
                // Every node special: none is set apart, so all are default.
                if hw
                    .objects_with_type(ObjectType::NUMANode)
                    .any(|n| !special_memory(n))
                {
                    nodes.retain(|node| !special_memory(node));
                }
            }
            if let Some(attr) = out.best_memattr {
                nodes = match best_node(hw, attr, &nodes, &set) {
                    Some(best) => vec![best],
                    None => Vec::new(),
                };
            }
            let parts: Vec<String> = nodes
                .iter()
                .map(|node| {
                    let prefix = if s.object_output {
                        format!("{}:", object_type_name(node, false))
                    } else {
                        String::new()
                    };
                    let idx = if s.logical {
                        node.logical_index()
                    } else {
                        node.os_index().unwrap_or(u32::MAX as usize)
                    };
                    format!("{prefix}{idx}")
                })
                .collect();
            msgs.push(Message::Stdout(parts.join(sep)));
        } else {
            let text = if s.newer_syntax {
                super::bitmap::render_newer(s.format, &set)
            } else {
                s.format.render(&set)
            };
            match text {
                Some(text) => msgs.push(Message::Stdout(text)),
                None => {
                    msgs.push(Message::Stderr(
                        "Empty and infinite sets are not supported with the systemd-dbus-api output format"
                            .to_owned(),
                    ));
                    return Err(CalcStop::Exit(1));
                }
            }
        }
        Ok(0)
    }
}

/// hwloc's memory attribute by name (case-insensitive) or id (`hwloc_utils_parse_memattr_name`).
fn parse_memattr(name: &str) -> Option<BestAttr> {
    if let Some(id) = MEMATTR_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
    {
        return Some(BestAttr::BuiltIn(id as u32));
    }
    if !name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let id = atoi(name);
    (0..MEMATTR_NAMES.len() as i32)
        .contains(&id)
        .then_some(BestAttr::BuiltIn(id as u32))
}

/// `hwloc_get_first_largest_obj_inside_cpuset`.
fn first_largest_inside<'t>(root: &'t TopologyObject, set: &Bitmap) -> Option<&'t TopologyObject> {
    let cpus = cpus_of;
    let mut obj = root;
    if !cpus(obj).intersects(set) {
        return None;
    }
    while !set.includes(&cpus(obj)) {
        match obj.normal_children().find(|c| cpus(c).intersects(set)) {
            Some(child) => obj = child,
            None => return Some(obj),
        }
    }
    Some(obj)
}

/// The objects of a level whose set (that of their first CPU-side ancestor for memory, I/O and
/// Misc objects) intersects `set`, OS devices filtered by kind
/// (`hwloc_calc_get_next_obj_covering_set_by_depth`).
fn covering<'t>(
    hw: &'t hwlocality::Topology,
    set: &Bitmap,
    nodeset: bool,
    level: &ObjectLevel,
) -> impl Iterator<Item = &'t TopologyObject> {
    let set = set.clone();
    let level = level.clone();
    objects_at(hw, level.depth).into_iter().filter(move |obj| {
        if !level.keeps(obj) {
            return false;
        }
        if level.depth == DEPTH_OS_DEVICE {
            if let (Some(kind), Some(ObjectAttributes::OSDevice(attrs))) =
                (level.osdev, obj.attributes())
            {
                if attrs.device_type() != kind {
                    return false;
                }
            }
        }
        let normal = std::iter::once(*obj)
            .chain(obj.ancestors())
            .find(|o| types::is_normal(o.object_type()));
        let Some(normal) = normal else { return false };
        let theirs = if nodeset {
            nodes_of(normal)
        } else {
            cpus_of(normal)
        };
        theirs.intersects(&set)
    })
}

/// `hwloc_calc_hierarch_output`.
#[allow(clippy::too_many_arguments)]
fn hierarchical(
    hw: &hwlocality::Topology,
    depths: &[ObjectLevel],
    logical: bool,
    prefix: &str,
    sep: &str,
    root: &TopologyObject,
    set: &Bitmap,
    level: usize,
    line: &mut String,
) {
    // Each level has its own `first`: a separator goes between the objects of one level.
    let mut first = true;
    let root_cpus = cpus_of(root);
    let mut logi = 0usize;
    for obj in objects_at(hw, depths[level].depth) {
        let cpus = cpus_of(obj);
        if !cpus.intersects(&root_cpus) {
            continue;
        }
        if cpus.intersects(set) && depths[level].keeps(obj) {
            let name = object_type_name(obj, true);
            let dot = if level > 0 { "." } else { "" };
            let idx = if logical {
                Some(logi)
            } else {
                obj.os_index().filter(|&i| i != u32::MAX as usize)
            };
            let mut string = match idx {
                Some(i) => format!("{prefix}{dot}{name}:{i}"),
                None => format!("{prefix}{dot}{name}:-1"),
            };
            // hwloc-calc builds each prefix in a 256-byte buffer.
            if string.len() > 255 {
                let mut cut = 255;
                while !string.is_char_boundary(cut) {
                    cut -= 1;
                }
                string.truncate(cut);
            }
            if !first {
                line.push_str(sep);
            }
            first = false;
            if level + 1 != depths.len() {
                let mut inner = set.clone();
                inner &= &cpus;
                hierarchical(
                    hw,
                    depths,
                    logical,
                    &string,
                    sep,
                    obj,
                    &inner,
                    level + 1,
                    line,
                );
            } else {
                line.push_str(&string);
            }
        }
        logi += 1;
    }
}

/// `hwloc_get_local_numanode_objs` with a CPU set: the NUMA nodes whose locality equals the
/// set's, or (flags) contains it (1), is contained in it (2), intersects it (8, hwloc 2.12.1's
/// `INTERSECT_LOCALITY`: a node local to one package for a set spanning two), or every node
/// (4). `None` for flags hwloc refuses.
fn local_numa_nodes<'t>(
    hw: &'t hwlocality::Topology,
    set: &Bitmap,
    flags: u64,
) -> Option<Vec<&'t TopologyObject>> {
    if flags & !15 != 0 {
        return None;
    }
    Some(
        hw.objects_with_type(ObjectType::NUMANode)
            .filter(|node| {
                let cpus = cpus_of(node);
                flags & 4 != 0
                    || (flags & 1 != 0 && cpus.includes(set))
                    || (flags & 2 != 0 && set.includes(&cpus))
                    || (flags & 8 != 0 && cpus.intersects(set))
                    || cpus == *set
            })
            .collect(),
    )
}

/// Whether a NUMA node is *not* one of the machine's default nodes, where plain allocations go
/// (`hwloc_topology_get_default_nodeset`, hwloc 2.12: usually DRAM; not HBM, NVM, GPU memory or
/// special-purpose memory). hwloc 2.9, which coretune links, has no memory tiers, so the node's
/// subtype decides: a node without one, or marked `DRAM`, is a default node; any other is
/// special. A machine whose nodes are all special (an HBM-only Xeon Max) keeps them all, as
/// hwloc does when there is a single tier.
fn special_memory(node: &TopologyObject) -> bool {
    node.subtype()
        .and_then(|s| s.to_str().ok())
        .is_some_and(|s| !s.eq_ignore_ascii_case("DRAM"))
}

/// hwloc-calc 2.9's best node among `nodes` for a memory attribute, with the set as initiator
/// (`hwloc_utils_get_best_node_in_array_by_memattr`); the first best wins ties.
fn best_node<'t>(
    hw: &'t hwlocality::Topology,
    attr: BestAttr,
    nodes: &[&'t TopologyObject],
    set: &Bitmap,
) -> Option<&'t TopologyObject> {
    let BestAttr::BuiltIn(id) = attr;
    let memattr: MemoryAttribute<'_> = match id {
        0 => MemoryAttribute::capacity(hw),
        1 => MemoryAttribute::locality(hw),
        2 => MemoryAttribute::bandwidth(hw),
        3 => MemoryAttribute::latency(hw),
        4 => MemoryAttribute::read_bandwidth(hw),
        5 => MemoryAttribute::write_bandwidth(hw),
        6 => MemoryAttribute::read_latency(hw),
        _ => MemoryAttribute::write_latency(hw),
    };
    let flags = memattr.flags();
    let higher = flags.contains(MemoryAttributeFlags::HIGHER_IS_BEST);
    let value_of = |node: &TopologyObject| -> Option<u64> {
        if flags.contains(MemoryAttributeFlags::NEED_INITIATOR) {
            // hwloc matches an initiator whose CPU set includes the (non-empty) query set.
            if set.is_empty() {
                return None;
            }
            let (initiators, values) = memattr.initiators(node).ok()?;
            initiators
                .iter()
                .zip(values)
                .find(|(init, _)| match init {
                    Initiator::CpuSet(cpus) => {
                        let cpus: &CpuSet = cpus;
                        let cpus: &Bitmap = cpus.as_ref();
                        cpus.includes(set)
                    }
                    _ => false,
                })
                .map(|(_, v)| v)
        } else {
            memattr.value(None, node).ok().flatten()
        }
    };
    let mut best: Option<(&TopologyObject, u64)> = None;
    for node in nodes {
        let Some(value) = value_of(node) else {
            continue;
        };
        let better = match best {
            None => true,
            Some((_, b)) => {
                if higher {
                    value > b
                } else {
                    value < b
                }
            }
        };
        if better {
            best = Some((node, value));
        }
    }
    best.map(|(n, _)| n)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::hwloc::hwloc_string;
    use crate::topology::TopologySource;

    /// Two packages, each with a small (tier 0, DRAM) and a big (tier 1, HBM) NUMA node: what an
    /// hwloc 2.10+ XML export of a machine with high-bandwidth memory carries.
    fn tiered() -> Topology {
        let synthetic = Topology::load(&TopologySource::Synthetic(
            "pack:2 [numa(memory=1048576)] [numa(memory=2097152)] core:2 pu:1".into(),
        ))
        .unwrap();
        let mut xml = synthetic.to_xml().unwrap();
        for (os, tier, subtype) in [(0, 0, "DRAM"), (1, 1, "HBM"), (2, 0, "DRAM"), (3, 1, "HBM")] {
            let tag = format!("<object type=\"NUMANode\" os_index=\"{os}\"");
            let at = xml.find(&tag).unwrap();
            let end = at + xml[at..].find('>').unwrap();
            xml.insert_str(
                end + 1,
                &format!("<info name=\"MemoryTier\" value=\"{tier}\"/>"),
            );
            xml.insert_str(at + tag.len(), &format!(" subtype=\"{subtype}\""));
        }
        Topology::load_with(
            &TopologySource::Xml {
                label: "tiered".into(),
                xml,
            },
            &crate::topology::LoadOptions::hwloc_calc(false),
        )
        .unwrap()
    }

    fn nodeset_of(topo: &Topology, location: &str) -> String {
        let calc = Calc::new(topo);
        let mut set = Bitmap::new();
        let mut msgs = Vec::new();
        let settings = LocationSettings {
            nodeset_output: true,
            ..LocationSettings::default()
        };
        assert!(
            calc.apply(&mut set, location, &settings, &mut msgs)
                .unwrap()
        );
        assert!(msgs.is_empty(), "{msgs:?}");
        hwloc_string(&set)
    }

    #[test]
    fn memory_tiers_and_subtypes_filter_numa_nodes() {
        let topo = tiered();
        assert_eq!(nodeset_of(&topo, "numa[tier=1]:all"), "0x0000000a");
        assert_eq!(nodeset_of(&topo, "numa[tier=0]:1"), "0x00000004");
        assert_eq!(nodeset_of(&topo, "numa[HBM]:0"), "0x00000002");
        assert_eq!(nodeset_of(&topo, "numa[subtype=dram]:all"), "0x00000005");
        assert_eq!(nodeset_of(&topo, "numa:all"), "0x0000000f");
        let calc = Calc::new(&topo);
        let count = |level: &str| {
            let settings = OutputSettings {
                number_of: Some(level.to_owned()),
                ..OutputSettings::default()
            };
            let mut msgs = Vec::new();
            let prepared = calc.prepare(&settings, &mut msgs).unwrap();
            calc.output(&prepared, cpus_of(topo.hwloc().root_object()), &mut msgs)
                .unwrap();
            msgs
        };
        assert_eq!(count("numa[tier=1]"), vec![Message::Stdout("2".into())]);
        assert_eq!(count("numa[HBM]"), vec![Message::Stdout("2".into())]);
        assert_eq!(count("numa"), vec![Message::Stdout("4".into())]);
    }
}
