//! The [`Runner`]: a target prepared once (a workload built, a program found and inspected),
//! the checks made before a sweep, and one run of a configuration with its audit — the run
//! itself is one of the modes of the sibling files.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::placeholders::{misspelt_placeholder, substitute, substitute_copy};
use crate::cpuset::Warning;
use crate::grid::{Config, ConfigError, Family, Grid, MachineCounts};
use crate::memory::MemPlan;
use crate::placement::{Binding, Placement};
use crate::program;
use crate::program::pin::{self, PerThread, PinLog, PinRecord, ProgramInfo};
use crate::program::server::Ready;
use crate::program::watch::{Monitor, Sample};
use crate::program::{Audit, Placed};
use crate::sweep::RankPlan;
use crate::sweep::objective::MetricSource;
use crate::sweep::target::{RunSettings, ServerSettings, Target};
use crate::sweep::{Outcome, RunLine, SweepError};
use crate::sys::{format_list, set_to_vec};
use crate::topology::Topology;
use crate::workload::DynWorkload;

/// What one call of [`Runner::run`] produced.
#[derive(Debug)]
pub struct RunResult {
    /// How the run ended.
    pub outcome: Outcome,
    /// The monitor's samples during the run (empty when not monitoring).
    pub monitor: Vec<Sample>,
}

/// A prepared target.
pub(super) enum Prepared {
    Builtin(Arc<dyn DynWorkload>),
    Command {
        argv: Vec<String>,
        shell: bool,
        prepare: Option<String>,
        /// The program's file as inspected for the pinning library (`None` when its name has
        /// a placeholder: inspected per run).
        program: Option<ProgramInfo>,
        /// The pinning library, or why it is not there.
        library: Result<PathBuf, String>,
        /// A server's readiness test and client (`--server`), checked.
        server: Option<Box<(ServerSettings, Ready)>>,
    },
}

impl Prepared {
    fn is_server(&self) -> bool {
        matches!(
            self,
            Prepared::Command {
                server: Some(_),
                ..
            }
        )
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Prepared::Builtin(w) => write!(f, "Builtin({})", w.name()),
            Prepared::Command { argv, shell, .. } => write!(f, "Command({argv:?}, shell {shell})"),
        }
    }
}

/// Makes runs of one target on one machine.
#[derive(Debug)]
pub struct Runner<'t> {
    pub(super) topology: &'t Topology,
    target: Target,
    pub(super) prepared: Prepared,
    pub(super) settings: RunSettings,
    pub(super) machine: MachineCounts,
    /// `--show-output`: a program's output goes to coretune's (else stdout is dropped and the
    /// end of stderr kept for a failed run's record).
    pub(super) show_output: bool,
    /// `--metric-from` files that were absent before one of this runner's runs: whatever is
    /// there afterwards is that run's, the only kind of file coretune removes between runs.
    own_metric_files: std::sync::Mutex<std::collections::BTreeSet<PathBuf>>,
}

impl<'t> Runner<'t> {
    /// Prepares `target` for runs on `topology` (the live machine: runs bind threads). A
    /// workload is built (its inputs generated, its reference answer computed) and its
    /// description filled in; a program is looked up, so that a missing one is refused before
    /// anything runs.
    ///
    /// # Errors
    ///
    /// [`SweepError::Workload`] for an unknown workload or a bad parameter,
    /// [`SweepError::Launch`] for a program that is not there or not executable, and
    /// [`SweepError::NoCommand`] for an empty command.
    pub fn new(
        topology: &'t Topology,
        target: Target,
        settings: RunSettings,
        machine: MachineCounts,
    ) -> Result<Self, SweepError> {
        let (target, prepared) = match target {
            Target::Workload { spec, .. } => {
                let workload: Arc<dyn DynWorkload> =
                    Arc::from(crate::sweep::target::build_workload(&spec, topology)?);
                (
                    Target::Workload {
                        description: workload.describe(),
                        spec,
                    },
                    Prepared::Builtin(workload),
                )
            }
            Target::Command { argv, shell } => {
                let Some(program) = argv.first() else {
                    return Err(SweepError::NoCommand);
                };
                if let Some((arg, name, known)) = misspelt_placeholder(&argv) {
                    return Err(SweepError::Placeholder { arg, name, known });
                }
                // A placeholder in the program's own name is resolved per run; `sh` runs a
                // shell command.
                let inspected = if shell {
                    program::find_program(&program::shell_program())
                        .ok()
                        .map(|p| pin::inspect_program(&p))
                } else if program.contains('{') {
                    None
                } else {
                    match program::find_program(program) {
                        Ok(path) => Some(pin::inspect_program(&path)),
                        // `-- 'sort -n f | wc -l'`: a whole command line in one word.
                        Err(program::LaunchError::CommandNotFound { .. })
                            if program.trim().contains(char::is_whitespace) =>
                        {
                            return Err(SweepError::WholeCommandLine {
                                program: program.clone(),
                            });
                        }
                        Err(e) => return Err(e.into()),
                    }
                };
                (
                    Target::Command {
                        argv: argv.clone(),
                        shell,
                    },
                    Prepared::Command {
                        argv,
                        shell,
                        prepare: settings.prepare.clone(),
                        program: inspected,
                        library: pin::find_library(),
                        server: settings
                            .server
                            .clone()
                            .map(|s| s.ready.parse().map(|ready| Box::new((s, ready))))
                            .transpose()?,
                    },
                )
            }
        };
        Ok(Self {
            topology,
            target,
            prepared,
            settings,
            machine,
            show_output: false,
            own_metric_files: std::sync::Mutex::default(),
        })
    }

