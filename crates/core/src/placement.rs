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
use std::sync::Arc;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::types::ObjectType;
use serde::Serialize;

use crate::hwloc::split;
use crate::sys::{format_list, set_from_indexes, set_to_vec};
use crate::topology::Topology;

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
    /// Each thread on its own part of the CPUs, so the OS can balance it inside: for `spread`
    /// the whole set `hwloc-distrib N` gives it (not only its first PU), for the other policies
    /// a run of consecutive PUs of the policy's order (threads packed onto neighbouring PUs when
    /// there are more threads than PUs).
    Share,
}

impl Binding {
    /// Every binding, in the order `--help` lists them.
    pub const ALL: [Binding; 4] = [Binding::Pu, Binding::Core, Binding::Shared, Binding::Share];
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Binding::Pu => "pu",
            Binding::Core => "core",
            Binding::Shared => "shared",
            Binding::Share => "share",
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
            "share" | "partition" => Ok(Binding::Share),
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
    #[error("unknown binding '{0}' (known: pu, core, shared, share)")]
    UnknownBinding(String),
    /// `--place` is neither a policy nor a CPU list.
    #[error(
        "unknown placement '{input}': {reason}give a policy (os, compact, spread, cores, \
         round-robin) or an ordered CPU list as likwid-pin's -c takes it (0,2,1,3, \
         S0:0-1@S1:0-1, E:N:4:1:2)"
    )]
    UnknownPlace {
        /// The value as written.
        input: String,
        /// What is wrong with it read as a CPU list, ending in `"; "` (empty for a word that
        /// is no CPU list at all, such as a misspelt policy).
        reason: String,
    },
    /// A `--place` CPU list does not resolve on this topology.
    #[error(transparent)]
    List(#[from] crate::cpuset::CpuSetError),
}

/// What `--place` takes: a policy, or an ordered CPU list as likwid-pin's `-c` takes it, thread
/// k on the list's k-th CPU (wrapping around). The list is a CPU-set expression: a plain list
/// in the order written (`0,2,1,3`), likwid's domains and expressions (`S0:0-1@S1:0-1`,
/// `E:N:4:1:2`, `M:scatter`), or any other expression, taken in ascending order (`numa:1`).
/// Such a plan is round-robin over the list, and says so where it is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlaceSpec {
    /// One of the policies.
    Policy(Policy),
    /// An ordered CPU list, as written.
    List(String),
}

impl FromStr for PlaceSpec {
    type Err = PlacementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(policy) = s.parse::<Policy>() {
            return Ok(PlaceSpec::Policy(policy));
        }
        match s.parse::<crate::cpuset::CpuSetExpr>() {
            Ok(_) => Ok(PlaceSpec::List(s.to_owned())),
            Err(e) => {
                // A word without digits or a colon is a misspelt policy, not a broken list: what
                // the list syntax would say about it helps nobody.
                let listish = s.contains(':') || s.bytes().any(|b| b.is_ascii_digit());
                let reason = match e {
                    _ if !listish => String::new(),
                    crate::cpuset::CpuSetError::Syntax { part, reason, .. } if part == s => {
                        format!("{reason}; ")
                    }
                    other => format!("{other}; "),
                };
                Err(PlacementError::UnknownPlace {
                    input: s.to_owned(),
                    reason,
                })
            }
        }
    }
}

impl PlaceSpec {
    /// The CPUs of an ordered list (`--place 0,1`) that `cpus` leaves out, in the list's order
    /// and each once: [`plan_spec`] drops them, so the threads written for them go round-robin
    /// over the rest of the list — worth a warning, since the user named them. Empty for a
    /// policy, without `cpus`, or for a list that does not resolve here (planning says why).
    pub fn left_out_by(
        &self,
        topology: &Topology,
        cpus: Option<&CpuSet>,
        physical: bool,
    ) -> Vec<usize> {
        let (PlaceSpec::List(text), Some(cpus)) = (self, cpus) else {
            return Vec::new();
        };
        let options = crate::cpuset::ResolveOptions { physical };
        let Ok(order) = text
            .parse::<crate::cpuset::CpuSetExpr>()
            .and_then(|expr| expr.ordered(topology, &options))
        else {
            return Vec::new();
        };
        let mut out: Vec<usize> = Vec::new();
        for cpu in order {
            if !cpus.is_set(cpu) && !out.contains(&cpu) {
                out.push(cpu);
            }
        }
        out
    }
}

