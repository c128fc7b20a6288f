//! hwloc-calc 2.9's location language (`hwloc-calc.h`): `core:2-3`, `node:1.pu:2`, `pu:odd`,
//! `0x12345678`, `0xf...f,0x1`, `os=eth0`, `pci=0000:01:02.0`, `pci[10de:]:0`, `osdev[gpu]:1`,
//! `misc=name`, with `~`, `x` and `^` prefixes, evaluated as hwloc-calc evaluates them —
//! including what it only warns about (objects that do not exist) and its quirks (a numeric
//! depth is never accepted, `gpu:0` is the first OS device of any kind, `core=1` is `core:1`).
//!
//! Messages hwloc-calc prints while evaluating go to [`Message`]s, on the stream it uses.

use std::borrow::Borrow;
use std::collections::HashMap;

use hwlocality::Topology as HwlocTopology;
use hwlocality::bitmap::Bitmap;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{OSDeviceType, ObjectType};

use super::bitmap::{
    Assertion, BitmapFormat, hwloc_string, parse_hwloc, parse_list, parse_taskset,
};
use super::cnum::{starts_with_ignore_case, strtol, strtoul};
use super::types::{
    DEPTH_MULTIPLE, DEPTH_NUMANODE, DEPTH_OS_DEVICE, DEPTH_PCI_DEVICE, DEPTH_UNKNOWN, objects_at,
    parse_type, spec_depth,
};

/// How locations are read (hwloc-calc's `lcontext` and `scontext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocationSettings {
    /// Object indexes are logical (`--li`, the default) rather than OS indexes (`--pi`).
    pub logical: bool,
    /// Bitmaps given as input are nodesets (`--ni`).
    pub nodeset_input: bool,
    /// The result is a nodeset (`--no`).
    pub nodeset_output: bool,
    /// `--cif FORMAT` (hwloc 2.11): how to read bitmaps; `None` is hwloc-calc 2.9's rule
    /// (a comma makes it hwloc's format, otherwise taskset's).
    pub cpuset_input: Option<BitmapFormat>,
    /// The command line uses an option of hwloc ≥ 2.10 (`--cof`, `--cif`): bitmaps without
    /// `--cif` are read by that release's rule (not `0x…` with a `-`: a list; with a comma:
    /// hwloc's format; otherwise taskset's), which reads lists (`3-`, `0-3,8`) 2.9 ignored.
    pub newer_syntax: bool,
    /// `-v` adds 1, `-q` takes 1: above 0 hwloc-calc narrates, below 0 it keeps warnings quiet.
    pub verbose: i32,
}

impl Default for LocationSettings {
    fn default() -> Self {
        Self {
            logical: true,
            nodeset_input: false,
            nodeset_output: false,
            cpuset_input: None,
            newer_syntax: false,
            verbose: 0,
        }
    }
}

/// How an argument combines with the set so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Add,
    Clear,
    And,
    Xor,
}

/// The evaluation of one argument: the context hwloc-calc threads through its helpers.
struct Ctx<'t, 'm> {
    topology: &'t HwlocTopology,
    logical: bool,
    verbose: i32,
    only_hbm: i32,
    /// A filter on the first level of the location (hwloc 2.11 syntax).
    filter: Option<Filter>,
    msgs: &'m mut Vec<Message>,
}

impl Ctx<'_, '_> {
    fn warn(&mut self, text: String) {
        if self.verbose >= 0 {
            self.msgs.push(Message::Stderr(text));
        }
    }
}

/// Adds `newset` to `set` as `mode` says (`hwloc_calc_append_set`).
fn append(set: &mut Bitmap, newset: &Bitmap, mode: Mode, verbose: i32, msgs: &mut Vec<Message>) {
    if verbose > 0 {
        let (s1, s2) = (hwloc_string(newset), hwloc_string(set));
        msgs.push(Message::Stderr(match mode {
            Mode::Add => format!("adding {s1} to {s2}"),
            Mode::Clear => format!("clearing {s1} from {s2}"),
            Mode::And => format!("and'ing {s1} from {s2}"),
            Mode::Xor => format!("xor'ing {s1} from {s2}"),
        }));
    }
    match mode {
        Mode::Add => *set |= newset,
        Mode::Clear => *set -= newset,
        Mode::And => *set &= newset,
        Mode::Xor => *set ^= newset,
    }
}

/// The characters hwloc-calc takes as a type or depth prefix.
fn type_prefix_len(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_alphanumeric).count()
}

