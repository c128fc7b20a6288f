//! The platform layer's interface types: what the functions of every OS module take and return,
//! the same on every OS (each OS module fills them; the rest of the crate reads them).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How a program's pages are placed (the kernel's `MPOL_*` modes `run --mem` sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemMode {
    /// On the node of the CPU that touches them first (`numactl --localalloc`).
    Local,
    /// Round-robin over the nodes (`--interleave`).
    Interleave,
    /// Only on the nodes (`--membind`): the allocation fails rather than spill over.
    Bind,
    /// On the node while it has free memory, elsewhere after (`--preferred`).
    Preferred,
}

/// The descriptor a daemon waits on for process events: a file descriptor where there is one
/// (the Linux connector's socket), a placeholder elsewhere (no events source exists there).
#[cfg(unix)]
pub(crate) type EventsFd<'a> = std::os::fd::BorrowedFd<'a>;
/// The descriptor a daemon waits on for process events: none exists on this system.
#[cfg(not(unix))]
pub(crate) type EventsFd<'a> = std::marker::PhantomData<&'a ()>;

/// Whether a started program gets a process tree of its own, which
/// [`ChildTree::kill`](super::ChildTree::kill) ends as a whole (a sweep's runs and
/// `run --timeout`), or stays in coretune's (an interactive `run`: the terminal's Ctrl-C and job
/// control reach it as they reach coretune).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tree {
    /// Its own: Linux puts it in a process group of its own, Windows in a job object that
    /// also kills it should coretune die.
    Own,
    /// coretune's process group; on Windows a job object all the same (it is how the CPU time
    /// and peak memory of the whole tree are read), without kill-on-close.
    Shared,
}

/// What [`prepare_child`](super::prepare_child) set up for a program before it starts, handed
/// to [`ChildTree::adopt`](super::ChildTree::adopt) once it has: the cgroup leaf it joins
/// (Linux, where one can be made).
#[derive(Debug, Default)]
// Read by the Linux code only; elsewhere both stay `None`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct Prepared {
    /// The cgroup v2 leaf the program joins before `exec`.
    pub(crate) cgroup: Option<std::path::PathBuf>,
    /// Where the child writes, last thing before `exec`, the time it is about to `exec`
    /// (`CLOCK_MONOTONIC`, nanoseconds; Linux): a run is timed from there, so that what
    /// coretune does to start it (joining its cgroup can take milliseconds) is not the
    /// program's time. The write end, closed in the parent once the child has started.
    pub(crate) exec_clock: Option<(std::fs::File, std::fs::File)>,
}

/// What asked coretune to stop: each of them, once coretune has ended what it started, ends it
/// with its own exit status (130, 143, 129 as a shell reports them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// Ctrl-C (SIGINT; on Windows Ctrl-C or Ctrl-Break).
    Interrupt,
    /// SIGTERM (`kill`, `timeout`, `scancel`, a shutdown; on Windows a logoff or shutdown).
    Terminate,
    /// SIGHUP (the terminal went away; on Windows the console window was closed).
    Hangup,
}

impl StopSignal {
    /// The exit status a shell gives a process this signal ended: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
            Self::Hangup => 129,
        }
    }
}

/// What the CPU budget calls this system's restrictions (cgroup cpuset and quota on Linux, CPU
/// sets and a job's CPU rate cap on Windows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LimitNames {
    /// The restriction to a set of CPUs.
    pub(crate) cpuset: &'static str,
    /// The cap on CPU time.
    pub(crate) quota: &'static str,
    /// "No cap".
    pub(crate) no_quota: &'static str,
}

/// What the rules match a process on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProcessFacts {
    /// The process id.
    pub(crate) pid: i32,
    /// Its parent's.
    pub(crate) ppid: i32,
    /// Its name (`comm`, at most 15 bytes).
    pub(crate) comm: String,
    /// The executable file; `None` for kernel threads and where it cannot be read.
    pub(crate) exe: Option<PathBuf>,
    /// Whether it is a kernel thread.
    pub(crate) kernel_thread: bool,
    /// Its effective uid.
    pub(crate) uid: u32,
    /// Its real uid.
    pub(crate) ruid: u32,
    /// When it started, in clock ticks since boot (tells a reused pid from the first process).
    pub(crate) start_ticks: u64,
}

