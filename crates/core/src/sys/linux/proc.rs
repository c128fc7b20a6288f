//! Processes and threads through procfs: the process list with parents, each thread's `stat`
//! (name, the CPU it last ran on), `status` (real uid, `Cpus_allowed_list`, `VmHWM`), this
//! process's CPU time and peak-RSS reset, and `/proc/loadavg`.
//!
//! Processes are opened with [`Process::new_with_root`] under a `/proc` directory the caller
//! names, so tests read a fake tree in a temporary folder; procfs then reads each file relative
//! to the process's directory handle, so a pid reused meanwhile is not mistaken for the first.

use std::path::{Path, PathBuf};

use procfs::process::{ClearRefs, Process, Status};
use procfs::{LoadAverage, ProcError, ProcResult};

use super::files::{proc_error, read_procfs};
use super::sched;
use crate::sys::error::SysError;
use crate::sys::types::{ProcessFacts, ProcessInfo, ThreadInfo, TreeMember};

/// `/proc` of the live machine.
pub(crate) const PROC_DIR: &str = "/proc";

/// An open process and its directory, for naming the files it reads in errors.
struct Opened {
    process: Process,
    dir: PathBuf,
}

impl Opened {
    /// Process `pid` under `proc_dir`.
    fn pid(proc_dir: &Path, pid: i32) -> Result<Self, SysError> {
        let dir = proc_dir.join(pid.to_string());
        match Process::new_with_root(dir.clone()) {
            Ok(process) => Ok(Self { process, dir }),
            Err(ProcError::NotFound(_)) => Err(SysError::NoProcess { pid }),
            Err(e) => Err(proc_error(e, &dir)),
        }
    }

    /// This process (`/proc/self`).
    fn myself() -> Result<Self, SysError> {
        let dir = PathBuf::from(PROC_DIR).join("self");
        match Process::myself() {
            Ok(process) => Ok(Self { process, dir }),
            Err(e) => Err(proc_error(e, &dir)),
        }
    }

    /// What `read` reads from the process's `file`, with errors naming that file.
    fn read<T>(
        &self,
        file: &str,
        read: impl FnOnce(&Process) -> ProcResult<T>,
    ) -> Result<T, SysError> {
        read(&self.process).map_err(|e| proc_error(e, &self.dir.join(file)))
    }
}

/// Every process under `proc_dir` with its parent, in directory order. Processes that end while
/// the list is read are left out.
pub(crate) fn processes(proc_dir: &Path) -> Result<Vec<ProcessInfo>, SysError> {
    let all =
        procfs::process::all_processes_with_root(proc_dir).map_err(|e| proc_error(e, proc_dir))?;
    Ok(all
        .filter_map(Result::ok)
        .filter_map(|p| {
            let stat = p.stat().ok()?;
            Some(ProcessInfo {
                pid: p.pid,
                ppid: stat.ppid,
                // PF_FORKNOEXEC (include/linux/sched.h): forked, and no `exec` since.
                forked_only: stat.flags & 0x40 != 0,
                group: stat.pgrp,
                session: stat.session,
            })
        })
        .collect())
}

/// The processes under `proc_dir` whose process group is `pgid`, in directory order, each with
/// whether it has exited and waits to be reaped (a zombie). Processes that end while the list is
/// read are left out.
pub(crate) fn group_members(proc_dir: &Path, pgid: i32) -> Result<Vec<TreeMember>, SysError> {
    let all =
        procfs::process::all_processes_with_root(proc_dir).map_err(|e| proc_error(e, proc_dir))?;
    Ok(all
        .filter_map(Result::ok)
        .filter_map(|p| {
            let stat = p.stat().ok()?;
            (stat.pgrp == pgid).then_some(TreeMember {
                pid: u32::try_from(p.pid).ok()?,
                exited: stat.state == 'Z' || stat.state == 'X',
            })
        })
        .collect())
}