/// `hwloc_calc_process_location_as_set`: applies one argument to `set`. `Ok(false)` is
/// hwloc-calc's "ignored unrecognized argument" (the caller says so); `Err` is an assertion
/// libhwloc or hwloc-calc stops on.
pub(crate) fn apply_location(
    topology: &HwlocTopology,
    settings: &LocationSettings,
    set: &mut Bitmap,
    arg: &str,
    msgs: &mut Vec<Message>,
) -> Result<bool, Assertion> {
    let (mode, arg) = match arg.as_bytes().first() {
        Some(b'~') => (Mode::Clear, &arg[1..]),
        Some(b'x') => (Mode::And, &arg[1..]),
        Some(b'^') => (Mode::Xor, &arg[1..]),
        _ => (Mode::Add, arg),
    };
    let verbose = settings.verbose;
    if arg == "all" || arg == "root" {
        let all = if settings.nodeset_output {
            let n: &NodeSet = &topology.nodeset();
            Bitmap::from(n.clone())
        } else {
            let c: &CpuSet = &topology.cpuset();
            Bitmap::from(c.clone())
        };
        append(set, &all, mode, verbose, msgs);
        return Ok(true);
    }
    let typelen = type_prefix_len(arg);
    if typelen > 0 && matches!(arg.as_bytes().get(typelen), Some(b':' | b'=' | b'[')) {
        let mut ctx = Ctx {
            topology,
            logical: settings.logical,
            verbose,
            only_hbm: -1,
            filter: None,
            msgs,
        };
        let objects = process_location(&mut ctx, arg, typelen)?;
        let Some(objects) = objects else {
            return Ok(false);
        };
        let mut found = Bitmap::new();
        for obj in objects {
            // Walk up out of I/O and Misc objects, which have no sets.
            let Some(with_sets) = std::iter::once(obj)
                .chain(obj.ancestors())
                .find(|o| o.cpuset().is_some())
            else {
                continue;
            };
            let part = if settings.nodeset_output {
                nodes_of(with_sets)
            } else {
                cpus_of(with_sets)
            };
            append(&mut found, &part, Mode::Add, verbose, ctx.msgs);
        }
        append(set, &found, mode, verbose, msgs);
        return Ok(true);
    }
    let format = settings.cpuset_input.or_else(|| {
        settings.newer_syntax.then(|| {
            if !starts_with_ignore_case(arg, "0x") && arg.contains('-') {
                BitmapFormat::List
            } else if arg.contains(',') {
                BitmapFormat::Hwloc
            } else {
                BitmapFormat::Taskset
            }
        })
    });
    let Some(mut newset) = parse_bitmap(arg, format)? else {
        return Ok(false);
    };
    if settings.newer_syntax {
        super::bitmap::widen_infinite(arg, format, &mut newset);
    }
    let converted = if settings.nodeset_output && !settings.nodeset_input {
        let cpus = CpuSet::from(newset);
        Bitmap::from(NodeSet::from_cpuset(topology, &cpus))
    } else if settings.nodeset_input && !settings.nodeset_output {
        let nodes = NodeSet::from(newset);
        Bitmap::from(CpuSet::from_nodeset(topology, &nodes))
    } else {
        newset
    };
    append(set, &converted, mode, verbose, msgs);
    Ok(true)
}

const HEX: &[u8] = b"0123456789abcdefABCDEF";

fn hex_span(s: &[u8]) -> usize {
    s.iter().take_while(|c| HEX.contains(c)).count()
}

/// A bitmap argument: hwloc-calc 2.9 checks its shape, then reads it in hwloc's format when it
/// has a comma and in taskset's otherwise; `--cif` (hwloc 2.11) forces a format. `None` when
/// the shape is wrong.
fn parse_bitmap(arg: &str, format: Option<BitmapFormat>) -> Result<Option<Bitmap>, Assertion> {
    if let Some(format) = format {
        let (set, ok) = match format {
            BitmapFormat::Hwloc => parse_hwloc(arg)?,
            BitmapFormat::List => parse_list(arg),
            BitmapFormat::Taskset | BitmapFormat::SystemdDbusApi => parse_taskset(arg),
        };
        return Ok(ok.then_some(set));
    }
    let taskset = !arg.contains(',');
    let mut tmp = arg;
    let prefix = if taskset { "0xf...f" } else { "0xf...f," };
    if starts_with_ignore_case(tmp, prefix) {
        tmp = &tmp[prefix.len()..];
        if tmp.is_empty() {
            return Ok(None);
        }
    }
    if taskset {
        if !starts_with_ignore_case(tmp, "0x") {
            return Ok(None);
        }
        let rest = &tmp.as_bytes()[2..];
        if rest.is_empty() || hex_span(rest) != rest.len() {
            return Ok(None);
        }
        return Ok(Some(parse_taskset(arg).0));
    }
    let mut rest = tmp.as_bytes();
    loop {
        if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"0x") {
            rest = &rest[2..];
            if rest.first().is_none_or(|&c| c == b',') {
                return Ok(None);
            }
        }
        let len = rest.iter().position(|&c| c == b',').unwrap_or(rest.len());
        if hex_span(&rest[..len]) != len {
            return Ok(None);
        }
        if len == rest.len() {
            break;
        }
        rest = &rest[len + 1..];
    }
    Ok(Some(parse_hwloc(arg)?.0))
}

