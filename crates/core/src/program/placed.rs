//! Starting a placed program: the one place where coretune starts a program with a placement,
//! used by `coretune run`, every run of a sweep (a program, each copy of one, a server, a
//! launcher) and the readiness checks of a server.
//!
//! A [`PlacedCommand`] is a `Command` plus what places it:
//!
//! 1. the **process CPU set**, applied between `fork` and `exec` (every thread starts on it);
//! 2. the **threads**: the runtimes' thread-count variables, and for a placement reached thread
//!    by thread ([`PerThread`]) the pinning library's plan (`LD_PRELOAD`, `CORETUNE_PIN`, and a
//!    log the library writes which place each process got, `CORETUNE_PIN_LOG`), or OpenMP's
//!    places;
//! 3. the **memory policy**, set between `fork` and `exec`;
//! 4. its **containment**: a tree of its own (process group, cgroup leaf where one can be made,
//!    coretune the subreaper of its orphans), so that nothing it starts outlives it, or
//!    coretune's process group (an interactive `run`, which Ctrl-C and job control reach);
//!
//! and, once it has run, its **audit** ([`Placed::audit`]): what the run's samples and the
//! library's log say of where every thread of every process ran and which memory policy each
//! process had, against what it was started with; and what it left running
//! ([`Placed::end_leftovers`]).

use std::io;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use super::launch::{LaunchError, Launched};
use super::pin::{PerThread, PinLog, PinRecord, check_samples, find_exec_helper, off_place};
use super::thread_env;
use super::watch::Sample;
use crate::memory::MemPlan;
use crate::placement::Placement;
use crate::sys::{self, Tree};

/// The variable naming the file the pinning library logs each process's place to.
pub const LOG_VAR: &str = "CORETUNE_PIN_LOG";

/// A program to start with a placement: see the module documentation.
#[derive(Debug)]
pub struct PlacedCommand {
    cmd: Command,
    cpus: Option<CpuSet>,
    threads: Option<(usize, Option<Placement>, Option<PerThread>)>,
    mem: Option<MemPlan>,
    tree: Tree,
    /// Started through `coretune-exec` ([`PlacedCommand::own_figures`]).
    helper: bool,
    /// The pinning library logs each image's start ([`PlacedCommand::log_starts`]).
    log_starts: bool,
    /// The program as given, for messages (the command's program is the helper's path when
    /// the helper starts it).
    label: String,
}

impl PlacedCommand {
    /// `cmd`, as yet unplaced, in coretune's process group.
    pub fn new(cmd: Command) -> Self {
        Self {
            label: cmd.get_program().to_string_lossy().into_owned(),
            cmd,
            cpus: None,
            threads: None,
            mem: None,
            tree: Tree::Shared,
            helper: false,
            log_starts: false,
        }
    }

    /// Starts it on `cpus` (the process CPU set, applied before `exec`), or anywhere.
    #[must_use]
    pub fn cpus(mut self, cpus: Option<CpuSet>) -> Self {
        self.cpus = cpus;
        self
    }

    /// Announces `threads` threads to its runtimes and, with a `placement`, places them: thread
    /// by thread as `per_thread` says (the pinning library's variables, OpenMP's places), or
    /// through OpenMP's places alone without `per_thread`.
    #[must_use]
    pub fn threads(
        mut self,
        threads: usize,
        placement: Option<&Placement>,
        per_thread: Option<&PerThread>,
    ) -> Self {
        self.threads = Some((threads, placement.cloned(), per_thread.cloned()));
        self
    }

    /// Starts it with this memory policy.
    #[must_use]
    pub fn memory(mut self, plan: Option<MemPlan>) -> Self {
        self.mem = plan;
        self
    }

    /// Gives it a process tree of its own that nothing it starts leaves (see the module
    /// documentation), ended as a whole by [`Placed::kill`] and when the [`Placed`] is dropped.
    #[must_use]
    pub fn contained(mut self) -> Self {
        self.tree = Tree::Own;
        self
    }

