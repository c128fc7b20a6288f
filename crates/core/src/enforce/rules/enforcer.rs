//! Applying the rules to processes: the first matching rule's CPU set (or one CPU per thread,
//! with a policy) and nice value go to every thread, and the processes changed are remembered so
//! that their new threads get the same (or their own slot of the placement).
//!
//! Nothing here is fatal: a process that ends between the event and the action, a kernel
//! thread, a process whose affinity the kernel will not change (EPERM; EINVAL when none of the
//! CPUs is in its cgroup's cpuset) is an [`Action`] with [`Outcome::Skipped`] and a reason.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use hwlocality::cpu::cpuset::CpuSet;
use serde::Serialize;

use super::matching::ProcessView;
use super::rule::{RuleAction, RuleEffect};
use super::set::RuleSet;
use crate::sys::{self, SysError, format_list, set_to_vec};

/// What made coretune look at a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Trigger {
    /// It was running when the rules were loaded (`rules apply`, `rules check`, or the daemon
    /// starting).
    Start,
    /// It called `exec` (the process-event connector).
    Exec,
    /// It was forked by a process a rule had changed.
    Fork,
    /// A new thread of a process a rule had changed.
    Thread,
    /// A `/proc` poll found it.
    Poll,
    /// The rules file was read again (SIGHUP).
    Reload,
    /// The kernel dropped events, so every process was looked at again.
    Rescan,
}

/// What became of an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Outcome {
    /// The process now has the rule's CPUs and nice value.
    Applied,
    /// `--dry-run`: it would have been changed, and was not.
    DryRun,
    /// It already had them.
    Unchanged,
    /// An `exclude` rule matched it: left alone.
    Excluded,
    /// It could not be changed (`reason` says why); coretune carries on.
    Skipped,
}

/// One process the rules matched, and what was done: one JSON line of the daemon's log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    /// When (UTC, RFC 3339 with milliseconds).
    pub time: String,
    /// What made coretune look.
    pub event: Trigger,
    /// The process.
    pub pid: i32,
    /// The thread, for a new thread of a process already changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<i32>,
    /// Its executable (`[name]` for a kernel thread).
    pub exe: String,
    /// The rule's name.
    pub rule: String,
    /// Its CPUs before (a Linux CPU list), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_cpus: Option<String>,
    /// The rule's CPUs (with a policy, the union of the threads' CPUs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_cpus: Option<String>,
    /// Its nice value before, when the rule sets one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_nice: Option<i32>,
    /// The rule's nice value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_nice: Option<i32>,
    /// Threads looked at.
    pub threads: usize,
    /// What became of it.
    pub result: Outcome,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Milliseconds from the event (the kernel's timestamp of the `exec` or `fork`; with
    /// polling, the process's start, to the 10 ms the kernel records it in) to the action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
}

impl Action {
    /// Whether the daemon logs it: a change, a would-be change, or a skip.
    pub fn is_logged(&self) -> bool {
        matches!(
            self.result,
            Outcome::Applied | Outcome::DryRun | Outcome::Skipped
        )
    }
}

/// The current time as RFC 3339 UTC with milliseconds.
fn now_text() -> String {
    format!("{}Z", sys::utc_text(sys::since_epoch(), ':', true))
}

/// A process a rule changed, remembered until it ends or calls `exec`.
#[derive(Debug)]
struct Tracked {
    rule: usize,
    start_ticks: u64,
    /// The next thread's slot in the placement.
    next_slot: usize,
    /// Threads already handled.
    tids: HashSet<i32>,
}

/// Why one thread could not be changed.
enum ThreadError {
    /// The thread (or process) is gone.
    Gone,
    /// The kernel refused: the reason for the log.
    Refused(String),
}

fn refused(what: &str, e: &io::Error, cpus: Option<&CpuSet>) -> ThreadError {
    if sys::is_no_such_task(e) {
        return ThreadError::Gone;
    }
    let reason = match (e.kind(), cpus) {
        (io::ErrorKind::PermissionDenied, _) => format!("{what}: permission denied ({e})"),
        (io::ErrorKind::InvalidInput, Some(cpus)) => format!(
            "{what}: none of CPUs {} is allowed to it: its cgroup cpuset excludes them ({e})",
            format_list(&set_to_vec(cpus))
        ),
        _ => format!("{what}: {e}"),
    };
    ThreadError::Refused(reason)
}

/// Applies a rule set to processes and remembers what it changed.
#[derive(Debug)]
pub struct Enforcer {
    rules: RuleSet,
    proc_dir: PathBuf,
    dry_run: bool,
    only_uid: Option<u32>,
    own_pid: i32,
    tracked: HashMap<i32, Tracked>,
}

impl Enforcer {
    /// An enforcer of `rules` on the live machine. As a user other than root it touches only
    /// processes of that user (see [`Enforcer::only_uid`]); `dry_run` changes nothing and
    /// reports [`Outcome::DryRun`] instead.
    pub fn new(rules: RuleSet, dry_run: bool) -> Self {
        let uid = sys::effective_uid();
        Self::with_proc(
            rules,
            Path::new(sys::PROC_DIR),
            dry_run,
            (uid != 0).then_some(uid),
        )
    }