/// `hwloc_calc_process_location`: the objects a `TYPE:RANGE`, `TYPE=NAME` or `TYPE[...]`
/// location names, in the order hwloc-calc visits them; `None` when it fails.
fn process_location<'t>(
    ctx: &mut Ctx<'t, '_>,
    arg: &str,
    typelen: usize,
) -> Result<Option<Vec<&'t TopologyObject>>, Assertion> {
    let (depth, ty) = parse_depth_prefix(ctx, arg, typelen);
    if depth == DEPTH_UNKNOWN {
        ctx.warn(format!("could not find level specified by location {arg}"));
        return Ok(None);
    }
    if depth == DEPTH_MULTIPLE {
        ctx.warn(format!("found multiple levels for location {arg}"));
        return Ok(None);
    }
    let sep = arg.as_bytes()[typelen];
    let after = &arg[typelen + 1..];
    if depth < 0 && depth != DEPTH_NUMANODE {
        let topology = ctx.topology;
        return Ok(match (sep, ty) {
            (b':' | b'[', _) => iodev_by_index(ctx, ty, depth, &arg[typelen..]),
            (b'=', Some(ObjectType::PCIDevice)) => match pci_by_busid(topology, after) {
                Some(obj) => Some(vec![obj]),
                None => {
                    ctx.warn(format!("invalid PCI device {after}"));
                    None
                }
            },
            (b'=', Some(ObjectType::OSDevice)) => {
                let found = objects_at(topology, DEPTH_OS_DEVICE)
                    .into_iter()
                    .find(|o| o.name().is_some_and(|n| n.to_bytes() == after.as_bytes()));
                match found {
                    Some(obj) => Some(vec![obj]),
                    None => {
                        ctx.warn(format!("invalid OS device {after}"));
                        None
                    }
                }
            }
            (b'=', Some(ObjectType::Misc)) => {
                // hwloc-calc compares each Misc object's name in turn with strcmp, and crashes
                // on the first one without a name (QEMU's memory modules are such objects).
                let mut found = None;
                for obj in topology.objects_with_type(ObjectType::Misc) {
                    match obj.name() {
                        None => {
                            return Err(Assertion::Crash("a Misc object without a name"));
                        }
                        Some(n) if n.to_bytes() == after.as_bytes() => {
                            found = Some(obj);
                            break;
                        }
                        Some(_) => {}
                    }
                }
                match found {
                    Some(obj) => Some(vec![obj]),
                    None => {
                        ctx.warn(format!("invalid Misc object {after}"));
                        None
                    }
                }
            }
            _ => None,
        });
    }
    let root_cpus: CpuSet = ctx.topology.complete_cpuset().clone_target();
    let root_nodes: NodeSet = ctx.topology.complete_nodeset().clone_target();
    let mut out = Vec::new();
    // hwloc 2.11's level filters, `numa[tier=1]:0`, `numa[HBM]:all`: forms hwloc-calc 2.9 does
    // not read (it stops on the range), so reading them changes no answer of 2.9.
    let (filter, after) = match level_filter(sep, after) {
        Some((filter, range)) => (Some(filter), range),
        None => (None, after),
    };
    ctx.filter = filter;
    match object_range(ctx, &root_cpus, &root_nodes, depth, after, &mut out)? {
        true => Ok(Some(out)),
        false => Ok(None),
    }
}

/// A filter on the objects of a level (hwloc 2.11): a memory tier or a subtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Filter {
    /// `[tier=N]`: NUMA nodes whose `MemoryTier` info is N.
    Tier(i32),
    /// `[subtype=NAME]` or `[NAME]`: objects of that subtype (case-insensitive).
    Subtype(String),
}

impl Filter {
    /// What is inside `[...]`: `tier=N`, `subtype=NAME` or a bare `NAME` (not a number).
    pub(crate) fn parse(inside: &str) -> Option<Self> {
        if let Some(tier) = inside.strip_prefix("tier=") {
            return Some(Filter::Tier(super::cnum::atoi(tier)));
        }
        if let Some(name) = inside.strip_prefix("subtype=") {
            return Some(Filter::Subtype(name.to_owned()));
        }
        let bare = !inside.is_empty()
            && inside.bytes().all(|b| b.is_ascii_alphanumeric())
            && !inside.starts_with(|c: char| c.is_ascii_digit());
        bare.then(|| Filter::Subtype(inside.to_owned()))
    }

