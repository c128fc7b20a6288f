//! One `adapt` session: the program attached to or started (contained), its figure read once
//! per interval, the controller's answer applied and logged, until the duration is up, the
//! program ends or coretune is told to stop — and then what was found put back (unless
//! `--keep`), and a started program ended with everything it started.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::controller::{Controller, Decision, Observation, Tuning};
use super::error::AdaptError;
use super::knobs::Knobs;
use super::log::{AdaptLog, LogLine};
use super::setting::{Setting, Space};
use super::signal::{ProbeSpec, Signal};
use crate::placement::{Binding, Policy, plan};
use crate::program::{LaunchError, Placed, PlacedCommand, affinity_of};
use crate::sys::{self, set_from_indexes, set_to_vec};
use crate::topology::{Topology, TopologySource};

/// A probe command that gives no figure this many intervals in a row ends `adapt`.
pub const PROBE_FAILURES: usize = 3;

/// How often a wait looks whether the program ended or coretune was told to stop.
const POLL: Duration = Duration::from_millis(100);

/// What `adapt` works on.
#[derive(Debug)]
pub enum Target {
    /// A running process and its descendants.
    Pid(u32),
    /// A command to start, contained, and end when `adapt` ends.
    Command(Command),
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
        let log = AdaptLog::create(spec.log.as_deref())?;
        let (placed, pid) = match spec.target {
            Target::Pid(pid) => (None, pid),
            Target::Command(cmd) => {
                let cpus = spec
                    .start_cpus
                    .as_ref()
                    .map(|c| set_from_indexes(c.clone()));
                let placed = PlacedCommand::new(cmd).cpus(cpus).contained().start()?;
                let pid = placed.id();
                (Some(placed), pid)
            }
        };
        let (hook, threads) = match spec.threads {
            Some((hook, n)) => (Some(hook), Some(n)),
            None => (None, None),
        };
        let started = placed.is_some();
        let mut knobs = Knobs::new(pid, started, topo, hook, threads)?;
        let found = knobs.found(spec.start_cpus.as_deref().unwrap_or(&allowed_list[..]));
        let start = match (&spec.start_cpus, spec.start_place) {
            (None, None) => found.clone(),
            (cpus, place) => Setting {
                cpus: cpus.clone().unwrap_or_else(|| found.cpus.clone()),
                place: Some(place.unwrap_or(Policy::Os)),
                ..found.clone()
            },
        };
        if start != found {
            match knobs.apply(&start) {
                // A started program that ended already: the session sees it at once.
                Err(AdaptError::Launch(LaunchError::NoSuchProcess { .. })) if started => {}
                other => other?,
            }
        }
        let space = Space {
            order,
            places: spec.places,
            threads: threads.map(|n| (1, n.max(2 * allowed_list.len()))),
        };
        let signal = match &spec.probe {
            Some(probe) => Signal::Probe(Box::new(probe.clone())),
            None => Signal::progress(pid, started)?,
        };
        Ok(Self {
            pid,
            placed,
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

    /// The program's process id.
    pub fn pid(&self) -> u32 {
        self.pid
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
            let reapply = first && self.placed.is_some() && measured.place != Some(Policy::Os);
            first = false;
            let apply = step
                .apply
                .clone()
                .or_else(|| reapply.then(|| self.controller.applied().clone()));
            if let Some(setting) = &apply {
                match self.knobs.apply(setting) {
                    Ok(()) => {}
                    Err(AdaptError::Launch(LaunchError::NoSuchProcess { pid }))
                        if pid == self.pid =>
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

    /// Ends a started program with its tree; puts back what was found in an attached one
    /// (unless `keep`). Whether it was put back.
    fn finish(&mut self) -> Result<bool, AdaptError> {
        if let Some(placed) = &mut self.placed {
            placed.kill();
            let _ = placed.wait();
            return Ok(false);
        }
        if self.keep || self.program_ended()?.is_some() {
            return Ok(false);
        }
        self.knobs.restore()?;
        Ok(true)
    }
}
