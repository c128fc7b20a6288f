//! The [`Runner`]: a target prepared once (a workload built, a program found and inspected),
//! the checks made before a sweep, and one run of a configuration with its audit — the run
//! itself is one of the modes of the sibling files.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::placeholders::{misspelt_placeholder, substitute};
use crate::cpuset::Warning;
use crate::grid::{Config, ConfigError, Grid, MachineCounts};
use crate::memory::MemPlan;
use crate::placement::{Binding, Placement};
use crate::program;
use crate::program::pin::{self, PerThread, PinRecord, ProgramInfo};
use crate::program::server::Ready;
use crate::program::watch::{Monitor, Sample};
use crate::program::{Audit, Placed};
use crate::sweep::target::{RunSettings, ServerSettings, Target};
use crate::sweep::{Outcome, SweepError};
use crate::sys::{format_list, set_to_vec};
use crate::topology::Topology;
use crate::workload::Workload;

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
    pub(super) topology: &'t Topology,
    target: Target,
    pub(super) prepared: Prepared,
    pub(super) settings: RunSettings,
    pub(super) machine: MachineCounts,
    /// `--show-output`: a program's output goes to coretune's (else stdout is dropped and the
    /// end of stderr kept for a failed run's record).
    pub(super) show_output: bool,
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
        let policies = program && !config.mem.is_default();
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
        let mut samples = monitor.map(Monitor::finish).unwrap_or_default();
        if let Outcome::Done(record) = &mut outcome {
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
        let Some(policy) = c.mem.policy() else {
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
        (pinning, audit)
    }
}

/// How often a run with something to check is sampled when `--monitor` does not say: often
/// enough to see every thread of a run of a second several times, rarely enough to cost
/// nothing measurable (one `/proc/PID/task/*/stat` pass per sample; BENCHMARKS.md).
const CHECK_EVERY: Duration = Duration::from_millis(50);