    /// Whether the filter keeps `obj`.
    pub(crate) fn keeps(&self, obj: &TopologyObject) -> bool {
        match self {
            Filter::Tier(tier) => obj
                .info("MemoryTier")
                .is_some_and(|v| super::cnum::atoi(&v.to_string_lossy()) == *tier),
            Filter::Subtype(name) => obj
                .subtype()
                .is_some_and(|s| s.to_string_lossy().eq_ignore_ascii_case(name)),
        }
    }
}

/// `[FILTER]:RANGE` after a type: the filter and the range, for the forms hwloc-calc 2.9 cannot
/// read (a closing bracket, then a colon; a tier, a subtype).
fn level_filter(sep: u8, after: &str) -> Option<(Filter, &str)> {
    if sep != b'[' {
        return None;
    }
    let (inside, rest) = after.split_once(']')?;
    let range = rest.strip_prefix(':')?;
    Some((Filter::parse(inside)?, range))
}

/// `hwloc_calc_parse_depth_prefix`: the depth (hwloc's number) and type a prefix names.
fn parse_depth_prefix(ctx: &mut Ctx<'_, '_>, s: &str, typelen: usize) -> (i32, Option<ObjectType>) {
    if typelen >= 21 {
        ctx.warn(format!("invalid type name {s}"));
        return (DEPTH_UNKNOWN, None);
    }
    let typestring = &s[..typelen];
    if let Some(spec) = parse_type(typestring) {
        return (spec_depth(ctx.topology, &spec), Some(spec.ty));
    }
    if typestring.eq_ignore_ascii_case("hbm") || typestring.eq_ignore_ascii_case("mcdram") {
        if ctx.only_hbm == -1 {
            ctx.only_hbm = 1;
        }
        return (DEPTH_NUMANODE, Some(ObjectType::NUMANode));
    }
    let (depth, end) = strtol(s.as_bytes(), 0);
    if end != typelen {
        ctx.warn(format!("invalid type name {s}"));
        return (DEPTH_UNKNOWN, None);
    }
    // hwloc-calc 2.9 compares with a topology depth it never sets (0): every depth is refused.
    ctx.warn(format!("ignoring invalid depth {}", depth as i32));
    (DEPTH_UNKNOWN, None)
}

/// A parsed index range: `first`, how many (`-1`: to the end), the step and whether it wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    first: i32,
    amount: i32,
    step: u32,
    wrap: bool,
}

/// `hwloc_calc_parse_range`: the range before the first `.`, and whether a `.` follows.
fn parse_range(ctx: &mut Ctx<'_, '_>, full: &str) -> (Option<Range>, Option<usize>) {
    let dot = full.find('.');
    let string = &full[..dot.unwrap_or(full.len())];
    if string.len() >= 65 {
        ctx.warn(format!("invalid range `{full}', too long"));
        return (None, dot);
    }
    let b = string.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        let keyword = |k: &str| b.starts_with(k.as_bytes());
        let range = if keyword("all") {
            Range {
                first: 0,
                amount: -1,
                step: 1,
                wrap: false,
            }
        } else if keyword("odd") {
            Range {
                first: 1,
                amount: -1,
                step: 2,
                wrap: false,
            }
        } else if keyword("even") {
            Range {
                first: 0,
                amount: -1,
                step: 2,
                wrap: false,
            }
        } else {
            ctx.warn(format!("unrecognized range keyword `{string}'"));
            return (None, dot);
        };
        return (Some(range), dot);
    }
    let (first, end) = strtol(b, 10);
    let mut amount: i64 = 1;
    let mut wrap = false;
    // What follows `-` or `:`: a number that must end the range.
    let tail = |ctx: &mut Ctx<'_, '_>| -> Option<(i64, usize)> {
        let (value, used) = strtol(&b[end + 1..], 10);
        let end2 = end + 1 + used;
        if end2 < b.len() {
            ctx.warn(format!(
                "invalid character at `{}' after range at `{string}'",
                &string[end2..]
            ));
            return None;
        }
        Some((value, used))
    };
    match b.get(end) {
        Some(b'-') => {
            let Some((last, used)) = tail(ctx) else {
                return (None, dot);
            };
            amount = if used == 0 {
                -1
            } else {
                last.wrapping_sub(first).wrapping_add(1)
            };
        }
        Some(b':') => {
            wrap = true;
            let Some((width, used)) = tail(ctx) else {
                return (None, dot);
            };
            if used == 0 {
                ctx.warn(format!(
                    "missing width at `{}' in range at `{string}'",
                    &string[end + 1..]
                ));
                return (None, dot);
            }
            amount = width;
        }
        Some(_) => {
            ctx.warn(format!(
                "invalid character at `{}' after index at `{string}'",
                &string[end..]
            ));
            return (None, dot);
        }
        None => {}
    }
    (
        Some(Range {
            first: first as i32,
            amount: amount as i32,
            step: 1,
            wrap,
        }),
        dot,
    )
}