/// The ids of every process under `proc_dir`, in increasing order: one directory listing, nothing
/// read inside (cheap enough to repeat every poll interval).
pub(crate) fn pids(proc_dir: &Path) -> Result<Vec<i32>, SysError> {
    let entries = std::fs::read_dir(proc_dir).map_err(|error| SysError::Read {
        path: proc_dir.to_path_buf(),
        error,
    })?;
    let mut pids: Vec<i32> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// `PF_KTHREAD` in `/proc/PID/stat`'s flags (include/linux/sched.h).
const PF_KTHREAD: u32 = 0x0020_0000;

/// What the rules match a process on, from `stat`, `status` and the `exe` link of process `pid`
/// under `proc_dir`. The executable is `None` for kernel threads and where the link cannot be
/// read (another user's process, unprivileged); a zombie is reported as gone.
///
/// [`SysError::NoProcess`] when the process is gone (or a zombie).
pub(crate) fn process_facts(proc_dir: &Path, pid: i32) -> Result<ProcessFacts, SysError> {
    let gone = |e: SysError| match e {
        SysError::Read { ref error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
            SysError::NoProcess { pid }
        }
        e => e,
    };
    let process = Opened::pid(proc_dir, pid)?;
    let stat = process.read("stat", Process::stat).map_err(gone)?;
    if stat.state == 'Z' || stat.state == 'X' {
        return Err(SysError::NoProcess { pid });
    }
    let status = process.read("status", Process::status).map_err(gone)?;
    let kernel_thread = stat.flags & PF_KTHREAD != 0;
    let exe = if kernel_thread {
        None
    } else {
        process.process.exe().ok().map(|p| {
            // A binary replaced or deleted since it started.
            let text = p.to_string_lossy();
            match text.strip_suffix(" (deleted)") {
                Some(kept) => PathBuf::from(kept),
                None => p,
            }
        })
    };
    Ok(ProcessFacts {
        pid,
        ppid: stat.ppid,
        comm: stat.comm,
        exe,
        kernel_thread,
        uid: status.euid,
        ruid: status.ruid,
        start_ticks: stat.starttime,
    })
}

/// The executable of process `pid` under `proc_dir` (one `readlink`), `None` where it cannot
/// be read.
pub(crate) fn process_exe(proc_dir: &Path, pid: i32) -> Option<PathBuf> {
    std::fs::read_link(proc_dir.join(pid.to_string()).join("exe")).ok()
}

/// The command line of process `pid` under `proc_dir`, its arguments joined by spaces (empty for
/// kernel threads).
pub(crate) fn process_cmdline(proc_dir: &Path, pid: i32) -> Result<String, SysError> {
    Ok(Opened::pid(proc_dir, pid)?
        .read("cmdline", Process::cmdline)?
        .join(" "))
}

/// The cgroup paths of process `pid` under `proc_dir`: the v2 path first, then each v1
/// hierarchy's.
pub(crate) fn process_cgroups(proc_dir: &Path, pid: i32) -> Result<Vec<String>, SysError> {
    let procfs::ProcessCGroups(lines) =
        Opened::pid(proc_dir, pid)?.read("cgroup", Process::cgroups)?;
    let mut paths: Vec<(bool, String)> = lines
        .into_iter()
        .map(|l| (!l.controllers.is_empty(), l.pathname))
        .collect();
    paths.sort_by_key(|(v1, _)| *v1);
    let mut out: Vec<String> = paths.into_iter().map(|(_, p)| p).collect();
    out.dedup();
    Ok(out)
}

/// The thread ids of process `pid` under `proc_dir`, in increasing order.
///
/// [`SysError::NoProcess`] when the process (or its `task` directory) is not there.
pub(crate) fn thread_ids(proc_dir: &Path, pid: i32) -> Result<Vec<i32>, SysError> {
    let tasks = Opened::pid(proc_dir, pid)?
        .process
        .tasks()
        .map_err(|_| SysError::NoProcess { pid })?;
    let mut tids: Vec<i32> = tasks.filter_map(Result::ok).map(|t| t.tid).collect();
    tids.sort_unstable();
    Ok(tids)
}

/// The threads of process `pid` under `proc_dir`, by thread id. Threads that end while they
/// are read are left out; a file that cannot be read leaves its fields `None`.
pub(crate) fn threads(proc_dir: &Path, pid: i32) -> Result<Vec<ThreadInfo>, SysError> {
    threads_of(&Opened::pid(proc_dir, pid)?)
}

/// The threads of this process.
pub(crate) fn own_threads() -> Result<Vec<ThreadInfo>, SysError> {
    threads_of(&Opened::myself()?)
}

fn threads_of(process: &Opened) -> Result<Vec<ThreadInfo>, SysError> {
    let tasks = process.read("task", Process::tasks)?;
    let mut out: Vec<ThreadInfo> = tasks
        .filter_map(Result::ok)
        .map(|task| {
            let stat = task.stat().ok();
            let sched = process.dir.join(format!("task/{}/sched", task.tid));
            ThreadInfo {
                tid: task.tid,
                cpu: stat
                    .as_ref()
                    .and_then(|s| s.processor)
                    .and_then(|c| usize::try_from(c).ok()),
                started: stat.as_ref().map(|s| s.starttime),
                cpu_ticks: stat.as_ref().map(|s| s.utime + s.stime),
                name: stat.map(|s| s.comm),
                migrations: sched::migrations(&sched).ok(),
            }
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    Ok(out)
}

/// The state letter of process `pid` under `proc_dir` (`R`, `S`, `Z` for a zombie, ...).
pub(crate) fn process_state(proc_dir: &Path, pid: i32) -> Result<char, SysError> {
    Ok(Opened::pid(proc_dir, pid)?
        .read("stat", Process::stat)?
        .state)
}

/// The real uid of process `pid` under `proc_dir`.
pub(crate) fn process_uid(proc_dir: &Path, pid: i32) -> Result<u32, SysError> {
    Ok(Opened::pid(proc_dir, pid)?
        .read("status", Process::status)?
        .ruid)
}

/// The real uid of this process.
pub(crate) fn own_uid() -> Result<u32, SysError> {
    Ok(Opened::myself()?.read("status", Process::status)?.ruid)
}

/// The CPUs this process may run on: `Cpus_allowed_list` of `proc/self/status` under `root`
/// (`/` for the live machine), which is what `sched_getaffinity` returns for the main thread.
pub(crate) fn allowed_cpus(root: &Path) -> Result<Vec<usize>, SysError> {
    let path = root.join("proc/self/status");
    let status: Status = read_procfs(&path)?;
    let parse_error = |what: &str| SysError::Parse {
        path: path.clone(),
        what: what.to_owned(),
    };
    let ranges = status
        .cpus_allowed_list
        .ok_or_else(|| parse_error("no Cpus_allowed_list"))?;
    let mut cpus = Vec::new();
    for (first, last) in ranges {
        if last < first {
            return Err(parse_error("a Cpus_allowed_list range goes downwards"));
        }
        cpus.extend((first..=last).filter_map(|c| usize::try_from(c).ok()));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Resets this process's peak resident set size (`VmHWM`) to its current size: writes `5` to
/// `/proc/self/clear_refs` (Linux ≥ 4.0).
pub(crate) fn reset_peak_rss() -> Result<(), SysError> {
    Opened::myself()?.read("clear_refs", |p| p.clear_refs(ClearRefs::PeakRSS))
}

/// This process's peak resident set size (`VmHWM`), in bytes.
pub(crate) fn peak_rss_bytes() -> Result<u64, SysError> {
    let process = Opened::myself()?;
    let status = process.read("status", Process::status)?;
    let kib = status.vmhwm.ok_or_else(|| SysError::Parse {
        path: process.dir.join("status"),
        what: "no VmHWM".to_owned(),
    })?;
    Ok(kib * 1024)
}

/// CPU time this process has used (all threads, living and dead): `utime + stime` of
/// `/proc/self/stat`, in clock ticks.
pub(crate) fn own_cpu_ticks() -> Result<u64, SysError> {
    let stat = Opened::myself()?.read("stat", Process::stat)?;
    // cutime and cstime: the children this process has waited for (a program it ran and
    // reaped), which are as much "this run" as its own threads.
    let children = u64::try_from(stat.cutime.max(0) + stat.cstime.max(0)).unwrap_or(0);
    Ok(stat.utime + stat.stime + children)
}

/// The 1-minute load average (`/proc/loadavg`).
/// The files mapped into this process that are shared libraries (`*.so`, `*.so.N`), each once,
/// in address order (`/proc/self/maps`).
pub(crate) fn loaded_libraries() -> Result<Vec<PathBuf>, SysError> {
    let maps = Process::myself()
        .and_then(|me| me.maps())
        .map_err(|e| proc_error(e, Path::new("/proc/self/maps")))?;
    let mut found: Vec<PathBuf> = Vec::new();
    for map in maps {
        if let procfs::process::MMapPath::Path(path) = map.pathname {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let library = name.is_some_and(|n| n.ends_with(".so") || n.contains(".so."));
            if library && !found.contains(&path) {
                found.push(path);
            }
        }
    }
    Ok(found)
}

pub(crate) fn load_average() -> Result<f64, SysError> {
    let load: LoadAverage = read_procfs(&PathBuf::from(PROC_DIR).join("loadavg"))?;
    // The kernel writes two decimals; procfs parses them into an `f32`. Rounding back to two
    // decimals gives the `f64` the text itself parses to (0.36, not 0.36000001430511475).
    Ok((f64::from(load.one) * 100.0).round() / 100.0)
}

/// The memory policy of process `pid` as the first line of its `numa_maps` spells it
/// (`default`, `local`, `interleave:0-1`, `bind:1`, `prefer:0`; a mapping without a policy of
/// its own shows the process's), or `None` when it cannot be read (gone, another user's, no
/// NUMA support in the kernel).
pub(crate) fn memory_policy(proc_dir: &Path, pid: i32) -> Option<String> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(proc_dir.join(pid.to_string()).join("numa_maps")).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    line.split_ascii_whitespace().nth(1).map(str::to_owned)
}

/// The TCP sockets listening on `port`, IPv4 and IPv6, each with its address and inode (from
/// `/proc/net/tcp` and `tcp6`: those of this process's network namespace).
pub(crate) fn tcp_listeners(port: u16) -> Vec<(std::net::SocketAddr, u64)> {
    let mut out = Vec::new();
    for table in [procfs::net::tcp(), procfs::net::tcp6()] {
        for entry in table.unwrap_or_default() {
            if entry.state == procfs::net::TcpState::Listen && entry.local_address.port() == port {
                out.push((entry.local_address, entry.inode));
            }
        }
    }
    out
}

/// The processes under `proc_dir` that hold one of the sockets `inodes` open (those whose
/// descriptors can be read: every process for root, one's own otherwise).
pub(crate) fn socket_owners(proc_dir: &Path, inodes: &[u64]) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes_with_root(proc_dir) else {
        return Vec::new();
    };
    all.filter_map(Result::ok)
        .filter(|p| {
            p.fd().is_ok_and(|fds| {
                fds.filter_map(Result::ok).any(|fd| {
                    matches!(fd.target, procfs::process::FDTarget::Socket(inode) if inodes.contains(&inode))
                })
            })
        })
        .map(|p| p.pid)
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{sched, status, task_stat, write};

    /// Process 10 (threads 10 and 11, the second without `sched`), its child 20 (a zombie).
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "10/stat", &task_stat(10, "app", 1, 0));
        write(root, "10/status", &status("0-1", 1000, 100));
        write(root, "10/task/11/stat", &task_stat(11, "worker (1)", 1, 1));
        write(root, "10/task/10/stat", &task_stat(10, "app", 1, 0));
        write(root, "10/task/10/sched", &sched(4));
        write(
            root,
            "20/stat",
            &task_stat(20, "sh", 10, 1).replace(" R ", " Z "),
        );
        write(root, "20/task/20/stat", &task_stat(20, "sh", 10, 1));
        dir
    }

    #[test]
    fn processes_threads_and_states_of_a_fake_tree() {
        let dir = tree();
        let root = dir.path();
        let mut procs: Vec<(i32, i32)> = processes(root)
            .unwrap()
            .iter()
            .map(|p| (p.pid, p.ppid))
            .collect();
        procs.sort_unstable();
        assert_eq!(procs, [(10, 1), (20, 10)]);
        assert_eq!(thread_ids(root, 10).unwrap(), [10, 11]);
        let threads = threads(root, 10).unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(
            (threads[0].tid, threads[0].cpu, threads[0].migrations),
            (10, Some(0), Some(4))
        );
        assert_eq!(threads[1].name.as_deref(), Some("worker (1)"));
        assert_eq!((threads[1].cpu, threads[1].migrations), (Some(1), None));
        assert_eq!(process_state(root, 10).unwrap(), 'R');
        assert_eq!(process_state(root, 20).unwrap(), 'Z');
        assert_eq!(process_uid(root, 10).unwrap(), 1000);
        assert!(matches!(
            thread_ids(root, 99),
            Err(SysError::NoProcess { pid: 99 })
        ));
        assert!(matches!(
            process_uid(root, 20),
            Err(SysError::Read { path, .. }) if path.ends_with("20/status")
        ));
    }

    #[test]
    fn allowed_cpus_from_a_status_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/self/status", &status("0-3,8,2", 0, 100));
        assert_eq!(allowed_cpus(root).unwrap(), [0, 1, 2, 3, 8]);
        write(
            root,
            "proc/self/status",
            "Name:\tx\nCpus_allowed_list:\t0-3\n",
        );
        let err = allowed_cpus(root).unwrap_err();
        assert!(
            matches!(&err, SysError::Parse { path, .. } if path.ends_with("proc/self/status")),
            "{err}"
        );
    }

    #[test]
    fn this_process_reads_its_own_uid_ticks_load_and_threads() {
        assert!(own_uid().is_ok());
        assert!(own_cpu_ticks().is_ok());
        assert!(load_average().unwrap() >= 0.0);
        assert!(peak_rss_bytes().unwrap() > 0);
        let own = own_threads().unwrap();
        let me = crate::sys::current_tid().unwrap();
        let this = own
            .iter()
            .find(|t| t.tid == me)
            .expect("this thread is listed");
        assert!(this.cpu.is_some() && this.name.is_some());
    }
}
