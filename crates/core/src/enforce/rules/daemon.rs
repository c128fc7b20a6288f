//! The rules daemon (`coretune rules watch`): the rules applied to every process that starts.
//!
//! Lifecycle:
//!
//! 1. SIGHUP, SIGINT and SIGTERM are blocked and read from a descriptor, so they are handled
//!    between actions;
//! 2. the event source is chosen: the kernel's process-event connector where it can be used
//!    (root, initial PID namespace), else `/proc` polling, and the caller is told which and why;
//! 3. every running process is looked at once ([`Trigger::Start`]);
//! 4. then, with the connector: each `exec` is matched; each `fork` of a process a rule changed
//!    gets the rule again (the child of a pinned thread would otherwise keep that one CPU); each
//!    new thread of such a process gets its CPUs (or its slot of the placement); when the kernel
//!    drops events (its queue full), every process is looked at again. With polling: every
//!    interval the process list is compared with the last one, new processes are matched,
//!    processes seen in the last [`YOUNG`] are checked for an `exec` (their executable
//!    changed), and the threads of changed processes are checked;
//! 5. SIGHUP reads the rules file again (a bad file keeps the old rules and says why) and
//!    applies the new rules to every process; SIGINT or SIGTERM stops.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::enforcer::{Action, Enforcer, Trigger};
use super::rule::RulesError;
use super::set::RuleSet;
use crate::sys::{self, DaemonSignal, ProcEvent, ProcEvents};

/// How long after first being seen a process is checked, when polling, for having called
/// `exec` (a shell forks, then execs the program a moment later). A process that execs later
/// than this is only noticed with the connector.
pub(crate) const YOUNG: Duration = Duration::from_secs(2);

/// How the daemon learns of new processes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventSource {
    /// The kernel's process-event connector: every `exec` and `fork` as it happens.
    Connector,
    /// `/proc` read every `interval`.
    Polling {
        /// The interval.
        interval: Duration,
        /// Why not the connector (`None` when polling was asked for).
        reason: Option<String>,
    },
}

/// How the daemon runs.
#[derive(Clone, Debug)]
pub struct DaemonOptions {
    /// Change nothing: report what would be done.
    pub dry_run: bool,
    /// Poll `/proc` even where the connector works.
    pub force_poll: bool,
    /// The polling interval.
    pub interval: Duration,
}