/// One event of the kernel's process-event connector.
// Only Linux's connector makes them; elsewhere the daemon polls.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcEvent {
    /// Process `pid` called `exec`; `timestamp_ns` on the monotonic clock.
    Exec {
        /// The process.
        pid: i32,
        /// When, on `CLOCK_MONOTONIC`.
        timestamp_ns: u64,
    },
    /// A new task: a process (`tid == tgid`) or a thread of process `tgid`.
    Fork {
        /// The process that created it.
        parent: i32,
        /// The new task's id.
        tid: i32,
        /// The process it belongs to.
        tgid: i32,
        /// When, on `CLOCK_MONOTONIC`.
        timestamp_ns: u64,
    },
    /// A task ended (the process ended when `tid == tgid`).
    Exit {
        /// The task.
        tid: i32,
        /// Its process.
        tgid: i32,
    },
    /// The kernel dropped events: the queue was full.
    Lost,
}

/// A signal a daemon acts on.
// Only Linux's signalfd makes them.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DaemonSignal {
    /// SIGHUP: read the configuration again.
    Reload,
    /// SIGINT or SIGTERM (the number): stop.
    Stop(i32),
}

/// Why [`DaemonSignals::wait`](super::DaemonSignals::wait) returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Woken {
    /// The events descriptor is readable.
    pub(crate) events: bool,
    /// A signal arrived.
    pub(crate) signal: Option<DaemonSignal>,
}

/// Owner, group and mode of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileMeta {
    /// The owner's uid.
    pub(crate) uid: u32,
    /// The group's gid.
    pub(crate) gid: u32,
    /// Permission bits, with setuid, setgid and sticky (`0o7777`).
    pub(crate) mode: u32,
    /// A folder.
    pub(crate) is_dir: bool,
    /// A symbolic link (described, not followed).
    pub(crate) is_symlink: bool,
}

/// cgroup v1 or v2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CgroupVersion {
    /// The legacy hierarchies, one per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// A mounted cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupMount {
    /// v1 or v2.
    pub(crate) version: CgroupVersion,
    /// Where it is mounted.
    pub(crate) mount: PathBuf,
    /// Its controllers (`cpu`, `cpuset`…).
    pub(crate) controllers: Vec<String>,
}

/// A mounted hierarchy with the cpuset controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpusetHierarchy {
    /// v1 or v2.
    pub(crate) version: CgroupVersion,
    /// Where it is mounted.
    pub(crate) mount: PathBuf,
}

/// Cumulative time one CPU (or all of them together) spent in each state since boot, in clock
/// ticks (`USER_HZ`, 100 a second on every Linux ABI).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTicks {
    /// Running user code (guest time included).
    pub(crate) user: u64,
    /// Running niced user code.
    pub(crate) nice: u64,
    /// Running kernel code.
    pub(crate) system: u64,
    /// Idle.
    pub(crate) idle: u64,
    /// Idle with I/O outstanding; `None` where the kernel does not report it (nor what follows).
    pub(crate) iowait: Option<u64>,
    /// Serving hardware interrupts.
    pub(crate) irq: Option<u64>,
    /// Serving soft interrupts.
    pub(crate) softirq: Option<u64>,
    /// Runnable, but the hypervisor ran something else.
    pub(crate) steal: Option<u64>,
}

/// CPU time of the whole machine and of each CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuStat {
    /// All CPUs together, when reported.
    pub(crate) total: Option<CpuTicks>,
    /// Each online CPU, by CPU number.
    pub(crate) per_cpu: BTreeMap<usize, CpuTicks>,
}

/// A process of a started program's tree, as [`ChildTree::members`](super::ChildTree::members)
/// lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TreeMember {
    /// The process id.
    pub(crate) pid: u32,
    /// It has exited and waits to be reaped by its parent (a zombie): it runs nothing and holds
    /// nothing but its pid.
    pub(crate) exited: bool,
}

/// A process and its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcessInfo {
    /// The process id.
    pub(crate) pid: i32,
    /// Its parent's.
    pub(crate) ppid: i32,
    /// It was forked and has not called `exec` since (Linux's `PF_FORKNOEXEC`): a pre-forked
    /// worker, or a child still between `fork` and `exec`.
    pub(crate) forked_only: bool,
    /// Its process group (0 where there are none).
    pub(crate) group: i32,
    /// Its session (0 where there are none).
    pub(crate) session: i32,
}