impl fmt::Display for PlaceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlaceSpec::Policy(policy) => policy.fmt(f),
            PlaceSpec::List(list) => f.write_str(list),
        }
    }
}

/// [`plan`] for a [`PlaceSpec`]: a policy's plan, or round-robin over the list's usable CPUs
/// (those of `cpus` too, when given) in the list's order. `physical`: object indexes in the list
/// are OS indexes.
///
/// # Errors
///
/// As [`plan`], and [`PlacementError::List`] for a list that does not resolve.
pub fn plan_spec(
    topology: &Topology,
    threads: usize,
    spec: &PlaceSpec,
    cpus: Option<&CpuSet>,
    physical: bool,
    binding: Binding,
) -> Result<Placement, PlacementError> {
    match spec {
        PlaceSpec::Policy(policy) => plan(topology, threads, *policy, cpus, binding),
        PlaceSpec::List(text) => {
            let expr: crate::cpuset::CpuSetExpr = text.parse()?;
            let options = crate::cpuset::ResolveOptions { physical };
            let mut order = expr.ordered(topology, &options)?;
            if let Some(cpus) = cpus {
                order.retain(|&cpu| cpus.is_set(cpu));
            }
            if order.is_empty() {
                return Err(PlacementError::NoUsableCpu {
                    cpus: text.clone(),
                    usable: format_list(&set_to_vec(cpus.unwrap_or(&topology.cpuset()))),
                });
            }
            plan_in_order(
                topology,
                threads,
                Policy::RoundRobin,
                None,
                binding,
                Some(&order),
            )
        }
    }
}

