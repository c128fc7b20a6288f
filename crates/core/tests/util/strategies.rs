//! proptest strategies shared by the core crate's property tests.
#![allow(dead_code, unreachable_pub)]

use proptest::prelude::*;

/// A hwloc synthetic description with its per-level counts, top down.
#[derive(Clone, Debug)]
pub struct Synthetic {
    /// `(hwloc-calc type name, count per parent)`, outermost first, ending with `pu`.
    pub levels: Vec<(&'static str, usize)>,
}

impl Synthetic {
    /// The description hwloc takes: `pack:2 numa:2 core:3 pu:2`.
    pub fn description(&self) -> String {
        self.levels
            .iter()
            .map(|(ty, n)| format!("{ty}:{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Objects of the level at `depth` in the whole machine.
    pub fn total(&self, depth: usize) -> usize {
        self.levels[..=depth].iter().map(|(_, n)| n).product()
    }

    /// Number of PUs.
    pub fn pus(&self) -> usize {
        self.total(self.levels.len() - 1)
    }
}

/// Random small synthetic machines: some of package, NUMA, L3 and core levels, then PUs; at most
/// 64 PUs so each case stays fast.
pub fn synthetic() -> impl Strategy<Value = Synthetic> {
    (
        proptest::option::of(1usize..=3),
        proptest::option::of(1usize..=2),
        proptest::option::of(1usize..=3),
        1usize..=4,
        1usize..=2,
    )
        .prop_map(|(pack, numa, l3, core, pu)| {
            let mut levels = Vec::new();
            if let Some(n) = pack {
                levels.push(("pack", n));
            }
            if let Some(n) = numa {
                levels.push(("numa", n));
            }
            if let Some(n) = l3 {
                levels.push(("l3", n));
            }
            levels.push(("core", core));
            levels.push(("pu", pu));
            Synthetic { levels }
        })
}

/// Sorted, deduplicated CPU indexes below `max`, possibly empty.
pub fn cpu_indexes(max: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..max, 0..64).prop_map(|s| s.into_iter().collect())
}