    /// Lets each run's program write to coretune's own stdout and stderr (`tune --show-output`,
    /// as hyperfine's), for finding out why runs fail; a failed run then keeps no stderr tail.
    #[must_use]
    pub fn show_output(mut self, show: bool) -> Self {
        self.show_output = show;
        self
    }

    /// The target, with a workload's description filled in.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The settings every run uses.
    pub fn settings(&self) -> &RunSettings {
        &self.settings
    }

    /// The machine counts `cores`/`pus` values resolve against.
    pub fn machine(&self) -> MachineCounts {
        self.machine
    }

    /// The workload's own description of this instance (`None` for a program).
    pub fn describe(&self) -> Option<String> {
        match &self.prepared {
            Prepared::Builtin(w) => Some(w.describe()),
            Prepared::Command { .. } => None,
        }
    }

    /// The grid to sweep when the user names no axis: the workload's own defaults, or
    /// [`Grid::default_for`] for a program.
    pub fn default_grid(&self) -> Grid {
        match &self.prepared {
            Prepared::Builtin(w) => w.default_grid(self.machine),
            Prepared::Command { .. } => Grid::default_for(self.machine),
        }
    }

    /// The thread count of one run when the user gives none: the workload's own (`sum`: 64),
    /// else the PUs this process may use.
    pub fn default_threads(&self) -> usize {
        match &self.prepared {
            Prepared::Builtin(w) => w.default_threads().unwrap_or(self.machine.pus),
            Prepared::Command { .. } => self.machine.pus,
        }
    }

    /// Checks, before anything runs, that a program whose own name holds a placeholder
    /// (`./bench-{threads}`) exists for every thread count and placement of `grid`, and that
    /// nothing answers yet at a server's readiness address.
    ///
    /// # Errors
    ///
    /// The first program name that does not resolve, as [`program::find_program`] says;
    /// [`SweepError::Server`] for a port already taken.
    pub fn check_program(&self, grid: &Grid) -> Result<(), SweepError> {
        if let Prepared::Command {
            server: Some(server),
            ..
        } = &self.prepared
            && let Some(taken) = crate::program::server::port_taken(&server.1)
        {
            return Err(taken.into());
        }
        let Prepared::Command {
            argv, shell: false, ..
        } = &self.prepared
        else {
            return Ok(());
        };
        let Some(program) = argv.first().filter(|p| p.contains('{')) else {
            return Ok(());
        };
        for &threads in &grid.threads {
            for &place in &grid.places {
                let c = Config::new(threads, place);
                let cpus =
                    crate::sys::format_list(&crate::sys::set_to_vec(&self.topology.cpuset()));
                program::find_program(&substitute(program, &c, &cpus))?;
            }
        }
        Ok(())
    }

