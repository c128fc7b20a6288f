//! Turning the knobs of a running program: its CPU set and placement (every thread of every
//! process of its tree — or of its cgroup — re-pinned with `run --pid`'s code:
//! [`rebind_process`] for `os`, [`repin_process`] for a policy's places; or its cgroup's
//! `cpuset.cpus`), its cgroup's CPU quota, its thread count (the user's hook, `{threads}`
//! filled in); and putting back what was found.

use std::path::Path;
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;

use super::cgroup::Cgroups;
use super::error::AdaptError;
use super::setting::Setting;
use crate::placement::{Binding, Policy, plan};
use crate::program::pin::SkipMask;
use crate::program::{
    LaunchError, PlacedCommand, exit_code, process_binding, rebind_process, repin_process,
    shell_command, thread_count,
};
use crate::sys::{self, set_from_indexes, set_to_vec};
use crate::topology::Topology;

/// How long the thread-count hook may take.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The knobs of one program's process tree, and what they were when `adapt` began.
#[derive(Debug)]
pub(crate) struct Knobs {
    /// The program (unused when `whole_cgroup`).
    pid: u32,
    /// The target is every process of the cgroup, not `pid`'s tree.
    whole_cgroup: bool,
    /// The cgroup knobs: the quota, the cgroup's CPU set.
    cgroups: Option<Cgroups>,
    /// The quota applied now.
    quota: Option<f64>,
    topo: Topology,
    /// `--set-threads`: the command, `{threads}` in it.
    hook: Option<String>,
    /// Each thread's CPUs as found, by process.
    original: Vec<(u32, Vec<(i32, CpuSet)>)>,
    /// The thread count applied now (through the hook).
    threads: Option<usize>,
    /// The thread count given at the start.
    original_threads: Option<usize>,
}