    /// Starts it through `coretune-exec` ([`find_exec_helper`]), where that helper is found, so
    /// that its figures are its own: a process started by coretune counts coretune's own image
    /// from before `exec` in its peak memory (`ru_maxrss` keeps it across `exec`), a megabyte or
    /// more; the small helper forks and `exec`s the program, and reports its peak memory, CPU
    /// times and context switches, and when it `exec`ed (which the sweep's record of the run
    /// takes). Everything else — CPU set, memory policy, cgroup, process group,
    /// variables, stdio, exit status — reaches the program as it would directly. Without the
    /// helper it is started directly. Call it before [`PlacedCommand::command`]: the command is
    /// rebuilt around the helper.
    #[must_use]
    pub fn own_figures(mut self) -> Self {
        let Ok(helper) = find_exec_helper() else {
            return self;
        };
        let mut wrapped = Command::new(helper);
        wrapped
            .arg(self.cmd.get_program())
            .args(self.cmd.get_args());
        for (name, value) in self.cmd.get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        if let Some(dir) = self.cmd.get_current_dir() {
            wrapped.current_dir(dir);
        }
        self.cmd = wrapped;
        self.helper = true;
        self
    }

    /// Has the pinning library (where it is found) log, as each image of the program's tree
    /// starts, the CPUs it may run on and its MPI rank — without placing anything: what a
    /// launcher applied to each rank, read by [`Placed::pin_log`].
    #[must_use]
    pub fn log_starts(mut self) -> Self {
        self.log_starts = true;
        self
    }

    /// The command, for its stdio, working directory and other variables.
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// Starts it.
    ///
    /// # Errors
    ///
    /// [`LaunchError::CommandNotFound`], [`LaunchError::Spawn`] (a CPU set or memory policy
    /// the kernel refuses, the run's log that cannot be made).
    pub fn start(mut self) -> Result<Placed, LaunchError> {
        let program = self.label.clone();
        let spawn_error = |error| LaunchError::Spawn {
            program: program.clone(),
            error,
        };
        let mut log = None;
        let mut expected = Expected {
            cpus: self.cpus.as_ref().map(sys::set_to_vec),
            mem: self.mem.as_ref().map(MemPlan::numa_maps_word),
            placement: None,
        };
        if let Some((threads, placement, per_thread)) = &self.threads {
            if per_thread.is_some() && placement.is_none() {
                return Err(spawn_error(io::Error::other(
                    "a per-thread plan without its placement",
                )));
            }
            self.cmd.envs(placed_env(
                *threads,
                placement.as_ref(),
                per_thread.as_ref(),
            ));
            if let (Some(per_thread), Some(placement)) = (per_thread, placement) {
                for name in per_thread.cleared_env() {
                    self.cmd.env_remove(name);
                }
                if per_thread.is_preloaded() {
                    let file = tempfile::NamedTempFile::new().map_err(spawn_error)?;
                    self.cmd.env(LOG_VAR, file.path());
                    log = Some(file);
                }
                expected.placement = Some((per_thread.clone(), placement.clone()));
            }
        }
        if self.log_starts
            && log.is_none()
            && let Ok(library) = super::pin::find_library()
        {
            let file = tempfile::NamedTempFile::new().map_err(spawn_error)?;
            self.cmd.env(LOG_VAR, file.path());
            log = Some(file);
            let preload = match std::env::var("LD_PRELOAD") {
                Ok(rest) if !rest.trim().is_empty() => format!("{}:{rest}", library.display()),
                _ => library.display().to_string(),
            };
            self.cmd.env("LD_PRELOAD", preload);
        }
        let mut report = None;
        if self.helper {
            let file = tempfile::NamedTempFile::new().map_err(spawn_error)?;
            self.cmd.env("CORETUNE_EXEC_REPORT", file.path());
            report = Some(file);
            // The pinning library is for the program, not the helper.
            let preload = self
                .cmd
                .get_envs()
                .find(|(name, _)| *name == "LD_PRELOAD")
                .and_then(|(_, value)| value.map(std::ffi::OsStr::to_os_string));
            if let Some(preload) = preload {
                self.cmd.env("CORETUNE_EXEC_PRELOAD", preload);
                self.cmd.env_remove("LD_PRELOAD");
            }
        }
        if let Some(mem) = &self.mem {
            mem.apply_before_exec(&mut self.cmd).map_err(spawn_error)?;
        }
        let launched =
            Launched::start(self.cmd, self.cpus.as_ref(), self.tree).map_err(|e| match e {
                // The helper's path is not what the user named.
                LaunchError::CommandNotFound { .. } if self.helper => {
                    LaunchError::CommandNotFound { program }
                }
                LaunchError::Spawn { error, .. } if self.helper => {
                    LaunchError::Spawn { program, error }
                }
                other => other,
            })?;
        Ok(Placed {
            launched,
            expected,
            log,
            report,
        })
    }

