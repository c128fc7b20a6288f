//! Placement: which CPUs each of N threads may run on, and which threads each one should steal
//! work from first.
//!
//! A [`Placement`] is plain data (OS CPU indexes), so the pool crate, which knows no hwloc, can pin
//! worker `i` to [`Placement::thread_cpus`]`[i]` and walk [`Placement::steal_orders`]`[i]`.
//!
//! Policies ([`Policy`]) choose one PU per thread, in an order; [`Binding`] then widens each
//! thread's set to its core, or to the union of all threads' PUs (one shared set, which is what
//! `taskset` or `start /affinity` give a whole process).
//!
//! **More threads than PUs** wrap around: thread `i` takes the PU of thread `i mod P` (P = number
//! of usable PUs), so the second pass over the machine repeats the first pass's order.
//!
//! ```
//! use coretune_core::{plan, Binding, Policy};
//! use coretune_core::{Topology, TopologySource};
//!
//! let topo = Topology::load(&TopologySource::Synthetic("pack:2 core:2 pu:2".into()))?;
//! let placement = plan(&topo, 4, Policy::Spread, None, Binding::Pu)?;
//! // One thread per core, packages alternating first: hwloc-distrib --single 4.
//! assert_eq!(placement.thread_cpus(), vec![vec![0], vec![2], vec![4], vec![6]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::TopologyObject;
use hwlocality::object::types::ObjectType;
use serde::Serialize;

use crate::cpuset::format_list;
use crate::topology::{Topology, set_from_indexes, set_to_vec};

/// The most threads a plan takes: far past any machine, low enough that a typo cannot make a plan
/// allocate gigabytes.
pub const MAX_THREADS: usize = 1 << 16;

/// How threads are spread over the CPUs.
///
/// Written as its name (`os`, `compact`, `spread`, `cores`, `round-robin`) on the command line
/// and in results files; ordered by that name, so tables list policies alphabetically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Policy {
    /// No pinning: every thread may run on every allowed CPU and the scheduler decides.
    Os,
    /// PUs in hwloc's logical order: SMT siblings together, then the next core, cache, package.
    Compact,
    /// Evenly over packages, NUMA nodes, caches and cores: `hwloc-distrib --single`'s answer.
    Spread,
    /// One thread per physical core (in logical order) before any core gets a second thread.
    Cores,
    /// The given set's PUs in ascending OS index order.
    RoundRobin,
}

impl Policy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [Policy; 5] = [
        Policy::Os,
        Policy::Compact,
        Policy::Spread,
        Policy::Cores,
        Policy::RoundRobin,
    ];

    /// The policy's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Os => "os",
            Policy::Compact => "compact",
            Policy::Spread => "spread",
            Policy::Cores => "cores",
            Policy::RoundRobin => "round-robin",
        }
    }

    /// Whether threads are pinned at all ([`Policy::Os`] is not).
    pub fn is_pinned(self) -> bool {
        self != Policy::Os
    }
}

impl PartialOrd for Policy {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Policy {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that table columns (`{:<11}`) line up.
        f.pad(self.as_str())
    }
}

impl FromStr for Policy {
    type Err = PlacementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase().replace('_', "-");
        match lower.as_str() {
            "none" => return Ok(Policy::Os),
            "rr" | "roundrobin" => return Ok(Policy::RoundRobin),
            "close" => return Ok(Policy::Compact),
            _ => {}
        }
        Policy::ALL
            .into_iter()
            .find(|p| p.to_string() == lower)
            .ok_or_else(|| PlacementError::UnknownPolicy(s.to_owned()))
    }
}

/// How wide each thread's CPU set is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Binding {
    /// Each thread on its one PU.
    #[default]
    Pu,
    /// Each thread on every usable PU of its PU's core (SMT siblings included).
    Core,
    /// Every thread on the union of all threads' PUs: one set for the whole process.
    Shared,
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Binding::Pu => "pu",
            Binding::Core => "core",
            Binding::Shared => "shared",
        })
    }
}

