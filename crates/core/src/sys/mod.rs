//! The platform layer: every read of `/proc`, `/sys` and the cgroup file systems, and every call
//! into the C library (`libc`, `nix`, perf events), one module per operating system. The rest of
//! the crate is OS-independent: it calls the functions listed here and keeps the logic
//! (statistics, budget arithmetic, summaries). Only this module may use `unsafe`.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the interface: the one list of functions every OS module provides |
//! | `types.rs` | the OS-independent types those functions take and return |
//! | `error.rs` | [`SysError`], which keeps the file, pid or call it failed on |
//! | `linux/affinity.rs` | `sched_setaffinity`/`sched_getaffinity`, binding a child before `exec` |
//! | `linux/child.rs` | a started program's process tree (its own process group when asked), asking it to end (SIGTERM) and killing it, the processes left in it, the shell |
//! | `linux/signals.rs` | forwarding SIGINT/SIGTERM to a child, the signal that ended one, a daemon's SIGHUP/SIGINT/SIGTERM through a `signalfd` |
//! | `linux/counters.rs` | `getrusage`, the perf `cpu-migrations` counter, `sched_getcpu`, `gettid` |
//! | `linux/proc.rs` | through procfs: processes and parents, what a rule matches on (`exe`, `cmdline`, `cgroup`, uids), threads (`stat`: name, CPU last run on, start time), `status` (uid, `Cpus_allowed_list`, `VmHWM`), `clear_refs`, own CPU time, `/proc/loadavg` |
//! | `linux/sched.rs` | `/proc/PID/task/TID/sched` (`se.nr_migrations`), hand-parsed |
//! | `linux/cpu_stat.rs` | `/proc/stat` per CPU by number, hand-parsed |
//! | `linux/interrupts.rs` | `/proc/interrupts`, `/proc/softirqs`, hand-parsed |
//! | `linux/cgroup.rs` | `/proc/self/cgroup` (procfs), cgroup v2/v1 cpuset and quota files |
//! | `linux/sysfs.rs` | online and isolated CPU lists, cpufreq governor |
//! | `linux/proc_events.rs` | the kernel's process-event connector (netlink, `CN_IDX_PROC`): exec, fork, exit as they happen |
//! | `linux/priority.rs` | nice values of threads (`getpriority`/`setpriority`) |
//! | `linux/cgroup_write.rs` | where the cpuset controller is mounted, cgroups under a folder, their files read and written as bytes |
//! | `linux/systemd.rs` | whether systemd runs the machine, `systemctl` |
//! | `linux/users.rs` | the effective uid, user names to uids |
//! | `linux/clock.rs` | the monotonic and boot-time clocks, clock ticks per second |
//! | `linux/host.rs` | host name, kernel release, CPU model (`/proc/cpuinfo`) |
//! | `linux/files.rs` | reading a file into a typed result (and procfs errors into [`SysError`]); whether a file is an executable program; opening a program with its set-ID bits; owner and mode, reading without following a link, durable writes of saved state |
//! | `state.rs` | saved state written durably (standard library only, every OS) |
//! | `cpu_list.rs` | the kernel's CPU list format (`0-3,8`), hwloc bitmaps from and to OS indexes (every OS), and CPU lists and counts in words (`CPU 3`, `1 run`) |
//! | `groups.rs` | Windows processor groups as the calls see them: masks per group in hwloc's numbering, and which group-affinity calls apply a set (decided and tested on every OS, made by `windows/affinity.rs`) |
//! | `utc.rs` | wall-clock time as a UTC calendar date (every OS) |
//! | `unix_command.rs` | `sh -c`, and finding a program on `PATH` as `execvp` does (standard library only, every Unix) |
//! | `windows/` | Windows, one file per concern (see its module docs): group affinity of threads and processes, starting a program suspended in a job object, counters, processes and threads through ToolHelp snapshots, per-CPU times, the host, the CPU budget (affinity, CPU sets, job CPU rate) |
//! | `unsupported.rs` | every other OS: each function fails with [`SysError::Unsupported`] (or `io::ErrorKind::Unsupported`); Windows takes from it what has no Windows meaning (cgroups, systemd, the process-event connector) |
//!
//! Functions that read files take the directory they read under — `proc_dir` (`/proc`, see
//! `PROC_DIR`) or `root` (`/`) — so tests can lay a fake tree out in a temporary folder.