    pub(crate) fn with_proc(
        rules: RuleSet,
        proc_dir: &Path,
        dry_run: bool,
        only_uid: Option<u32>,
    ) -> Self {
        Self {
            rules,
            proc_dir: proc_dir.to_path_buf(),
            dry_run,
            only_uid,
            own_pid: i32::try_from(std::process::id()).unwrap_or(0),
            tracked: HashMap::new(),
        }
    }

    /// The uid whose processes alone are touched (`None` as root: every process).
    pub fn only_uid(&self) -> Option<u32> {
        self.only_uid
    }

    /// The rules in force.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Puts new rules in force; what the old ones changed is forgotten.
    pub fn set_rules(&mut self, rules: RuleSet) {
        self.rules = rules;
        self.tracked.clear();
    }

    /// Whether process `pid` was changed by a rule (and has not ended or called `exec` since).
    pub fn is_tracked(&self, pid: i32) -> bool {
        self.tracked.contains_key(&pid)
    }

    /// Every running process, in pid order: what each matching one got (or would get). Every
    /// matched process is in the list, unchanged and excluded ones too.
    ///
    /// # Errors
    ///
    /// [`SysError`] when `/proc` cannot be listed.
    pub fn scan(&mut self, trigger: Trigger) -> Result<Vec<Action>, SysError> {
        let pids = sys::pids(&self.proc_dir)?;
        Ok(pids
            .into_iter()
            .filter_map(|pid| self.process(pid, trigger, None).0)
            .collect())
    }

    /// Looks at process `pid` (new, or after `exec`) and applies the first rule it matches.
    /// `event_ns` is the event's time on the monotonic clock, when known. Returns the action,
    /// if a rule matched, and the process's executable (for noticing a later `exec`).
    pub fn process(
        &mut self,
        pid: i32,
        trigger: Trigger,
        event_ns: Option<u64>,
    ) -> (Option<Action>, Option<PathBuf>) {
        self.tracked.remove(&pid);
        if pid == self.own_pid {
            return (None, None);
        }
        // Gone already: there is nothing to name a rule by.
        let Ok(facts) = sys::process_facts(&self.proc_dir, pid) else {
            return (None, None);
        };
        let exe = facts.exe.clone();
        if self
            .only_uid
            .is_some_and(|uid| facts.uid != uid && facts.ruid != uid)
        {
            return (None, exe);
        }
        let proc_dir = self.proc_dir.clone();
        let view = ProcessView::new(&proc_dir, facts);
        let Some(index) = self.rules.first_match(&view) else {
            return (None, exe);
        };
        let latency_ms = match trigger {
            Trigger::Exec | Trigger::Fork => event_ns.map(|at| {
                let now = sys::monotonic_ns();
                now.saturating_sub(at) as f64 / 1e6
            }),
            Trigger::Poll => {
                let per_tick = 1e9 / sys::ticks_per_second() as f64;
                let started = view.facts.start_ticks as f64 * per_tick;
                Some(((sys::boot_time_ns() as f64 - started) / 1e6).max(0.0))
            }
            _ => None,
        };
        let mut action = self.apply(&view, index, trigger);
        action.latency_ms = latency_ms.map(|l| (l * 1000.0).round() / 1000.0);
        (Some(action), exe)
    }

    fn action(&self, p: &ProcessView<'_>, rule: usize, trigger: Trigger) -> Action {
        let rule = &self.rules.rules[rule];
        let effect = match &rule.action {
            RuleAction::Apply(e) => Some(e),
            RuleAction::Exclude => None,
        };
        Action {
            time: now_text(),
            event: trigger,
            pid: p.facts.pid,
            tid: None,
            exe: p.exe_label(),
            rule: rule.name.clone(),
            old_cpus: None,
            new_cpus: effect
                .and_then(|e| e.cpus.as_ref())
                .map(|c| format_list(&set_to_vec(c))),
            old_nice: None,
            new_nice: effect.and_then(|e| e.nice),
            threads: 0,
            result: Outcome::Excluded,
            reason: None,
            latency_ms: None,
        }
    }

    fn apply(&mut self, p: &ProcessView<'_>, rule: usize, trigger: Trigger) -> Action {
        let mut action = self.action(p, rule, trigger);
        let effect = match &self.rules.rules[rule].action {
            RuleAction::Exclude => return action,
            RuleAction::Apply(effect) => effect.clone(),
        };
        let skip = |mut action: Action, reason: String| {
            action.result = Outcome::Skipped;
            action.reason = Some(reason);
            action
        };
        if p.facts.kernel_thread {
            return skip(action, "kernel thread".into());
        }
        let pid = p.facts.pid;
        let Ok(tids) = sys::thread_ids(&self.proc_dir, pid) else {
            return skip(action, "exited".into());
        };
        action.old_cpus = sys::task_affinity(pid)
            .ok()
            .map(|c| format_list(&set_to_vec(&c)));
        if effect.nice.is_some() {
            action.old_nice = sys::task_nice(pid).ok();
        }
        let mut changed = false;
        let mut done = 0;
        for (slot, &tid) in tids.iter().enumerate() {
            match self.apply_thread(&effect, slot, tid) {
                Ok(c) => {
                    changed |= c;
                    done += 1;
                }
                Err(ThreadError::Gone) => {}
                Err(ThreadError::Refused(reason)) => return skip(action, reason),
            }
        }
        action.threads = done;
        if done == 0 {
            return skip(action, "exited".into());
        }
        self.tracked.insert(
            pid,
            Tracked {
                rule,
                start_ticks: p.facts.start_ticks,
                next_slot: tids.len(),
                tids: tids.into_iter().collect(),
            },
        );
        action.result = match (changed, self.dry_run) {
            (false, _) => Outcome::Unchanged,
            (true, true) => Outcome::DryRun,
            (true, false) => Outcome::Applied,
        };
        action
    }

