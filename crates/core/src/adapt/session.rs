//! One `adapt` session: the program attached to (a process and its tree, or every process of a
//! cgroup) or started (contained; a server made ready first), its figure read once per
//! interval, the controller's answer applied and logged, until the duration is up, the program
//! ends or coretune is told to stop — and then what was found put back (unless `--keep`), a
//! cgroup's files as found, adapt's own quota cgroup removed, and a started program ended with
//! everything it started.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::cgroup::Cgroups;
use super::controller::{Controller, Decision, Observation, Tuning};
use super::error::AdaptError;
use super::knobs::{Knobs, tree};
use super::log::{AdaptLog, LogLine};
use super::setting::{Setting, Space};
use super::signal::{ProbeSpec, Signal};
use crate::placement::{Binding, Policy, plan};
use crate::program::server::{Ready, Server};
use crate::program::{LaunchError, Placed, PlacedCommand, affinity_of};
use crate::sys::{self, set_from_indexes, set_to_vec};
use crate::topology::{Topology, TopologySource};

/// A probe command that gives no figure this many intervals in a row ends `adapt`.
pub const PROBE_FAILURES: usize = 3;

/// How often a wait looks whether the program ended or coretune was told to stop.
const POLL: Duration = Duration::from_millis(100);

/// How long a server gets to end on SIGTERM before it is killed (`tune`'s grace).
const SERVER_GRACE: Duration = Duration::from_secs(5);

/// What `adapt` works on.
#[derive(Debug)]
pub enum Target {
    /// A running process and its descendants.
    Pid(u32),
    /// Every process of a cgroup (its folder under a cgroup mount, or its path in the
    /// hierarchy as `/proc/PID/cgroup` writes it).
    Cgroup(PathBuf),
    /// A command to start, contained, and end when `adapt` ends.
    Command(Command),
    /// A server to start as `tune --server` does (contained, ready before the first interval),
    /// and stop when `adapt` ends (SIGTERM, SIGKILL after 5 s).
    Server {
        /// Its command.
        command: Command,
        /// How messages call it (the user's command line).
        name: String,
        /// When it is ready.
        ready: Ready,
        /// How long it may take.
        ready_timeout: Duration,
    },
}

/// Everything a session needs; the cli builds it from its options.
#[derive(Debug)]
pub struct AdaptSpec {
    /// The program.
    pub target: Target,
    /// The probe command; `None`: the program's CPU progress.
    pub probe: Option<ProbeSpec>,
    /// How long each interval is.
    pub interval: Duration,
    /// The controller's parameters.
    pub tuning: Tuning,
    /// The CPUs to start on (else those found, or every CPU allowed for a command).
    pub start_cpus: Option<Vec<usize>>,
    /// The placement to start with (else as found, `os` for a command).
    pub start_place: Option<Policy>,
    /// The placements the controller may try.
    pub places: Vec<Policy>,
    /// The thread-count hook and the thread count the program runs with now.
    pub threads: Option<(String, usize)>,
    /// The CPU quota to start with, in CPUs (`f64::INFINITY`: no limit). It makes the quota a
    /// knob: a process or command not in a `--cgroup` is moved into a cgroup of adapt's own
    /// for it. A `--cgroup` whose `cpu` controller is there has the knob anyway, from the
    /// quota found.
    pub quota: Option<f64>,
    /// How long to adapt; `None`: until the program ends or coretune is stopped.
    pub duration: Option<Duration>,
    /// Leave the last setting in force instead of putting back the one found.
    pub keep: bool,
    /// The JSON-lines log.
    pub log: Option<PathBuf>,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `--duration` was up.
    Duration,
    /// coretune was told to stop (Ctrl-C, SIGTERM).
    Stopped,
    /// The program ended (its status when coretune started it).
    Exited(Option<ExitStatus>),
}

