//! Evaluating an expression on a topology: [`CpuSetExpr::resolve`] into a [`Resolved`] set with
//! its warnings, left to right, each atom through coretune's own evaluation or hwloc-calc's engine.

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::nodeset::NodeSet;
use hwlocality::object::TopologyObject;

use super::error::{CpuSetError, MAX_CPU};
use super::expr::{Atom, CpuSetExpr, IndexRange, KindSel, Level, Op, Term};
use super::warn::{Warning, warnings};
use crate::hwloc::{Calc, LocationSettings, Message};
use crate::sys::{format_list, set_from_indexes, set_to_vec};
use crate::topology::ObjKind;
use crate::topology::Topology;

/// How to evaluate an expression.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResolveOptions {
    /// Object indexes are OS (physical) indexes, as `hwloc-calc --pi`; CPU lists and masks are
    /// always OS indexes.
    pub physical: bool,
}

/// An evaluated expression: the CPU set and what is worth knowing about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The CPUs, as OS indexes. May include offline or disallowed CPUs named explicitly (see
    /// [`Resolved::usable`]).
    pub set: CpuSet,
    /// Things that may make a measurement on this set misleading.
    pub warnings: Vec<Warning>,
}

impl Resolved {
    /// The CPUs of the set that this topology can run threads on.
    pub fn usable(&self, topology: &Topology) -> CpuSet {
        let mut set = self.set.clone();
        set &= topology.cpuset();
        set
    }
}

impl CpuSetExpr {
    /// Evaluates the expression on a topology, left to right, and collects warnings.
    ///
    /// # Errors
    ///
    /// [`CpuSetError`] naming the term: an unknown or absent object type, an index past the last
    /// object, an OS index no object has, a CPU the machine does not have, a CPU kind hwloc does
    /// not report; or the whole expression, when the result is empty or only offline or
    /// disallowed CPUs.
    pub fn resolve(
        &self,
        topology: &Topology,
        options: &ResolveOptions,
    ) -> Result<Resolved, CpuSetError> {
        let mut set = CpuSet::new();
        for term in &self.terms {
            let part = eval_atom(topology, term, options)?;
            match term.op {
                Op::Union => set |= &part,
                Op::Remove => set -= &part,
                Op::Intersect => set &= &part,
                Op::Xor => set ^= &part,
            }
        }
        if set.is_empty() {
            return Err(CpuSetError::Empty {
                input: self.source.clone(),
            });
        }
        let mut usable = set.clone();
        usable &= topology.cpuset();
        if usable.is_empty() {
            return Err(CpuSetError::Unusable {
                input: self.source.clone(),
                cpus: list_of(&set),
                usable: list_of(&topology.cpuset()),
            });
        }
        let mut warnings = warnings(topology, &set);
        if self.names_cpu0() {
            // Asked for by name: the user knows it is CPU 0.
            warnings.retain(|w| *w != Warning::IncludesCpu0);
        }
        Ok(Resolved { set, warnings })
    }

    /// Whether a term adds CPU 0 by name: `0` as an item of a plain CPU list (`0`, `0,2`,
    /// `0-0`) or `pu:0` — not a set that merely contains it (`0-3`, `numa:0`, `core:0`).
    fn names_cpu0(&self) -> bool {
        self.terms.iter().any(|term| {
            if term.op != Op::Union {
                return false;
            }
            let text = term
                .text
                .trim()
                .trim_start_matches('+')
                .to_ascii_lowercase();
            let list = match &term.atom {
                Atom::Cpus(_) => text.as_str(),
                _ => match text.strip_prefix("pu:") {
                    Some(list) => list,
                    None => return false,
                },
            };
            list.split(',')
                .any(|item| matches!(item.trim(), "0" | "0-0"))
        })
    }
}