/// Where one thread runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadPlacement {
    /// The CPUs it may run on (OS indexes, ascending); threads with the same set share one
    /// list (thousands of threads bound to one shared set would otherwise copy it each).
    pub pus: Arc<[usize]>,
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
        if self.is_empty() || (!self.is_pinned() && self.threads.iter().all(|t| *t.pus == *whole)) {
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
        self.threads.iter().map(|t| t.pus.to_vec()).collect()
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

    /// Every thread's nearest victims, the head of its [`Placement::steal_order`]: the threads on
    /// the same core, then under the same L3, then on the same NUMA node, each group in ring
    /// order from `i + 1`. The other threads follow in a steal order in ring order, so this
    /// describes the whole order in space linear in the thread count (up to group sizes).
    pub fn steal_near(&self) -> Vec<Vec<usize>> {
        let n = self.threads.len();
        let groups = |key: fn(&ThreadPlacement) -> Option<usize>| {
            let mut map: HashMap<usize, Vec<usize>> = HashMap::new();
            for (i, t) in self.threads.iter().enumerate() {
                if let Some(k) = key(t) {
                    map.entry(k).or_default().push(i);
                }
            }
            map
        };
        let cores = groups(|t| t.core);
        let l3s = groups(|t| t.l3);
        let numas = groups(|t| t.numa);
        // Members in ring order from i + 1: those after i, then those before it.
        let ring = |members: &[usize], i: usize| -> Vec<usize> {
            let split = members.partition_point(|&j| j <= i);
            members[split..]
                .iter()
                .chain(&members[..split])
                .copied()
                .filter(|&j| j != i)
                .collect()
        };
        // `seen[j] == i + 1`: thread j is already in thread i's list.
        let mut seen = vec![0usize; n];
        (0..n)
            .map(|i| {
                let t = &self.threads[i];
                let mut near: Vec<usize> = Vec::new();
                for (key, map) in [(t.core, &cores), (t.l3, &l3s), (t.numa, &numas)] {
                    let Some(members) = key.and_then(|k| map.get(&k)) else {
                        continue;
                    };
                    for j in ring(members, i) {
                        if seen[j] != i + 1 {
                            seen[j] = i + 1;
                            near.push(j);
                        }
                    }
                }
                near
            })
            .collect()
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

    /// The NUMA nodes whose CPUs the threads run on (OS indexes, ascending): where the
    /// placement's memory should be, as `numactl --membind` and `hwloc-bind --membind` take it.
    pub fn memory_nodes(&self, topology: &Topology) -> Vec<usize> {
        let union = self.union();
        let nodes = hwlocality::memory::nodeset::NodeSet::from_cpuset(topology.hwloc(), &union);
        nodes.iter_set().map(usize::from).collect()
    }

    /// The `numactl` command line that applies the process-wide set and binds memory to
    /// [`Placement::memory_nodes`] (`None` when threads are not pinned or the topology has no
    /// NUMA node under those CPUs).
    pub fn numactl(&self, topology: &Topology) -> Option<String> {
        let nodes = self.memory_nodes(topology);
        (self.is_pinned() && !nodes.is_empty()).then(|| {
            format!(
                "numactl --physcpubind={} --membind={}",
                self.taskset_list(),
                format_list(&nodes)
            )
        })
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
    plan_in_order(topology, threads, policy, cpus, binding, None)
}

/// [`plan`], with round-robin taking `list`'s order (which limits the CPUs) instead of the
/// ascending one.
fn plan_in_order(
    topology: &Topology,
    threads: usize,
    policy: Policy,
    cpus: Option<&CpuSet>,
    binding: Binding,
    list: Option<&[usize]>,
) -> Result<Placement, PlacementError> {
    if threads == 0 {
        return Err(PlacementError::NoThreads);
    }
    if threads > MAX_THREADS {
        return Err(PlacementError::TooManyThreads { threads });
    }
    let listed = list.map(|l| set_from_indexes(l.iter().copied()));
    let available = usable(topology, listed.as_ref().or(cpus))?;
    let index = PuIndex::new(topology, &available);
    // The PU each thread gets, and with `share` binding the part of the CPUs it gets.
    let (chosen, parts): (Vec<Option<usize>>, Option<Vec<Vec<usize>>>) = match policy {
        Policy::Os => (vec![None; threads], None),
        Policy::Spread => {
            let sets = split(topology, threads, &available);
            let chosen = sets
                .iter()
                .map(|s| s.first_set().map(usize::from))
                .collect();
            let parts = (binding == Binding::Share).then(|| sets.iter().map(set_to_vec).collect());
            (chosen, parts)
        }
        Policy::Compact | Policy::Cores | Policy::RoundRobin => {
            let order = match policy {
                Policy::Compact => index.logical_order.clone(),
                Policy::Cores => index.cores_order(),
                _ => list.map_or_else(|| set_to_vec(&available), <[usize]>::to_vec),
            };
            if binding == Binding::Share {
                let parts = partition(&order, threads);
                let chosen = parts.iter().map(|p| p.first().copied()).collect();
                (chosen, Some(parts))
            } else {
                let chosen = (0..threads).map(|i| Some(order[i % order.len()])).collect();
                (chosen, None)
            }
        }
    };
    let available_list: Arc<[usize]> = set_to_vec(&available).into();
    let union: Arc<[usize]> =
        set_to_vec(&set_from_indexes(chosen.iter().flatten().copied())).into();
    let mut cores: HashMap<usize, Arc<[usize]>> = HashMap::new();
    let threads = chosen
        .iter()
        .enumerate()
        .map(|(i, pu)| {
            let pus: Arc<[usize]> = match (pu, binding) {
                (None, _) => Arc::clone(&available_list),
                (Some(_), Binding::Shared) => Arc::clone(&union),
                (Some(pu), Binding::Pu) => Arc::from([*pu].as_slice()),
                (Some(pu), Binding::Core) => Arc::clone(
                    cores
                        .entry(*pu)
                        .or_insert_with(|| index.core_pus(*pu).into()),
                ),
                (Some(pu), Binding::Share) => parts
                    .as_ref()
                    .and_then(|p| p.get(i).map(|part| Arc::from(part.as_slice())))
                    .unwrap_or_else(|| Arc::from([*pu].as_slice())),
            };
            let place = pu.map_or_else(Where::default, |pu| index.place(pu));
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

/// `order` cut into `n` runs of consecutive PUs, the earlier runs one longer when it does not
/// divide evenly; with fewer PUs than `n`, neighbouring runs share a PU (as hwloc-distrib packs
/// extra threads).
fn partition(order: &[usize], n: usize) -> Vec<Vec<usize>> {
    let p = order.len();
    let bound = |i: usize| (i * p).div_ceil(n);
    (0..n)
        .map(|i| {
            let start = bound(i).min(p - 1);
            let end = bound(i + 1).max(start + 1).min(p);
            order[start..end].to_vec()
        })
        .collect()
}

/// hwloc-distrib's answer: `n` CPU sets spread over the topology (limited to `cpus` when given),
/// as `hwloc_distrib()` computes them; `hwloc-distrib --single` keeps each set's first PU.
/// The split is hwloc's (`crate::hwloc`'s `distrib.rs`).
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
    Ok(split(topology, n, &available))
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

/// What placement needs to know about each usable PU, gathered in one pass over the topology
/// (looking each PU up again for each thread is quadratic on big machines).
struct PuIndex {
    /// Usable PUs in hwloc's logical order.
    logical_order: Vec<usize>,
    /// By OS index: where the PU is.
    place: Vec<Where>,
    /// By OS index: the usable PUs of its core (logical order), or none.
    core_pus: Vec<Vec<usize>>,
    /// Cores in logical order, each with its usable PUs in logical order.
    cores: Vec<Vec<usize>>,
}

impl PuIndex {
    fn new(topology: &Topology, available: &CpuSet) -> Self {
        let hw = topology.hwloc();
        let mut logical_order = Vec::new();
        let mut top = 0;
        let mut cores: Vec<Vec<usize>> = Vec::new();
        let mut core_of: Vec<(usize, Option<usize>, Option<usize>)> = Vec::new();
        let mut core_slot: HashMap<usize, usize> = HashMap::new();
        for pu in hw.objects_with_type(ObjectType::PU) {
            let Some(os) = pu.os_index() else { continue };
            if !available.is_set(os) {
                continue;
            }
            logical_order.push(os);
            top = top.max(os + 1);
            // Machine-order indexes: where a CPU is offline hwloc may put cores on two levels,
            // each numbered from 0 (two cores would share a slot).
            let core = pu
                .first_ancestor_with_type(ObjectType::Core)
                .map(|c| topology.logical_index(c));
            let l3 = pu
                .first_ancestor_with_type(ObjectType::L3Cache)
                .map(|c| topology.logical_index(c));
            if let Some(core) = core {
                let slot = *core_slot.entry(core).or_insert_with(|| {
                    cores.push(Vec::new());
                    cores.len() - 1
                });
                cores[slot].push(os);
            }
            core_of.push((os, core, l3));
        }
        let mut place = vec![Where::default(); top];
        for &(os, core, l3) in &core_of {
            place[os].core = core;
            place[os].l3 = l3;
        }
        // The first NUMA node (in logical order) whose CPUs include the PU.
        for node in hw.objects_with_type(ObjectType::NUMANode) {
            let Some(cpus) = node.cpuset() else { continue };
            for pu in cpus.iter_set().map(usize::from) {
                if let Some(w) = place.get_mut(pu) {
                    if w.numa.is_none() {
                        w.numa = node.os_index();
                    }
                }
            }
        }
        let mut core_pus = vec![Vec::new(); top];
        for pus in &cores {
            for &pu in pus {
                core_pus[pu] = pus.clone();
            }
        }
        Self {
            logical_order,
            place,
            core_pus,
            cores,
        }
    }

    fn place(&self, pu: usize) -> Where {
        self.place.get(pu).copied().unwrap_or_default()
    }

    /// The usable PUs of `pu`'s core; `pu` alone when it has no core.
    fn core_pus(&self, pu: usize) -> Vec<usize> {
        match self.core_pus.get(pu) {
            Some(pus) if !pus.is_empty() => pus.clone(),
            _ => vec![pu],
        }
    }

    /// One PU per core (in logical order) before any core's second PU, then PUs outside any
    /// core.
    fn cores_order(&self) -> Vec<usize> {
        let rounds = self.cores.iter().map(Vec::len).max().unwrap_or(0);
        let mut order: Vec<usize> = (0..rounds)
            .flat_map(|r| self.cores.iter().filter_map(move |pus| pus.get(r).copied()))
            .collect();
        let in_core: std::collections::HashSet<usize> = order.iter().copied().collect();
        order.extend(
            self.logical_order
                .iter()
                .copied()
                .filter(|pu| !in_core.contains(pu)),
        );
        order
    }
}

/// Where a thread's PU sits.
#[derive(Clone, Copy, Debug, Default)]
struct Where {
    core: Option<usize>,
    l3: Option<usize>,
    numa: Option<usize>,
}