/// How a session went.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Why it ended.
    pub ending: Ending,
    /// The setting found (or started with).
    pub found: Setting,
    /// The best setting at the end.
    pub incumbent: Setting,
    /// Whether the setting found was put back.
    pub restored: bool,
    /// Intervals measured.
    pub intervals: usize,
    /// Trials begun.
    pub trials: usize,
    /// Intervals spent on a probe's setting.
    pub probe_intervals: usize,
    /// Accepted changes.
    pub changes: usize,
}

/// A running session.
#[derive(Debug)]
pub struct Session {
    pid: u32,
    placed: Option<Placed>,
    server: Option<Server>,
    /// The target is a cgroup's processes (it ended when none is left).
    whole_cgroup: bool,
    /// Which knobs are turned, and how, in words.
    knobs_text: String,
    knobs: Knobs,
    controller: Controller,
    signal: Signal,
    log: AdaptLog,
    interval: Duration,
    duration: Option<Duration>,
    keep: bool,
    found: Setting,
    probe_command: Option<String>,
}

impl Session {
    /// Attaches to the program or starts it, records what it has, applies the starting
    /// setting and opens the log.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Invalid`] for CPUs outside those allowed, an interval of zero; the
    /// program not found or not started ([`AdaptError::Launch`]); the log file existing.
    pub fn start(spec: AdaptSpec) -> Result<Self, AdaptError> {
        if spec.interval.is_zero() {
            return Err(AdaptError::Invalid(
                "--interval: give a positive number of seconds".to_owned(),
            ));
        }
        let topo = Topology::load(&TopologySource::Live)
            .map_err(|e| AdaptError::Invalid(format!("the machine's topology: {e}")))?;
        let mut allowed = topo.cpuset();
        if let Ok(own) = affinity_of(0) {
            allowed &= &own;
        }
        let allowed_list = set_to_vec(&allowed);
        if let Some(cpus) = &spec.start_cpus
            && let Some(c) = cpus.iter().find(|c| !allowed_list.contains(c))
        {
            return Err(AdaptError::Invalid(format!(
                "--cpus: CPU {c} is not one coretune may use (allowed: {})",
                sys::format_list(&allowed_list)
            )));
        }
        // The order CPUs are added in: one PU per core first.
        let mut order: Vec<usize> = plan(
            &topo,
            allowed_list.len().max(1),
            Policy::Cores,
            Some(&allowed),
            Binding::Pu,
        )?
        .thread_cpus()
        .into_iter()
        .flatten()
        .collect();
        order.dedup();
        if let Some(q) = spec.quota
            && (q.is_nan() || q <= 0.0)
        {
            return Err(AdaptError::Invalid(format!(
                "--quota {q}: give a positive number of CPUs, or max"
            )));
        }
        let log = AdaptLog::create(spec.log.as_deref())?;
        let cpus = spec
            .start_cpus
            .as_ref()
            .map(|c| set_from_indexes(c.clone()));
        let (placed, server, pid, mut cgroups) = match spec.target {
            Target::Pid(pid) => (None, None, Some(pid), None),
            Target::Cgroup(path) => {
                let cgroups = Cgroups::attach(&path)?;
                if cgroups.members().is_empty() {
                    return Err(AdaptError::Cgroup {
                        path,
                        reason: "no process in it".to_owned(),
                    });
                }
                if spec.quota.is_some() && !cgroups.has_quota() {
                    return Err(AdaptError::Cgroup {
                        path,
                        reason: "--quota: the cpu controller has no quota file for it".to_owned(),
                    });
                }
                (None, None, None, Some(cgroups))
            }
            Target::Command(cmd) => {
                let placed = PlacedCommand::new(cmd).cpus(cpus).contained().start()?;
                let pid = placed.id();
                (Some(placed), None, Some(pid), None)
            }
            Target::Server {
                command,
                name,
                ready,
                ready_timeout,
            } => {
                let server = Server::start(
                    PlacedCommand::new(command).cpus(cpus),
                    &name,
                    &ready,
                    ready_timeout,
                )?;
                let pid = server.pid();
                (None, Some(server), Some(pid), None)
            }
        };
        if let (Some(pid), Some(_)) = (pid, spec.quota) {
            cgroups = Some(Cgroups::own(&tree(pid))?);
        }
        let (hook, threads) = match spec.threads {
            Some((hook, n)) => (Some(hook), Some(n)),
            None => (None, None),
        };
        let started = placed.is_some() || server.is_some();
        let mut knobs = Knobs::new(pid, cgroups, started, topo, hook, threads)?;
        let found = match knobs.found(spec.start_cpus.as_deref().unwrap_or(&allowed_list[..])) {
            Ok(found) => found,
            Err(e) => {
                let _ = knobs.release_cgroups(false);
                return Err(e);
            }
        };
        let cpuset_is_cgroups = knobs.cgroups().is_some_and(Cgroups::has_cpuset);
        let mut start = match (&spec.start_cpus, spec.start_place) {
            (None, None) => found.clone(),
            (cpus, place) => Setting {
                cpus: cpus.clone().unwrap_or_else(|| found.cpus.clone()),
                place: Some(place.unwrap_or(Policy::Os)),
                ..found.clone()
            },
        };
        if cpuset_is_cgroups {
            start.place = Some(Policy::Os);
        }
        if let Some(q) = spec.quota {
            start.quota = q.is_finite().then_some(q);
        }
        if start != found {
            match knobs.apply(&start) {
                // A started program that ended already: the session sees it at once.
                Err(AdaptError::Launch(LaunchError::NoSuchProcess { .. })) if started => {}
                Err(e) => {
                    let _ = knobs.release_cgroups(false);
                    return Err(e);
                }
                Ok(()) => {}
            }
        }
        let has_quota = knobs.cgroups().is_some_and(Cgroups::has_quota);
        #[allow(clippy::cast_precision_loss)] // a few CPUs
        let cpus_count = allowed_list.len() as f64;
        let space = Space {
            order,
            places: if cpuset_is_cgroups {
                Vec::new()
            } else {
                spec.places
            },
            threads: threads.map(|n| (1, n.max(2 * allowed_list.len()))),
            quota: has_quota.then(|| (start.quota.unwrap_or(1.0).min(1.0), cpus_count)),
        };
        let knobs_text = describe(&knobs, &space);
        let signal = match (
            &spec.probe,
            pid,
            knobs.cgroups().and_then(Cgroups::usage_file),
        ) {
            (Some(probe), _, _) => Signal::Probe(Box::new(probe.clone())),
            (None, Some(pid), _) => match Signal::progress(pid, started) {
                Ok(signal) => signal,
                Err(e) => {
                    let _ = knobs.release_cgroups(false);
                    return Err(e);
                }
            },
            (None, None, Some(file)) => Signal::usage(file.to_path_buf()),
            (None, None, None) => {
                let _ = knobs.release_cgroups(false);
                return Err(AdaptError::Invalid(
                    "--cgroup: no CPU usage counter for it (cpuacct.usage, cpu.stat): give \
                     --probe"
                        .to_owned(),
                ));
            }
        };
        let pid = pid.unwrap_or_else(|| knobs.processes().first().copied().unwrap_or(0));
        Ok(Self {
            pid,
            placed,
            server,
            whole_cgroup: knobs.cgroups().is_some_and(|c| c.members_dir().is_some()),
            knobs_text,
            knobs,
            controller: Controller::new(spec.tuning, space, start),
            signal,
            log,
            interval: spec.interval,
            duration: spec.duration,
            keep: spec.keep,
            found,
            probe_command: spec.probe.map(|p| p.command),
        })
    }