    /// Starts it and waits for it, at most `timeout` (then it is killed with everything it
    /// started, `Ok(None)`), with stdio passed through and SIGINT/SIGTERM forwarded to it: how
    /// `coretune run` runs a program (contained only with a timeout, as GNU `timeout` runs
    /// one in a process group of its own).
    ///
    /// # Errors
    ///
    /// As [`PlacedCommand::start`], and [`LaunchError::Wait`].
    pub fn run(mut self, timeout: Option<Duration>) -> Result<Option<ExitStatus>, LaunchError> {
        if timeout.is_some() {
            self.tree = Tree::Own;
        }
        let program = self.label.clone();
        let mut child = self.start()?;
        // Not fatal: without forwarding, Ctrl-C still reaches the child through the terminal's
        // process group (without a timeout; with one, coretune's own exit ends it).
        let _ = sys::forward_signals_to(child.id());
        let wait_error = |error| LaunchError::Wait {
            program: program.clone(),
            error,
        };
        match child.wait_timeout(timeout).map_err(wait_error)? {
            Some(status) => Ok(Some(status)),
            None => {
                child.kill();
                child.wait().map_err(wait_error)?;
                Ok(None)
            }
        }
    }
}

/// The variables a program started with `threads` threads and `placement` gets (see
/// [`PlacedCommand::threads`]): the runtimes' thread counts, and with `per_thread` the pinning
/// library's (`LD_PRELOAD`, prepended to the one in force, and its plan) or OpenMP's places. A
/// per-thread plan also removes OpenMP's binding variables ([`PerThread::cleared_env`]).
pub fn placed_env(
    threads: usize,
    placement: Option<&Placement>,
    per_thread: Option<&PerThread>,
) -> Vec<(String, String)> {
    match (per_thread, placement) {
        (Some(per_thread), Some(placement)) => {
            let preload = std::env::var("LD_PRELOAD").ok();
            per_thread.env(threads, placement, preload.as_deref())
        }
        _ => thread_env(threads, placement)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    }
}

/// Runs `cmd` bound to `cpus` (when given), with stdio passed through and SIGINT/SIGTERM
/// forwarded to it, and returns its exit status. With a `timeout`, the program is started in a
/// process tree of its own (a process group, on Windows a job object), which is killed as a
/// whole when the time is up: `Ok(None)`.
///
/// # Errors
///
/// [`LaunchError::CommandNotFound`], [`LaunchError::Spawn`] (including a CPU set the kernel
/// refuses), [`LaunchError::Wait`].
pub fn run(
    cmd: Command,
    cpus: Option<&CpuSet>,
    timeout: Option<Duration>,
) -> Result<Option<ExitStatus>, LaunchError> {
    PlacedCommand::new(cmd).cpus(cpus.cloned()).run(timeout)
}

/// What a placed program was started with, for its audit.
#[derive(Clone, Debug)]
struct Expected {
    /// The process CPU set (every thread of every process within it).
    cpus: Option<Vec<usize>>,
    /// The memory policy every process starts with, as `numa_maps` shows it.
    mem: Option<String>,
    /// The per-thread plan and its placement.
    placement: Option<(PerThread, Placement)>,
}

/// A placed program that has been started: its process tree, what it was started with, and
/// the log the pinning library writes into.
#[derive(Debug)]
pub struct Placed {
    launched: Launched,
    expected: Expected,
    log: Option<tempfile::NamedTempFile>,
    /// Where `coretune-exec` reports the program's own figures, when it started it.
    report: Option<tempfile::NamedTempFile>,
}

/// What `coretune-exec` reported of the program it started.
#[derive(Clone, Copy, Debug, Default)]
struct Report {
    /// When it was about to `exec` (`CLOCK_MONOTONIC` ns).
    exec_ns: Option<u64>,
    /// Its own resource use, once it ended.
    usage: Option<crate::sys::ResourceUsage>,
}

/// What the audit of one run of a placed program found: what was checked and, one line each,
/// what did not match. A run counts only when `mismatches` is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Audit {
    /// What was checked, in words (`every thread within CPUs 0-1`, `each thread on its place
    /// (3 threads of 2 processes)`, `memory policy interleave:0`, `nothing left running`).
    pub checked: Vec<String>,
    /// What did not match, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatches: Vec<String>,
}