/// The objects of one level inside a parent's sets, as hwloc-calc 2.9 counts them: both sets
/// included in the parent's, not both empty, and (after `hbm:`) only MCDRAM NUMA nodes.
fn objects_inside<'t>(
    ctx: &Ctx<'t, '_>,
    cpus: &CpuSet,
    nodes: &NodeSet,
    depth: i32,
) -> Vec<&'t TopologyObject> {
    objects_at(ctx.topology, depth)
        .into_iter()
        .filter(|obj| {
            let c = obj.cpuset();
            let n = obj.nodeset();
            let c_in = c.as_ref().is_none_or(|c| cpus.includes(&**c));
            let n_in = n.as_ref().is_none_or(|n| nodes.includes(&**n));
            let empty =
                c.as_ref().is_none_or(|c| c.is_empty()) && n.as_ref().is_none_or(|n| n.is_empty());
            c_in && n_in && !empty
        })
        .filter(|obj| ctx.filter.as_ref().is_none_or(|f| f.keeps(obj)))
        .filter(|obj| {
            if ctx.only_hbm < 0 || obj.object_type() != ObjectType::NUMANode {
                return true;
            }
            let hbm = obj.subtype().is_some_and(|s| s.to_bytes() == b"MCDRAM");
            i32::from(hbm) == ctx.only_hbm
        })
        .collect()
}

/// Simulated iterations of an index range before the rest is computed directly (hwloc-calc
/// loops up to 2^32 times on ranges such as `core:9-` past the last core).
const SIMULATED: u32 = 1 << 16;

/// `hwloc_calc_append_object_range`: the objects a range (and what follows its `.`) selects
/// below the given sets. `Ok(false)` when the range does not parse.
fn object_range<'t>(
    ctx: &mut Ctx<'t, '_>,
    cpus: &CpuSet,
    nodes: &NodeSet,
    depth: i32,
    string: &str,
    out: &mut Vec<&'t TopologyObject>,
) -> Result<bool, Assertion> {
    let (range, dot) = parse_range(ctx, string);
    let Some(mut range) = range else {
        ctx.warn(format!("Failed to parse object index range {string}"));
        return Ok(false);
    };
    if range.amount == -1 && range.wrap {
        return Err(Assertion::Abort(
            "hwloc-calc.h:318: hwloc_calc_append_object_range: Assertion `amount != -1 || !wrap' failed.",
        ));
    }
    let mut next: Option<(i32, &str)> = None;
    if let Some(dot) = dot {
        let nextstring = &string[dot + 1..];
        let typelen = type_prefix_len(nextstring);
        if typelen == 0 || nextstring.as_bytes().get(typelen) != Some(&b':') {
            ctx.warn(format!(
                "hierarchical sublocation {nextstring} contains types not followed by colon and index range"
            ));
            return Ok(false);
        }
        let (nextdepth, _) = parse_depth_prefix(ctx, nextstring, typelen);
        if nextdepth == DEPTH_UNKNOWN {
            ctx.warn(format!(
                "could not find level specified by location {nextstring}"
            ));
            return Ok(false);
        }
        if nextdepth == DEPTH_MULTIPLE {
            ctx.warn(format!("found multiple levels for location {nextstring}"));
            return Ok(false);
        }
        if nextdepth < 0 && nextdepth != DEPTH_NUMANODE {
            ctx.warn(format!(
                "hierarchical location {string} only supported with normal object types"
            ));
            return Ok(false);
        }
        next = Some((nextdepth, &nextstring[typelen + 1..]));
    }
    let inside = objects_inside(ctx, cpus, nodes, depth);
    // A filter names the first level only.
    ctx.filter = None;
    let width = inside.len() as u32;
    if range.amount == -1 {
        let steps = width
            .wrapping_sub(range.first as u32)
            .wrapping_add(range.step - 1)
            / range.step;
        range.amount = steps as i32;
    }
    let logical = ctx.logical;
    let by_os: HashMap<u32, &TopologyObject> = if logical {
        HashMap::new()
    } else {
        let mut map = HashMap::new();
        for obj in inside.iter().rev() {
            let os = obj.os_index().map_or(u32::MAX, |i| i as u32);
            map.insert(os, *obj);
        }
        map
    };
    let lookup = |i: u32| -> Option<&'t TopologyObject> {
        if logical {
            inside.get(i as usize).copied()
        } else {
            by_os.get(&i).copied()
        }
    };
    let indexes = range_indexes(&range, width, || {
        if logical {
            (0..width).collect()
        } else {
            by_os.keys().copied().collect()
        }
    });
    let sets = || (hwloc_string(cpus.borrow()), hwloc_string(nodes.borrow()));
    let mut found = 0;
    for (k, i) in indexes.iter().copied().enumerate() {
        let obj = lookup(i);
        if ctx.verbose > 0 || (obj.is_none() && ctx.verbose >= 0 && k < SIMULATED as usize) {
            let (sc, sn) = sets();
            match obj {
                Some(_) => ctx.msgs.push(Message::Stdout(format!(
                    "using object #{i} depth {depth} below cpuset {sc} nodeset {sn}"
                ))),
                None => ctx.msgs.push(Message::Stderr(format!(
                    "object #{i} depth {depth} below cpuset {sc} nodeset {sn} does not exist"
                ))),
            }
        }
        let Some(obj) = obj else { continue };
        found += 1;
        match next {
            Some((nextdepth, nextrange)) => {
                let c: CpuSet = obj.cpuset().map(|s| s.clone_target()).unwrap_or_default();
                let n: NodeSet = obj.nodeset().map(|s| s.clone_target()).unwrap_or_default();
                object_range(ctx, &c, &n, nextdepth, nextrange, out)?;
            }
            None => out.push(obj),
        }
    }
    if found == 0 {
        ctx.warn(format!(
            "failed to use any single object in index range {string}"
        ));
    }
    Ok(true)
}

