//! Every operating system but Linux, until it has a module of its own: each function fails with
//! [`SysError::Unsupported`] (`io::ErrorKind::Unsupported` for the `std::io` ones), except
//! where doing nothing is the right answer (no thread is ever "gone", no exit signal is known).

// Windows takes only part of this module (see `sys/windows/mod.rs`).
#![cfg_attr(windows, allow(dead_code))]

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;

use crate::sys::error::SysError;
use crate::sys::types::{
    CgroupLimits, CgroupMount, CpuStat, CpusetHierarchy, EventsFd, FileMeta, Prepared, ProcEvent,
    ProcessFacts, ProcessInfo, ProgramFile, ResourceUsage, StopSignal, ThreadInfo, Tree,
    TreeMember, UsageOf, Woken,
};

/// No `/proc`, cgroups or process events here: `rules` and `reserve` are Linux-only.
pub(crate) const PROC_FS: bool = false;

/// coretune's pinning library is built for Linux's loader only.
pub(crate) const PRELOAD: bool = false;

/// No thread of another process can be seen here.
pub(crate) const THREADS_VISIBLE: bool = false;

/// Where Linux keeps `/proc`; nothing reads it here.
pub(crate) const PROC_DIR: &str = "/proc";

fn unsupported<T>(what: &'static str) -> Result<T, SysError> {
    Err(SysError::Unsupported { what })
}

fn io_unsupported<T>() -> io::Result<T> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "CPU affinity is only implemented for Linux so far",
    ))
}

/// Memory policies are Linux's `set_mempolicy` (Windows has per-allocation NUMA calls only).
pub(crate) fn set_mempolicy_before_exec(
    _cmd: &mut Command,
    _mode: crate::sys::types::MemMode,
    _nodes: &[usize],
) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "a memory policy for a program is only implemented for Linux (set_mempolicy)",
    ))
}

/// As [`set_mempolicy_before_exec`], for the calling thread.
pub(crate) fn set_thread_mempolicy(
    _mode: crate::sys::types::MemMode,
    _nodes: &[usize],
) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "a memory policy for a thread is only implemented for Linux (set_mempolicy)",
    ))
}

/// The restrictions of the Linux names (nothing is read here).
pub(crate) const LIMIT_NAMES: crate::sys::types::LimitNames = crate::sys::types::LimitNames {
    cpuset: "cgroup cpuset",
    quota: "cgroup quota",
    no_quota: "no cgroup CPU quota",
};

/// Each thread in turn, as [`set_task_affinity`] does it (which fails here).
pub(crate) fn rebind_threads(
    _pid: i32,
    tids: &[i32],
    cpus: &CpuSet,
) -> io::Result<Vec<(i32, CpuSet, io::Result<()>)>> {
    Ok(tids
        .iter()
        .map(|&tid| (tid, cpus.clone(), set_task_affinity(tid, cpus)))
        .collect())
}

/// Without a CPU set the command runs as it is; with one it cannot be bound here.
pub(crate) fn prepare_child(
    _cmd: &mut Command,
    cpus: Option<&CpuSet>,
    _tree: Tree,
) -> io::Result<Prepared> {
    match cpus {
        Some(_) => io_unsupported(),
        None => Ok(Prepared::default()),
    }
}

/// No signals are caught here: Ctrl-C ends coretune as the system ends any program.
pub(crate) fn on_stop_signals(_on: Box<dyn Fn(StopSignal) + Send + Sync>) -> io::Result<()> {
    io_unsupported()
}

/// No socket table is read here: whose a listener is cannot be told.
pub(crate) fn tcp_listeners(_port: u16) -> Vec<(std::net::SocketAddr, u64)> {
    Vec::new()
}

/// No process's descriptors are read here.
pub(crate) fn socket_owners(_proc_dir: &Path, _inodes: &[u64]) -> Vec<i32> {
    Vec::new()
}

/// No process's memory policy can be read here.
pub(crate) fn memory_policy(_proc_dir: &Path, _pid: i32) -> Option<String> {
    None
}

