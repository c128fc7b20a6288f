//! A started program: its CPU set applied before `exec`, and its process tree (a process group
//! of its own when asked, so that a timeout ends the program and everything it started, and a
//! server is asked to end, then killed, as a whole).

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use hwlocality::cpu::cpuset::CpuSet;

use super::affinity::bind_before_exec;
use crate::sys::{ResourceUsage, Tree, TreeMember};

/// Prepares `cmd` before it is spawned: bound to `cpus` (when given) between `fork` and `exec`,
/// so the program and every thread it creates start on the set, and in a process group of its
/// own for [`Tree::Own`].
pub(crate) fn prepare_child(
    cmd: &mut Command,
    cpus: Option<&CpuSet>,
    tree: Tree,
) -> io::Result<()> {
    if let Some(cpus) = cpus {
        bind_before_exec(cmd, cpus)?;
    }
    if tree == Tree::Own {
        cmd.process_group(0);
    }
    Ok(())
}

/// A started program and the processes it starts.
#[derive(Debug)]
pub(crate) struct ChildTree {
    pid: libc::pid_t,
    own_group: bool,
    /// The program's exit status and its own resource use (with the children it waited for),
    /// once reaped here with `wait4`: a run's CPU time and peak memory are its own, not the
    /// largest of every child coretune ever had (`RUSAGE_CHILDREN`'s peak).
    reaped: OnceLock<(ExitStatus, ResourceUsage)>,
}

impl ChildTree {
    /// Takes charge of `child`, prepared by [`prepare_child`] with the same `tree` (the CPU set
    /// was applied before `exec`: nothing is left to do).
    pub(crate) fn adopt(child: &Child, _cpus: Option<&CpuSet>, tree: Tree) -> io::Result<Self> {
        let pid =
            libc::pid_t::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        Ok(Self {
            pid,
            own_group: tree == Tree::Own,
            reaped: OnceLock::new(),
        })
    }

    /// Ends the program with SIGKILL: its whole process group when it has one of its own (what
    /// it started and did not move elsewhere goes with it), else the program alone.
    pub(crate) fn kill(&self) -> io::Result<()> {
        self.signal(libc::SIGKILL)
    }

    /// Sends `signal` to the process group when the program has one of its own, else to the
    /// program. Once the program is reaped its pid may be reused: only what is left of its group
    /// gets the signal (ESRCH, no member left, is the usual answer and not an error).
    fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        if self.reaped.get().is_some() {
            if self.own_group {
                // SAFETY: as below.
                unsafe { libc::kill(-self.pid, signal) };
            }
            return Ok(());
        }
        let target = if self.own_group { -self.pid } else { self.pid };
        // SAFETY: `kill` takes plain integers. The pid is that of a child not yet reaped (the
        // caller waits for it after this), so it cannot name an unrelated process. Its process
        // group id (equal to it, set before `exec`) stays allocated to the group while any
        // process of the group lives: callers that signal the group after reaping the program
        // (a server's stop) do so only when `members` found processes left in it.
        let rc = unsafe { libc::kill(target, signal) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Asks the program to end with SIGTERM: its whole process group when it has one of its own
    /// (every process of it gets the signal, as a shell's `kill -TERM -PGID` sends it), else the
    /// program alone.
    pub(crate) fn terminate(&self) -> io::Result<()> {
        self.signal(libc::SIGTERM)
    }

    /// The processes of the tree that the kernel still has: those of its process group (what
    /// the program started and did not move to a group of its own, its reparented orphans
    /// included), or the program alone without a group of its own. A process that has exited
    /// but is not reaped yet is listed as such ([`TreeMember::exited`]).
    pub(crate) fn members(&self) -> io::Result<Vec<TreeMember>> {
        let proc_dir = std::path::Path::new(super::PROC_DIR);
        if self.own_group {
            return super::proc::group_members(proc_dir, self.pid)
                .map_err(|e| io::Error::other(e.to_string()));
        }
        // In coretune's group: the program alone, if the kernel still has it.
        let pid = u32::try_from(self.pid).map_err(|_| io::Error::other("pid out of range"))?;
        Ok(super::proc::process_state(proc_dir, self.pid)
            .ok()
            .map(|state| TreeMember {
                pid,
                exited: state == 'Z' || state == 'X',
            })
            .into_iter()
            .collect())
    }

    /// The program's own resource use (and that of the children it waited for), once it has
    /// been reaped by [`ChildTree::wait`].
    pub(crate) fn usage(&self) -> Option<ResourceUsage> {
        self.reaped.get().map(|r| r.1)
    }

    /// Reaps the processes of the program's group that have exited and were handed to this
    /// process (after [`adopt_orphans`]: a server's workers that outlived its master), and
    /// returns their resource use added up (`None` when none was reaped). Only the group's:
    /// other children of this process are left to their own waits.
    pub(crate) fn reap_orphans(&self) -> Option<ResourceUsage> {
        if !self.own_group {
            return None;
        }
        let mut total: Option<ResourceUsage> = None;
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: all-zero is a valid `rusage`.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: `wait4` writes through the two pointers, to locals of the right types;
            // `-pid` names this tree's process group, whose id stays its own while it has
            // members (no member left: ECHILD, the end of the loop).
            let rc =
                unsafe { libc::wait4(-self.pid, &raw mut status, libc::WNOHANG, &raw mut usage) };
            if rc <= 0 {
                if rc < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return total;
            }
            let one = rusage(&usage);
            total = Some(total.map_or(one, |t| t.plus(one)));
        }
    }