impl FromStr for Binding {
    type Err = PlacementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "pu" | "thread" => Ok(Binding::Pu),
            "core" => Ok(Binding::Core),
            "shared" | "process" => Ok(Binding::Shared),
            _ => Err(PlacementError::UnknownBinding(s.to_owned())),
        }
    }
}

/// Why a placement could not be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Zero threads were asked for.
    #[error("a placement needs at least 1 thread")]
    NoThreads,
    /// More threads than [`MAX_THREADS`].
    #[error("{threads} threads is more than coretune plans for ({MAX_THREADS})")]
    TooManyThreads {
        /// The number asked for.
        threads: usize,
    },
    /// The CPU set limiting the placement has no usable PU.
    #[error("no usable CPU in {cpus} (this topology's CPUs are {usable})")]
    NoUsableCpu {
        /// The limiting set, as a list.
        cpus: String,
        /// The topology's usable CPUs, as a list.
        usable: String,
    },
    /// The policy name is not one of [`Policy::ALL`].
    #[error("unknown placement policy '{0}' (known: os, compact, spread, cores, round-robin)")]
    UnknownPolicy(String),
    /// The binding name is not pu, core or shared.
    #[error("unknown binding '{0}' (known: pu, core, shared)")]
    UnknownBinding(String),
}

/// Where one thread runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadPlacement {
    /// The CPUs it may run on (OS indexes, ascending).
    pub pus: Vec<usize>,
    /// The PU the policy chose for it (`None` for [`Policy::Os`]).
    pub pu: Option<usize>,
    /// Logical index of that PU's core.
    pub core: Option<usize>,
    /// Logical index of that PU's L3 cache, if the machine has L3s.
    pub l3: Option<usize>,
    /// OS index of that PU's NUMA node.
    pub numa: Option<usize>,
}

/// N threads' CPU sets and steal orders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// The policy that made it.
    pub policy: Policy,
    /// The binding granularity.
    pub binding: Binding,
    /// One entry per thread, in thread order.
    pub threads: Vec<ThreadPlacement>,
}

impl Placement {
    /// Each thread's CPUs, for a pool's workers (`coretune_pool::ThreadPoolBuilder::cpus`:
    /// worker `i` on set `i`, wrapping around). `None` for the `os` policy over the whole
    /// machine: the workers then keep this process's own affinity (binding them to "all PUs"
    /// could widen a `taskset` the user started coretune under).
    pub fn pool_cpus(&self, topology: &Topology) -> Option<Vec<Vec<usize>>> {
        let whole = set_to_vec(&topology.cpuset());
        if self.is_empty() || (!self.is_pinned() && self.threads.iter().all(|t| t.pus == whole)) {
            return None;
        }
        Some(self.thread_cpus())
    }