/// No tree is tracked here, so there is nothing to end.
pub(crate) fn stop_everything() -> usize {
    0
}

/// No process tree is tracked: the caller kills the program alone.
#[derive(Debug)]
pub(crate) struct ChildTree;

impl ChildTree {
    pub(crate) fn adopt(
        _child: &std::process::Child,
        _cpus: Option<&CpuSet>,
        _tree: Tree,
        _prepared: Prepared,
    ) -> io::Result<Self> {
        Ok(Self)
    }

    /// Programs are not timed from their `exec` here: from before they are started.
    pub(crate) fn exec_ns(&self) -> Option<u64> {
        None
    }

    pub(crate) fn catches_daemons(&self) -> bool {
        false
    }

    pub(crate) fn kill(&self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "ending a process tree is only implemented for Linux and Windows",
        ))
    }

    pub(crate) fn terminate(&self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "asking a process tree to end is only implemented for Linux",
        ))
    }

    pub(crate) fn members(&self) -> io::Result<Vec<TreeMember>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "listing a process tree is only implemented for Linux and Windows",
        ))
    }

    pub(crate) fn usage(&self) -> Option<ResourceUsage> {
        None
    }

    pub(crate) fn reap_orphans(&self) -> Option<ResourceUsage> {
        None
    }

    /// Waits for `child` to end, or at most `timeout`. Where the OS gives no way to wait with a
    /// timeout the standard library reaches, `try_wait` every 5 ms: a fallback that wakes
    /// coretune 200 times a second while the program runs (Linux and Windows block instead).
    pub(crate) fn wait(
        &self,
        child: &mut std::process::Child,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<Option<std::process::ExitStatus>> {
        let Some(timeout) = timeout else {
            return child.wait().map(Some);
        };
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if start.elapsed() >= timeout {
                return Ok(None);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

// `sh -c`, and `PATH` as `execvp` reads it: every other system is a Unix (Windows, which takes
// parts of this module, has its own).
#[cfg(not(windows))]
pub(crate) use super::unix_command::{executable_candidates, is_path, shell_command};

pub(crate) fn set_task_affinity(_tid: i32, _cpus: &CpuSet) -> io::Result<()> {
    io_unsupported()
}

pub(crate) fn task_affinity(_tid: i32) -> io::Result<CpuSet> {
    io_unsupported()
}

pub(crate) fn is_no_such_task(_error: &io::Error) -> bool {
    false
}

pub(crate) fn forward_signals_to(_pid: u32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "signal forwarding is only implemented for Linux so far",
    ))
}

pub(crate) fn exit_signal(_status: ExitStatus) -> Option<i32> {
    None
}

pub(crate) fn stopped_by_request(_status: ExitStatus) -> bool {
    false
}

/// No counter: [`MigrationCounter::open`] always fails.
#[derive(Debug)]
pub(crate) struct MigrationCounter;

impl MigrationCounter {
    pub(crate) fn open() -> Result<Self, SysError> {
        unsupported("counting CPU migrations")
    }

    pub(crate) fn read(&mut self) -> Result<u64, SysError> {
        unsupported("counting CPU migrations")
    }
}

/// No per-thread count: [`SwitchCounter::open`] always fails.
#[derive(Debug)]
pub(crate) struct SwitchCounter;

impl SwitchCounter {
    pub(crate) fn open() -> Result<Self, SysError> {
        unsupported("counting a thread's context switches")
    }

    pub(crate) fn read(&mut self) -> Result<u64, SysError> {
        unsupported("counting a thread's context switches")
    }
}

pub(crate) fn resource_usage(_of: UsageOf) -> Result<ResourceUsage, SysError> {
    unsupported("resource usage")
}

pub(crate) fn current_cpu() -> Result<usize, SysError> {
    unsupported("the current CPU")
}

pub(crate) fn current_tid() -> Result<i32, SysError> {
    unsupported("thread ids")
}

pub(crate) fn thread_cpu_time() -> Result<std::time::Duration, SysError> {
    unsupported("thread CPU time")
}

pub(crate) fn thread_migrations() -> Result<u64, SysError> {
    unsupported("counting CPU migrations")
}

pub(crate) fn reset_peak_rss() -> Result<(), SysError> {
    unsupported("peak resident memory")
}

pub(crate) fn peak_rss_bytes() -> Result<u64, SysError> {
    unsupported("peak resident memory")
}

pub(crate) fn own_cpu_ticks() -> Result<u64, SysError> {
    unsupported("process CPU time")
}

pub(crate) fn cpu_stat(_proc_dir: &Path) -> Result<CpuStat, SysError> {
    unsupported("per-CPU time")
}

pub(crate) fn interrupts(_proc_dir: &Path) -> Result<BTreeMap<usize, u64>, SysError> {
    unsupported("interrupt counts")
}

pub(crate) fn softirqs(_proc_dir: &Path) -> Result<BTreeMap<usize, u64>, SysError> {
    unsupported("interrupt counts")
}

pub(crate) fn load_average() -> Result<f64, SysError> {
    unsupported("the load average")
}

pub(crate) fn processes(_proc_dir: &Path) -> Result<Vec<ProcessInfo>, SysError> {
    unsupported("listing processes")
}

pub(crate) fn thread_ids(_proc_dir: &Path, _pid: i32) -> Result<Vec<i32>, SysError> {
    unsupported("listing threads")
}

pub(crate) fn threads(_proc_dir: &Path, _pid: i32) -> Result<Vec<ThreadInfo>, SysError> {
    unsupported("listing threads")
}

pub(crate) fn own_threads() -> Result<Vec<ThreadInfo>, SysError> {
    unsupported("listing threads")
}

pub(crate) fn process_state(_proc_dir: &Path, _pid: i32) -> Result<char, SysError> {
    unsupported("process states")
}

pub(crate) fn process_uid(_proc_dir: &Path, _pid: i32) -> Result<u32, SysError> {
    unsupported("process owners")
}

pub(crate) fn own_uid() -> Result<u32, SysError> {
    unsupported("process owners")
}

pub(crate) fn online_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    unsupported("the online CPUs")
}