    /// Reaps the program if it has exited (`block`: waits until it has), keeping its status and
    /// resource use; `None` when it still runs.
    fn reap(&self, block: bool) -> io::Result<Option<ExitStatus>> {
        if let Some((status, _)) = self.reaped.get() {
            return Ok(Some(*status));
        }
        let mut status: libc::c_int = 0;
        // SAFETY: all-zero is a valid `rusage` (plain integers and timevals).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        loop {
            // SAFETY: `wait4` writes an int and a `rusage` through the two pointers, which
            // point to locals of the right types; the pid is this tree's child, not yet reaped.
            let rc = unsafe { libc::wait4(self.pid, &raw mut status, flags, &raw mut usage) };
            if rc == 0 {
                return Ok(None);
            }
            if rc == self.pid {
                break;
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        let reaped = (ExitStatus::from_raw(status), rusage(&usage));
        Ok(Some(self.reaped.get_or_init(|| reaped).0))
    }

    /// Waits for `child` (this tree's program) to end, blocked in the kernel the whole time: its
    /// status, or `None` when `timeout` passed first (it still runs). Nothing wakes coretune
    /// while the program runs, so a measured program that uses every CPU is not preempted by
    /// its measurer (a `try_wait` poll every 200 µs was 5,000 wake-ups a second).
    ///
    /// With a timeout: `poll` on a pidfd (`pidfd_open(2)`, Linux 5.3), readable once the process
    /// has exited; where there is none (an older kernel, a seccomp filter), a thread blocked in
    /// `waitid(WEXITED | WNOWAIT)`, which tells without reaping.
    pub(crate) fn wait(
        &self,
        child: &mut Child,
        timeout: Option<Duration>,
    ) -> io::Result<Option<ExitStatus>> {
        // The program is reaped here, not by `child`: `wait4` gives its own resource use.
        let _ = child;
        let Some(timeout) = timeout else {
            return self.reap(true);
        };
        if let Some(status) = self.reap(false)? {
            return Ok(Some(status));
        }
        let deadline = Instant::now() + timeout;
        let Some(pidfd) = pidfd_open(self.pid) else {
            return match wait_on_thread(self.pid, timeout)? {
                true => self.reap(true),
                false => Ok(None),
            };
        };
        loop {
            if let Some(status) = self.reap(false)? {
                return Ok(Some(status));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            // Rounded up to the next millisecond, so the last poll does not return early and
            // spin; at most `i32::MAX` ms a call (24 days), then again.
            let ms = u64::try_from(left.as_millis() + 1).unwrap_or(u64::MAX);
            let wait = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, wait) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A `wait4` resource record as coretune keeps it.
fn rusage(usage: &libc::rusage) -> ResourceUsage {
    let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    ResourceUsage {
        user: time(usage.ru_utime),
        system: time(usage.ru_stime),
        voluntary_ctx_switches: Some(count(usage.ru_nvcsw)),
        involuntary_ctx_switches: Some(count(usage.ru_nivcsw)),
        // In KiB.
        max_rss_bytes: count(usage.ru_maxrss) * 1024,
    }
}

/// Makes this process the reaper of its descendants' orphans (`PR_SET_CHILD_SUBREAPER`): a
/// process whose parent ends before it (a server's worker that outlives its master) is handed
/// to coretune rather than to PID 1, so that it can be reaped and counted
/// ([`ChildTree::reap_orphans`]) instead of lingering as a zombie under an init that does not
/// reap.
pub(crate) fn adopt_orphans() -> io::Result<()> {
    // SAFETY: `prctl(PR_SET_CHILD_SUBREAPER, 1)` takes integers only and affects this process.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A pidfd for process `pid`, or `None` where the kernel has none.
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: `pidfd_open(pid, 0)` takes two integers and returns a new file descriptor or -1;
    // no memory is passed. The pid is a child not yet reaped, so it names that child.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: `fd` was just returned by the kernel as a new descriptor owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`ChildTree::wait`] without a pidfd: a thread blocks in `waitid` until the child has exited
/// (without reaping it, `WNOWAIT`) and says so; this thread waits for that message at most
/// `timeout` and says whether it came (the caller then reaps). A thread that outlives a timeout
/// ends when the caller kills the child.
fn wait_on_thread(pid: libc::pid_t, timeout: Duration) -> io::Result<bool> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("coretune-wait".into())
        .spawn(move || {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
            let result = loop {
                match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
                    Err(nix::errno::Errno::EINTR) => {}
                    other => break other.map(|_| ()),
                }
            };
            let _ = tx.send(result);
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(())) | Err(mpsc::RecvTimeoutError::Disconnected) => Ok(true),
        Ok(Err(e)) => Err(e.into()),
        Err(mpsc::RecvTimeoutError::Timeout) => Ok(false),
    }
}