    /// The program's process id (of a cgroup: its first process's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Which knobs are turned and how, in words, for the line said up front.
    pub fn knobs(&self) -> &str {
        &self.knobs_text
    }

    /// The setting it had when the session began.
    pub fn found(&self) -> &Setting {
        &self.found
    }

    /// Adapts until the duration is up, the program ends or `stop` is set, calling `on_line`
    /// with each interval's log line; then puts back what was found (unless `keep`) and ends
    /// a started program with its whole tree — on every path, errors included.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Probe`] after [`PROBE_FAILURES`] intervals without a figure; a knob that
    /// could not be turned; the log that could not be written.
    pub fn run(
        mut self,
        stop: &AtomicBool,
        on_line: impl FnMut(&LogLine),
    ) -> Result<Outcome, AdaptError> {
        let result = self.drive(stop, on_line);
        let restored = self.finish();
        let ending = result?;
        let restored = restored?;
        Ok(Outcome {
            ending,
            found: self.found.clone(),
            incumbent: self.controller.incumbent().clone(),
            restored,
            intervals: self.controller.intervals(),
            trials: self.controller.trials(),
            probe_intervals: self.controller.probe_intervals(),
            changes: self.controller.changes(),
        })
    }

    fn drive(
        &mut self,
        stop: &AtomicBool,
        mut on_line: impl FnMut(&LogLine),
    ) -> Result<Ending, AdaptError> {
        let begin = Instant::now();
        let mut next = begin + self.interval;
        let mut failures = 0;
        let mut first = true;
        loop {
            if let Some(ending) = self.wait_until(begin, next, stop)? {
                return Ok(ending);
            }
            let measured = self.controller.applied().clone();
            let (obs, missing) = match self.signal.read() {
                Ok(obs) => {
                    failures = 0;
                    (obs, None)
                }
                Err(reason) => {
                    if let Some(ending) = self.program_ended()? {
                        return Ok(ending);
                    }
                    failures += 1;
                    if failures >= PROBE_FAILURES {
                        return Err(match &self.probe_command {
                            Some(command) => AdaptError::Probe {
                                command: command.clone(),
                                times: failures,
                                reason,
                            },
                            None => AdaptError::Invalid(format!(
                                "pid {}: no CPU progress {failures} intervals in a row: {reason}",
                                self.pid
                            )),
                        });
                    }
                    (Observation::default(), Some(reason))
                }
            };
            let mut step = self.controller.observe(obs);
            if let (Decision::Skip, Some(reason)) = (step.decision, &missing) {
                step.reason = format!("no figure: {reason}");
            }
            // A started program's threads exist now: its placement reaches all of them.
            let reapply = first
                && (self.placed.is_some() || self.server.is_some())
                && measured.place != Some(Policy::Os);
            first = false;
            let apply = step
                .apply
                .clone()
                .or_else(|| reapply.then(|| self.controller.applied().clone()));
            if let Some(setting) = &apply {
                match self.knobs.apply(setting) {
                    Ok(()) => {}
                    Err(AdaptError::Launch(LaunchError::NoSuchProcess { pid }))
                        if pid == self.pid && !self.whole_cgroup =>
                    {
                        return Ok(self.program_ended()?.unwrap_or(Ending::Exited(None)));
                    }
                    Err(e) => return Err(e),
                }
            }
            let line = LogLine {
                t_s: begin.elapsed().as_secs_f64(),
                setting: measured,
                figure: obs.figure,
                latency: obs.latency,
                decision: step.decision,
                reason: step.reason,
                next: step.apply,
                incumbent: self.controller.incumbent().clone(),
            };
            self.log.write(&line)?;
            on_line(&line);
            next += self.interval;
            let now = Instant::now();
            if next < now {
                next = now + self.interval;
            }
        }
    }

