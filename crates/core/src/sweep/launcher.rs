//! MPI ranks × OpenMP threads through the real launcher (`tune --launcher mpirun|srun`):
//! coretune does not start the copies itself but builds the launcher's command line for each
//! configuration — `--instances` ranks of `--threads` threads each — and times the whole launch.
//!
//! Every dimension of a configuration is either said in the launcher's own words or refused
//! before anything runs ([`Launcher::words`]), never dropped:
//!
//! | dimension | Open MPI's `mpirun` (4.1) | Slurm's `srun` |
//! |---|---|---|
//! | `--place os` | `--map-by slot --bind-to none` | `--cpu-bind=none` |
//! | `--place cores` | `--map-by slot:PE=T --bind-to core`, threads on `OMP_PLACES=cores` | `--cpu-bind=cores --distribution=block:block` |
//! | `--place compact` | `--map-by slot:PE=T --use-hwthread-cpus --bind-to hwthread`, threads on `OMP_PLACES=threads` | `--cpu-bind=threads --distribution=block:block` |
//! | `--place spread` | `--map-by numa:PE=T --bind-to core`: ranks round-robin over the NUMA nodes | `--cpu-bind=cores --distribution=block:cyclic`: each task's cores round-robin over the sockets |
//! | `--cpus EXPR` | `--cpu-set LIST` (hwloc logical indexes: of cores, or of hardware threads with `--use-hwthread-cpus`): `os` with `--bind-to none` (every rank on the whole set), `cores`/`compact` with `--bind-to cpu-list:ordered` (rank *i* on the *i*-th core or thread of the set) | `--whole --cpu-bind=mask_cpu:M0,M1,…`, each task's mask from the plan below |
//! | `--mem POLICY` | `numactl --localalloc --` (or `--interleave=`, `--membind=`, `--preferred=`) before the program, in each rank | the same |
//! | `--throttle` | refused (for every program: it limits coretune's own pool) | |
//!
//! What Open MPI 4.1 cannot say is refused: `--cpus` with `spread` (inside `--cpu-set` ranks are
//! bound in ascending order only), `--cpus` with more than one thread per pinned rank (`--cpu-set`
//! binds a rank to one CPU or to the whole set: it does not combine with `PE=`), a `--cpus` set
//! that takes part of a core for `cores` (`--cpu-set` names whole cores), and any placement but
//! these four (round-robin, a likwid list). A memory policy whose nodes are "near" the CPUs is
//! resolved near the configuration's whole CPU set: one `numactl` line serves every rank.
//!
//! [`Launcher::expected`] is the same translation as data: the CPUs each rank is bound to, each
//! of its threads' place and its memory policy ([`RankPlan`]), computed as the launcher lays them
//! out (Open MPI's mapping, Slurm's distribution on a whole node). Two configurations of a grid
//! with the same plans are one configuration ([`Launcher::check_grid`]): a grid value that starts
//! every configuration as another value does is measured once (the later value is dropped, with
//! a note), and values that coincide in some configurations only are refused — no two rows of a
//! sweep run the same launch.
//!
//! Open MPI refuses to start as root unless told: coretune sets `OMPI_ALLOW_RUN_AS_ROOT=1` and
//! `OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` for its runs when it is root, and the apply lines it prints
//! as root carry `--allow-run-as-root`. `srun` starts steps of an allocation: outside one (no
//! `SLURM_JOB_ID`) a sweep is refused before anything runs ([`Launcher::check_here`]); `--dry-run`
//! still plans.
//!
//! A configuration that asks for more cores than there are is measured as the launcher runs it:
//! Open MPI refuses to bind more ranks than cores, and the run fails with its message.

use std::fmt;
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use crate::cpuset::Format;
use crate::grid::{Config, ConfigError, Grid};
use crate::memory::MemPlan;
use crate::placement::Policy;
use crate::sys::{format_list, set_to_vec};
use crate::topology::{ObjKind, Topology};

/// Who starts a configuration's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// Open MPI's `mpirun`.
    Mpirun,
    /// Slurm's `srun`, inside an allocation.
    Srun,
}

/// What one rank of a configuration gets from its launcher: [`Launcher::expected`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlan {
    /// The rank (`OMPI_COMM_WORLD_RANK`, `SLURM_PROCID`).
    pub rank: usize,
    /// Whether the launcher binds the rank (`false` for `--place os`: it may run anywhere in
    /// [`RankPlan::cpus`], its threads where the kernel puts them).
    pub bound: bool,
    /// The CPUs the rank is bound to (every CPU of the configuration's set when it is not).
    pub cpus: CpuSet,
    /// Each of its `--threads` OpenMP threads' place, in thread order (the rank's CPUs for
    /// threads that are not pinned).
    pub threads: Vec<CpuSet>,
    /// The memory policy it starts with (`None`: the OS's default).
    pub mem: Option<MemPlan>,
}