    /// A coretune-pool builder for this placement: one worker per thread, worker `i` pinned to
    /// thread `i`'s CPUs ([`Placement::pool_cpus`]) and stealing from the others nearest first
    /// ([`Placement::steal_orders`]).
    ///
    /// ```
    /// use coretune_core::{plan, Binding, Policy, Topology, TopologySource};
    ///
    /// let topo = Topology::load(&TopologySource::Synthetic("pack:1 l3:2 core:3 pu:1".into()))?;
    /// let placement = plan(&topo, 6, Policy::Compact, None, Binding::Pu)?;
    /// // Thread 2 steals from threads 0 and 1, which share its L3 cache, before 3, 4, 5.
    /// assert_eq!(placement.steal_orders()[2], vec![0, 1, 3, 4, 5]);
    /// let builder = placement.pool_builder(&topo); // `.build()` pins the workers
    /// # let _ = builder;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pool_builder(&self, topology: &Topology) -> coretune_pool::ThreadPoolBuilder {
        let builder = coretune_pool::ThreadPoolBuilder::new()
            .num_threads(self.len())
            .steal_order(self.steal_orders());
        match self.pool_cpus(topology) {
            Some(cpus) => builder.cpus(cpus),
            None => builder,
        }
    }

    /// Number of threads.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether the placement has no threads (never true for a planned one).
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// Whether threads are pinned at all ([`Policy::Os`] is not).
    pub fn is_pinned(&self) -> bool {
        self.policy.is_pinned()
    }

    /// Each thread's CPUs as OS indexes, for code that knows no hwloc (the pool).
    pub fn thread_cpus(&self) -> Vec<Vec<usize>> {
        self.threads.iter().map(|t| t.pus.clone()).collect()
    }

    /// Each thread's CPU set.
    pub fn cpusets(&self) -> Vec<CpuSet> {
        self.threads
            .iter()
            .map(|t| set_from_indexes(t.pus.iter().copied()))
            .collect()
    }

    /// Thread `i`'s steal order: the other threads, nearest first: same core, same L3, same
    /// NUMA node, then the rest; ties in ring order from `i` (`i+1, i+2, ...`), so neighbours
    /// pick different first victims. Empty when `i` is out of range.
    pub fn steal_order(&self, i: usize) -> Vec<usize> {
        let n = self.threads.len();
        let Some(mine) = self.threads.get(i) else {
            return Vec::new();
        };
        let same = |a: Option<usize>, b: Option<usize>| a.is_some() && a == b;
        let mut others: Vec<usize> = (1..n).map(|k| (i + k) % n).collect();
        // A stable sort keeps ring order within a class.
        others.sort_by_key(|&j| {
            let theirs = &self.threads[j];
            if same(mine.core, theirs.core) {
                0
            } else if same(mine.l3, theirs.l3) {
                1
            } else if same(mine.numa, theirs.numa) {
                2
            } else {
                3
            }
        });
        others
    }

    /// Every thread's steal order ([`Placement::steal_order`]); quadratic in the thread count.
    pub fn steal_orders(&self) -> Vec<Vec<usize>> {
        (0..self.threads.len())
            .map(|i| self.steal_order(i))
            .collect()
    }

    /// Every CPU any thread may use: the process-wide set.
    pub fn union(&self) -> CpuSet {
        set_from_indexes(self.threads.iter().flat_map(|t| t.pus.iter().copied()))
    }

    /// `OMP_PLACES` for this placement: one place per thread, in thread order (`None` when
    /// threads are not pinned). With `OMP_PROC_BIND=close` and as many threads as places, OpenMP
    /// thread `i` gets place `i`.
    pub fn omp_places(&self) -> Option<String> {
        if !self.is_pinned() {
            return None;
        }
        if self.binding == Binding::Shared {
            return Some(format!("{{{}}}", join(&set_to_vec(&self.union()))));
        }
        let places: Vec<String> = self
            .threads
            .iter()
            .map(|t| format!("{{{}}}", join(&t.pus)))
            .collect();
        Some(places.join(","))
    }

    /// `OMP_PROC_BIND` to go with [`Placement::omp_places`]: `close`, or `false` when unpinned.
    pub fn omp_proc_bind(&self) -> &'static str {
        if self.is_pinned() { "close" } else { "false" }
    }

    /// `taskset -c` list of the process-wide set.
    pub fn taskset_list(&self) -> String {
        format_list(&set_to_vec(&self.union()))
    }

    /// `likwid-pin -c` list: each thread's PU in thread order (`None` when unpinned).
    pub fn likwid_pin(&self) -> Option<String> {
        let pus: Option<Vec<usize>> = self.threads.iter().map(|t| t.pu).collect();
        pus.filter(|_| self.is_pinned()).map(|p| join(&p))
    }
}