impl CpuSetExpr {
    /// The expression's usable CPUs *in the order written*, for a per-thread list (likwid-pin's
    /// `-c`: thread k on the list's k-th CPU). An expression made only of CPU lists and likwid
    /// selections joined by union keeps their order (`2,0,3`, `S1:0-1@S0:0-1`, `E:N:4:1:2`);
    /// any other (`numa:1`, `all ~pu:0`) gives its set in ascending order. CPUs this topology
    /// cannot run threads on are left out.
    ///
    /// # Errors
    ///
    /// As [`CpuSetExpr::resolve`].
    pub fn ordered(
        &self,
        topology: &Topology,
        options: &ResolveOptions,
    ) -> Result<Vec<usize>, CpuSetError> {
        let usable = self.resolve(topology, options)?.usable(topology);
        let mut order = Vec::new();
        for term in &self.terms {
            let written = match (&term.op, &term.atom) {
                (Op::Union, Atom::Cpus(_)) => cpu_list_as_written(&term.text),
                (Op::Union, Atom::Likwid { sels, .. }) => {
                    super::likwid::resolve(topology, sels).ok()
                }
                _ => None,
            };
            match written {
                Some(cpus) => order.extend(cpus),
                None => return Ok(set_to_vec(&usable)),
            }
        }
        order.retain(|&cpu| usable.is_set(cpu));
        Ok(order)
    }
}