impl Audit {
    /// Adds what `other` checked and found.
    pub fn merge(&mut self, other: Audit) {
        for c in other.checked {
            if !self.checked.contains(&c) {
                self.checked.push(c);
            }
        }
        self.mismatches.extend(other.mismatches);
    }

    /// Whether everything checked matched.
    pub fn is_clean(&self) -> bool {
        self.mismatches.is_empty()
    }
}

impl Placed {
    /// The program's process id.
    pub fn id(&self) -> u32 {
        self.launched.id()
    }

    /// The started program, for listing its tree.
    pub fn launched(&self) -> &Launched {
        &self.launched
    }

    /// The started program, for waiting on it and ending it.
    pub fn launched_mut(&mut self) -> &mut Launched {
        &mut self.launched
    }

    /// Waits for it to end, at most `timeout`: see [`Launched::wait_timeout`].
    ///
    /// # Errors
    ///
    /// The OS error of the wait.
    pub fn wait_timeout(&mut self, timeout: Option<Duration>) -> io::Result<Option<ExitStatus>> {
        self.launched.wait_timeout(timeout)
    }

    /// Waits for it to end.
    ///
    /// # Errors
    ///
    /// The OS error of the wait.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.launched.wait()
    }

    /// Ends it and everything it started.
    pub fn kill(&mut self) {
        self.launched.kill();
    }

    /// What the pinning library logged of the program's tree (`None` when it was not asked
    /// to log: no per-thread plan, no [`PlacedCommand::log_starts`]).
    pub fn pin_log(&self) -> Option<PinLog> {
        self.log.as_ref().map(|f| PinLog::read(f.path()))
    }

    /// What `coretune-exec` reported (nothing when it did not start the program).
    fn report(&self) -> Report {
        let Some(text) = self
            .report
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f.path()).ok())
        else {
            return Report::default();
        };
        let mut report = Report::default();
        for line in text.lines() {
            let words: Vec<u64> = line
                .split_ascii_whitespace()
                .skip(1)
                .filter_map(|w| w.parse().ok())
                .collect();
            match (line.split_ascii_whitespace().next(), words.as_slice()) {
                (Some("exec"), [ns]) => report.exec_ns = Some(*ns),
                (Some("end"), [maxrss_kb, user_us, sys_us, vcs, ivcs]) => {
                    report.usage = Some(crate::sys::ResourceUsage {
                        user: Duration::from_micros(*user_us),
                        system: Duration::from_micros(*sys_us),
                        voluntary_ctx_switches: Some(*vcs),
                        involuntary_ctx_switches: Some(*ivcs),
                        max_rss_bytes: maxrss_kb * 1024,
                    });
                }
                _ => {}
            }
        }
        report
    }

    /// Its own CPU time, context switches and peak memory (with the children it waited for),
    /// once it has been reaped: as `coretune-exec` reported them, else as the OS gives them
    /// for the process coretune started.
    pub(crate) fn usage(&self) -> Option<crate::sys::ResourceUsage> {
        self.report().usage.or_else(|| self.launched.usage())
    }

    /// When the program was about to `exec` (`CLOCK_MONOTONIC` ns): a run is timed from there.
    pub(crate) fn exec_ns(&self) -> Option<u64> {
        self.report().exec_ns.or_else(|| self.launched.exec_ns())
    }

    /// Whether its samples are worth taking: a CPU set, a per-thread plan or a memory policy
    /// to check.
    pub fn needs_samples(&self) -> bool {
        self.expected.cpus.is_some()
            || self.expected.mem.is_some()
            || self.expected.placement.is_some()
    }

    /// Whether its processes' memory policies are to be read.
    pub fn checks_memory(&self) -> bool {
        self.expected.mem.is_some()
    }

    /// Checks a run's `samples` (those of this program's tree: [`ThreadSample::tree`] is its
    /// pid) against what it was started with: every thread of every process within the CPU
    /// set; with a per-thread plan each on its place, a forked process from the place the
    /// library's log gives it; each process's memory policy. Returns the per-thread record
    /// (with a per-thread plan) and the audit.
    ///
    /// [`ThreadSample::tree`]: super::watch::ThreadSample::tree
    pub fn audit(&self, samples: &[Sample]) -> (Option<PinRecord>, Audit) {
        let mut audit = Audit::default();
        let own = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let mut record = None;
        if let Some((per_thread, placement)) = &self.expected.placement {
            let log = self.pin_log();
            let r = check_samples(samples, own, per_thread, placement, log.as_ref());
            audit.checked.push(format!(
                "each thread on its place ({} of {}{})",
                crate::sys::counted(r.threads_seen, "thread"),
                crate::sys::counted(r.processes_seen, "process"),
                match &log {
                    Some(l) if l.processes() > 0 => format!(
                        ", {} placed by the pinning library",
                        crate::sys::counted(l.processes(), "process")
                    ),
                    _ => String::new(),
                }
            ));
            for off in r.off_place.iter().take(3) {
                audit.mismatches.push(format!(
                    "thread {} ({}) of pid {} ran on CPU {}, outside its place (CPUs {})",
                    off.tid,
                    off.name,
                    off.pid,
                    sys::format_list(&off.seen),
                    off.planned
                ));
            }
            if r.off_place.len() > 3 {
                audit.mismatches.push(format!(
                    "and {} more outside their places",
                    crate::sys::counted(r.off_place.len() - 3, "thread")
                ));
            }
            record = Some(r);
        } else if let Some(cpus) = &self.expected.cpus {
            // Each thread's CPUs, sample after sample.
            let mut seen: std::collections::BTreeMap<(i32, i32), (String, Vec<usize>)> =
                std::collections::BTreeMap::new();
            for t in samples
                .iter()
                .flat_map(|s| &s.threads)
                .filter(|t| t.pid != own)
            {
                seen.entry((t.pid, t.tid))
                    .or_insert_with(|| (t.name.clone(), Vec::new()))
                    .1
                    .push(t.cpu);
            }
            audit.checked.push(format!(
                "every thread within CPUs {} ({} seen)",
                sys::format_list(cpus),
                crate::sys::counted(seen.len(), "thread")
            ));
            for ((pid, tid), (name, on)) in seen {
                if let Some(outside) = off_place(&on, cpus) {
                    audit.mismatches.push(format!(
                        "thread {tid} ({name}) of pid {pid} ran on CPU {}, outside its CPUs {}",
                        sys::format_list(&outside),
                        sys::format_list(cpus)
                    ));
                }
            }
        }
        if let Some(mem) = &self.expected.mem {
            let policies: Vec<(&i32, &String)> =
                samples.iter().flat_map(|s| s.policies.iter()).collect();
            audit.checked.push(format!(
                "memory policy {mem} ({} read)",
                crate::sys::counted(policies.len(), "process")
            ));
            for (pid, policy) in policies {
                if policy != mem {
                    let name = samples
                        .iter()
                        .flat_map(|s| &s.threads)
                        .find(|t| t.tid == *pid)
                        .map_or("?", |t| t.name.as_str());
                    audit.mismatches.push(format!(
                        "pid {pid} ({name}) has memory policy {policy}, not {mem}"
                    ));
                }
            }
        }
        (record, audit)
    }

    /// Once the program has ended: ends what it left running (its tree's processes: the rest
    /// of its process group, and its cgroup leaf's where it has one, daemons included) and
    /// says what they were, one line each (`pid 4242 (sleep 300)`); empty when nothing was
    /// left.
    pub fn end_leftovers(&mut self) -> Vec<String> {
        let left: Vec<u32> = self
            .launched
            .members()
            .unwrap_or_default()
            .into_iter()
            .filter(|m| !m.exited && m.pid != self.launched.id())
            .map(|m| m.pid)
            .collect();
        if left.is_empty() {
            return Vec::new();
        }
        let named: Vec<String> = left.iter().map(|&pid| describe(pid)).collect();
        self.launched.kill();
        let _ = self.launched.reap_orphans();
        named
    }
}

/// `pid 4242 (sleep 300)`: a process and its command line, as far as it can be read.
pub(crate) fn describe(pid: u32) -> String {
    let id = i32::try_from(pid).unwrap_or(0);
    match sys::process_cmdline(std::path::Path::new(sys::PROC_DIR), id) {
        Ok(line) if !line.trim().is_empty() => format!("pid {pid} ({})", line.trim()),
        _ => format!("pid {pid}"),
    }
}