fn join(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Plans `threads` threads on `topology` with `policy`, limited to `cpus` when given, each
/// thread's set as wide as `binding`.
///
/// # Errors
///
/// [`PlacementError::NoThreads`] for 0 threads, [`PlacementError::TooManyThreads`] past
/// [`MAX_THREADS`], [`PlacementError::NoUsableCpu`] when `cpus` has no PU of the topology.
pub fn plan(
    topology: &Topology,
    threads: usize,
    policy: Policy,
    cpus: Option<&CpuSet>,
    binding: Binding,
) -> Result<Placement, PlacementError> {
    if threads == 0 {
        return Err(PlacementError::NoThreads);
    }
    if threads > MAX_THREADS {
        return Err(PlacementError::TooManyThreads { threads });
    }
    let available = usable(topology, cpus)?;
    let pus: Vec<usize> = match policy {
        Policy::Os => Vec::new(),
        Policy::Compact => compact_order(topology, &available),
        Policy::Cores => cores_order(topology, &available),
        Policy::RoundRobin => set_to_vec(&available),
        Policy::Spread => {
            let n = threads.min(set_to_vec(&available).len());
            distribute(topology, n, Some(&available))?
                .iter()
                .filter_map(|set| set.first_set().map(usize::from))
                .collect()
        }
    };
    let chosen: Vec<Option<usize>> = (0..threads)
        .map(|i| (!pus.is_empty()).then(|| pus[i % pus.len()]))
        .collect();
    let union = set_from_indexes(chosen.iter().flatten().copied());
    let sets: Vec<Vec<usize>> = chosen
        .iter()
        .map(|pu| match (pu, binding) {
            (None, _) => set_to_vec(&available),
            (Some(_), Binding::Shared) => set_to_vec(&union),
            (Some(pu), Binding::Pu) => vec![*pu],
            (Some(pu), Binding::Core) => {
                let mut core = core_of(topology, *pu)
                    .and_then(TopologyObject::cpuset)
                    .map_or_else(|| set_from_indexes([*pu]), |s| s.clone_target());
                core &= &available;
                set_to_vec(&core)
            }
        })
        .collect();
    let mut located: HashMap<usize, Where> = HashMap::new();
    let threads = chosen
        .iter()
        .zip(sets)
        .map(|(pu, pus)| {
            let place = pu.map_or_else(Where::default, |pu| {
                *located
                    .entry(pu)
                    .or_insert_with(|| locate(topology, Some(pu)))
            });
            ThreadPlacement {
                pus,
                pu: *pu,
                core: place.core,
                l3: place.l3,
                numa: place.numa,
            }
        })
        .collect();
    Ok(Placement {
        policy,
        binding,
        threads,
    })
}

/// hwloc-distrib's answer: `n` CPU sets spread over the topology (limited to `cpus` when given),
/// as `hwloc_distrib()` computes them; `hwloc-distrib --single` keeps each set's first PU.
///
/// This is hwloc's recursive proportional split, from `include/hwloc/helper.h`: each child of an
/// object gets a share of the items proportional to its number of usable PUs (rounding up, so
/// earlier children get the extra), recursing while a child gets more than one item; a child that
/// gets none is merged into the previous item's set.
///
/// # Errors
///
/// [`PlacementError::NoUsableCpu`] when `cpus` has no PU of the topology.
pub fn distribute(
    topology: &Topology,
    n: usize,
    cpus: Option<&CpuSet>,
) -> Result<Vec<CpuSet>, PlacementError> {
    let available = usable(topology, cpus)?;
    let mut out = Vec::with_capacity(n.min(MAX_THREADS));
    if n > 0 {
        distribute_into(&[topology.hwloc().root_object()], &available, n, &mut out);
    }
    Ok(out)
}

fn distribute_into(roots: &[&TopologyObject], available: &CpuSet, n: usize, out: &mut Vec<CpuSet>) {
    let weighted: Vec<(&TopologyObject, CpuSet, usize)> = roots
        .iter()
        .map(|obj| {
            let mut set = obj.cpuset().map(|s| s.clone_target()).unwrap_or_default();
            set &= available;
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
    for (obj, set, weight) in weighted {
        if weight == 0 {
            continue;
        }
        let chunk = share(given_weight + weight) - share(given_weight);
        if obj.normal_arity() == 0 || chunk <= 1 {
            if chunk > 0 {
                out.extend(std::iter::repeat_n(set, chunk));
            } else if let Some(last) = out.last_mut() {
                *last |= &set;
            }
        } else {
            let children: Vec<&TopologyObject> = obj.normal_children().collect();
            distribute_into(&children, available, chunk, out);
        }
        given_weight += weight;
    }
}

fn usable(topology: &Topology, cpus: Option<&CpuSet>) -> Result<CpuSet, PlacementError> {
    let mut available = topology.cpuset();
    if let Some(cpus) = cpus {
        available &= cpus;
    }
    if available.is_empty() {
        return Err(PlacementError::NoUsableCpu {
            cpus: cpus.map_or_else(String::new, |c| format_list(&set_to_vec(c))),
            usable: format_list(&set_to_vec(&topology.cpuset())),
        });
    }
    Ok(available)
}

fn compact_order(topology: &Topology, available: &CpuSet) -> Vec<usize> {
    topology
        .objects(ObjectType::PU)
        .into_iter()
        .filter_map(TopologyObject::os_index)
        .filter(|&pu| available.is_set(pu))
        .collect()
}

fn cores_order(topology: &Topology, available: &CpuSet) -> Vec<usize> {
    let per_core: Vec<Vec<usize>> = topology
        .objects(ObjectType::Core)
        .into_iter()
        .map(|core| {
            core.cpuset().map_or_else(Vec::new, |set| {
                // PUs in logical order inside the core.
                topology
                    .objects(ObjectType::PU)
                    .into_iter()
                    .filter_map(TopologyObject::os_index)
                    .filter(|&pu| set.is_set(pu) && available.is_set(pu))
                    .collect()
            })
        })
        .collect();
    let rounds = per_core.iter().map(Vec::len).max().unwrap_or(0);
    let mut order: Vec<usize> = (0..rounds)
        .flat_map(|r| per_core.iter().filter_map(move |pus| pus.get(r).copied()))
        .collect();
    // PUs outside any core (hwloc always has cores, but be safe): append in logical order.
    for pu in compact_order(topology, available) {
        if !order.contains(&pu) {
            order.push(pu);
        }
    }
    order
}

fn pu_object(topology: &Topology, pu: usize) -> Option<&TopologyObject> {
    topology
        .hwloc()
        .objects_with_type(ObjectType::PU)
        .find(|o| o.os_index() == Some(pu))
}

fn core_of(topology: &Topology, pu: usize) -> Option<&TopologyObject> {
    pu_object(topology, pu)?
        .ancestors()
        .find(|a| a.object_type() == ObjectType::Core)
}

/// Where a thread's PU sits.
#[derive(Clone, Copy, Default)]
struct Where {
    core: Option<usize>,
    l3: Option<usize>,
    numa: Option<usize>,
}

fn locate(topology: &Topology, pu: Option<usize>) -> Where {
    let Some(pu) = pu else {
        return Where::default();
    };
    let Some(obj) = pu_object(topology, pu) else {
        return Where::default();
    };
    let ancestor = |ty: ObjectType| {
        obj.ancestors()
            .find(|a| a.object_type() == ty)
            .map(|a| topology.logical_index(a))
    };
    let numa = topology
        .hwloc()
        .objects_with_type(ObjectType::NUMANode)
        .find(|n| n.cpuset().is_some_and(|s| s.is_set(pu)))
        .and_then(TopologyObject::os_index);
    Where {
        core: ancestor(ObjectType::Core),
        l3: ancestor(ObjectType::L3Cache),
        numa,
    }
}