    /// Checks, before anything runs, that no `--metric-from` file of any configuration (or
    /// instance) of `grid` exists yet: coretune removes the file between runs so that an old
    /// figure never passes for a new one, and removes only what its own runs wrote, so a file
    /// already there — the user's — is refused. For a resumed sweep, `lines` are the runs in
    /// its log: a file at the path of a configuration that has runs there is taken for the last
    /// one's (and removed before its next run); a file at any other path is refused as for a new
    /// sweep, including one the run in flight wrote before a hard kill (second Ctrl-C,
    /// SIGKILL) when it was its configuration's first.
    ///
    /// # Errors
    ///
    /// [`SweepError::MetricFileExists`] naming the first such file.
    pub fn check_metric_files(&self, grid: &Grid, lines: &[RunLine]) -> Result<(), SweepError> {
        let ran: std::collections::BTreeSet<&Config> = lines.iter().map(|l| &l.config).collect();
        let mut own = self
            .own_metric_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for c in &ran {
            own.extend(self.metric_paths(c));
        }
        for c in grid.configs().iter().filter(|c| !ran.contains(c)) {
            for path in self.metric_paths(c) {
                if !own.contains(&path) && std::fs::symlink_metadata(&path).is_ok() {
                    return Err(SweepError::MetricFileExists { path });
                }
            }
        }
        Ok(())
    }