    /// Waits until `next`; earlier when the program ends, `stop` is set or the duration is up.
    fn wait_until(
        &mut self,
        begin: Instant,
        next: Instant,
        stop: &AtomicBool,
    ) -> Result<Option<Ending>, AdaptError> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(Some(Ending::Stopped));
            }
            if self.duration.is_some_and(|d| begin.elapsed() >= d) {
                return Ok(Some(Ending::Duration));
            }
            let now = Instant::now();
            if now >= next {
                return Ok(None);
            }
            let slice = (next - now).min(POLL);
            match &mut self.placed {
                Some(placed) => {
                    if let Some(status) = placed.wait_timeout(Some(slice)).map_err(|e| {
                        AdaptError::Invalid(format!("waiting for pid {}: {e}", self.pid))
                    })? {
                        return Ok(Some(Ending::Exited(Some(status))));
                    }
                }
                None if self.server.is_some() => {
                    std::thread::sleep(slice);
                    if let Some(ending) = self.program_ended()? {
                        return Ok(Some(ending));
                    }
                }
                None => {
                    if let Some(ending) = self.program_ended()? {
                        return Ok(Some(ending));
                    }
                    std::thread::sleep(slice);
                }
            }
        }
    }

    /// Whether the program has ended (its status, when coretune started it).
    fn program_ended(&mut self) -> Result<Option<Ending>, AdaptError> {
        if let Some(server) = &mut self.server {
            return Ok(server.try_wait()?.map(|s| Ending::Exited(Some(s))));
        }
        if self.whole_cgroup {
            let empty = self.knobs.processes().is_empty();
            return Ok(empty.then_some(Ending::Exited(None)));
        }
        match &mut self.placed {
            Some(placed) => Ok(placed
                .launched_mut()
                .try_wait()
                .map_err(|e| AdaptError::Invalid(format!("waiting for pid {}: {e}", self.pid)))?
                .map(|s| Ending::Exited(Some(s)))),
            None => {
                let id = i32::try_from(self.pid).unwrap_or(i32::MAX);
                let alive = sys::process_state(std::path::Path::new(sys::PROC_DIR), id)
                    .is_ok_and(|s| s != 'Z' && s != 'X');
                Ok((!alive).then_some(Ending::Exited(None)))
            }
        }
    }

    /// Ends a started program with its tree (a server as `tune` stops one); puts back what
    /// was found in an attached one (unless `keep`): every thread's CPUs, the thread count, a
    /// cgroup's files; removes adapt's own quota cgroup in every case. Whether it was put back.
    fn finish(&mut self) -> Result<bool, AdaptError> {
        if let Some(placed) = &mut self.placed {
            placed.kill();
            let _ = placed.wait();
            self.knobs.release_cgroups(true)?;
            return Ok(false);
        }
        if let Some(server) = self.server.take() {
            let stopped = server.stop(SERVER_GRACE);
            self.knobs.release_cgroups(true)?;
            stopped?;
            return Ok(false);
        }
        if self.keep {
            self.knobs.release_cgroups(true)?;
            return Ok(false);
        }
        if self.program_ended()?.is_some() {
            // Nothing left to re-pin; a cgroup's files are put back all the same.
            self.knobs.release_cgroups(false)?;
            return Ok(self.whole_cgroup);
        }
        self.knobs.restore()?;
        Ok(true)
    }
}