/// One thread of a process; a field is `None` when what it comes from could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadInfo {
    /// The thread id.
    pub(crate) tid: i32,
    /// Its name.
    pub(crate) name: Option<String>,
    /// The CPU it last ran on.
    pub(crate) cpu: Option<usize>,
    /// Its moves between CPUs since it started, where the kernel shows them.
    pub(crate) migrations: Option<u64>,
    /// When it started, in clock ticks since boot (`stat` field 22).
    pub(crate) started: Option<u64>,
    /// The CPU time it has used, user and system, in clock ticks (`stat` fields 14 and 15).
    pub(crate) cpu_ticks: Option<u64>,
}

/// A program file opened for reading its headers.
#[derive(Debug)]
pub(crate) struct ProgramFile {
    /// The open file.
    pub(crate) file: std::fs::File,
    /// Whether it runs set-user-ID or set-group-ID to someone else for this user, so that the
    /// dynamic loader ignores `LD_PRELOAD` in it.
    pub(crate) secure: bool,
}

/// Whose resource use [`resource_usage`](super::resource_usage) reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UsageOf {
    /// This process: all its threads, exited ones included.
    ThisProcess,
    /// Its children that have been waited for.
    Children,
}

/// Resource use so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResourceUsage {
    /// User CPU time.
    pub(crate) user: Duration,
    /// System CPU time.
    pub(crate) system: Duration,
    /// Voluntary context switches (the thread blocked); `None` where the OS does not count them
    /// apart (Windows counts a thread's switches without telling why).
    pub(crate) voluntary_ctx_switches: Option<u64>,
    /// Involuntary context switches (the thread was preempted); `None` likewise.
    pub(crate) involuntary_ctx_switches: Option<u64>,
    /// Peak resident set size, in bytes (of the largest child, for [`UsageOf::Children`]).
    pub(crate) max_rss_bytes: u64,
}

impl ResourceUsage {
    /// Two processes' use added up: their CPU times and switches, and the larger peak memory
    /// (a count one of them lacks is lacking in the sum).
    pub(crate) fn plus(self, other: Self) -> Self {
        let add = |a: Option<u64>, b: Option<u64>| Some(a? + b?);
        Self {
            user: self.user + other.user,
            system: self.system + other.system,
            voluntary_ctx_switches: add(self.voluntary_ctx_switches, other.voluntary_ctx_switches),
            involuntary_ctx_switches: add(
                self.involuntary_ctx_switches,
                other.involuntary_ctx_switches,
            ),
            max_rss_bytes: self.max_rss_bytes.max(other.max_rss_bytes),
        }
    }
}

/// The CPUs a cgroup cpuset allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupCpus {
    /// The CPUs, sorted.
    pub(crate) cpus: Vec<usize>,
    /// The file they came from, as the live machine names it.
    pub(crate) file: PathBuf,
}

/// A cgroup CPU quota: `quota_us` of CPU time per `period_us`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupQuota {
    /// CPU time per period, in microseconds.
    pub(crate) quota_us: u64,
    /// The period, in microseconds (never 0).
    pub(crate) period_us: u64,
    /// The file the quota came from, as the live machine names it.
    pub(crate) file: PathBuf,
}

/// The kernel's CPU settings that change timings, as `/sys/devices/system/cpu` says them; a field
/// is `None` where its file is absent (a VM without cpufreq, a kernel without SMT control).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuSettings {
    /// Each CPU's cpufreq governor, by CPU number (empty: no cpufreq).
    pub(crate) governors: BTreeMap<usize, String>,
    /// Whether boost (turbo) is on: `cpufreq/boost`, or `intel_pstate/no_turbo` inverted.
    pub(crate) boost: Option<bool>,
    /// `smt/control`: `on`, `off`, `forceoff`, `notsupported` or `notimplemented`.
    pub(crate) smt_control: Option<String>,
    /// CPUs isolated from the scheduler's load balancing (`isolated`, from `isolcpus=`).
    pub(crate) isolated: Option<Vec<usize>>,
    /// CPUs without the periodic tick when one task runs there (`nohz_full`).
    pub(crate) nohz_full: Option<Vec<usize>>,
}

/// How much a cgroup CPU quota has throttled its cgroup so far (`cpu.stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Throttling {
    /// Periods in which the cgroup was throttled (`nr_throttled`).
    pub(crate) periods: u64,
    /// Time its threads were kept off the CPUs (`throttled_usec`, v1 `throttled_time`).
    pub(crate) time: Duration,
}

/// The cgroup limits on this process's CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CgroupLimits {
    /// The cpuset, when one is found.
    pub(crate) cpuset: Option<CgroupCpus>,
    /// Every CPU quota on the path from the process's cgroup to the root.
    pub(crate) quotas: Vec<CgroupQuota>,
}