/// How a launcher binds a configuration's ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Not at all: every rank on the whole set, its threads where the kernel puts them (`os`).
    Unbound,
    /// Rank after rank, each on the next `T` units of the set, a thread on each (`cores`: cores,
    /// `compact`: hardware threads).
    Blocks(ObjKind),
    /// Ranks round-robin over the NUMA nodes, each on the next `T` cores of its node (Open
    /// MPI's `--map-by numa`).
    NumaRoundRobin,
    /// Rank after rank, each on `T` cores taken round-robin over the packages (Slurm's
    /// `--distribution=block:cyclic`).
    PackageCyclic,
}

impl Launcher {
    /// Every launcher, as the command line names them.
    pub const ALL: [&'static str; 2] = ["mpirun", "srun"];

    /// A refusal naming this launcher.
    fn refuse(self, why: String) -> ConfigError {
        ConfigError::Launcher(format!("{self} {why}"))
    }

    /// How this launcher binds `c`'s ranks, or why it cannot.
    fn form(self, c: &Config) -> Result<Form, ConfigError> {
        Ok(match (c.family.place, self) {
            (Policy::Os, _) => Form::Unbound,
            (Policy::Cores, _) => Form::Blocks(ObjKind::Core),
            (Policy::Compact, _) => Form::Blocks(ObjKind::Pu),
            (Policy::Spread, Launcher::Mpirun) => Form::NumaRoundRobin,
            (Policy::Spread, Launcher::Srun) => Form::PackageCyclic,
            (other, _) => {
                return Err(self.refuse(format!(
                    "has no mapping for --place {other}: use os, compact, cores or spread"
                )));
            }
        })
    }

    /// The configuration's CPU set when it leaves out some of the machine (`None`: every CPU,
    /// however it was written).
    fn restriction(topology: &Topology, c: &Config) -> Result<Option<CpuSet>, ConfigError> {
        let (cpus, _) = c
            .family
            .cpus
            .resolve(topology)
            .map_err(|error| ConfigError::Cpus {
                cpus: c.family.cpus.to_string(),
                error,
            })?;
        Ok(cpus.filter(|set| *set != topology.cpuset()))
    }

    /// The configuration's memory policy on its whole CPU set (`None`: the OS's default).
    fn mem_plan(
        topology: &Topology,
        c: &Config,
        set: &CpuSet,
    ) -> Result<Option<MemPlan>, ConfigError> {
        let Some(policy) = c.family.mem.policy() else {
            return Ok(None);
        };
        let mut plan = policy
            .plan(topology, set, false)
            .map_err(ConfigError::Mem)?;
        plan.note = None;
        Ok(Some(plan))
    }

    /// The launcher's words for configuration `c` on `topology`, up to the program's (its
    /// `numactl` words included), as a user would type them.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Launcher`] for a dimension the launcher cannot express (see the module
    /// table), [`ConfigError::Cpus`] / [`ConfigError::Mem`] for a CPU set or a memory policy
    /// that does not resolve here.
    pub fn words(self, topology: &Topology, c: &Config) -> Result<Vec<String>, ConfigError> {
        let (p, t) = (c.family.instances.max(1), c.threads.max(1));
        let form = self.form(c)?;
        let restricted = Self::restriction(topology, c)?;
        let set = restricted.clone().unwrap_or_else(|| topology.cpuset());
        let places = match form {
            Form::Unbound => None,
            Form::Blocks(ObjKind::Pu) => Some("threads"),
            _ => Some("cores"),
        };
        let mut omp = vec![format!("OMP_NUM_THREADS={t}")];
        if let Some(places) = places {
            omp.push(format!("OMP_PLACES={places}"));
            omp.push("OMP_PROC_BIND=close".to_owned());
        }
        let mut words: Vec<String> = match self {
            Launcher::Mpirun => {
                let mut w = vec!["mpirun".to_owned(), "-np".to_owned(), p.to_string()];
                let mut push = |words: &[&str]| w.extend(words.iter().map(|&s| s.to_owned()));
                match (form, &restricted) {
                    (Form::Unbound, None) => push(&["--map-by", "slot", "--bind-to", "none"]),
                    (Form::Blocks(ObjKind::Core), None) => {
                        push(&["--map-by", &format!("slot:PE={t}"), "--bind-to", "core"]);
                    }
                    (Form::Blocks(_), None) => push(&[
                        "--map-by",
                        &format!("slot:PE={t}"),
                        "--use-hwthread-cpus",
                        "--bind-to",
                        "hwthread",
                    ]),
                    (Form::NumaRoundRobin | Form::PackageCyclic, None) => {
                        push(&["--map-by", &format!("numa:PE={t}"), "--bind-to", "core"]);
                    }
                    (Form::Unbound, Some(s)) => push(&[
                        "--use-hwthread-cpus",
                        "--cpu-set",
                        &Self::logical_list(topology, s, ObjKind::Pu),
                        "--bind-to",
                        "none",
                    ]),
                    (Form::Blocks(kind), Some(s)) => {
                        if t > 1 {
                            return Err(self.refuse(format!(
                                "cannot bind {t} threads per rank inside --cpus '{}': Open MPI \
                                 binds a rank inside --cpu-set to one CPU (--bind-to \
                                 cpu-list:ordered) or to the whole set (--place os)",
                                c.family.cpus
                            )));
                        }
                        if kind == ObjKind::Core {
                            if let Some(core) = Self::split_core(topology, s) {
                                return Err(self.refuse(format!(
                                    "cannot bind ranks to cores inside --cpus '{}': it takes \
                                     part of core {core}, and Open MPI's --cpu-set names whole \
                                     cores (--place compact binds hardware threads)",
                                    c.family.cpus
                                )));
                            }
                            push(&[
                                "--cpu-set",
                                &Self::logical_list(topology, s, ObjKind::Core),
                                "--bind-to",
                                "cpu-list:ordered",
                            ]);
                        } else {
                            push(&[
                                "--use-hwthread-cpus",
                                "--cpu-set",
                                &Self::logical_list(topology, s, ObjKind::Pu),
                                "--bind-to",
                                "cpu-list:ordered",
                            ]);
                        }
                    }
                    (Form::NumaRoundRobin | Form::PackageCyclic, Some(_)) => {
                        return Err(self.refuse(format!(
                            "cannot spread ranks inside --cpus '{}': Open MPI binds ranks inside \
                             --cpu-set in ascending order only (use --place cores or compact \
                             there, or spread on every CPU)",
                            c.family.cpus
                        )));
                    }
                }
                for v in omp {
                    w.push("-x".into());
                    w.push(v);
                }
                w
            }
            Launcher::Srun => {
                let mut w = vec![
                    "srun".to_owned(),
                    format!("--ntasks={p}"),
                    format!("--cpus-per-task={t}"),
                ];
                match (form, &restricted) {
                    (Form::Unbound, None) => w.push("--cpu-bind=none".into()),
                    (Form::Blocks(kind), None) => {
                        let bind = if kind == ObjKind::Pu {
                            "threads"
                        } else {
                            "cores"
                        };
                        w.push(format!("--cpu-bind={bind}"));
                        w.push("--distribution=block:block".into());
                    }
                    (Form::NumaRoundRobin | Form::PackageCyclic, None) => {
                        w.push("--cpu-bind=cores".into());
                        w.push("--distribution=block:cyclic".into());
                    }
                    (Form::Unbound, Some(s)) => {
                        w.push("--whole".into());
                        w.push(format!("--cpu-bind=mask_cpu:{}", Self::mask(s)));
                    }
                    (_, Some(_)) => {
                        let ranks = self.ranks(topology, c, form, &set, None)?;
                        let masks: Vec<String> =
                            ranks.iter().map(|r| Self::mask(&r.cpus)).collect();
                        w.push("--whole".into());
                        w.push(format!("--cpu-bind=mask_cpu:{}", masks.join(",")));
                    }
                }
                w.push(format!("--export=ALL,{}", omp.join(",")));
                w
            }
        };
        if let Some(mem) = Self::mem_plan(topology, c, &set)? {
            words.push("numactl".into());
            words.push(mem.numactl());
            words.push("--".into());
        }
        words.shrink_to_fit();
        Ok(words)
    }

    /// What each rank of configuration `c` gets on `topology` when the launcher starts it with
    /// [`Launcher::words`]: its CPUs, its threads' places and its memory policy — what an audit
    /// of a run compares with what each rank really had. Slurm's layout is modelled on a
    /// whole node (the allocation decides which CPUs a step gets when `--cpus` does not say).
    ///
    /// # Errors
    ///
    /// As [`Launcher::words`], and [`ConfigError::Launcher`] when the ranks need more cores
    /// (or hardware threads) than the set has: the launcher refuses such a run.
    pub fn expected(self, topology: &Topology, c: &Config) -> Result<Vec<RankPlan>, ConfigError> {
        self.words(topology, c)?;
        let form = self.form(c)?;
        let set = Self::restriction(topology, c)?.unwrap_or_else(|| topology.cpuset());
        let mem = Self::mem_plan(topology, c, &set)?;
        self.ranks(topology, c, form, &set, mem)
    }

    /// The plan of `c`'s ranks laid out by `form` on `set`.
    fn ranks(
        self,
        topology: &Topology,
        c: &Config,
        form: Form,
        set: &CpuSet,
        mem: Option<MemPlan>,
    ) -> Result<Vec<RankPlan>, ConfigError> {
        let (p, t) = (c.family.instances.max(1), c.threads.max(1));
        let units = |kind: ObjKind| -> Vec<CpuSet> {
            topology
                .objects(kind.object_type())
                .into_iter()
                .filter_map(|o| {
                    let mut s = o.cpuset()?.clone_target();
                    s &= set;
                    (!s.is_empty()).then_some(s)
                })
                .collect()
        };
        let too_few = |have: usize, what: &str| {
            self.refuse(format!(
                "cannot start {} of {} on {have} {what} (CPUs {})",
                crate::sys::counted(p, "rank"),
                crate::sys::counted(t, "thread"),
                format_list(&set_to_vec(set))
            ))
        };
        let rank = |rank: usize, threads: Vec<CpuSet>| {
            let mut cpus = CpuSet::new();
            for s in &threads {
                cpus |= s;
            }
            RankPlan {
                rank,
                bound: true,
                cpus,
                threads,
                mem: mem.clone(),
            }
        };
        let blocks = |units: Vec<CpuSet>, what: &str| {
            if units.len() < p * t {
                return Err(too_few(units.len(), what));
            }
            Ok(units
                .chunks(t)
                .take(p)
                .enumerate()
                .map(|(r, block)| rank(r, block.to_vec()))
                .collect())
        };
        match form {
            Form::Unbound => Ok((0..p)
                .map(|r| RankPlan {
                    rank: r,
                    bound: false,
                    cpus: set.clone(),
                    threads: vec![set.clone(); t],
                    mem: mem.clone(),
                })
                .collect()),
            Form::Blocks(kind) => {
                let what = if kind == ObjKind::Pu {
                    "hardware threads"
                } else {
                    "cores"
                };
                blocks(units(kind), what)
            }
            Form::PackageCyclic => {
                // Each package's cores, then taken one from each package in turn.
                let packages = units(ObjKind::Package);
                let cores = units(ObjKind::Core);
                let mut per: Vec<Vec<CpuSet>> = packages
                    .iter()
                    .map(|pkg| cores.iter().filter(|c| pkg.includes(*c)).cloned().collect())
                    .collect();
                if per.is_empty() {
                    per.push(cores);
                }
                let mut order = Vec::new();
                let longest = per.iter().map(Vec::len).max().unwrap_or(0);
                for i in 0..longest {
                    order.extend(per.iter().filter_map(|p| p.get(i).cloned()));
                }
                blocks(order, "cores")
            }
            Form::NumaRoundRobin => {
                let cores = units(ObjKind::Core);
                let mut nodes: Vec<Vec<CpuSet>> = units(ObjKind::Numa)
                    .iter()
                    .map(|node| {
                        cores
                            .iter()
                            .filter(|c| node.includes(*c))
                            .cloned()
                            .collect()
                    })
                    .filter(|v: &Vec<CpuSet>| !v.is_empty())
                    .collect();
                if nodes.is_empty() {
                    nodes.push(cores);
                }
                let n = nodes.len();
                (0..p)
                    .map(|r| {
                        let (node, block) = (&nodes[r % n], r / n);
                        let cores = node
                            .get(block * t..(block + 1) * t)
                            .ok_or_else(|| too_few(node.len(), "cores in a NUMA node"))?;
                        Ok(rank(r, cores.to_vec()))
                    })
                    .collect()
            }
        }
    }

    /// The hwloc logical indexes of the objects of `kind` that `set` takes, as Open MPI's
    /// `--cpu-set` reads them (`0-3,8`).
    fn logical_list(topology: &Topology, set: &CpuSet, kind: ObjKind) -> String {
        let mut indexes = topology.indexes_intersecting(kind, set, false);
        indexes.sort_unstable();
        format_list(&indexes)
    }

    /// The logical index of a core that `set` takes only part of.
    fn split_core(topology: &Topology, set: &CpuSet) -> Option<usize> {
        topology
            .objects(ObjKind::Core.object_type())
            .into_iter()
            .find(|core| {
                core.cpuset()
                    .is_some_and(|c| c.intersects(set) && !set.includes(&*c))
            })
            .map(|core| topology.logical_index(core))
    }

    /// A CPU set as Slurm's `mask_cpu:` takes it (`0x3`).
    fn mask(set: &CpuSet) -> String {
        Format::Taskset
            .render(set)
            .unwrap_or_else(|_| "0x0".to_owned())
    }

    /// `grid` as this launcher can run it on `topology`: every configuration's words checked
    /// (the first one it cannot express is the error), and a grid value dropped when every
    /// configuration with it starts its ranks exactly as the same configuration with an earlier
    /// value of its axis does (same [`Launcher::expected`] plans: `--place compact,cores` on a
    /// machine without SMT, `--cpus all` and `--cpus 0-1` on a 2-CPU one). Unbound ranks
    /// (`os`) are never the same as bound ones, even on a set of one CPU. Returns the grid to
    /// sweep and a note per value dropped.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Launcher`] and the others of [`Launcher::words`]; and two values that
    /// start some configurations the same way but not all (one grid value cannot be dropped
    /// for part of the grid: sweep them apart).
    pub fn check_grid(
        self,
        topology: &Topology,
        grid: &Grid,
    ) -> Result<(Grid, Vec<String>), ConfigError> {
        for c in grid.configs() {
            self.words(topology, &c)?;
        }
        let mut grid = grid.clone();
        let mut notes = Vec::new();
        for axis in [Axis::Place, Axis::Cpus, Axis::Mem] {
            let mut j = 1;
            while j < axis.len(&grid) {
                let mut dropped = false;
                for i in 0..j {
                    match self.same_values(topology, &grid, axis, i, j)? {
                        Sameness::All => {
                            notes.push(format!(
                                "--launcher {self}: {} starts every configuration's ranks as {} \
                                 does on this machine (the same CPUs for each rank and thread, \
                                 the same memory policy): measured once, as {}",
                                axis.name(&grid, j),
                                axis.name(&grid, i),
                                axis.name(&grid, i),
                            ));
                            axis.remove(&mut grid, j);
                            dropped = true;
                            break;
                        }
                        Sameness::Some(a, b) => {
                            return Err(self.refuse(format!(
                                "starts '{a}' and '{b}' the same way on this machine but not every \
                                 configuration of {} and {}: they cannot be one grid value here; \
                                 sweep them separately",
                                axis.name(&grid, i),
                                axis.name(&grid, j),
                            )));
                        }
                        Sameness::None => {}
                    }
                }
                if !dropped {
                    j += 1;
                }
            }
        }
        Ok((grid, notes))
    }

    /// Whether the configurations with value `j` of `axis` start as those with value `i`.
    fn same_values(
        self,
        topology: &Topology,
        grid: &Grid,
        axis: Axis,
        i: usize,
        j: usize,
    ) -> Result<Sameness, ConfigError> {
        let (mut same, mut differ) = (None, false);
        for c in grid
            .configs()
            .into_iter()
            .filter(|c| axis.index(grid, c) == Some(j))
        {
            let mut other = c.clone();
            axis.set(grid, &mut other, i);
            // A configuration the launcher would refuse to start (too many ranks) is not
            // compared: it fails as the launcher fails it.
            let (Ok(a), Ok(b)) = (self.expected(topology, &c), self.expected(topology, &other))
            else {
                continue;
            };
            if a == b {
                same.get_or_insert((other, c));
            } else {
                differ = true;
            }
        }
        Ok(match (same, differ) {
            (None, _) => Sameness::None,
            (Some(_), false) => Sameness::All,
            (Some((a, b)), true) => Sameness::Some(a.to_string(), b.to_string()),
        })
    }

    /// Whether a sweep under this launcher can run here and now: `srun` inside a Slurm
    /// allocation, `numactl` on `PATH` for a grid with memory policies. `--dry-run` does not ask.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Launcher`] saying what is missing.
    pub fn check_here(self, grid: &Grid) -> Result<(), ConfigError> {
        if self == Launcher::Srun && std::env::var_os("SLURM_JOB_ID").is_none_or(|v| v.is_empty()) {
            return Err(self.refuse(
                "runs inside a Slurm allocation (no SLURM_JOB_ID): run coretune inside salloc or \
                 sbatch"
                    .into(),
            ));
        }
        if let Some(mem) = grid.mems.iter().find(|m| !m.is_default()) {
            if crate::program::find_program("numactl").is_err() {
                return Err(self.refuse(format!(
                    "sets --mem {mem} in each rank with numactl, which is not installed"
                )));
            }
        }
        Ok(())
    }

    /// The environment the launcher needs to start here: Open MPI's consent to run as root
    /// when coretune is root.
    pub fn env(self) -> Vec<(&'static str, &'static str)> {
        if self == Launcher::Mpirun && crate::sys::effective_uid() == 0 {
            vec![
                ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
            ]
        } else {
            Vec::new()
        }
    }

    /// The words that make a pasted line start here: `--allow-run-as-root` after `mpirun` when
    /// coretune is root (what [`Launcher::env`] says to coretune's own runs).
    pub fn consent(self) -> Option<&'static str> {
        (self == Launcher::Mpirun && crate::sys::effective_uid() == 0)
            .then_some("--allow-run-as-root")
    }
}