/// `2,0,4-5` in the order written (`None` unless it is a plain decimal CPU list).
fn cpu_list_as_written(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in text.trim_start_matches('+').split(',') {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Parses and evaluates in one step.
///
/// # Errors
///
/// As [`CpuSetExpr::from_str`](std::str::FromStr) and [`CpuSetExpr::resolve`].
pub fn resolve(
    expr: &str,
    topology: &Topology,
    options: &ResolveOptions,
) -> Result<Resolved, CpuSetError> {
    expr.parse::<CpuSetExpr>()?.resolve(topology, options)
}

fn list_of(set: &CpuSet) -> String {
    format_list(&set_to_vec(set))
}

fn eval_atom(
    topology: &Topology,
    term: &Term,
    options: &ResolveOptions,
) -> Result<CpuSet, CpuSetError> {
    match &term.atom {
        Atom::All => Ok(topology.cpuset()),
        Atom::Cpus(cpus) => {
            let complete = topology.hwloc().complete_cpuset();
            let missing: Vec<usize> = cpus
                .iter()
                .copied()
                .filter(|&c| !set_from_indexes([c]).intersects(&*complete))
                .collect();
            if !missing.is_empty() {
                return Err(CpuSetError::NoSuchCpu {
                    part: term.text.clone(),
                    cpus: format_list(&missing),
                    existing: list_of(&complete.clone_target()),
                });
            }
            Ok(set_from_indexes(cpus.iter().copied()))
        }
        Atom::Kind(sel) => eval_kind(topology, term, *sel),
        Atom::WindowsGroups(masks) => {
            let groups = crate::topology::groups::ProcessorGroups::of(topology);
            let cpus = groups.cpus(masks).map_err(|reason| CpuSetError::Location {
                part: term.text.clone(),
                reason,
            })?;
            Ok(set_from_indexes(cpus))
        }
        Atom::CpusFrom { cpus, from } => {
            // Open-ended: whatever of it the machine has.
            let complete = topology.hwloc().complete_cpuset().clone_target();
            let mut set = set_from_indexes(cpus.iter().copied());
            let mut tail = complete.clone();
            if *from > 0 {
                tail -= &set_from_indexes(0..*from);
            }
            set |= &tail;
            set &= &complete;
            if set.is_empty() {
                return Err(CpuSetError::NoSuchCpu {
                    part: term.text.clone(),
                    cpus: term.text.clone(),
                    existing: list_of(&complete),
                });
            }
            Ok(set)
        }
        Atom::Likwid { sels, .. } => {
            let cpus =
                super::likwid::resolve(topology, sels).map_err(|reason| CpuSetError::Location {
                    part: term.text.clone(),
                    reason,
                })?;
            Ok(set_from_indexes(cpus))
        }
        Atom::Hwloc(text) => {
            let settings = LocationSettings {
                logical: !options.physical,
                ..LocationSettings::default()
            };
            let mut msgs = Vec::new();
            let mut set = hwlocality::bitmap::Bitmap::new();
            let location_error = |reason: String| CpuSetError::Location {
                part: term.text.clone(),
                reason,
            };
            let recognized = Calc::new(topology)
                .apply(&mut set, text, &settings, &mut msgs)
                .map_err(|e| location_error(e.to_string()))?;
            let complaint = msgs.iter().find_map(|m| match m {
                Message::Stderr(line) => Some(line.clone()),
                _ => None,
            });
            if let Some(reason) = complaint {
                return Err(location_error(format!("hwloc-calc: {reason}")));
            }
            if !recognized {
                return Err(location_error(
                    "hwloc-calc does not read this location".to_owned(),
                ));
            }
            Ok(CpuSet::from(set))
        }
        Atom::Location(levels) => {
            let mut out = CpuSet::new();
            let root = Scope {
                cpus: topology.hwloc().complete_cpuset().clone_target(),
                nodes: topology.hwloc().complete_nodeset().clone_target(),
            };
            eval_levels(topology, term, levels, &root, "", options, &mut out)?;
            Ok(out)
        }
    }
}

fn eval_kind(topology: &Topology, term: &Term, sel: KindSel) -> Result<CpuSet, CpuSetError> {
    let kinds = topology.cpu_kinds();
    let err = |reason: String| CpuSetError::NoSuchKind {
        part: term.text.clone(),
        reason,
    };
    let kind = match sel {
        KindSel::Rank(n) => kinds.get(n).ok_or_else(|| {
            if kinds.is_empty() {
                err("hwloc reports no CPU kinds for this machine".to_owned())
            } else {
                err(format!(
                    "index {n} past the last cpukind (there are {})",
                    kinds.len()
                ))
            }
        })?,
        KindSel::PCores | KindSel::ECores if kinds.len() < 2 => {
            return Err(err(format!(
                "this machine is not hybrid: hwloc reports {} kind{} of core, so there are no \
                 separate performance and efficiency cores",
                kinds.len(),
                if kinds.len() == 1 { "" } else { "s" }
            )));
        }
        KindSel::PCores => &kinds[kinds.len() - 1],
        KindSel::ECores => &kinds[0],
    };
    Ok(set_from_indexes(kind.pus.iter().copied()))
}

/// The CPUs and NUMA nodes a location step looks inside.
struct Scope {
    cpus: CpuSet,
    nodes: NodeSet,
}

/// Objects of `kind` inside `scope`, as hwloc-calc 2.9 counts them: the object has CPUs or NUMA
/// nodes, its CPUs (if any) are in the scope's and its nodes (if any) are in the scope's, in
/// logical order. So a package whose PUs are all disallowed, or a CPU-less NUMA node, still takes
/// an index (and adds no CPU). A type hwloc put on several levels (where hwloc-calc refuses the
/// location) is counted across them, in machine order.
fn objects_inside<'t>(
    topology: &'t Topology,
    kind: ObjKind,
    scope: &Scope,
) -> Vec<&'t TopologyObject> {
    topology
        .objects_in_order(kind.object_type())
        .into_iter()
        .filter(|obj| {
            let cpus = obj.cpuset().map(|s| s.clone_target()).unwrap_or_default();
            let nodes = obj.nodeset().map(|s| s.clone_target()).unwrap_or_default();
            !(cpus.is_empty() && nodes.is_empty())
                && (cpus.is_empty() || scope.cpus.includes(&cpus))
                && (nodes.is_empty() || scope.nodes.includes(&nodes))
        })
        .collect()
}