pub(crate) fn isolated_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    unsupported("isolated CPUs")
}

pub(crate) fn allowed_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    unsupported("the affinity mask")
}

pub(crate) fn cgroup_limits(_root: &Path) -> Result<CgroupLimits, SysError> {
    unsupported("cgroup limits")
}

pub(crate) fn host_name() -> Result<String, SysError> {
    unsupported("the host name")
}

pub(crate) fn kernel_release() -> Result<String, SysError> {
    unsupported("the kernel release")
}

pub(crate) fn cpu_model() -> Result<String, SysError> {
    unsupported("the CPU model")
}

/// Nothing known: every setting absent.
pub(crate) fn cpu_settings(_root: &Path) -> crate::sys::types::CpuSettings {
    crate::sys::types::CpuSettings::default()
}

/// No cgroups: no quota throttles (a Windows job's CPU rate cap keeps no such count either).
pub(crate) fn cgroup_throttling(_root: &Path) -> Option<crate::sys::types::Throttling> {
    None
}

/// Without execute permissions to check, any regular file may be a program.
pub(crate) fn open_program(_path: &Path) -> Result<ProgramFile, SysError> {
    unsupported("inspecting programs")
}

pub(crate) fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fails_as_unsupported() {
        let err = load_average().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the load average is not implemented for this operating system"
        );
        assert!(matches!(
            threads(Path::new(PROC_DIR), 1),
            Err(SysError::Unsupported { .. })
        ));
        assert_eq!(
            task_affinity(0).unwrap_err().kind(),
            io::ErrorKind::Unsupported
        );
    }
}

pub(crate) fn pids(_proc_dir: &Path) -> Result<Vec<i32>, SysError> {
    unsupported("listing processes")
}

pub(crate) fn process_facts(_proc_dir: &Path, _pid: i32) -> Result<ProcessFacts, SysError> {
    unsupported("reading a process's executable and owner")
}