    /// The `--metric-from` files a run of `c` reads, one per instance, as the run names them
    /// (a launcher's one command, a server's one client: one).
    fn metric_paths(&self, c: &Config) -> Vec<PathBuf> {
        let names: Vec<&str> = self
            .settings
            .metrics
            .iter()
            .filter_map(|m| match &m.from {
                MetricSource::File(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            return Vec::new();
        }
        let one = self.settings.launcher.is_some() || self.prepared.is_server();
        let placements = if self.settings.launcher.is_some() && !self.prepared.is_server() {
            let whole = Family {
                place: crate::placement::Policy::Os,
                instances: 1,
                ..c.family.clone()
            }
            .at(c.threads);
            whole
                .placement(self.topology, self.settings.binding)
                .map(|p| vec![p])
        } else {
            c.placements(self.topology, self.settings.binding)
        };
        let Ok(placements) = placements else {
            return Vec::new();
        };
        let take = if one { 1 } else { placements.len() };
        let mut out = Vec::new();
        for (k, p) in placements.iter().take(take).enumerate() {
            let cpus = format_list(&set_to_vec(&p.union()));
            for name in &names {
                out.push(PathBuf::from(substitute_copy(name, c, &cpus, k)));
            }
        }
        out
    }

    /// Makes way for a run's `--metric-from` file at `path`: a file there that one of this
    /// runner's runs wrote is removed, any other is left alone and fails the run; the path is
    /// then this runner's, for after the run.
    pub(super) fn clear_metric_file(&self, path: &std::path::Path) -> Result<(), String> {
        let mut own = self
            .own_metric_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if std::fs::symlink_metadata(path).is_ok() {
            if !own.contains(path) {
                return Err(format!(
                    "--metric-from {}: the file is there and no run of this sweep wrote it: \
                     left alone (coretune removes only its own runs' files)",
                    path.display()
                ));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("--metric-from {}: {e}", path.display()))?;
        }
        own.insert(path.to_path_buf());
        Ok(())
    }

    /// Checks every CPU set of `grid` on this topology before anything runs, and returns the
    /// warnings each one raises (CPU 0 included, SMT siblings split, ...).
    ///
    /// # Errors
    ///
    /// The first CPU set that does not resolve here.
    pub fn check(&self, grid: &Grid) -> Result<Vec<(String, Warning)>, ConfigError> {
        // The CPU sets and memory policies, as `--dry-run` checks them too.
        let warnings = grid.check(self.topology)?;
        let client_cpus = match &self.prepared {
            Prepared::Command {
                server: Some(server),
                ..
            } => server.0.client_cpus.as_deref(),
            _ => None,
        };
        if self.prepared.is_server() && grid.has_instances() {
            return Err(ConfigError::Instances(
                "a server cannot run as several instances: each copy would need its own port \
                 (run one sweep per instance count, or start the copies from a --server script)"
                    .into(),
            ));
        }
        if let Some(expr) = client_cpus {
            let cpus: crate::grid::Cpus = expr.parse().map_err(ConfigError::ClientCpus)?;
            cpus.resolve(self.topology)
                .map_err(ConfigError::ClientCpus)?;
        }
        Ok(warnings)
    }

    /// The warning to show before a sweep of `grid` whose pinned placements cannot reach the
    /// program's threads one by one (a static, set-ID or Go program, or no pinning library):
    /// they then fall back to OpenMP's places or the process CPU set, and every run records so.
    pub fn pinning_warning(&self, grid: &Grid) -> Option<String> {
        let (program, library) = self.pinned_program(grid)?;
        if program.pool {
            // Placed all the same: `pinning_note` says how.
            return None;
        }
        pin::fallback(program, library).map(|(_, w)| w)
    }

    /// Who places which threads, to show before a sweep of `grid` with pinned placements,
    /// when the program builds its coretune-pool from the environment ([`pin::pool_note`]).
    pub fn pinning_note(&self, grid: &Grid) -> Option<String> {
        let (program, library) = self.pinned_program(grid)?;
        pin::pool_note(program, library)
    }

    /// The program and the pinning library found, when `grid` places a program's threads one
    /// by one (a pinned placement, not `--bind shared`).
    fn pinned_program(
        &self,
        grid: &Grid,
    ) -> Option<(&ProgramInfo, Result<&std::path::Path, &str>)> {
        let Prepared::Command {
            program: Some(program),
            library,
            ..
        } = &self.prepared
        else {
            return None;
        };
        let pinned = grid.places.iter().any(|p| p.is_pinned());
        if !pinned || self.settings.binding == Binding::Shared {
            return None;
        }
        Some((program, library.as_deref().map_err(String::as_str)))
    }

    /// How a pinned placement reaches the program of a run, decided before it starts (`None`
    /// for a built-in workload or an unpinned placement).
    fn per_thread(&self, config: &Config, placement: &Placement) -> Option<PerThread> {
        let Prepared::Command {
            argv,
            shell,
            program,
            library,
            ..
        } = &self.prepared
        else {
            return None;
        };
        if !placement.is_pinned() {
            return None;
        }
        let inspected;
        let program = match program {
            Some(p) => p,
            None => {
                let cpus = format_list(&set_to_vec(&placement.union()));
                let name = substitute(&argv[0], config, &cpus);
                let path = if *shell {
                    program::shell_program()
                } else {
                    name
                };
                inspected = program::find_program(&path)
                    .map(|p| pin::inspect_program(&p))
                    .unwrap_or(ProgramInfo {
                        path: path.into(),
                        obstacle: None,
                        openmp: None,
                        pool: false,
                    });
                &inspected
            }
        };
        Some(pin::per_thread(
            program,
            library.as_deref().map_err(String::as_str),
            placement,
            self.settings.skip,
        ))
    }

    /// The variables coretune sets for the runs of `grid`, as `sweep.json` records them: name
    /// → value where every configuration gets the same, `None` where it varies (a built-in
    /// workload sets none). Made by the code that sets them for a run ([`program::placed_env`]).
    pub fn env_set(&self, grid: &Grid) -> BTreeMap<String, Option<String>> {
        if matches!(self.prepared, Prepared::Builtin(_)) {
            return BTreeMap::new();
        }
        let mut each: Vec<BTreeMap<String, String>> = Vec::new();
        for c in grid.configs() {
            // Under a launcher the run is one command on the configuration's whole set.
            let launched = self.settings.launcher.is_some() && !self.prepared.is_server();
            let whole = Family {
                place: crate::placement::Policy::Os,
                instances: 1,
                ..c.family.clone()
            }
            .at(c.threads);
            let placements = if launched {
                whole
                    .placement(self.topology, self.settings.binding)
                    .map(|p| vec![p])
            } else {
                c.placements(self.topology, self.settings.binding)
            };
            for p in placements.iter().flatten() {
                let per_thread = if launched {
                    None
                } else {
                    self.per_thread(&c, p)
                };
                let mut env: BTreeMap<String, String> =
                    program::placed_env(c.threads, Some(p), per_thread.as_ref())
                        .into_iter()
                        .collect();
                if let Some(launcher) = self.settings.launcher {
                    env.extend(
                        launcher
                            .env()
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v.to_owned())),
                    );
                }
                each.push(env);
            }
        }
        let mut out: BTreeMap<String, Option<String>> = BTreeMap::new();
        for name in each.iter().flat_map(BTreeMap::keys) {
            let mut values = each.iter().map(|e| e.get(name));
            let first = values.next().flatten();
            let same = first.is_some() && values.all(|v| v == first);
            out.insert(name.clone(), first.filter(|_| same).cloned());
        }
        out
    }