/// The indexes hwloc-calc's loop visits, in order: `for (i = first, j = 0; j < amount; i +=
/// step, j++) { if (wrap && i >= width) i = 0; ... }` in 32-bit unsigned arithmetic. Past
/// [`SIMULATED`] iterations, only the indexes of existing objects (`candidates`) are kept: a
/// wrapping loop has visited them all by then, a plain one reaches each at a computable step.
fn range_indexes(range: &Range, width: u32, candidates: impl FnOnce() -> Vec<u32>) -> Vec<u32> {
    let amount = range.amount as u32;
    let mut out = Vec::new();
    let mut i = range.first as u32;
    let simulated = amount.min(SIMULATED);
    for _ in 0..simulated {
        if range.wrap && i >= width {
            i = 0;
        }
        out.push(i);
        i = i.wrapping_add(range.step);
    }
    if amount <= SIMULATED || range.wrap {
        return out;
    }
    let first = range.first as u32;
    let mut later: Vec<(u32, u32)> = candidates()
        .into_iter()
        .filter_map(|v| {
            let d = v.wrapping_sub(first);
            let j = if range.step == 2 {
                (d % 2 == 0).then_some(d / 2)?
            } else {
                d
            };
            (j >= SIMULATED && j < amount).then_some((j, v))
        })
        .collect();
    later.sort_unstable();
    out.extend(later.into_iter().map(|(_, v)| v));
    out
}