/// How two values of a grid axis compare under a launcher.
enum Sameness {
    /// No configuration starts alike.
    None,
    /// Every configuration that both could start starts alike.
    All,
    /// Some do (these two, as shown), others do not.
    Some(String, String),
}

/// A grid axis whose values a launcher may not tell apart.
#[derive(Clone, Copy)]
enum Axis {
    Place,
    Cpus,
    Mem,
}

impl Axis {
    fn len(self, g: &Grid) -> usize {
        match self {
            Axis::Place => g.places.len(),
            Axis::Cpus => g.cpus.len(),
            Axis::Mem => g.mems.len(),
        }
    }

    /// Value `i` as the command line gives it (`place cores`, `cpus '0-1'`, `mem local`).
    fn name(self, g: &Grid, i: usize) -> String {
        match self {
            Axis::Place => format!("place {}", g.places[i]),
            Axis::Cpus => format!("cpus '{}'", g.cpus[i]),
            Axis::Mem => format!("mem {}", g.mems[i]),
        }
    }

    fn index(self, g: &Grid, c: &Config) -> Option<usize> {
        match self {
            Axis::Place => g.places.iter().position(|&p| p == c.family.place),
            Axis::Cpus => g.cpus.iter().position(|x| *x == c.family.cpus),
            Axis::Mem => g.mems.iter().position(|m| *m == c.family.mem),
        }
    }

