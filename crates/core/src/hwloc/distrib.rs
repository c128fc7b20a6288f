//! hwloc-distrib, reimplemented on hwloc's library: hwloc's recursive proportional split of a
//! topology into `n` CPU sets (from `include/hwloc/helper.h`), which is also coretune's `spread`
//! placement, and `hwloc-distrib N` with its options and failures, for `coretune distrib`.
//!
//! The split: each child of an object gets a share of the items proportional to its number of
//! usable PUs (rounding up, so earlier children get the extra), recursing while a child gets
//! more than one item; a child that gets none is merged into the previous item's set. With more
//! items than PUs, the extra items share PUs with their neighbours.

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::TopologyObject;

use crate::topology::Topology;

/// `n` CPU sets spread over `available` as `hwloc_distrib()` splits the whole topology: the
/// algorithm behind the `spread` placement (the `spread` placement).
pub(crate) fn split(topology: &Topology, n: usize, available: &CpuSet) -> Vec<CpuSet> {
    let mut out = Vec::new();
    if n > 0 {
        let split = Split {
            available: Some(available),
            until: usize::MAX,
            reverse: false,
        };
        split.distribute(&[topology.hwloc().root_object()], n, &mut out);
    }
    out
}

/// How `hwloc_distrib` splits: the CPUs that count (all, or a subset), the depth it stops at
/// (`--to`), and whether it starts from the last objects (`--reverse`).
struct Split<'a> {
    available: Option<&'a CpuSet>,
    until: usize,
    reverse: bool,
}

impl Split<'_> {
    fn distribute(&self, roots: &[&TopologyObject], n: usize, out: &mut Vec<CpuSet>) {
        let weighted: Vec<(&TopologyObject, CpuSet, usize)> = roots
            .iter()
            .map(|obj| {
                let mut set = obj.cpuset().map(|s| s.clone_target()).unwrap_or_default();
                if let Some(available) = self.available {
                    set &= available;
                }
                let weight = set.weight().unwrap_or(0);
                (*obj, set, weight)
            })
            .collect();
        let total: usize = weighted.iter().map(|(_, _, w)| w).sum();
        if total == 0 {
            return;
        }
        let share = |weight: usize| (weight * n).div_ceil(total);
        let mut given_weight = 0;
        let order: Box<dyn Iterator<Item = &(&TopologyObject, CpuSet, usize)>> = if self.reverse {
            Box::new(weighted.iter().rev())
        } else {
            Box::new(weighted.iter())
        };
        for (obj, set, weight) in order {
            let weight = *weight;
            if weight == 0 {
                continue;
            }
            let chunk = share(given_weight + weight) - share(given_weight);
            if obj.normal_arity() == 0 || chunk <= 1 || depth_of(obj) >= self.until {
                if chunk > 0 {
                    out.extend(std::iter::repeat_n(set.clone(), chunk));
                } else if let Some(last) = out.last_mut() {
                    *last |= set;
                }
            } else {
                let children: Vec<&TopologyObject> = obj.normal_children().collect();
                self.distribute(&children, chunk, out);
            }
            given_weight += weight;
        }
    }
}

fn depth_of(obj: &TopologyObject) -> usize {
    match obj.depth() {
        hwlocality::object::depth::Depth::Normal(d) => usize::from(d),
        _ => 0,
    }
}

/// `hwloc-distrib`'s options: where the split starts and stops, and its direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistribOptions {
    /// `--from TYPE`: distribute among the objects of this type (default: the machine).
    pub from: Option<String>,
    /// `--to TYPE`: split no deeper than this type.
    pub to: Option<String>,
    /// `--reverse`: start from the last objects.
    pub reverse: bool,
}

/// Why [`hwloc_distrib`] could not distribute.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DistribError {
    /// `--from`/`--to` names a type the topology has no level of (or no type at all); the
    /// message is hwloc-distrib's.
    #[error("Unsupported or unavailable type `{name}' passed to {option}, ignoring.")]
    UnknownType {
        /// `--from` or `--to`.
        option: &'static str,
        /// The type as given.
        name: String,
    },
    /// Zero items: hwloc-distrib 2.9 fails an assertion (`given`) and aborts.
    #[error("helper.h:937: hwloc_distrib: Assertion `given' failed.")]
    NoItems,
}

/// `hwloc-distrib N` with its options: `n` CPU sets as hwloc-distrib 2.9 prints them, on a
/// topology loaded as it loads them.
///
/// # Errors
///
/// [`DistribError`] as hwloc-distrib fails.
pub fn hwloc_distrib(
    topology: &Topology,
    n: usize,
    options: &DistribOptions,
) -> Result<Vec<CpuSet>, DistribError> {
    let hw = topology.hwloc();
    let depth = |name: &Option<String>, option: &'static str, default: i64| {
        let Some(name) = name else { return Ok(default) };
        let depth = super::types::type_name_depth(hw, name);
        match depth {
            Some(d) if d >= 0 => Ok(i64::from(d)),
            _ => Err(DistribError::UnknownType {
                option,
                name: name.clone(),
            }),
        }
    };
    let from = depth(&options.from, "--from", 0)?;
    let to = depth(&options.to, "--to", i64::from(i32::MAX))?;
    if n == 0 {
        return Err(DistribError::NoItems);
    }
    let roots: Vec<&TopologyObject> =
        hwlocality::object::depth::NormalDepth::try_from(from as usize)
            .map(|d| hw.objects_at_depth(d).collect())
            .unwrap_or_default();
    let split = Split {
        available: None,
        until: to as usize,
        reverse: options.reverse,
    };
    let mut out = Vec::new();
    split.distribute(&roots, n, &mut out);
    Ok(out)
}