/// `hwloc_calc_append_iodev_by_index`: I/O objects (and Misc, MemCache) by index among those of
/// the level, optionally matched by `[vendor:device]` (PCI) or `[subtype]` (OS devices).
fn iodev_by_index<'t>(
    ctx: &mut Ctx<'t, '_>,
    ty: Option<ObjectType>,
    depth: i32,
    string: &str,
) -> Option<Vec<&'t TopologyObject>> {
    let b = string.as_bytes();
    let mut vendor: i64 = -1;
    let mut device: i64 = -1;
    let mut osdev: Option<Option<OSDeviceType>> = None;
    let mut current = 0;
    if b.first() == Some(&b'[') {
        current = 1;
        match ty {
            Some(ObjectType::PCIDevice) => {
                let invalid = |ctx: &mut Ctx<'_, '_>| {
                    ctx.warn(format!(
                        "invalid PCI vendor:device matching specification {string}"
                    ));
                };
                let (v, used) = strtoul(&b[current..], 16);
                if b.get(current + used) != Some(&b':') {
                    invalid(ctx);
                    return None;
                }
                vendor = if used == 0 { -1 } else { i64::from(v as i32) };
                current += used + 1;
                let (d, used) = strtoul(&b[current..], 16);
                if b.get(current + used) != Some(&b']') {
                    invalid(ctx);
                    return None;
                }
                device = if used == 0 { -1 } else { i64::from(d as i32) };
                current += used + 1;
                if !matches!(b.get(current), Some(b':') | None) {
                    invalid(ctx);
                    return None;
                }
            }
            Some(ObjectType::OSDevice) => {
                let invalid = |ctx: &mut Ctx<'_, '_>| {
                    ctx.warn(format!("invalid OS device subtype specification {string}"));
                };
                let Some(close) = string[current..].find(']') else {
                    invalid(ctx);
                    return None;
                };
                let name = &string[current..current + close];
                match parse_type(name) {
                    Some(spec) if spec.ty == ObjectType::OSDevice => osdev = Some(spec.osdev),
                    _ => {
                        invalid(ctx);
                        return None;
                    }
                }
                current += close + 1;
                if !matches!(b.get(current), Some(b':') | None) {
                    invalid(ctx);
                    return None;
                }
            }
            _ => {
                ctx.warn(format!("invalid matching specification {string}"));
                return None;
            }
        }
    }
    let mut range = Range {
        first: 0,
        amount: 1,
        step: 1,
        wrap: false,
    };
    if current < b.len() {
        let rest = &string[current + 1..];
        let (parsed, dot) = parse_range(ctx, rest);
        if dot.is_some() {
            ctx.msgs.push(Message::Stderr(format!(
                "hierarchical location {string} only supported with normal object types"
            )));
            return None;
        }
        let Some(parsed) = parsed else {
            ctx.warn(format!("Failed to parse object index range {rest}"));
            return None;
        };
        range = parsed;
    }
    let objects = objects_at(ctx.topology, depth);
    let max = objects.len();
    let mut first = range.first;
    let mut amount = range.amount;
    let mut wrap = range.wrap;
    let mut prev: Option<&TopologyObject> = None;
    let mut out = Vec::new();
    let mut i = 0;
    while i < max * (usize::from(wrap) + 1) {
        if i == max && wrap {
            i = 0;
            wrap = false;
        }
        let obj = objects[i];
        i += 1;
        if prev.is_some_and(|p| std::ptr::eq(p, obj)) {
            break;
        }
        if let Some(ObjectAttributes::PCIDevice(pci)) = obj.attributes() {
            if ty == Some(ObjectType::PCIDevice) {
                if vendor != -1 && i64::from(pci.vendor_id()) != vendor {
                    continue;
                }
                if device != -1 && i64::from(pci.device_id()) != device {
                    continue;
                }
            }
        }
        if let Some(Some(kind)) = osdev {
            if let Some(ObjectAttributes::OSDevice(attrs)) = obj.attributes() {
                if attrs.device_type() != kind {
                    continue;
                }
            }
        }
        let skip = first != 0;
        first = first.wrapping_sub(1);
        if skip {
            continue;
        }
        if ctx.verbose > 0 {
            let (domain, bus, dev, func) = bus_id_as_hwloc_calc_reads(obj);
            ctx.msgs.push(Message::Stdout(format!(
                "using matching PCI object #{} bus id {domain:04x}:{bus:02x}:{dev:02x}.{func:01x}",
                i - 1
            )));
        }
        out.push(obj);
        if prev.is_none() {
            prev = Some(obj);
        }
        amount = amount.wrapping_sub(1);
        if amount == 0 {
            break;
        }
        first = range.step as i32 - 1;
    }
    Some(out)
}

/// The bus id hwloc-calc's `-v` prints for a matched I/O object: it reads the object's attributes
/// as a PCI device's whatever the object is. A PCI device gives its own; a bridge, its upstream
/// PCI side (zeros for a host bridge); an OS device, its device type number as the domain (the
/// first field of both attribute structs) and zeros after it.
fn bus_id_as_hwloc_calc_reads(obj: &TopologyObject) -> (u32, u8, u8, u8) {
    use hwlocality::object::attributes::{PCIDeviceAttributes, UpstreamAttributes};
    let pci = |p: &PCIDeviceAttributes| {
        let domain = u32::from(p.domain());
        (domain, p.bus_id(), p.bus_device(), p.function())
    };
    match obj.attributes() {
        Some(ObjectAttributes::PCIDevice(p)) => pci(p),
        Some(ObjectAttributes::Bridge(b)) => match b.upstream_attributes() {
            Some(UpstreamAttributes::PCI(p)) => pci(p),
            None => (0, 0, 0, 0),
        },
        Some(ObjectAttributes::OSDevice(o)) => (u32::from(o.device_type()), 0, 0, 0),
        _ => (0, 0, 0, 0),
    }
}