mod cpu_list;
mod error;
pub(crate) mod groups;
mod state;
mod types;
mod utc;
// `sh -c` and `PATH` lookup on Linux and the other Unix systems (Windows has its own).
#[cfg(not(windows))]
mod unix_command;
// The one place unsafe code is allowed: `linux/affinity.rs` and `linux/signals.rs` call libc,
// `windows/` calls the Windows API.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod linux;
// Compiled in Linux test builds too, so the fallback is type-checked against the interface;
// Windows takes from it what has no Windows meaning.
#[cfg(any(not(target_os = "linux"), test))]
mod unsupported;
#[cfg(windows)]
#[allow(unsafe_code)]
mod windows;

#[cfg(target_os = "linux")]
use linux as os;
#[cfg(not(any(target_os = "linux", windows)))]
use unsupported as os;
#[cfg(windows)]
use windows as os;

pub use cpu_list::{counted, cpus_named, format_list, parse_list, set_from_indexes, set_to_vec};
pub use error::SysError;
pub use groups::{GROUP_SIZE, GroupMask};
pub(crate) use types::{
    CgroupQuota, CgroupVersion, CpuTicks, CpusetHierarchy, DaemonSignal, FileMeta, ProcEvent,
    ProcessFacts, ResourceUsage, Throttling, Tree, TreeMember, UsageOf,
};
pub use types::{MemMode, StopSignal};
pub(crate) use utc::{since_epoch, utc_text};

// Affinity, launching and signals (`std::io` errors: the OS error is the whole story).
pub(crate) use os::{
    ChildTree, executable_candidates, exit_signal, forward_signals_to, is_executable_file,
    is_no_such_task, is_path, on_stop_signals, open_program, prepare_child, rebind_threads,
    set_task_affinity, shell_command, stop_everything, stopped_by_request, task_affinity,
};

// A started program's memory policy (`run --mem`).
pub(crate) use os::{set_mempolicy_before_exec, set_thread_mempolicy};

// Counters of this process and of the calling thread.
pub(crate) use os::{
    MigrationCounter, SwitchCounter, current_cpu, current_tid, own_cpu_ticks, peak_rss_bytes,
    reset_peak_rss, resource_usage, thread_cpu_time, thread_migrations,
};

// Machine-wide activity.
pub(crate) use os::{cpu_stat, interrupts, load_average, softirqs};

// Processes and threads; whether a library can be preloaded into a program (`LD_PRELOAD`);
// the shared libraries this process has loaded.
pub(crate) use os::{
    PRELOAD, PROC_DIR, PROC_FS, THREADS_VISIBLE, loaded_libraries, memory_policy, own_threads,
    own_uid, process_state, process_uid, processes, socket_owners, tcp_listeners, thread_ids,
    threads,
};

// The inputs of the CPU budget, and what the budget calls them; what a quota throttled.
pub(crate) use os::{
    LIMIT_NAMES, allowed_cpus, cgroup_limits, cgroup_throttling, isolated_cpus, online_cpus,
};

// The host, for the reproducibility record.
pub(crate) use os::{cpu_model, cpu_settings, host_name, kernel_release};

// Rules: what a process is, its nice value, the events of process starts, a daemon's signals.
pub(crate) use os::{
    DaemonSignals, ProcEvents, boot_time_ns, effective_uid, monotonic_ns, pids, process_cgroups,
    process_cmdline, process_exe, process_facts, set_task_nice, task_nice, ticks_per_second,
    user_id,
};

// Files: rules files checked before they are trusted; saved state written durably (the same
// on every OS).
pub(crate) use os::{canonical_path, link_meta, read_no_follow};
pub(crate) use state::{
    create_private_dir, make_executable, read_if_exists, remove_durably, write_durably,
};

// Reserving CPUs: cgroup cpusets and systemd.
pub(crate) use os::{
    cgroup_mounts, cgroup_pids, child_cgroups, cpuset_hierarchies, read_cgroup_file, systemctl,
    systemd_booted, write_cgroup_file,
};

#[cfg(all(test, any(target_os = "linux", windows)))]
mod test {
    use std::collections::BTreeMap;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::process::{Command, ExitStatus};
    use std::time::Duration;

    use hwlocality::cpu::cpuset::CpuSet;

    use super::types::*;
    use super::*;

