//! Running one configuration: the [`Runner`] prepares a target once (builds the workload, finds
//! the program) and then makes one run of it per call, measured the same way whether the run
//! belongs to a sweep or to `coretune bench`.
//!
//! - A **built-in workload** runs in this process, on the workers of a coretune pool built with
//!   the configuration's placement (worker `i` pinned to thread `i`'s CPUs, stealing from the
//!   others nearest first: [`crate::Placement::pool_builder`]'s data) and throttle (a fresh one per run,
//!   so an adaptive throttle's climb is part of every run's time). With a timeout the run happens
//!   on a thread of its own; a run that exceeds it cannot be stopped inside the process, so it is
//!   [`Outcome::Abandoned`]: logged as timed out, and the sweep stops (the caller exits, which
//!   ends the stuck thread; `--resume` continues).
//! - An **external program** is a child process: `{threads}`, `{cpus}`, `{place}` and `{mem}`
//!   substituted into its arguments, the thread-count variables of
//!   [`crate::program::thread_env`] set, the process CPU set applied before `exec` when the
//!   configuration pins or restricts, its memory policy set likewise, stdio closed (its stdout
//!   kept in an unnamed file when a metric is read there), killed at the timeout. A server
//!   (`--server`) is started, loaded by its client once it is ready, and stopped: see
//!   `Runner::run_server`. A non-zero exit is a failed run; one ended by SIGINT or
//!   SIGTERM is a sweep being stopped ([`Outcome::Stopped`]), not a measurement. A pinned
//!   placement reaches its threads one by one through the preloaded pinning library where it
//!   can (see [`crate::pin`]; the program is inspected once, when the runner is made, and
//!   [`Runner::pinning_warning`] says before the sweep when it falls back to OpenMP's places or
//!   the process CPU set). Every such run samples where the program's threads run (every
//!   50 ms, or at `--monitor`'s interval) and records the mechanism and any thread seen outside
//!   its place in [`RunRecord::pinning`].
//!
//! - **Several instances** (`--instances`): the configuration's CPUs are split as hwloc-distrib
//!   splits them ([`Config::placements`]), and a built-in workload runs a pool per part at once
//!   ([`run_copies`]), a program a copy per part (`{instance}`, its own `{cpus}`, placement and
//!   memory policy), waited for together; the run is the slowest copy's time, and a copy that
//!   fails fails it.
//! - **Under a launcher** (`--launcher mpirun|srun`): the launcher's command line for the
//!   configuration ([`super::Launcher::words`]) is put before the program's, and that one
//!   command is the run.
//!
//! With [`RunSettings::monitor`] a background sampler records per-CPU utilisation and every
//! thread's CPU during the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;

use super::objective::{MetricSource, read_metrics};
use super::target::{RunSettings, ServerSettings, Target};
use super::{Outcome, RunLine, SweepError};
use crate::cpuset::Warning;
use crate::grid::{Config, ConfigError, Grid, MachineCounts};
use crate::measure::ChildProbe;
use crate::memory::MemPlan;
use crate::placement::{Binding, Placement};
use crate::program;
use crate::program::pin::{self, PerThread, ProgramInfo};
use crate::program::server::{Ready, Server, file_tail};
use crate::program::watch::{Monitor, Sample};
use crate::sys::format_list;
use crate::sys::set_to_vec;
use crate::topology::Topology;
use crate::workload::{RunConfig, RunRecord, Unit, Work, Workload, run_copies};

/// What one call of [`Runner::run`] produced.
#[derive(Debug)]
pub struct RunResult {
    /// How the run ended.
    pub outcome: Outcome,
    /// The monitor's samples during the run (empty when not monitoring).
    pub monitor: Vec<Sample>,
}