/// `sscanf(s, "%x...")` for hwloc's bus ids: each `%x` skips white space and reads a hex number
/// (as `strtoul`), literal characters must match. The values read, stopping at the first miss.
fn scan_hex(s: &str, pattern: &[u8]) -> Vec<u32> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut values = Vec::new();
    for &p in pattern {
        if p == b'x' {
            let (v, used) = strtoul(&b[pos.min(b.len())..], 16);
            if used == 0 {
                break;
            }
            values.push(v as u32);
            pos += used;
        } else if b.get(pos) == Some(&p) {
            pos += 1;
        } else {
            break;
        }
    }
    values
}

/// `hwloc_get_pcidev_by_busidstring`: `bus:dev.func` or `domain:bus:dev.func`, in hex.
fn pci_by_busid<'t>(topology: &'t HwlocTopology, busid: &str) -> Option<&'t TopologyObject> {
    let short = scan_hex(busid, b"x:x.x");
    let (domain, bus, dev, func) = if short.len() == 3 {
        (0, short[0], short[1], short[2])
    } else {
        let long = scan_hex(busid, b"x:x:x.x");
        if long.len() != 4 {
            return None;
        }
        (long[0], long[1], long[2], long[3])
    };
    objects_at(topology, DEPTH_PCI_DEVICE)
        .into_iter()
        .find(|obj| match obj.attributes() {
            Some(ObjectAttributes::PCIDevice(p)) => {
                u32::from(p.domain()) == domain
                    && u32::from(p.bus_id()) == bus
                    && u32::from(p.bus_device()) == dev
                    && u32::from(p.function()) == func
            }
            _ => false,
        })
}

/// A line hwloc-calc prints, on the stream it prints it on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// A line (without its newline) for standard output.
    Stdout(String),
    /// A line (without its newline) for standard error.
    Stderr(String),
    /// Text for standard output with no newline after it (`--largest` prints its objects one by
    /// one before a failure).
    StdoutPartial(String),
}

/// An object's CPU set as a plain bitmap (empty for objects without one: I/O, Misc).
pub(crate) fn cpus_of(obj: &TopologyObject) -> Bitmap {
    obj.cpuset()
        .map(|c| {
            let c: &CpuSet = &c;
            Bitmap::from(c.clone())
        })
        .unwrap_or_default()
}

/// An object's NUMA node set as a plain bitmap (empty for objects without one).
pub(crate) fn nodes_of(obj: &TopologyObject) -> Bitmap {
    obj.nodeset()
        .map(|n| {
            let n: &hwlocality::memory::nodeset::NodeSet = &n;
            Bitmap::from(n.clone())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn ranges_visit_what_hwloc_calc_visits() {
        let r = |first, amount, step, wrap| Range {
            first,
            amount,
            step,
            wrap,
        };
        assert_eq!(
            range_indexes(&r(1, 3, 1, false), 4, Vec::new),
            vec![1, 2, 3]
        );
        assert_eq!(range_indexes(&r(3, 3, 1, true), 4, Vec::new), vec![3, 0, 1]);
        assert_eq!(range_indexes(&r(6, 2, 1, true), 4, Vec::new), vec![0, 1]);
        // `core:6-` with 4 cores: 2^32 - 2 iterations that wrap around u32 to 0..3 at the end.
        let all = range_indexes(&r(6, -2, 1, false), 4, || (0..4).collect());
        assert_eq!(all.len(), SIMULATED as usize + 4);
        assert_eq!(&all[all.len() - 4..], &[0, 1, 2, 3]);
    }

    #[test]
    fn level_filters_are_read_only_where_hwloc_calc_2_9_cannot() {
        assert_eq!(
            level_filter(b'[', "tier=1]:0"),
            Some((Filter::Tier(1), "0"))
        );
        assert_eq!(
            level_filter(b'[', "HBM]:all"),
            Some((Filter::Subtype("HBM".to_owned()), "all"))
        );
        assert_eq!(
            level_filter(b'[', "subtype=DRAM]:1-2"),
            Some((Filter::Subtype("DRAM".to_owned()), "1-2"))
        );
        // hwloc-calc 2.9 reads `core[1` as `core:1`, and fails on the others: left alone.
        assert_eq!(level_filter(b'[', "1"), None);
        assert_eq!(level_filter(b'[', "1]:0"), None);
        assert_eq!(level_filter(b':', "tier=1]:0"), None);
        assert_eq!(level_filter(b'[', "tier=1]"), None);
    }

    #[test]
    fn bus_ids_scan_as_sscanf() {
        assert_eq!(scan_hex("0000:02:00.0", b"x:x.x"), vec![0, 2]);
        assert_eq!(scan_hex("0000:02:00.0", b"x:x:x.x"), vec![0, 2, 0, 0]);
        assert_eq!(scan_hex("02:00.1", b"x:x.x"), vec![2, 0, 1]);
        assert_eq!(scan_hex("zz", b"x:x.x"), Vec::<u32>::new());
    }
}