    /// Every OS module provides the same functions with the same signatures: the fallback is
    /// checked here against this system's module (Linux's in the Linux tests, Windows' in the
    /// Windows tests run under Wine, `make test-windows`).
    #[test]
    fn every_os_module_has_the_same_interface() {
        macro_rules! same {
            ($($f:ident: $t:ty),* $(,)?) => {
                $(let _: [$t; 2] = [os::$f, unsupported::$f];)*
            };
        }
        type Cpus = Result<Vec<usize>, SysError>;
        type RebindResult = io::Result<Vec<(i32, CpuSet, io::Result<()>)>>;
        type Text = Result<String, SysError>;
        same!(
            prepare_child: fn(&mut Command, Option<&CpuSet>, Tree) -> io::Result<Prepared>,
            on_stop_signals: fn(Box<dyn Fn(StopSignal) + Send + Sync>) -> io::Result<()>,
            stop_everything: fn() -> usize,
            rebind_threads: fn(i32, &[i32], &CpuSet) -> RebindResult,
            exit_signal: fn(ExitStatus) -> Option<i32>,
            forward_signals_to: fn(u32) -> io::Result<()>,
            stopped_by_request: fn(ExitStatus) -> bool,
            is_no_such_task: fn(&io::Error) -> bool,
            is_executable_file: fn(&Path) -> bool,
            open_program: fn(&Path) -> Result<ProgramFile, SysError>,
            set_task_affinity: fn(i32, &CpuSet) -> io::Result<()>,
            set_mempolicy_before_exec: fn(&mut Command, MemMode, &[usize]) -> io::Result<()>,
            set_thread_mempolicy: fn(MemMode, &[usize]) -> io::Result<()>,
            task_affinity: fn(i32) -> io::Result<CpuSet>,
            current_cpu: fn() -> Result<usize, SysError>,
            current_tid: fn() -> Result<i32, SysError>,
            own_cpu_ticks: fn() -> Result<u64, SysError>,
            peak_rss_bytes: fn() -> Result<u64, SysError>,
            reset_peak_rss: fn() -> Result<(), SysError>,
            resource_usage: fn(UsageOf) -> Result<ResourceUsage, SysError>,
            thread_migrations: fn() -> Result<u64, SysError>,
            cpu_stat: fn(&Path) -> Result<CpuStat, SysError>,
            interrupts: fn(&Path) -> Result<BTreeMap<usize, u64>, SysError>,
            softirqs: fn(&Path) -> Result<BTreeMap<usize, u64>, SysError>,
            load_average: fn() -> Result<f64, SysError>,
            own_threads: fn() -> Result<Vec<ThreadInfo>, SysError>,
            loaded_libraries: fn() -> Result<Vec<PathBuf>, SysError>,
            own_uid: fn() -> Result<u32, SysError>,
            process_state: fn(&Path, i32) -> Result<char, SysError>,
            process_uid: fn(&Path, i32) -> Result<u32, SysError>,
            processes: fn(&Path) -> Result<Vec<ProcessInfo>, SysError>,
            memory_policy: fn(&Path, i32) -> Option<String>,
            tcp_listeners: fn(u16) -> Vec<(std::net::SocketAddr, u64)>,
            socket_owners: fn(&Path, &[u64]) -> Vec<i32>,
            thread_ids: fn(&Path, i32) -> Result<Vec<i32>, SysError>,
            threads: fn(&Path, i32) -> Result<Vec<ThreadInfo>, SysError>,
            allowed_cpus: fn(&Path) -> Cpus,
            cgroup_limits: fn(&Path) -> Result<CgroupLimits, SysError>,
            isolated_cpus: fn(&Path) -> Cpus,
            online_cpus: fn(&Path) -> Cpus,
            cpu_settings: fn(&Path) -> CpuSettings,
            cgroup_throttling: fn(&Path) -> Option<Throttling>,
            cpu_model: fn() -> Text,
            host_name: fn() -> Text,
            kernel_release: fn() -> Text,
            thread_cpu_time: fn() -> Result<Duration, SysError>,
            pids: fn(&Path) -> Result<Vec<i32>, SysError>,
            process_facts: fn(&Path, i32) -> Result<ProcessFacts, SysError>,
            process_cmdline: fn(&Path, i32) -> Text,
            process_exe: fn(&Path, i32) -> Option<PathBuf>,
            process_cgroups: fn(&Path, i32) -> Result<Vec<String>, SysError>,
            task_nice: fn(i32) -> io::Result<i32>,
            set_task_nice: fn(i32, i32) -> io::Result<()>,
            effective_uid: fn() -> u32,
            user_id: fn(&str) -> Result<Option<u32>, SysError>,
            monotonic_ns: fn() -> u64,
            boot_time_ns: fn() -> u64,
            ticks_per_second: fn() -> u64,
            link_meta: fn(&Path) -> Result<FileMeta, SysError>,
            canonical_path: fn(&Path) -> Result<PathBuf, SysError>,
            read_no_follow: fn(&Path) -> Result<(String, FileMeta), SysError>,
            cgroup_mounts: fn(&Path) -> Result<Vec<CgroupMount>, SysError>,
            cpuset_hierarchies: fn(&Path) -> Result<Vec<CpusetHierarchy>, SysError>,
            child_cgroups: fn(&Path) -> Result<Vec<PathBuf>, SysError>,
            cgroup_pids: fn(&Path) -> Result<Vec<i32>, SysError>,
            read_cgroup_file: fn(&Path) -> Result<Vec<u8>, SysError>,
            write_cgroup_file: fn(&Path, &[u8]) -> Result<(), SysError>,
            systemd_booted: fn(&Path) -> bool,
            systemctl: fn(&[&str]) -> Text,
        );
        // `sh -c` and `PATH` lookup: the same module on every Unix; Windows has its own (`cmd /C`,
        // `PATHEXT`), which the fallback does not carry there.
        #[cfg(unix)]
        same!(
            shell_command: fn(&str) -> Command,
            is_path: fn(&str) -> bool,
            executable_candidates: fn(&Path, &str) -> Vec<PathBuf>,
        );
        let _: [&str; 2] = [os::PROC_DIR, unsupported::PROC_DIR];
        let _: [bool; 2] = [os::THREADS_VISIBLE, unsupported::THREADS_VISIBLE];
        let _: [bool; 2] = [os::PRELOAD, unsupported::PRELOAD];
        let _: [bool; 2] = [os::PROC_FS, unsupported::PROC_FS];
        let _: [LimitNames; 2] = [os::LIMIT_NAMES, unsupported::LIMIT_NAMES];
        macro_rules! counter {
            ($os:ident) => {
                let _: fn() -> Result<$os::MigrationCounter, SysError> =
                    $os::MigrationCounter::open;
                let _: fn(&mut $os::MigrationCounter) -> Result<u64, SysError> =
                    $os::MigrationCounter::read;
            };
        }
        counter!(os);
        counter!(unsupported);
        macro_rules! switches {
            ($os:ident) => {
                let _: fn() -> Result<$os::SwitchCounter, SysError> = $os::SwitchCounter::open;
                let _: fn(&mut $os::SwitchCounter) -> Result<u64, SysError> =
                    $os::SwitchCounter::read;
            };
        }
        switches!(os);
        switches!(unsupported);
        macro_rules! child {
            ($os:ident) => {
                let _: fn(
                    &std::process::Child,
                    Option<&CpuSet>,
                    Tree,
                    Prepared,
                ) -> io::Result<$os::ChildTree> = $os::ChildTree::adopt;
                let _: fn(&$os::ChildTree) -> bool = $os::ChildTree::catches_daemons;
                let _: fn(&$os::ChildTree) -> Option<u64> = $os::ChildTree::exec_ns;
                let _: fn(&$os::ChildTree) -> io::Result<()> = $os::ChildTree::kill;
                let _: fn(&$os::ChildTree) -> io::Result<()> = $os::ChildTree::terminate;
                let _: fn(&$os::ChildTree) -> io::Result<Vec<TreeMember>> = $os::ChildTree::members;
                let _: fn(&$os::ChildTree) -> Option<ResourceUsage> = $os::ChildTree::usage;
                let _: fn(&$os::ChildTree) -> Option<ResourceUsage> = $os::ChildTree::reap_orphans;
                let _: fn(
                    &$os::ChildTree,
                    &mut std::process::Child,
                    Option<Duration>,
                ) -> io::Result<Option<ExitStatus>> = $os::ChildTree::wait;
            };
        }
        child!(os);
        child!(unsupported);
        macro_rules! daemon {
            ($os:ident) => {
                let _: fn() -> Result<$os::ProcEvents, SysError> = $os::ProcEvents::open;
                let _: fn(&mut $os::ProcEvents, &mut Vec<ProcEvent>) -> Result<(), SysError> =
                    $os::ProcEvents::read;
                let _: fn() -> Result<$os::DaemonSignals, SysError> = $os::DaemonSignals::install;
                let _: for<'a> fn(&'a $os::ProcEvents) -> EventsFd<'a> = $os::ProcEvents::fd;
                let _: for<'a> fn(
                    &mut $os::DaemonSignals,
                    Option<EventsFd<'a>>,
                    Option<Duration>,
                ) -> Result<Woken, SysError> = $os::DaemonSignals::wait;
            };
        }
        daemon!(os);
        daemon!(unsupported);
    }
}