/// What the daemon reports as it runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum DaemonEvent<'a> {
    /// Watching: the event source, the rules in force, and the uid whose processes alone are
    /// touched (`None` as root).
    Started {
        /// The event source.
        source: &'a EventSource,
        /// The rules.
        rules: &'a RuleSet,
        /// Not root: only this user's processes.
        only_uid: Option<u32>,
    },
    /// A process matched a rule (changed, would be changed, or skipped).
    Action(&'a Action),
    /// SIGHUP: the rules file was read again and is in force.
    Reloaded(&'a RuleSet),
    /// SIGHUP, but the file is bad: the old rules stay in force.
    ReloadFailed(&'a RulesError),
    /// The kernel dropped process events (its queue was full); every process is looked at
    /// again.
    EventsLost,
    /// SIGINT or SIGTERM (the number): stopping.
    Stopping(i32),
}

/// A process seen by polling.
struct Seen {
    first: Instant,
    exe: Option<PathBuf>,
}

/// Runs the daemon until SIGINT or SIGTERM: `rules` first, `reload` on SIGHUP, every event
/// reported to `on`. Call it from the process's only thread (the signals are blocked in the
/// calling thread).
///
/// # Errors
///
/// [`RulesError::Sys`] when the signals cannot be set up, or `/proc` or the event socket fails.
pub fn run_daemon(
    rules: RuleSet,
    reload: &mut dyn FnMut() -> Result<RuleSet, RulesError>,
    options: &DaemonOptions,
    on: &mut dyn FnMut(DaemonEvent<'_>),
) -> Result<(), RulesError> {
    let mut signals = sys::DaemonSignals::install()?;
    let mut events = None;
    let source = if options.force_poll {
        EventSource::Polling {
            interval: options.interval,
            reason: None,
        }
    } else {
        match ProcEvents::open() {
            Ok(e) => {
                events = Some(e);
                EventSource::Connector
            }
            Err(e) => EventSource::Polling {
                interval: options.interval,
                reason: Some(e.to_string()),
            },
        }
    };
    let mut enforcer = Enforcer::new(rules, options.dry_run);
    on(DaemonEvent::Started {
        source: &source,
        rules: enforcer.rules(),
        only_uid: enforcer.only_uid(),
    });
    let mut seen = HashMap::new();
    scan(&mut enforcer, Trigger::Start, &mut seen, on)?;
    let mut batch = Vec::new();
    let mut next_poll = Instant::now() + options.interval;
    loop {
        let timeout = match events {
            Some(_) => None,
            None => Some(next_poll.saturating_duration_since(Instant::now())),
        };
        let woken = signals.wait(events.as_ref().map(ProcEvents::fd), timeout)?;
        match woken.signal {
            Some(DaemonSignal::Stop(signal)) => {
                on(DaemonEvent::Stopping(signal));
                return Ok(());
            }
            Some(DaemonSignal::Reload) => match reload() {
                Ok(rules) => {
                    enforcer.set_rules(rules);
                    on(DaemonEvent::Reloaded(enforcer.rules()));
                    scan(&mut enforcer, Trigger::Reload, &mut seen, on)?;
                }
                Err(e) => on(DaemonEvent::ReloadFailed(&e)),
            },
            None => {}
        }
        if let Some(source) = events.as_mut() {
            if woken.events {
                batch.clear();
                source.read(&mut batch)?;
                handle_events(&mut enforcer, &batch, &mut seen, on)?;
            }
        } else if Instant::now() >= next_poll {
            poll(&mut enforcer, &mut seen, on)?;
            next_poll = Instant::now() + options.interval;
        }
    }
}

fn report(actions: impl IntoIterator<Item = Action>, on: &mut dyn FnMut(DaemonEvent<'_>)) {
    for a in actions {
        if a.is_logged() {
            on(DaemonEvent::Action(&a));
        }
    }
}

/// Every running process, remembered as seen now: when polling, each is checked for an `exec`
/// for [`YOUNG`] after, since a process forked just before the scan may `exec` its program
/// just after (seen: a rule's program started as the daemon started, scanned as its parent's
/// image and never matched).
fn scan(
    enforcer: &mut Enforcer,
    trigger: Trigger,
    seen: &mut HashMap<i32, Seen>,
    on: &mut dyn FnMut(DaemonEvent<'_>),
) -> Result<(), RulesError> {
    let now = Instant::now();
    seen.clear();
    for pid in sys::pids(Path::new(sys::PROC_DIR))? {
        let (action, exe) = enforcer.process(pid, trigger, None);
        report(action, on);
        seen.insert(pid, Seen { first: now, exe });
    }
    Ok(())
}

fn handle_events(
    enforcer: &mut Enforcer,
    batch: &[ProcEvent],
    seen: &mut HashMap<i32, Seen>,
    on: &mut dyn FnMut(DaemonEvent<'_>),
) -> Result<(), RulesError> {
    let mut lost = false;
    for event in batch {
        match *event {
            ProcEvent::Exec { pid, timestamp_ns } => {
                report(
                    enforcer.process(pid, Trigger::Exec, Some(timestamp_ns)).0,
                    on,
                );
            }
            ProcEvent::Fork {
                parent,
                tid,
                tgid,
                timestamp_ns,
            } => {
                if tid != tgid {
                    report(enforcer.thread_started(tgid, tid), on);
                } else if enforcer.is_tracked(parent) {
                    report(
                        enforcer.process(tid, Trigger::Fork, Some(timestamp_ns)).0,
                        on,
                    );
                }
            }
            ProcEvent::Exit { tid, tgid } => enforcer.exited(tgid, tid),
            ProcEvent::Lost => lost = true,
        }
    }
    if lost {
        on(DaemonEvent::EventsLost);
        scan(enforcer, Trigger::Rescan, seen, on)?;
    }
    Ok(())
}

/// One `/proc` poll.
fn poll(
    enforcer: &mut Enforcer,
    seen: &mut HashMap<i32, Seen>,
    on: &mut dyn FnMut(DaemonEvent<'_>),
) -> Result<(), RulesError> {
    let proc_dir = Path::new(sys::PROC_DIR);
    let now = Instant::now();
    let mut next = HashMap::with_capacity(seen.len());
    for pid in sys::pids(proc_dir)? {
        match seen.remove(&pid) {
            None => {
                let (action, exe) = enforcer.process(pid, Trigger::Poll, None);
                report(action, on);
                next.insert(pid, Seen { first: now, exe });
            }
            Some(mut s) => {
                if now.duration_since(s.first) < YOUNG {
                    let exe = sys::process_exe(proc_dir, pid);
                    if exe.is_some() && exe != s.exe {
                        let (action, exe) = enforcer.process(pid, Trigger::Exec, None);
                        report(action, on);
                        s.exe = exe;
                    }
                }
                next.insert(pid, s);
            }
        }
    }
    *seen = next;
    report(enforcer.poll_threads(), on);
    Ok(())
}