    /// Makes one run of `config` — of each of its instances at once, each on its own part of the
    /// CPUs ([`Config::placements`]) — and audits it: every program it started is checked
    /// against the configuration ([`Placed::audit`]: where each thread of each process ran, the
    /// memory policy each process had), what it left running is ended and named, a built-in
    /// workload's workers check their own CPUs and policy. What was checked, and any mismatch
    /// (which makes the run count as [`super::super::Status::Mismatch`]), is in the record.
    pub fn run(&self, config: &Config) -> RunResult {
        let failed = |e: String| RunResult {
            outcome: Outcome::Failed(e),
            monitor: Vec::new(),
        };
        let launcher = match (self.settings.launcher, &self.prepared) {
            (Some(launcher), Prepared::Command { server: None, .. }) => Some(launcher),
            _ => None,
        };
        let placements = if launcher.is_some() {
            Vec::new()
        } else {
            match config.placements(self.topology, self.settings.binding) {
                Ok(p) => p,
                Err(e) => return failed(e.to_string()),
            }
        };
        let per_thread: Vec<Option<PerThread>> = placements
            .iter()
            .map(|p| self.per_thread(config, p))
            .collect();
        let program = !matches!(self.prepared, Prepared::Builtin(_));
        let policies = program && !config.family.mem.is_default();
        let audited = program && (config.is_restricted() || policies || launcher.is_some());
        let monitor = match (self.settings.monitor, audited) {
            (Some(every), _) => {
                Monitor::start_with(every.max(Duration::from_millis(1)), false, policies).ok()
            }
            (None, true) => Monitor::start_audit(CHECK_EVERY, policies).ok(),
            (None, false) => None,
        };
        let mut started = Started::default();
        let mut outcome = match (&self.prepared, launcher) {
            (Prepared::Builtin(w), _) => self.run_builtin(w, config, &placements, &mut started),
            (
                Prepared::Command {
                    argv,
                    shell,
                    prepare,
                    ..
                },
                Some(launcher),
            ) => self.run_launched(
                launcher,
                argv,
                *shell,
                prepare.as_deref(),
                config,
                &mut started,
            ),
            (
                Prepared::Command {
                    argv,
                    server: Some(server),
                    ..
                },
                None,
            ) => self.run_server(
                &argv[0],
                server,
                config,
                &placements[0],
                per_thread[0].as_ref(),
                &mut started,
            ),
            (
                Prepared::Command {
                    argv,
                    shell,
                    prepare,
                    ..
                },
                None,
            ) => self.run_command(
                argv,
                *shell,
                prepare.as_deref(),
                config,
                &placements,
                &per_thread,
                &mut started,
            ),
        };
        let (mut samples, cost) = monitor.map(Monitor::finish_with_cost).unwrap_or_default();
        if let Outcome::Done(record) = &mut outcome {
            record.sampler = cost;
            let (pinning, audit) = started.audit(&samples);
            record.pinning = pinning.map(Box::new);
            if !audit.checked.is_empty() || !audit.is_clean() {
                record.audit = Some(Box::new(audit));
            }
        }
        // A server's monitor samples are the server's: its client runs beside it.
        if let (Some(server), true) = (started.programs.first(), self.prepared.is_server()) {
            let id = i32::try_from(server.id()).ok();
            for s in &mut samples {
                s.threads.retain(|t| t.tree == id);
            }
        }
        RunResult {
            outcome,
            monitor: if self.settings.monitor.is_some() {
                samples
            } else {
                Vec::new()
            },
        }
    }