impl Knobs {
    /// The knobs of `pid`'s tree (`None`: of every process of the cgroup), with the cgroup
    /// knobs `cgroups`; records each thread's CPUs and the quota now. A program coretune
    /// `started` may have ended already: it has nothing to record then (the session sees it
    /// ended at once).
    pub(crate) fn new(
        pid: Option<u32>,
        cgroups: Option<Cgroups>,
        started: bool,
        topo: Topology,
        hook: Option<String>,
        threads: Option<usize>,
    ) -> Result<Self, AdaptError> {
        let quota = match &cgroups {
            Some(c) => c.quota_now()?,
            None => None,
        };
        let mut knobs = Self {
            pid: pid.unwrap_or(0),
            whole_cgroup: pid.is_none(),
            cgroups,
            quota,
            topo,
            hook,
            original: Vec::new(),
            threads,
            original_threads: threads,
        };
        for p in knobs.processes() {
            match process_binding(p) {
                Ok(threads) => knobs.original.push((p, threads)),
                Err(LaunchError::NoSuchProcess { .. }) if !knobs.is_program(p) || started => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(knobs)
    }

    /// The processes turned: `pid`'s tree, or every process of the cgroup.
    pub(crate) fn processes(&self) -> Vec<u32> {
        match (&self.cgroups, self.whole_cgroup) {
            (Some(c), true) => c.members(),
            _ => tree(self.pid),
        }
    }

    /// Whether `p` is the program itself (whose end is the session's).
    fn is_program(&self, p: u32) -> bool {
        !self.whole_cgroup && p == self.pid
    }

    /// The cgroup knobs.
    pub(crate) fn cgroups(&self) -> Option<&Cgroups> {
        self.cgroups.as_ref()
    }

    fn cpuset_is_cgroups(&self) -> bool {
        self.cgroups.as_ref().is_some_and(Cgroups::has_cpuset)
    }

    /// The setting found: the cgroup's CPUs, or the union of every thread's CPUs (`fallback`
    /// when none was recorded), `os` when every thread has the same set or the CPU set is the
    /// cgroup's (else as found), the thread count given, the quota found.
    pub(crate) fn found(&self, fallback: &[usize]) -> Result<Setting, AdaptError> {
        let sets: Vec<&CpuSet> = self
            .original
            .iter()
            .flat_map(|(_, t)| t.iter().map(|(_, s)| s))
            .collect();
        let union = sets.iter().fold(CpuSet::new(), |mut u, s| {
            u |= *s;
            u
        });
        let same = sets.windows(2).all(|w| w[0] == w[1]);
        let cgroup_cpus = match &self.cgroups {
            Some(c) => c.cpus_now()?,
            None => None,
        };
        Ok(Setting {
            place: (same || cgroup_cpus.is_some()).then_some(Policy::Os),
            cpus: match cgroup_cpus {
                Some(cpus) => cpus,
                None if sets.is_empty() => fallback.to_vec(),
                None => set_to_vec(&union),
            },
            threads: self.original_threads,
            quota: self.quota,
        })
    }

    /// Applies `s` to every process of the tree. A process of the tree that ended meanwhile is
    /// passed over; the program itself gone is [`LaunchError::NoSuchProcess`].
    pub(crate) fn apply(&mut self, s: &Setting) -> Result<(), AdaptError> {
        if s.threads != self.threads
            && let (Some(hook), Some(n)) = (&self.hook, s.threads)
        {
            run_hook(hook, n)?;
            self.threads = Some(n);
        }
        if let Some(cgroups) = &mut self.cgroups {
            if cgroups.has_quota() && s.quota != self.quota {
                cgroups.set_quota(s.quota)?;
                self.quota = s.quota;
            }
            if cgroups.has_cpuset() {
                return cgroups.set_cpus(&s.cpus);
            }
        }
        let set = set_from_indexes(s.cpus.iter().copied());
        let processes = self.processes();
        let places = match s.place {
            // As found: each thread back to its own set.
            None => {
                self.restore_affinity();
                return Ok(());
            }
            Some(Policy::Os) => None,
            // One plan over the threads of the whole tree, each process given its part of it
            // (its threads in creation order), so that two single-threaded processes get two
            // places, not the first one each.
            Some(policy) => {
                let counts: Vec<usize> = processes
                    .iter()
                    .map(|&p| thread_count(p).unwrap_or(0))
                    .collect();
                let total = counts.iter().sum::<usize>().max(1);
                let placement = plan(&self.topo, total, policy, Some(&set), Binding::Pu)?;
                Some((placement.cpusets(), counts))
            }
        };
        let mut offset = 0;
        for (i, &p) in processes.iter().enumerate() {
            let done = match &places {
                None => rebind_process(p, &set).map(drop),
                Some((sets, counts)) => {
                    let n = counts[i];
                    let part = &sets[offset.min(sets.len())..(offset + n).min(sets.len())];
                    offset += n;
                    if part.is_empty() {
                        Ok(())
                    } else {
                        repin_process(p, part, SkipMask::default()).map(drop)
                    }
                }
            };
            match done {
                Ok(()) => {}
                Err(LaunchError::NoSuchProcess { .. }) if !self.is_program(p) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Each thread found at the start back on its CPUs (a thread made since: on its process's
    /// main thread's original set).
    fn restore_affinity(&self) {
        for (p, threads) in &self.original {
            let Some((_, main)) = threads.first() else {
                continue;
            };
            let Ok(id) = i32::try_from(*p) else { continue };
            let now = sys::thread_ids(Path::new(sys::PROC_DIR), id).unwrap_or_default();
            for tid in now {
                let set = threads
                    .iter()
                    .find(|(t, _)| *t == tid)
                    .map_or(main, |(_, s)| s);
                let _ = sys::set_task_affinity(tid, set);
            }
        }
    }

    /// Puts back what was found: every thread's CPUs, the thread count (through the hook),
    /// the cgroup's files ([`Knobs::release_cgroups`]).
    ///
    /// # Errors
    ///
    /// The hook's failure; a cgroup file that could not be written back.
    pub(crate) fn restore(&mut self) -> Result<(), AdaptError> {
        if !self.cpuset_is_cgroups() {
            self.restore_affinity();
        }
        let hook = if self.threads != self.original_threads
            && let (Some(hook), Some(n)) = (&self.hook, self.original_threads)
        {
            let done = run_hook(hook, n);
            self.threads = Some(n);
            done
        } else {
            Ok(())
        };
        self.release_cgroups(false)?;
        hook
    }

    /// The cgroup's files as found (unless `keep`), adapt's own cgroup emptied and removed.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Cgroup`] naming what could not be put back (the rest was).
    pub(crate) fn release_cgroups(&mut self, keep: bool) -> Result<(), AdaptError> {
        let Some(cgroups) = &mut self.cgroups else {
            return Ok(());
        };
        let failed = cgroups.restore(keep);
        if failed.is_empty() {
            Ok(())
        } else {
            Err(AdaptError::Cgroup {
                path: cgroups
                    .members_dir()
                    .map_or_else(|| "/sys/fs/cgroup".into(), Path::to_path_buf),
                reason: format!("not put back: {}", failed.join("; ")),
            })
        }
    }
}

/// `pid` and its descendants, parents first.
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let Ok(all) = sys::processes(Path::new(sys::PROC_DIR)) else {
        return out;
    };
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        for p in &all {
            if let (Ok(child), Ok(ppid)) = (u32::try_from(p.pid), u32::try_from(p.ppid))
                && ppid == parent
                && !out.contains(&child)
            {
                out.push(child);
            }
        }
        i += 1;
    }
    out
}

/// Runs the thread-count hook with `{threads}` = `n`, contained, and waits for it.
fn run_hook(hook: &str, n: usize) -> Result<(), AdaptError> {
    let command = hook.replace("{threads}", &n.to_string());
    let fail = |reason: String| AdaptError::Hook {
        command: command.clone(),
        reason,
    };
    let mut placed = PlacedCommand::new(shell_command(&command))
        .contained()
        .start()
        .map_err(|e| fail(e.to_string()))?;
    match placed.wait_timeout(Some(HOOK_TIMEOUT)) {
        Ok(Some(status)) if status.success() => Ok(()),
        Ok(Some(status)) => Err(fail(format!("exited with status {}", exit_code(status)))),
        Ok(None) => Err(fail(format!(
            "did not end within {} s",
            HOOK_TIMEOUT.as_secs()
        ))),
        Err(e) => Err(fail(e.to_string())),
    }
}