/// A prepared target.
enum Prepared {
    Builtin(Arc<dyn Workload>),
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
    topology: &'t Topology,
    target: Target,
    prepared: Prepared,
    settings: RunSettings,
    machine: MachineCounts,
    /// `--show-output`: a program's output goes to coretune's (else stdout is dropped and the
    /// end of stderr kept for a failed run's record).
    show_output: bool,
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
                let llc = topology.last_level_cache_bytes().unwrap_or(32 << 20);
                let workload: Arc<dyn Workload> = Arc::from(crate::workload::build(&spec, llc)?);
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
    /// (`./bench-{threads}`) exists for every thread count and placement of `grid`.
    ///
    /// # Errors
    ///
    /// The first program name that does not resolve, as [`program::find_program`] says.
    pub fn check_program(&self, grid: &Grid) -> Result<(), SweepError> {
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
                let c = Config {
                    threads,
                    place,
                    cpus: crate::grid::Cpus::All,
                    throttle: crate::grid::ThrottleSpec::None,
                    mem: crate::grid::Mem::Default,
                    instances: 1,
                };
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
            let whole = Config {
                instances: 1,
                place: crate::placement::Policy::Os,
                ..c.clone()
            };
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
    fn clear_metric_file(&self, path: &std::path::Path) -> Result<(), String> {
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
        let mut warnings = Vec::new();
        for cpus in &grid.cpus {
            let (_, w) = cpus
                .resolve(self.topology)
                .map_err(|error| ConfigError::Cpus {
                    cpus: cpus.to_string(),
                    error,
                })?;
            warnings.extend(w.into_iter().map(|w| (cpus.to_string(), w)));
        }
        for mem in &grid.mems {
            if let Some(policy) = mem.policy() {
                policy
                    .plan(self.topology, &self.topology.cpuset(), false)
                    .map_err(ConfigError::Mem)?;
            }
        }
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
    /// workload sets none). Made by the code that sets them for a run (`placed_env`).
    pub fn env_set(&self, grid: &Grid) -> BTreeMap<String, Option<String>> {
        if matches!(self.prepared, Prepared::Builtin(_)) {
            return BTreeMap::new();
        }
        let mut each: Vec<BTreeMap<String, String>> = Vec::new();
        for c in grid.configs() {
            // Under a launcher the run is one command on the configuration's whole set.
            let launched = self.settings.launcher.is_some() && !self.prepared.is_server();
            let whole = Config {
                instances: 1,
                place: crate::placement::Policy::Os,
                ..c.clone()
            };
            let placements = if launched {
                whole
                    .placement(self.topology, self.settings.binding)
                    .map(|p| vec![p])
            } else {
                c.placements(self.topology, self.settings.binding)
            };
            for p in placements.iter().flatten() {
                let mut cmd = Command::new("true");
                let per_thread = if launched {
                    None
                } else {
                    self.per_thread(&c, p)
                };
                placed_env(&mut cmd, &c, p, per_thread.as_ref());
                if let Some(launcher) = self.settings.launcher {
                    cmd.envs(launcher.env());
                }
                each.push(
                    cmd.get_envs()
                        .filter_map(|(k, v)| {
                            Some((
                                k.to_string_lossy().into_owned(),
                                v?.to_string_lossy().into_owned(),
                            ))
                        })
                        .collect(),
                );
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

    /// Makes one run of `config`: of each of its instances at once, each on its own part of
    /// the CPUs ([`Config::placements`]).
    pub fn run(&self, config: &Config) -> RunResult {
        if let (
            Some(launcher),
            Prepared::Command {
                argv,
                shell,
                prepare,
                server: None,
                ..
            },
        ) = (self.settings.launcher, &self.prepared)
        {
            return RunResult {
                outcome: self.run_launched(launcher, argv, *shell, prepare.as_deref(), config),
                monitor: Vec::new(),
            };
        }
        let placements = match config.placements(self.topology, self.settings.binding) {
            Ok(p) => p,
            Err(e) => {
                return RunResult {
                    outcome: Outcome::Failed(e.to_string()),
                    monitor: Vec::new(),
                };
            }
        };
        let per_thread: Vec<Option<PerThread>> = placements
            .iter()
            .map(|p| self.per_thread(config, p))
            .collect();
        let checked = per_thread.iter().any(Option::is_some);
        let monitor = match (self.settings.monitor, checked) {
            (Some(every), _) => Monitor::start_self(every.max(Duration::from_millis(1))).ok(),
            (None, true) => Monitor::start_self_threads(CHECK_EVERY).ok(),
            (None, false) => None,
        };
        // The processes whose threads are the configuration's: a server's (its client runs
        // beside it), or each instance's program.
        let mut pids: Option<Vec<u32>> = None;
        let mut outcome = match &self.prepared {
            Prepared::Builtin(w) => self.run_builtin(w, config, &placements),
            Prepared::Command {
                argv,
                server: Some(server),
                ..
            } => self.run_server(
                &argv[0],
                server,
                config,
                &placements[0],
                per_thread[0].as_ref(),
                &mut pids,
            ),
            Prepared::Command {
                argv,
                shell,
                prepare,
                ..
            } => self.run_command(
                argv,
                *shell,
                prepare.as_deref(),
                config,
                &placements,
                &per_thread,
                &mut pids,
            ),
        };
        let mut samples = monitor.map(Monitor::finish).unwrap_or_default();
        if let (Some(pids), true) = (&pids, self.prepared.is_server()) {
            for s in &mut samples {
                s.threads
                    .retain(|t| u32::try_from(t.pid).is_ok_and(|p| pids.contains(&p)));
            }
        }
        if let (Outcome::Done(record), true) = (&mut outcome, checked) {
            record.pinning =
                check_instances(&samples, pids.as_deref(), &per_thread, &placements).map(Box::new);
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

    /// One run of a program under `launcher` (`--launcher`): the launcher's command line for
    /// `c` before the program's, started once on the configuration's CPUs (the launcher maps and
    /// binds its ranks within them) and timed whole, as one program's run.
    fn run_launched(
        &self,
        launcher: super::Launcher,
        argv: &[String],
        shell: bool,
        prepare: Option<&str>,
        c: &Config,
    ) -> Outcome {
        let mut words = match launcher.words(self.topology, c) {
            Ok(w) => w,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        if shell {
            words.extend(["sh".to_owned(), "-c".to_owned(), argv.join(" ")]);
        } else {
            words.extend(argv.iter().cloned());
        }
        let whole = Config {
            instances: 1,
            place: crate::placement::Policy::Os,
            ..c.clone()
        };
        let placement = match whole.placement(self.topology, self.settings.binding) {
            Ok(p) => p,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        self.run_command(&words, false, prepare, c, &[placement], &[None], &mut None)
    }

    /// One run of a built-in workload: a pool per instance, each on its part's CPUs with its
    /// own throttle and memory policy, run at once ([`run_copies`]).
    fn run_builtin(&self, w: &Arc<dyn Workload>, c: &Config, placements: &[Placement]) -> Outcome {
        let mut copies = Vec::with_capacity(placements.len());
        for placement in placements {
            // A memory policy is each worker's own (set_mempolicy is per thread), set before it
            // touches its data: a workload's pages are first touched by their workers.
            let start_hook = match self.mem_plan(c, placement) {
                Ok(None) => None,
                Ok(Some(plan)) => {
                    let hook: crate::workload::StartHook = Arc::new(move |_| {
                        // Checked when the plan was made; a refusal here leaves the OS's default.
                        let _ = plan.apply_to_this_thread();
                    });
                    Some(hook)
                }
                Err(e) => return Outcome::Failed(e),
            };
            copies.push((
                placement.pool_cpus(self.topology),
                Some(placement.steal_orders()),
                start_hook,
            ));
        }
        let (threads, throttle, machine) = (c.threads, c.throttle, self.machine);
        let workload = Arc::clone(w);
        let run = move || {
            let throttles: Vec<_> = copies
                .iter()
                .map(|_| throttle.build(threads, machine))
                .collect();
            let configs: Vec<RunConfig<'_>> = copies
                .into_iter()
                .zip(&throttles)
                .map(|((cpus, steal_order, start_hook), throttle)| RunConfig {
                    threads,
                    cpus,
                    steal_order,
                    start_hook,
                    throttle: throttle.as_ref(),
                })
                .collect();
            run_copies(workload.as_ref(), &configs)
        };
        let Some(limit) = self.settings.timeout else {
            return match run() {
                Ok(r) => Outcome::Done(r),
                Err(e) => Outcome::Failed(e.to_string()),
            };
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("coretune-run".into())
            .spawn(move || {
                let _ = tx.send(run());
            });
        if let Err(e) = spawned {
            return Outcome::Failed(format!("cannot start the run's thread: {e}"));
        }
        match rx.recv_timeout(limit) {
            Ok(Ok(r)) => Outcome::Done(r),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(_) => Outcome::Abandoned(format!(
                "a {} run exceeded the timeout ({:.1} s) and cannot be stopped inside coretune",
                w.name(),
                limit.as_secs_f64()
            )),
        }
    }

    /// One run of a server: started with the configuration (CPU set, placement, environment),
    /// waited for until ready, loaded by its client once (on the client's own CPUs), stopped.
    /// The run's time is the client's; its CPU time, context switches and peak memory are the
    /// server's, over its life (read when it is reaped: nothing samples it meanwhile); the
    /// metrics are read from the client's output. `server_pids` is set to the server's
    /// processes when the client has ended (one listing, before the server is stopped): the
    /// pinning check looks at their threads only, not at the client's.
    fn run_server(
        &self,
        command: &str,
        (server, ready): &(ServerSettings, Ready),
        c: &Config,
        placement: &Placement,
        per_thread: Option<&PerThread>,
        server_pids: &mut Option<Vec<u32>>,
    ) -> Outcome {
        let cpus = format_list(&set_to_vec(&placement.union()));
        let mut cmd = program::shell_command(&substitute(command, c, &cpus));
        placed_env(&mut cmd, c, placement, per_thread);
        if let Err(e) = self.apply_mem(&mut cmd, c, placement) {
            return Outcome::Failed(e);
        }
        let restrict = c.is_restricted().then(|| placement.union());
        let ready_timeout =
            Duration::try_from_secs_f64(server.ready_timeout_s).unwrap_or(Duration::from_secs(10));
        let running = match Server::start(cmd, restrict.as_ref(), ready, ready_timeout) {
            Ok(s) => s,
            Err(e) => {
                return Outcome::ProgramFailed {
                    stderr_tail: e.stderr_tail().map(str::to_owned),
                    error: e.to_string(),
                };
            }
        };
        // The client: on its CPUs, its output kept for the metrics and a failure's reason.
        let client_set = match self.client_cpus(server, placement) {
            Ok((set, _)) => set,
            Err(e) => return Outcome::Failed(e),
        };
        for m in &self.settings.metrics {
            if let MetricSource::File(name) = &m.from {
                if let Err(e) = self.clear_metric_file(&PathBuf::from(substitute(name, c, &cpus))) {
                    let _ = running.stop(SERVER_GRACE);
                    return Outcome::Failed(e);
                }
            }
        }
        let words = substitute(&server.client, c, &cpus);
        let mut cmd = program::shell_command(&words);
        let (stdout, stderr) = (tempfile::tempfile().ok(), tempfile::tempfile().ok());
        let to = |f: Option<&std::fs::File>| {
            f.and_then(|f| f.try_clone().ok())
                .map_or_else(Stdio::null, Stdio::from)
        };
        cmd.stdin(Stdio::null())
            .stdout(to(stdout.as_ref()))
            .stderr(to(stderr.as_ref()));
        let probe = ChildProbe::start();
        let mut child = match program::spawn_own_tree(cmd, Some(&client_set)) {
            Ok(child) => child,
            Err(e) => return Outcome::Failed(format!("--client: {e}")),
        };
        // Blocked until the client ends or the run's time is up.
        let status = match child.wait_timeout(self.settings.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                child.kill();
                let _ = child.wait();
                let _ = running.stop(SERVER_GRACE);
                return Outcome::Timeout;
            }
            Err(e) => return Outcome::Failed(format!("waiting for the client: {e}")),
        };
        let wall = probe.elapsed();
        *server_pids = Some(running.pids());
        let stopped = match running.stop(SERVER_GRACE) {
            Ok(stopped) => stopped,
            Err(e) => {
                return Outcome::ProgramFailed {
                    stderr_tail: e.stderr_tail().map(str::to_owned),
                    error: e.to_string(),
                };
            }
        };
        if stopped.ended_before {
            return Outcome::ProgramFailed {
                error: format!("the server ended while its client ran ({})", stopped.status),
                stderr_tail: stopped.stderr_tail,
            };
        }
        let all = |f: Option<std::fs::File>| f.and_then(|f| file_tail(f, u64::MAX));
        let stderr = all(stderr);
        if crate::sys::stopped_by_request(status) {
            return Outcome::Stopped(format!(
                "the client was ended by signal {}",
                program::exit_code(status) - 128
            ));
        }
        if !status.success() {
            return Outcome::ProgramFailed {
                error: format!(
                    "the client exited with status {}",
                    program::exit_code(status)
                ),
                stderr_tail: stderr.map(|s| tail_of(&s, STDERR_TAIL_BYTES)),
            };
        }
        let stdout = all(stdout).unwrap_or_default();
        finished(
            ChildProbe::with_usage(wall, stopped.usage),
            self.read_metrics(c, &cpus, 0, &stdout, stderr),
        )
    }

    /// Configuration `c`'s memory policy resolved near its CPUs (`None` when it sets none), or
    /// why it does not apply here.
    fn mem_plan(&self, c: &Config, placement: &Placement) -> Result<Option<MemPlan>, String> {
        let Some(policy) = c.mem.policy() else {
            return Ok(None);
        };
        policy
            .plan(self.topology, &placement.union(), false)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// Makes the program of `cmd` start with configuration `c`'s memory policy.
    fn apply_mem(
        &self,
        cmd: &mut Command,
        c: &Config,
        placement: &Placement,
    ) -> Result<(), String> {
        match self.mem_plan(c, placement)? {
            Some(plan) => plan
                .apply_before_exec(cmd)
                .map_err(|e| format!("--mem {}: {e}", c.mem)),
            None => Ok(()),
        }
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

    /// The CPUs a server's client runs on for `placement`, and whether they are shared with the
    /// server: `--client-cpus`, else those the server's configuration leaves free, else all.
    fn client_cpus(
        &self,
        server: &ServerSettings,
        placement: &Placement,
    ) -> Result<(CpuSet, bool), String> {
        let all = self.topology.cpuset();
        let set = match &server.client_cpus {
            Some(expr) => {
                let cpus: crate::grid::Cpus = expr
                    .parse()
                    .map_err(|e| format!("--client-cpus '{expr}': {e}"))?;
                let (set, _) = cpus
                    .resolve(self.topology)
                    .map_err(|e| format!("--client-cpus '{expr}': {e}"))?;
                set.unwrap_or(all)
            }
            None => {
                let mut free = all.clone();
                free -= &placement.union();
                if free.is_empty() { all } else { free }
            }
        };
        let mut shared = set.clone();
        shared &= &placement.union();
        Ok((set, !shared.is_empty()))
    }

    /// The warning to show before a server sweep whose client shares CPUs with the server in
    /// some configuration of `grid` (every CPU used by the server, or `--client-cpus` among
    /// them): the load generator then competes with what it measures.
    pub fn client_warning(&self, grid: &Grid) -> Option<String> {
        let Prepared::Command {
            server: Some(server),
            ..
        } = &self.prepared
        else {
            return None;
        };
        let server = &server.0;
        let shared: Vec<String> = grid
            .configs()
            .into_iter()
            .filter_map(|c| {
                let placement = c.placement(self.topology, self.settings.binding).ok()?;
                let (_, shared) = self.client_cpus(server, &placement).ok()?;
                shared.then(|| c.to_string())
            })
            .collect();
        let first = shared.first()?;
        Some(format!(
            "the client shares CPUs with the server in {} ({first}{}): the load generator \
             competes with what it measures; --cpus keeps some free for it, --client-cpus \
             chooses its CPUs",
            crate::sys::counted(shared.len(), "configuration"),
            if shared.len() > 1 { ", …" } else { "" }
        ))
    }

    /// One run of a program: a copy per instance, each started on its part (its placement,
    /// environment, memory policy, `{instance}` and `{cpus}`), all at once, and waited for
    /// together. The run's time is the slowest copy's; its CPU time and counters are the copies'
    /// added up, its peak memory the largest copy's; a copy that fails fails the run (the
    /// copies not yet waited for are stopped). `pids` is set to the copies' process ids, for the pinning check.
    #[allow(clippy::too_many_arguments)]
    fn run_command(
        &self,
        argv: &[String],
        shell: bool,
        prepare: Option<&str>,
        c: &Config,
        placements: &[Placement],
        per_thread: &[Option<PerThread>],
        pids: &mut Option<Vec<u32>>,
    ) -> Outcome {
        if let Some(prep) = prepare {
            match program::shell_command(prep).status() {
                Ok(s) if s.success() => {}
                Ok(s) => return Outcome::Failed(format!("--prepare exited with {s}")),
                Err(e) => return Outcome::Failed(format!("--prepare: {e}")),
            }
        }
        let several = placements.len() > 1;
        // "copy 2: " before what is said of one copy, when there are several.
        let copy = |k: usize| {
            if several {
                format!("copy {k}: ")
            } else {
                String::new()
            }
        };
        let metrics = &self.settings.metrics;
        let mut copies = Vec::with_capacity(placements.len());
        for (k, (placement, per_thread)) in placements.iter().zip(per_thread).enumerate() {
            let cpus = format_list(&set_to_vec(&placement.union()));
            let words: Vec<String> = argv
                .iter()
                .map(|a| substitute_copy(a, c, &cpus, k))
                .collect();
            let mut cmd = if shell {
                program::shell_command(&words.join(" "))
            } else {
                let mut cmd = Command::new(PathBuf::from(&words[0]));
                cmd.args(&words[1..]);
                cmd
            };
            // stderr goes to an unnamed file, read only after the program has ended (the end
            // of it for a failed run, all of it for a metric read there); stdout too when a
            // metric is read there: nothing of coretune reads beside the program while it runs
            // (a pipe would need a reader).
            let stderr_file = if self.show_output {
                None
            } else {
                tempfile::tempfile().ok()
            };
            let stdout_file = if !self.show_output
                && metrics.iter().any(|m| m.from == MetricSource::Stdout)
            {
                match tempfile::tempfile() {
                    Ok(f) => Some(f),
                    Err(e) => {
                        return Outcome::Failed(format!("cannot keep the program's stdout: {e}"));
                    }
                }
            } else {
                None
            };
            // A metric file left by an earlier run must not pass for this run's figure; only a
            // file an earlier run of this sweep wrote is removed.
            for m in metrics {
                if let MetricSource::File(name) = &m.from {
                    let path = PathBuf::from(substitute_copy(name, c, &cpus, k));
                    if let Err(e) = self.clear_metric_file(&path) {
                        return Outcome::Failed(e);
                    }
                }
            }
            cmd.stdin(Stdio::null());
            if self.show_output {
                cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
            } else {
                let to = |f: Option<&std::fs::File>| {
                    f.and_then(|f| f.try_clone().ok())
                        .map_or_else(Stdio::null, Stdio::from)
                };
                cmd.stdout(to(stdout_file.as_ref()))
                    .stderr(to(stderr_file.as_ref()));
            }
            placed_env(&mut cmd, c, placement, per_thread.as_ref());
            if let Some(launcher) = self.settings.launcher {
                cmd.envs(launcher.env());
            }
            if let Err(e) = self.apply_mem(&mut cmd, c, placement) {
                return Outcome::Failed(format!("{}{e}", copy(k)));
            }
            let restrict = c.is_restricted().then(|| placement.union());
            copies.push((cmd, restrict, words, cpus, stdout_file, stderr_file));
        }
        let probe = ChildProbe::start();
        let mut running = Vec::with_capacity(copies.len());
        for (k, (cmd, restrict, words, cpus, stdout_file, stderr_file)) in
            copies.into_iter().enumerate()
        {
            match program::spawn_own_tree(cmd, restrict.as_ref()) {
                Ok(child) => running.push(Running {
                    child,
                    words,
                    cpus,
                    stdout: stdout_file,
                    stderr: stderr_file,
                }),
                Err(e) => {
                    stop_all(&mut running);
                    return Outcome::Failed(format!("{}{e}", copy(k)));
                }
            }
        }
        *pids = Some(running.iter().map(|r| r.child.id()).collect());
        // Blocked until each copy ends or the run's time is up: nothing of coretune runs
        // beside them. The copies are waited for in turn; one that ends early waits, reaped,
        // for its turn.
        let mut statuses = Vec::with_capacity(running.len());
        for k in 0..running.len() {
            let left = self
                .settings
                .timeout
                .map(|t| t.saturating_sub(probe.elapsed()));
            match running[k].child.wait_timeout(left) {
                Ok(Some(status)) => statuses.push(status),
                Ok(None) => {
                    stop_all(&mut running);
                    return Outcome::Timeout;
                }
                Err(e) => {
                    stop_all(&mut running);
                    return Outcome::Failed(format!("{}waiting for the program: {e}", copy(k)));
                }
            }
            let status = statuses[k];
            if !status.success() {
                // One copy failed: the run has; the others are not waited for.
                stop_all(&mut running[k + 1..]);
                break;
            }
        }
        let usage = running
            .iter()
            .map(|r| r.child.usage())
            .reduce(|a, b| Some(a?.plus(b?)))
            .flatten();
        let measurement = probe.finish_with(usage);
        let mut read = Vec::with_capacity(running.len());
        for (k, (copy_run, status)) in running.into_iter().zip(statuses).enumerate() {
            let Running {
                words,
                cpus,
                stdout: stdout_file,
                stderr: stderr_file,
                ..
            } = copy_run;
            if crate::sys::stopped_by_request(status) {
                return Outcome::Stopped(format!(
                    "{}{} was ended by signal {}",
                    copy(k),
                    words[0],
                    program::exit_code(status) - 128
                ));
            }
            if !status.success() {
                return Outcome::ProgramFailed {
                    error: format!(
                        "{}{} exited with status {}",
                        copy(k),
                        words[0],
                        program::exit_code(status)
                    ),
                    stderr_tail: stderr_file.and_then(|f| file_tail(f, STDERR_TAIL_BYTES)),
                };
            }
            if metrics.is_empty() {
                continue;
            }
            let all = |f: Option<std::fs::File>| f.and_then(|f| file_tail(f, u64::MAX));
            let stdout = all(stdout_file).unwrap_or_default();
            match self.read_metrics(c, &cpus, k, &stdout, all(stderr_file)) {
                Ok(m) => read.push(m),
                Err((error, stderr_tail)) => {
                    return Outcome::ProgramFailed {
                        error: format!("{}{error}", copy(k)),
                        stderr_tail,
                    };
                }
            }
        }
        let metrics = aggregate_metrics(metrics, read);
        let mut outcome = finished(measurement, Ok(metrics));
        if let Outcome::Done(record) = &mut outcome {
            // The figure of P copies: P runs over the slowest one's time.
            #[allow(clippy::cast_precision_loss)]
            let work = Work {
                amount: placements.len() as f64,
                unit: Unit::RunsPerSec,
                kernel_time: None,
            };
            record.throughput = work.throughput(record.measurement.wall);
        }
        outcome
    }

    /// The metrics of a finished copy from its outputs (`cpus`: its CPU list and `instance` its
    /// index, for a `--metric-from` file's placeholders), or why one is missing, with the end
    /// of its stderr.
    fn read_metrics(
        &self,
        c: &Config,
        cpus: &str,
        instance: usize,
        stdout: &str,
        stderr: Option<String>,
    ) -> Result<BTreeMap<String, f64>, (String, Option<String>)> {
        read_metrics(
            &self.settings.metrics,
            stdout,
            stderr.as_deref().unwrap_or_default(),
            &|name| {
                let path = substitute_copy(name, c, cpus, instance);
                std::fs::read_to_string(&path).map_err(|e| format!("--metric-from {path}: {e}"))
            },
        )
        .map_err(|error| (error, stderr.map(|s| tail_of(&s, STDERR_TAIL_BYTES))))
    }
}

/// One started copy of a program's run: the copy, its words, its CPU list, and the unnamed
/// files its stdout (when a metric is read there) and stderr go to.
struct Running {
    child: program::Launched,
    words: Vec<String>,
    cpus: String,
    stdout: Option<std::fs::File>,
    stderr: Option<std::fs::File>,
}

/// Kills what still runs of `copies` and reaps it.
fn stop_all(copies: &mut [Running]) {
    for c in copies.iter_mut() {
        if matches!(c.child.try_wait(), Ok(None)) {
            c.child.kill();
        }
        let _ = c.child.wait();
    }
}

/// One run's metrics from its copies' (one copy: its own). A figure where higher is better —
/// a rate: requests, events or bytes per second — is summed over the copies, the machine's
/// aggregate; one where lower is better — a latency, a time — is the worst copy's.
fn aggregate_metrics(
    specs: &[super::objective::MetricSpec],
    mut copies: Vec<BTreeMap<String, f64>>,
) -> BTreeMap<String, f64> {
    if copies.len() <= 1 {
        return copies.pop().unwrap_or_default();
    }
    specs
        .iter()
        .filter_map(|spec| {
            let values = copies.iter().map(|m| m.get(&spec.name).copied());
            let value = if spec.higher_is_better {
                values.sum::<Option<f64>>()?
            } else {
                values
                    .collect::<Option<Vec<f64>>>()?
                    .into_iter()
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            Some((spec.name.clone(), value))
        })
        .collect()
}

/// The pinning check of a run (`None` when nothing was pinned thread by thread): one instance
/// is checked on every process of its tree but coretune's; several, each on its own program's
/// process (`pids`, in instance order), against its own placement, the findings added up.
fn check_instances(
    samples: &[Sample],
    pids: Option<&[u32]>,
    per_thread: &[Option<PerThread>],
    placements: &[Placement],
) -> Option<pin::PinRecord> {
    let own = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    if let ([Some(per_thread)], [placement]) = (per_thread, placements) {
        return Some(pin::check_samples(samples, own, per_thread, placement));
    }
    let pids = pids?;
    let mut total: Option<pin::PinRecord> = None;
    for ((per_thread, placement), &pid) in per_thread.iter().zip(placements).zip(pids) {
        let Some(per_thread) = per_thread else {
            continue;
        };
        let mine: Vec<Sample> = samples
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.threads.retain(|t| u32::try_from(t.pid) == Ok(pid));
                s
            })
            .collect();
        let record = pin::check_samples(&mine, own, per_thread, placement);
        match &mut total {
            None => total = Some(record),
            Some(t) => {
                t.threads_seen += record.threads_seen;
                t.off_place.extend(record.off_place);
            }
        }
    }
    total
}

/// A program's completed run: its measurement and metrics (or, failing a metric, the failed
/// run with why and the end of its stderr). Its result is not checked by coretune: it ran to a
/// zero exit, and that is its verification.
fn finished(
    measurement: crate::measure::Measurement,
    metrics: Result<BTreeMap<String, f64>, (String, Option<String>)>,
) -> Outcome {
    let metrics = match metrics {
        Ok(m) => m,
        Err((error, stderr_tail)) => return Outcome::ProgramFailed { error, stderr_tail },
    };
    let work = Work {
        amount: 1.0,
        unit: Unit::RunsPerSec,
        kernel_time: None,
    };
    Outcome::Done(RunRecord {
        metrics,
        throughput: work.throughput(measurement.wall),
        verified: true,
        verify_error: None,
        checksum: None,
        measurement,
        throttle_trace: Vec::new(),
        pinning: None,
    })
}

/// The environment a program of configuration `c` starts with: the pinning library's for a
/// placement it places thread by thread, else the runtimes' thread-count variables.
fn placed_env(
    cmd: &mut Command,
    c: &Config,
    placement: &Placement,
    per_thread: Option<&PerThread>,
) {
    match per_thread {
        Some(per_thread) => {
            let preload = std::env::var("LD_PRELOAD").ok();
            cmd.envs(per_thread.env(c.threads, placement, preload.as_deref()));
            for name in per_thread.cleared_env() {
                cmd.env_remove(name);
            }
        }
        None => {
            cmd.envs(program::thread_env(c.threads, Some(placement)));
        }
    }
}

/// How long a server gets to end after SIGTERM before SIGKILL.
const SERVER_GRACE: Duration = Duration::from_secs(5);

/// How much of a failed run's stderr `runs.jsonl` keeps: its end, where the reason usually is.
pub(crate) const STDERR_TAIL_BYTES: u64 = 4096;

/// The last `max` bytes of `text`, from a whole line when cut.
fn tail_of(text: &str, max: u64) -> String {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    cut.split_once('\n')
        .map_or(cut, |(_, rest)| rest)
        .to_owned()
}

/// How often a pinned run of a program is sampled when `--monitor` does not say: often enough
/// to see every thread of a run of a second several times, rarely enough to cost nothing
/// measurable (one `/proc/PID/task/*/stat` pass per sample).
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// The placeholders a command's arguments may hold.
pub(crate) const PLACEHOLDERS: [&str; 6] =
    ["threads", "cpus", "place", "mem", "instance", "instances"];

/// The first `{name}` in `argv` that looks like a misspelt placeholder (`{thread}`, `{CPUS}`,
/// `{places}`: within two edits of one, case aside), with the argument and the placeholder
/// meant. Other braces are left alone: `${HOME}`, awk's `{print}`, find's `{}`.
fn misspelt_placeholder(argv: &[String]) -> Option<(String, String, &'static str)> {
    for arg in argv {
        let mut at = 0;
        while let Some(open) = arg[at..].find('{').map(|i| at + i) {
            let Some(close) = arg[open..].find('}').map(|i| open + i) else {
                break;
            };
            let name = &arg[open + 1..close];
            at = close;
            let word =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !word || arg[..open].ends_with('$') || PLACEHOLDERS.contains(&name) {
                continue;
            }
            let lower = name.to_ascii_lowercase();
            if let Some(known) = PLACEHOLDERS.iter().find(|p| edits(&lower, p) <= 2) {
                return Some((arg.clone(), name.to_owned(), known));
            }
        }
    }
    None
}

/// Levenshtein distance between two short ASCII words.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<u8> = b.bytes().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Substitutes `{threads}` (per instance), `{cpus}` (the CPU list), `{place}`, `{mem}` (the
/// memory policy, `none` without one), `{instance}` (0) and `{instances}` in one argument.
pub fn substitute(arg: &str, c: &Config, cpus: &str) -> String {
    substitute_copy(arg, c, cpus, 0)
}

/// [`substitute`] for instance `instance` of the configuration, `cpus` being that instance's.
pub(super) fn substitute_copy(arg: &str, c: &Config, cpus: &str, instance: usize) -> String {
    arg.replace("{threads}", &c.threads.to_string())
        .replace("{cpus}", cpus)
        .replace("{place}", c.place.as_str())
        .replace("{mem}", &c.mem.to_string())
        .replace("{instances}", &c.instances.to_string())
        .replace("{instance}", &instance.to_string())
}

/// [`substitute`] in every argument.
pub(super) fn substitute_all(argv: &[String], c: &Config, cpus: &str) -> Vec<String> {
    argv.iter().map(|a| substitute(a, c, cpus)).collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::grid::{Cpus, ThrottleSpec};
    use crate::placement::Policy;
    use crate::sweep::objective::MetricSpec;

    #[test]
    fn misspelt_placeholders_are_caught_and_other_braces_left_alone() {
        let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        for (words, name, known) in [
            (&["xz", "-T{thread}"][..], "thread", "threads"),
            (&["app", "--on={CPUS}"], "CPUS", "cpus"),
            (&["app", "{threads}", "{places}"], "places", "place"),
        ] {
            let (_, got, meant) = misspelt_placeholder(&argv(words)).unwrap();
            assert_eq!((got.as_str(), meant), (name, known), "{words:?}");
        }
        for words in [
            &["awk", "{print}"][..],
            &["sh", "-c", "echo ${HOME} {}"],
            &["app", "-T{threads}", "{cpus}", "{place}"],
            &["app", "{", "}"],
        ] {
            assert_eq!(misspelt_placeholder(&argv(words)), None, "{words:?}");
        }
    }

    #[test]
    fn copies_add_up_rates_and_keep_the_worst_latency() {
        let rps = MetricSpec::parse("rps=([0-9]+)").map(|mut m| {
            m.higher_is_better = true;
            m
        });
        let p99 = MetricSpec::parse("p99=([0-9]+)").unwrap();
        let specs = [rps.unwrap(), p99];
        let copy =
            |rps: f64, p99: f64| BTreeMap::from([("rps".to_owned(), rps), ("p99".to_owned(), p99)]);
        let m = aggregate_metrics(&specs, vec![copy(100.0, 2.0), copy(150.0, 5.0)]);
        assert_eq!(m["rps"], 250.0);
        assert_eq!(m["p99"], 5.0);
        // One copy: its own figures.
        assert_eq!(
            aggregate_metrics(&specs, vec![copy(1.0, 2.0)]),
            copy(1.0, 2.0)
        );
    }

    #[test]
    fn placeholders() {
        let c = Config {
            threads: 4,
            place: Policy::Spread,
            cpus: Cpus::All,
            throttle: ThrottleSpec::None,
            mem: crate::grid::Mem::Default,
            instances: 1,
        };
        assert_eq!(
            substitute(
                "--threads={threads} --on {cpus} ({place}, {mem})",
                &c,
                "0-3"
            ),
            "--threads=4 --on 0-3 (spread, none)"
        );
        let c = Config {
            mem: "interleave:numa:0-1".parse().unwrap(),
            ..c
        };
        assert_eq!(
            substitute("maps-{mem}", &c, "0-3"),
            "maps-interleave:numa:0-1"
        );
    }
}