    fn set(self, g: &Grid, c: &mut Config, i: usize) {
        match self {
            Axis::Place => c.family.place = g.places[i],
            Axis::Cpus => c.family.cpus = g.cpus[i].clone(),
            Axis::Mem => c.family.mem = g.mems[i].clone(),
        }
    }

    fn remove(self, g: &mut Grid, i: usize) {
        match self {
            Axis::Place => {
                g.places.remove(i);
            }
            Axis::Cpus => {
                g.cpus.remove(i);
            }
            Axis::Mem => {
                g.mems.remove(i);
            }
        }
    }
}

impl FromStr for Launcher {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mpirun" => Ok(Launcher::Mpirun),
            "srun" => Ok(Launcher::Srun),
            other => Err(format!("'{other}' is not a launcher: mpirun or srun")),
        }
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Mpirun => "mpirun",
            Launcher::Srun => "srun",
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::grid::{Cpus, Family};
    use crate::topology::TopologySource;

    fn config(instances: usize, threads: usize, place: Policy, cpus: &str) -> Config {
        Family::new(place)
            .with_cpus(cpus.parse().unwrap_or(Cpus::All))
            .with_instances(instances)
            .at(threads)
    }

    fn topo(synthetic: &str) -> Topology {
        Topology::load(&TopologySource::Synthetic(synthetic.into())).unwrap()
    }

    fn cpus(list: &str) -> CpuSet {
        crate::sys::set_from_indexes(crate::sys::parse_list(list).unwrap())
    }

    #[test]
    fn each_configuration_gets_its_launchers_line() {
        let t = topo("pack:2 numa:1 core:4 pu:2");
        let line = |l: Launcher, c: &Config| l.words(&t, c).unwrap().join(" ");
        let omp = "-x OMP_NUM_THREADS=4 -x OMP_PLACES=cores -x OMP_PROC_BIND=close";
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Cores, "all")),
            format!("mpirun -np 2 --map-by slot:PE=4 --bind-to core {omp}")
        );
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Spread, "all")),
            format!("mpirun -np 2 --map-by numa:PE=4 --bind-to core {omp}")
        );
        assert_eq!(
            line(Launcher::Srun, &config(2, 4, Policy::Cores, "all")),
            "srun --ntasks=2 --cpus-per-task=4 --cpu-bind=cores --distribution=block:block \
             --export=ALL,OMP_NUM_THREADS=4,OMP_PLACES=cores,OMP_PROC_BIND=close"
        );
        let err = Launcher::Mpirun
            .words(&t, &config(2, 4, Policy::RoundRobin, "all"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mpirun has no mapping for --place round-robin"),
            "{err}"
        );
        assert_eq!("srun".parse::<Launcher>(), Ok(Launcher::Srun));
        assert!("mpiexec".parse::<Launcher>().is_err());
    }

    /// Finding 7 (#35): `--place os`, `compact` and `--cpus`, `--mem` reached neither launcher's
    /// line, so rows with different labels ran the same command.
    #[test]
    fn every_dimension_of_a_row_is_in_the_launchers_line() {
        let t = topo("pack:2 numa:1 core:4 pu:2");
        let line = |l: Launcher, c: &Config| l.words(&t, c).unwrap().join(" ");
        // os: no binding, and no OpenMP places either (they would pin every rank's threads on
        // the same first cores).
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 4, Policy::Os, "all")),
            "mpirun -np 2 --map-by slot --bind-to none -x OMP_NUM_THREADS=4"
        );
        assert_eq!(
            line(Launcher::Srun, &config(2, 4, Policy::Os, "all")),
            "srun --ntasks=2 --cpus-per-task=4 --cpu-bind=none --export=ALL,OMP_NUM_THREADS=4"
        );
        // compact: hardware threads, siblings together.
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 2, Policy::Compact, "all")),
            "mpirun -np 2 --map-by slot:PE=2 --use-hwthread-cpus --bind-to hwthread \
             -x OMP_NUM_THREADS=2 -x OMP_PLACES=threads -x OMP_PROC_BIND=close"
        );
        assert!(
            line(Launcher::Srun, &config(2, 2, Policy::Compact, "all"))
                .contains("--cpu-bind=threads --distribution=block:block")
        );
        // --cpus: Open MPI's --cpu-set, in hwloc's logical indexes (of hardware threads
        // unbound, of cores bound one rank per core); Slurm's masks per task.
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 1, Policy::Os, "pu:2-5")),
            "mpirun -np 2 --use-hwthread-cpus --cpu-set 2-5 --bind-to none -x OMP_NUM_THREADS=1"
        );
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 1, Policy::Cores, "core:1-3")),
            "mpirun -np 2 --cpu-set 1-3 --bind-to cpu-list:ordered -x OMP_NUM_THREADS=1 \
             -x OMP_PLACES=cores -x OMP_PROC_BIND=close"
        );
        assert_eq!(
            line(Launcher::Mpirun, &config(2, 1, Policy::Compact, "pu:3-4")),
            "mpirun -np 2 --use-hwthread-cpus --cpu-set 3-4 --bind-to cpu-list:ordered \
             -x OMP_NUM_THREADS=1 -x OMP_PLACES=threads -x OMP_PROC_BIND=close"
        );
        assert_eq!(
            line(Launcher::Srun, &config(2, 2, Policy::Cores, "core:2-5")),
            "srun --ntasks=2 --cpus-per-task=2 --whole --cpu-bind=mask_cpu:0xf0,0xf00 \
             --export=ALL,OMP_NUM_THREADS=2,OMP_PLACES=cores,OMP_PROC_BIND=close"
        );
        // Every CPU, however written, is no --cpu-set at all.
        assert_eq!(
            line(Launcher::Mpirun, &config(1, 1, Policy::Os, "0-15")),
            line(Launcher::Mpirun, &config(1, 1, Policy::Os, "all"))
        );
        // --mem: numactl inside each rank, after the launcher's words.
        let mut c = config(2, 1, Policy::Cores, "all");
        c.family.mem = "local".parse().unwrap();
        assert!(
            line(Launcher::Mpirun, &c).ends_with("-x OMP_PROC_BIND=close numactl --localalloc --"),
            "{}",
            line(Launcher::Mpirun, &c)
        );
        c.family.mem = "interleave".parse().unwrap();
        assert!(line(Launcher::Srun, &c).ends_with(" numactl --interleave=0-1 --"));
    }

    #[test]
    fn what_open_mpi_cannot_say_is_refused_naming_the_value() {
        let t = topo("pack:2 numa:1 core:4 pu:2");
        for (c, says) in [
            (
                config(2, 2, Policy::Cores, "core:0-3"),
                "mpirun cannot bind 2 threads per rank inside --cpus 'core:0-3'",
            ),
            (
                config(2, 1, Policy::Cores, "pu:1-2"),
                "mpirun cannot bind ranks to cores inside --cpus 'pu:1-2': it takes part of core 0",
            ),
            (
                config(2, 1, Policy::Spread, "core:0-3"),
                "mpirun cannot spread ranks inside --cpus 'core:0-3'",
            ),
        ] {
            let err = Launcher::Mpirun.words(&t, &c).unwrap_err().to_string();
            assert!(err.starts_with("--launcher: "), "{err}");
            assert!(err.contains(says), "{err}");
            assert!(!err.contains('\n'), "{err}");
            // Slurm's masks say it.
            Launcher::Srun.words(&t, &c).unwrap();
        }
    }

    #[test]
    fn the_expected_plan_is_each_ranks_cpus_threads_and_policy() {
        let t = topo("pack:2 numa:1 core:4 pu:2");
        let plan = |l: Launcher, c: &Config| {
            l.expected(&t, c)
                .unwrap()
                .into_iter()
                .map(|r| {
                    let threads: Vec<String> = r
                        .threads
                        .iter()
                        .map(|s| format_list(&set_to_vec(s)))
                        .collect();
                    format!("{}:{}", r.rank, threads.join("|"))
                })
                .collect::<Vec<_>>()
        };
        // cores: a core per thread, rank after rank; compact: a hardware thread per thread.
        assert_eq!(
            plan(Launcher::Mpirun, &config(2, 2, Policy::Cores, "all")),
            ["0:0-1|2-3", "1:4-5|6-7"]
        );
        assert_eq!(
            plan(Launcher::Mpirun, &config(2, 2, Policy::Compact, "all")),
            ["0:0|1", "1:2|3"]
        );
        // spread: Open MPI's ranks round-robin over the NUMA nodes; Slurm's tasks' cores
        // round-robin over the sockets.
        assert_eq!(
            plan(Launcher::Mpirun, &config(2, 2, Policy::Spread, "all")),
            ["0:0-1|2-3", "1:8-9|10-11"]
        );
        assert_eq!(
            plan(Launcher::Srun, &config(2, 2, Policy::Spread, "all")),
            ["0:0-1|8-9", "1:2-3|10-11"]
        );
        // os: every rank on the whole set, its threads unpinned.
        let os = Launcher::Mpirun
            .expected(&t, &config(2, 1, Policy::Os, "pu:2-5"))
            .unwrap();
        assert_eq!(os[1].cpus, cpus("2-5"));
        assert_eq!(os[1].threads, vec![cpus("2-5")]);
        // Inside --cpu-set, rank i on the i-th core of the set.
        assert_eq!(
            plan(Launcher::Mpirun, &config(2, 1, Policy::Cores, "core:1-3")),
            ["0:2-3", "1:4-5"]
        );
        // The memory policy is every rank's.
        let mut c = config(2, 1, Policy::Cores, "all");
        c.family.mem = "local".parse().unwrap();
        let ranks = Launcher::Mpirun.expected(&t, &c).unwrap();
        assert!(ranks.iter().all(|r| {
            r.mem
                .as_ref()
                .is_some_and(|m| m.numactl() == "--localalloc")
        }));
        // More ranks than cores: the launcher refuses the run; the plan says so.
        let err = Launcher::Mpirun
            .expected(&t, &config(9, 1, Policy::Cores, "all"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot start 9 ranks of 1 thread on 8 cores"),
            "{err}"
        );
    }

    fn grid(places: &[Policy], cpus: &[&str], mems: &[&str], instances: &[usize]) -> Grid {
        Grid::new(vec![1], places.to_vec())
            .with_cpus(cpus.iter().map(|c| c.parse().unwrap()).collect())
            .with_mems(mems.iter().map(|m| m.parse().unwrap()).collect())
            .with_instances(instances.to_vec())
    }

    /// Finding 7 (#35): on a machine without SMT and with one NUMA node, compact, cores and
    /// spread ran the same ranks on the same CPUs under different labels.
    #[test]
    fn values_that_start_the_same_ranks_are_one_configuration() {
        let t = topo("pack:1 numa:1 core:2 pu:1");
        let places = [Policy::Os, Policy::Compact, Policy::Spread, Policy::Cores];
        let (g, notes) = Launcher::Mpirun
            .check_grid(
                &t,
                &grid(&places, &["all", "0-1"], &["none", "local"], &[2]),
            )
            .unwrap();
        assert_eq!(g.places, [Policy::Os, Policy::Compact]);
        assert_eq!(g.cpus, vec![Cpus::All]);
        assert_eq!(
            g.mems.len(),
            2,
            "a memory policy is set, so it is a value of its own"
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0]
                .contains("place spread starts every configuration's ranks as place compact does"),
            "{notes:?}"
        );
        assert!(
            notes[2].contains("cpus '0-1'") && notes[2].contains("as cpus 'all'"),
            "{notes:?}"
        );
        // No two configurations left have the same line.
        let lines: std::collections::BTreeSet<String> = g
            .configs()
            .iter()
            .map(|c| Launcher::Mpirun.words(&t, c).unwrap().join(" "))
            .collect();
        assert_eq!(lines.len(), g.configs().len());
        // With SMT, compact and cores differ: nothing is dropped.
        let t = topo("pack:1 numa:1 core:2 pu:2");
        let (g, notes) = Launcher::Mpirun
            .check_grid(
                &t,
                &grid(&[Policy::Compact, Policy::Cores], &["all"], &["none"], &[2]),
            )
            .unwrap();
        assert_eq!((g.places.len(), notes.len()), (2, 0));
    }

    #[test]
    fn values_alike_in_part_of_the_grid_are_refused() {
        // Two NUMA nodes: one rank of spread is one rank of cores, two are not.
        let t = topo("pack:2 numa:1 core:2 pu:1");
        let err = Launcher::Mpirun
            .check_grid(
                &t,
                &grid(
                    &[Policy::Spread, Policy::Cores],
                    &["all"],
                    &["none"],
                    &[1, 2],
                ),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "mpirun starts '1 thread, place spread' and '1 thread, place cores' the same way"
            ),
            "{err}"
        );
        // A dimension the launcher cannot say is refused before anything runs.
        let err = Launcher::Mpirun
            .check_grid(&t, &grid(&[Policy::Spread], &["pu:1-2"], &["none"], &[2]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot spread ranks inside --cpus 'pu:1-2'"),
            "{err}"
        );
    }
}