/// Which knobs `adapt` turns and how, said up front: `turns: ...; not: ...`.
fn describe(knobs: &Knobs, space: &Space) -> String {
    let cgroups = knobs.cgroups();
    let mut turns = Vec::new();
    let mut not = Vec::new();
    match cgroups.and_then(Cgroups::cpuset_file) {
        Some(file) => {
            turns.push(format!("the CPU set ({})", file.display()));
            not.push("the placement (the cgroup's cpuset decides)".to_owned());
        }
        None => {
            let whose = if cgroups.is_some_and(|c| c.members_dir().is_some()) {
                "every thread of the cgroup's processes re-pinned"
            } else {
                "every thread of the process tree re-pinned"
            };
            turns.push(format!("the CPU set ({whose})"));
            if space.places.len() > 1 {
                turns.push(format!(
                    "the placement ({})",
                    space
                        .places
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            } else {
                not.push("the placement (one in --places)".to_owned());
            }
        }
    }
    match cgroups.and_then(Cgroups::quota_file) {
        Some(file) => turns.push(format!("the quota (± 1 CPU's worth: {})", file.display())),
        None => not.push("the quota (--quota or --cgroup)".to_owned()),
    }
    if space.threads.is_some() {
        turns.push("the thread count (--set-threads)".to_owned());
    } else {
        not.push("the thread count (--set-threads)".to_owned());
    }
    format!("turns {}; not {}", turns.join(", "), not.join(", "))
}