    /// Configuration `c`'s memory policy resolved near its CPUs (`None` when it sets none), or
    /// why it does not apply here.
    pub(super) fn mem_plan(
        &self,
        c: &Config,
        placement: &Placement,
    ) -> Result<Option<MemPlan>, String> {
        let Some(policy) = c.family.mem.policy() else {
            return Ok(None);
        };
        policy
            .plan(self.topology, &placement.union(), false)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// What to say before a sweep whose grid sets memory policies on a machine where they
    /// change nothing (one NUMA node).
    pub fn mem_note(&self, grid: &Grid) -> Option<String> {
        let mem = grid.mems.iter().find(|m| !m.is_default())?;
        (self.topology.numa_nodes().len() <= 1).then(|| {
            format!(
                "--mem {mem}: this machine has one NUMA node, so the memory policies of the grid \
                 place pages where the OS would: they are measured, and should tie"
            )
        })
    }
}

/// What a run's mode hands back besides its outcome: the programs it started (ended by now),
/// whose samples are checked once the run is over, and what it checked itself.
#[derive(Debug, Default)]
pub(super) struct Started {
    /// The configuration's programs: each copy, the server, the launcher.
    pub(super) programs: Vec<Placed>,
    /// What the mode checked (a server's listener, what was left running, a built-in
    /// workload's workers) and found.
    pub(super) audit: Audit,
    /// Under `mpirun`: what each rank was to get.
    pub(super) ranks: Option<Vec<RankPlan>>,
}

impl Started {
    /// The audit of the run from its `samples`: each program's own (the threads of its tree),
    /// added to what the mode found; the per-thread records of the programs added up.
    fn audit(&mut self, samples: &[Sample]) -> (Option<PinRecord>, Audit) {
        let mut audit = std::mem::take(&mut self.audit);
        let mut pinning: Option<PinRecord> = None;
        for program in &self.programs {
            let id = i32::try_from(program.id()).ok();
            let mine: Vec<Sample> = samples
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    s.threads.retain(|t| t.tree == id);
                    let pids: std::collections::BTreeSet<i32> =
                        s.threads.iter().map(|t| t.pid).collect();
                    s.policies.retain(|pid, _| pids.contains(pid));
                    s
                })
                .collect();
            let (record, found) = program.audit(&mine);
            audit.merge(found);
            match (&mut pinning, record) {
                (None, record) => pinning = record,
                (Some(total), Some(record)) => {
                    total.threads_seen += record.threads_seen;
                    total.processes_seen += record.processes_seen;
                    total.off_place.extend(record.off_place);
                }
                (Some(_), None) => {}
            }
        }
        if let (Some(plans), Some(launcher)) = (&self.ranks, self.programs.first())
            && let Some(log) = launcher.pin_log()
        {
            audit.merge(ranks_audit(plans, &log, samples));
        }
        (pinning, audit)
    }
}

/// Each MPI rank of the launcher's tree against its plan, from what the pinning library logged
/// as the rank's image started (`log`): before the rank's own start-up can move anything
/// (Open MPI's `MPI_Init` runs hwloc's x86 discovery, which binds the rank's main thread to each
/// PU in turn), the CPUs the launcher bound it to — all of its planned CPUs, and only those,
/// when bound; within them when not — and (sampled) its memory policy.
fn ranks_audit(plans: &[RankPlan], log: &PinLog, samples: &[Sample]) -> Audit {
    let mut audit = Audit::default();
    let logged = log.ranks();
    let described: Vec<String> = plans
        .iter()
        .map(|p| format!("rank {}: {}", p.rank, format_list(&set_to_vec(&p.cpus))))
        .collect();
    let seen: std::collections::BTreeSet<usize> = logged.iter().map(|r| r.rank).collect();
    audit.checked.push(format!(
        "each rank started on its CPUs ({}; {} of {} seen start)",
        described.join(", "),
        seen.len(),
        plans.len()
    ));
    for r in &logged {
        let Some(plan) = plans.get(r.rank) else {
            audit.mismatches.push(format!(
                "pid {} is rank {}, beyond the {} planned",
                r.pid,
                r.rank,
                crate::sys::counted(plans.len(), "rank")
            ));
            continue;
        };
        let planned = set_to_vec(&plan.cpus);
        let fits = if plan.bound {
            r.cpus == planned
        } else {
            r.cpus.iter().all(|c| planned.contains(c))
        };
        if !fits {
            audit.mismatches.push(format!(
                "rank {} (pid {}) started on CPUs {}, not {} its CPUs {}",
                r.rank,
                r.pid,
                format_list(&r.cpus),
                if plan.bound { "bound to" } else { "within" },
                format_list(&planned)
            ));
        }
    }
    let wanted: Vec<(usize, String)> = plans
        .iter()
        .filter_map(|p| Some((p.rank, p.mem.as_ref()?.numa_maps_word())))
        .collect();
    if !wanted.is_empty() {
        audit
            .checked
            .push("each rank's memory policy (numa_maps)".to_owned());
        let ranks: BTreeMap<i32, usize> = logged.iter().map(|r| (r.pid, r.rank)).collect();
        for s in samples {
            for (pid, policy) in &s.policies {
                let Some(&rank) = ranks.get(pid) else {
                    continue;
                };
                if let Some((_, want)) = wanted.iter().find(|(r, _)| *r == rank)
                    && policy != want
                {
                    audit.mismatches.push(format!(
                        "rank {rank} (pid {pid}) has memory policy {policy}, not {want}"
                    ));
                }
            }
        }
    }
    audit
}

/// How often a run with something to check is sampled when `--monitor` does not say: often
/// enough to see every thread of a run of a second several times, rarely enough to cost
/// nothing measurable (one `/proc/PID/task/*/stat` pass per sample; BENCHMARKS.md).
const CHECK_EVERY: Duration = Duration::from_millis(50);