    /// Gives thread `tid` its CPUs (slot `slot` of a placement) and nice value; whether anything
    /// changed (or would, in a dry run).
    fn apply_thread(
        &self,
        effect: &RuleEffect,
        slot: usize,
        tid: i32,
    ) -> Result<bool, ThreadError> {
        let mut changed = false;
        if let Some(target) = effect.thread_cpus(slot) {
            let current =
                sys::task_affinity(tid).map_err(|e| refused("sched_getaffinity", &e, None))?;
            if current != *target {
                changed = true;
                if !self.dry_run {
                    sys::set_task_affinity(tid, target)
                        .map_err(|e| refused("sched_setaffinity", &e, Some(target)))?;
                }
            }
        }
        if let Some(nice) = effect.nice {
            let current = sys::task_nice(tid).map_err(|e| refused("getpriority", &e, None))?;
            if current != nice {
                changed = true;
                if !self.dry_run {
                    sys::set_task_nice(tid, nice).map_err(|e| refused("setpriority", &e, None))?;
                }
            }
        }
        Ok(changed)
    }

    /// A new thread `tid` of process `pid`: when a rule changed the process, the thread gets the
    /// same (or the next slot of the placement). Threads already handled are left alone.
    pub fn thread_started(&mut self, pid: i32, tid: i32) -> Option<Action> {
        let tracked = self.tracked.get_mut(&pid)?;
        if !tracked.tids.insert(tid) {
            return None;
        }
        let slot = tracked.next_slot;
        tracked.next_slot += 1;
        let rule = tracked.rule;
        let RuleAction::Apply(effect) = &self.rules.rules[rule].action else {
            return None;
        };
        let effect = effect.clone();
        let result = self.apply_thread(&effect, slot, tid);
        let facts = sys::process_facts(&self.proc_dir, pid).ok()?;
        let view = ProcessView::new(&self.proc_dir, facts);
        let mut action = self.action(&view, rule, Trigger::Thread);
        action.tid = Some(tid);
        action.threads = 1;
        action.new_cpus = effect
            .thread_cpus(slot)
            .map(|c| format_list(&set_to_vec(c)));
        match result {
            Ok(false) | Err(ThreadError::Gone) => None,
            Ok(true) => {
                action.result = if self.dry_run {
                    Outcome::DryRun
                } else {
                    Outcome::Applied
                };
                Some(action)
            }
            Err(ThreadError::Refused(reason)) => {
                action.result = Outcome::Skipped;
                action.reason = Some(reason);
                Some(action)
            }
        }
    }

    /// Thread `tid` of process `pid` ended (the whole process when `tid == pid`).
    pub fn exited(&mut self, pid: i32, tid: i32) {
        if tid == pid {
            self.tracked.remove(&pid);
        } else if let Some(t) = self.tracked.get_mut(&pid) {
            t.tids.remove(&tid);
        }
    }

    /// For `/proc` polling: new threads of the processes a rule changed get theirs, and
    /// processes that ended (or whose pid now belongs to another process) are forgotten.
    pub fn poll_threads(&mut self) -> Vec<Action> {
        let pids: Vec<i32> = self.tracked.keys().copied().collect();
        let mut actions = Vec::new();
        for pid in pids {
            let alive = sys::process_facts(&self.proc_dir, pid).ok().filter(|f| {
                self.tracked
                    .get(&pid)
                    .is_some_and(|t| t.start_ticks == f.start_ticks)
            });
            let tids = alive.and_then(|_| sys::thread_ids(&self.proc_dir, pid).ok());
            let Some(tids) = tids else {
                self.tracked.remove(&pid);
                continue;
            };
            if let Some(t) = self.tracked.get_mut(&pid) {
                t.tids.retain(|tid| tids.contains(tid));
            }
            for tid in tids {
                actions.extend(self.thread_started(pid, tid));
            }
        }
        actions
    }
}

impl RuleEffect {
    /// The CPUs of the thread in slot `slot`: its place in the placement, or the whole set.
    fn thread_cpus(&self, slot: usize) -> Option<&CpuSet> {
        match &self.threads {
            Some(places) if !places.is_empty() => places.get(slot % places.len()),
            _ => self.cpus.as_ref(),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        let t = now_text();
        assert_eq!(t.len(), "2026-01-01T00:00:00.000Z".len(), "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }
}