fn eval_levels(
    topology: &Topology,
    term: &Term,
    levels: &[Level],
    root: &Scope,
    within: &str,
    options: &ResolveOptions,
    out: &mut CpuSet,
) -> Result<(), CpuSetError> {
    let Some((level, rest)) = levels.split_first() else {
        return Ok(());
    };
    if topology
        .hwloc()
        .objects_with_type(level.kind.object_type())
        .next()
        .is_none()
    {
        return Err(CpuSetError::TypeNotPresent {
            part: term.text.clone(),
            kind: level.kind,
        });
    }
    let objects = objects_inside(topology, level.kind, root);
    let width = objects.len();
    let out_of_range = |index: usize| CpuSetError::IndexOutOfRange {
        part: term.text.clone(),
        kind: level.kind,
        index,
        count: width,
        within: within.to_owned(),
    };
    let by_os_index = options.physical
        && !matches!(
            level.range,
            IndexRange::All | IndexRange::Odd | IndexRange::Even
        );
    let selected: Vec<&TopologyObject> = if by_os_index {
        select_by_os_index(term, level, &objects)?
    } else {
        let positions: Vec<usize> = match level.range {
            IndexRange::All => (0..width).collect(),
            IndexRange::Odd => (1..width).step_by(2).collect(),
            IndexRange::Even => (0..width).step_by(2).collect(),
            IndexRange::Span(a, b) => (a..=b).collect(),
            IndexRange::From(a) => (a..width.max(a + 1)).collect(),
            IndexRange::Wrap(first, count) => {
                // hwloc-calc: `for (i = first, j = 0; j < amount; i++, j++) if (i >= width) i = 0;`
                let mut i = first;
                let mut v = Vec::new();
                for _ in 0..count.min(MAX_CPU) {
                    if i >= width {
                        i = 0;
                    }
                    v.push(i);
                    i += 1;
                }
                v
            }
        };
        positions
            .into_iter()
            .map(|i| objects.get(i).copied().ok_or_else(|| out_of_range(i)))
            .collect::<Result<_, _>>()?
    };
    if selected.is_empty() {
        // hwloc-calc: "failed to use any single object in index range".
        let first = match level.range {
            IndexRange::All | IndexRange::Even => 0,
            IndexRange::Odd => 1,
            IndexRange::Span(a, _) | IndexRange::From(a) | IndexRange::Wrap(a, _) => a,
        };
        return Err(out_of_range(first));
    }
    for obj in selected {
        let Some(set) = obj.cpuset() else { continue };
        if rest.is_empty() {
            *out |= &*set;
        } else {
            let index = if options.physical {
                obj.os_index().unwrap_or_default()
            } else {
                objects
                    .iter()
                    .position(|o| std::ptr::eq(*o, obj))
                    .unwrap_or_default()
            };
            let inner = format!(
                "{within}{}{}:{index}",
                if within.is_empty() { " in " } else { "." },
                level.kind
            );
            let scope = Scope {
                cpus: set.clone_target(),
                nodes: obj.nodeset().map(|s| s.clone_target()).unwrap_or_default(),
            };
            eval_levels(topology, term, rest, &scope, &inner, options, out)?;
        }
    }
    Ok(())
}

/// `--pi`: objects by OS index among those inside the enclosing object.
fn select_by_os_index<'t>(
    term: &Term,
    level: &Level,
    objects: &[&'t TopologyObject],
) -> Result<Vec<&'t TopologyObject>, CpuSetError> {
    let missing = |index: usize| {
        let mut os: Vec<usize> = objects.iter().filter_map(|o| o.os_index()).collect();
        os.sort_unstable();
        CpuSetError::NoSuchOsIndex {
            part: term.text.clone(),
            kind: level.kind,
            index,
            available: format_list(&os),
        }
    };
    let find = |i: usize| {
        objects
            .iter()
            .copied()
            .find(|o| o.os_index() == Some(i))
            .ok_or_else(|| missing(i))
    };
    match level.range {
        IndexRange::Span(a, b) => (a..=b).map(find).collect(),
        IndexRange::From(a) => {
            let found: Vec<_> = objects
                .iter()
                .copied()
                .filter(|o| o.os_index().is_some_and(|os| os >= a))
                .collect();
            if found.is_empty() {
                return Err(missing(a));
            }
            Ok(found)
        }
        IndexRange::Wrap(first, count) => {
            // Wrap in OS-index order: the next `count` objects from `first`, then from the lowest.
            let mut sorted: Vec<_> = objects.to_vec();
            sorted.sort_by_key(|o| o.os_index());
            let start = sorted
                .iter()
                .position(|o| o.os_index() == Some(first))
                .ok_or_else(|| missing(first))?;
            Ok((0..count.min(sorted.len()))
                .map(|k| sorted[(start + k) % sorted.len()])
                .collect())
        }
        IndexRange::All | IndexRange::Odd | IndexRange::Even => Ok(objects.to_vec()),
    }
}