pub(crate) fn process_exe(_proc_dir: &Path, _pid: i32) -> Option<PathBuf> {
    None
}

pub(crate) fn process_cmdline(_proc_dir: &Path, _pid: i32) -> Result<String, SysError> {
    unsupported("reading a process's command line")
}

pub(crate) fn process_cgroups(_proc_dir: &Path, _pid: i32) -> Result<Vec<String>, SysError> {
    unsupported("cgroups")
}

pub(crate) fn task_nice(_tid: i32) -> io::Result<i32> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "nice values are only implemented for Linux so far",
    ))
}

pub(crate) fn set_task_nice(_tid: i32, _nice: i32) -> io::Result<()> {
    task_nice(0).map(|_| ())
}

/// No user ids here: nobody is root.
pub(crate) fn effective_uid() -> u32 {
    u32::MAX
}

pub(crate) fn user_id(_name: &str) -> Result<Option<u32>, SysError> {
    unsupported("user names")
}

pub(crate) fn monotonic_ns() -> u64 {
    0
}

pub(crate) fn boot_time_ns() -> u64 {
    0
}

pub(crate) fn ticks_per_second() -> u64 {
    100
}

pub(crate) fn link_meta(_path: &Path) -> Result<FileMeta, SysError> {
    unsupported("file owners and modes")
}

pub(crate) fn canonical_path(path: &Path) -> Result<PathBuf, SysError> {
    std::fs::canonicalize(path).map_err(|error| SysError::Read {
        path: path.to_path_buf(),
        error,
    })
}

pub(crate) fn read_no_follow(_path: &Path) -> Result<(String, FileMeta), SysError> {
    unsupported("reading a file without following links")
}

pub(crate) fn cgroup_mounts(_root: &Path) -> Result<Vec<CgroupMount>, SysError> {
    Ok(Vec::new())
}

pub(crate) fn loaded_libraries() -> Result<Vec<PathBuf>, SysError> {
    unsupported("listing the loaded libraries")
}

pub(crate) fn cpuset_hierarchies(_root: &Path) -> Result<Vec<CpusetHierarchy>, SysError> {
    Ok(Vec::new())
}

pub(crate) fn child_cgroups(_dir: &Path) -> Result<Vec<PathBuf>, SysError> {
    unsupported("cgroups")
}

pub(crate) fn cgroup_pids(_dir: &Path) -> Result<Vec<i32>, SysError> {
    unsupported("cgroups")
}

pub(crate) fn read_cgroup_file(_path: &Path) -> Result<Vec<u8>, SysError> {
    unsupported("cgroups")
}

pub(crate) fn write_cgroup_file(_path: &Path, _bytes: &[u8]) -> Result<(), SysError> {
    unsupported("cgroups")
}

pub(crate) fn systemd_booted(_root: &Path) -> bool {
    false
}

pub(crate) fn systemctl(_args: &[&str]) -> Result<String, SysError> {
    unsupported("systemd")
}

/// No process events: [`ProcEvents::open`] always fails, and the caller polls.
#[derive(Debug)]
pub(crate) struct ProcEvents;

impl ProcEvents {
    pub(crate) fn open() -> Result<Self, SysError> {
        unsupported("the process-event connector")
    }

    pub(crate) fn fd(&self) -> EventsFd<'_> {
        unreachable!("ProcEvents cannot be opened here")
    }

    pub(crate) fn read(&mut self, _out: &mut Vec<ProcEvent>) -> Result<(), SysError> {
        Ok(())
    }
}

/// No signal descriptor: [`DaemonSignals::install`] always fails.
#[derive(Debug)]
pub(crate) struct DaemonSignals;

impl DaemonSignals {
    pub(crate) fn install() -> Result<Self, SysError> {
        unsupported("waiting for signals")
    }

    pub(crate) fn wait(
        &mut self,
        _events: Option<EventsFd<'_>>,
        _timeout: Option<Duration>,
    ) -> Result<Woken, SysError> {
        Ok(Woken::default())
    }
}
