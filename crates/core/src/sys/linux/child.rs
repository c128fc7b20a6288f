//! A started program: its CPU set applied before `exec`, and its process tree (a process group
//! of its own when asked, with a cgroup leaf where one can be made and coretune as the
//! subreaper: see `contain.rs`), so that a timeout ends the program and everything it started,
//! a server is asked to end, then killed, as a whole, and nothing of it outlives its handle.

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
use super::contain;
use crate::sys::types::{Prepared, ResourceUsage, Tree, TreeMember};

/// Prepares `cmd` before it is spawned: bound to `cpus` (when given) between `fork` and `exec`,
/// so the program and every thread it creates start on the set; for [`Tree::Own`], in a process
/// group of its own, in a new cgroup leaf where one can be made (it joins before `exec`), ended
/// by the kernel should coretune die (`PR_SET_PDEATHSIG`), and with coretune as the reaper of
/// its orphans.
pub(crate) fn prepare_child(
    cmd: &mut Command,
    cpus: Option<&CpuSet>,
    tree: Tree,
) -> io::Result<Prepared> {
    if let Some(cpus) = cpus {
        bind_before_exec(cmd, cpus)?;
    }
    let mut prepared = Prepared::default();
    if tree == Tree::Own && contain::is_stopping() {
        return Err(io::Error::other(
            "coretune is quitting: nothing more is started",
        ));
    }
    if tree == Tree::Own {
        cmd.process_group(0);
        // Not fatal: without it, orphans go to init and are found through the group only.
        let _ = adopt_orphans();
        if let Some(leaf) = contain::new_leaf() {
            contain::join_before_exec(cmd, &leaf)?;
            prepared.cgroup = Some(leaf);
        }
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: the closure runs in the child between fork and exec and calls only `prctl`,
        // `getppid` and `_exit`'s absence: `prctl(PR_SET_PDEATHSIG)` and `getppid` are
        // async-signal-safe system calls taking integers. The death signal is sent when the
        // thread that forked the child ends: coretune starts contained programs from the
        // thread that runs the sweep, which lives as long as the sweep.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                // Its parent already ended: the signal will never come.
                if libc::getppid() != parent {
                    return Err(io::Error::other("coretune ended while starting it"));
                }
                Ok(())
            });
        }
    }
    prepared.exec_clock = exec_clock(cmd);
    Ok(prepared)
}

/// A pipe the child writes the time it `exec`s to (`CLOCK_MONOTONIC` in nanoseconds, 8 bytes),
/// as the last thing it does before `exec`: every other preparation is registered before. Both
/// ends close on `exec`; `None` when no pipe can be made (the run is then timed from before
/// the `fork`).
fn exec_clock(cmd: &mut Command) -> Option<(std::fs::File, std::fs::File)> {
    let mut fds = [0; 2];
    // SAFETY: `pipe2` writes two descriptors into the two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return None;
    }
    // SAFETY: both descriptors were just returned by `pipe2` and are owned by nobody else.
    let (read, write) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    let fd = fds[1];
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // `clock_gettime` and `write`, both async-signal-safe, on a local and on the pipe's write
    // end, which the child inherited (it closes at `exec`).
    unsafe {
        cmd.pre_exec(move || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut t);
            let ns = u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
                + u64::try_from(t.tv_nsec).unwrap_or(0);
            let bytes = ns.to_ne_bytes();
            libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            Ok(())
        });
    }
    Some((read, write))
}

/// A started program and the processes it starts.
#[derive(Debug)]
pub(crate) struct ChildTree {
    pid: libc::pid_t,
    own_group: bool,
    /// Its cgroup leaf, when it joined one (then every process it started is listed there).
    leaf: Option<std::path::PathBuf>,
    /// When it was about to `exec` (`CLOCK_MONOTONIC` nanoseconds), as it wrote it.
    exec_ns: Option<u64>,
    /// The program's exit status and its own resource use (with the children it waited for),
    /// once reaped here with `wait4`: a run's CPU time and peak memory are its own, not the
    /// largest of every child coretune ever had (`RUSAGE_CHILDREN`'s peak).
    reaped: OnceLock<(ExitStatus, ResourceUsage)>,
}

impl ChildTree {
    /// Takes charge of `child`, prepared by [`prepare_child`] with the same `tree` (the CPU set
    /// was applied before `exec`: nothing is left to do), and registers it so that
    /// `contain::stop_everything` can end it.
    pub(crate) fn adopt(
        child: &Child,
        _cpus: Option<&CpuSet>,
        tree: Tree,
        prepared: Prepared,
    ) -> io::Result<Self> {
        let pid =
            libc::pid_t::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        let own_group = tree == Tree::Own;
        // A leaf it could not join (the write was refused) holds nothing of it. A program that
        // has already ended is no longer listed there: its leaf is kept (what it started is).
        let leaf = prepared.cgroup.and_then(|leaf| {
            let ended = super::proc::process_state(std::path::Path::new(super::PROC_DIR), pid)
                .map_or(true, |s| s == 'Z' || s == 'X');
            if ended || contain::in_leaf(&leaf, pid) {
                Some(leaf)
            } else {
                contain::remove_leaf(&leaf);
                None
            }
        });
        contain::register(pid, if own_group { pid } else { 0 }, leaf.as_deref());
        // The child has `exec`ed (the spawn returned): the time it wrote is there.
        let exec_ns = prepared.exec_clock.and_then(|(mut read, write)| {
            drop(write);
            let mut bytes = [0u8; 8];
            std::io::Read::read_exact(&mut read, &mut bytes).ok()?;
            Some(u64::from_ne_bytes(bytes))
        });
        Ok(Self {
            pid,
            own_group,
            leaf,
            exec_ns,
            reaped: OnceLock::new(),
        })
    }

    /// When the program was about to `exec` (`CLOCK_MONOTONIC`, nanoseconds), as it said.
    pub(crate) fn exec_ns(&self) -> Option<u64> {
        self.exec_ns
    }

    /// Whether its processes are tracked by a cgroup leaf (a daemon that leaves the process
    /// group is still found and ended).
    pub(crate) fn catches_daemons(&self) -> bool {
        self.leaf.is_some()
    }

    /// Ends the program with SIGKILL: everything in its cgroup leaf and its whole process group
    /// when it has them (what it started goes with it, daemons included where a leaf tracks
    /// them), else the program alone.
    pub(crate) fn kill(&self) -> io::Result<()> {
        let group = self.signal(libc::SIGKILL);
        match &self.leaf {
            Some(leaf) => {
                contain::kill_leaf(leaf);
                Ok(())
            }
            None if self.own_group => {
                // Daemons that left the group, handed to coretune as orphans.
                contain::kill_orphans(self.pid);
                group
            }
            None => group,
        }
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
        let group = self.signal(libc::SIGTERM);
        if let Some(leaf) = &self.leaf {
            // Those of its processes that left the group (a daemon's `setsid`).
            for pid in contain::leaf_pids(leaf).unwrap_or_default() {
                // SAFETY: `kill` takes integers; `pid` was just listed in this tree's leaf,
                // which only this tree's processes join.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        group
    }

    /// The processes of the tree that the kernel still has: those of its process group (what
    /// the program started and did not move to a group of its own, its reparented orphans
    /// included), or the program alone without a group of its own. A process that has exited
    /// but is not reaped yet is listed as such ([`TreeMember::exited`]).
    pub(crate) fn members(&self) -> io::Result<Vec<TreeMember>> {
        let proc_dir = std::path::Path::new(super::PROC_DIR);
        if let Some(leaf) = &self.leaf {
            let mut members: Vec<TreeMember> = contain::leaf_pids(leaf)?
                .into_iter()
                .filter_map(|pid| {
                    let state = super::proc::process_state(proc_dir, pid).ok()?;
                    Some(TreeMember {
                        pid: u32::try_from(pid).ok()?,
                        exited: state == 'Z' || state == 'X',
                    })
                })
                .collect();
            // An exited program not yet reaped has left the leaf's list but is still there.
            if self.reaped.get().is_none()
                && !members
                    .iter()
                    .any(|m| i64::from(m.pid) == i64::from(self.pid))
                && let Ok(state) = super::proc::process_state(proc_dir, self.pid)
            {
                members.push(TreeMember {
                    pid: u32::try_from(self.pid).unwrap_or(0),
                    exited: state == 'Z' || state == 'X',
                });
            }
            return Ok(members);
        }
        if self.own_group {
            let mut members = super::proc::group_members(proc_dir, self.pid)
                .map_err(|e| io::Error::other(e.to_string()))?;
            // Without a leaf, a daemon that left the group (`setsid`) is found as an orphan
            // handed to coretune: any such process is counted to every tree without a leaf.
            for pid in contain::orphans(Some(self.pid)) {
                if let (Ok(id), Ok(state)) = (
                    u32::try_from(pid),
                    super::proc::process_state(proc_dir, pid),
                ) && !members.iter().any(|m| m.pid == id)
                {
                    members.push(TreeMember {
                        pid: id,
                        exited: state == 'Z' || state == 'X',
                    });
                }
            }
            return Ok(members);
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

    /// Reaps the processes of the program's tree that have exited and were handed to this
    /// process as the subreaper (a server's workers that outlived its master, a daemon's
    /// processes), and returns their resource use added up (`None` when none was reaped).
    /// Only those: the program itself is reaped by [`ChildTree::wait`], and other children of
    /// this process are left to their own waits.
    pub(crate) fn reap_orphans(&self) -> Option<ResourceUsage> {
        if !self.own_group {
            return None;
        }
        let mut total: Option<ResourceUsage> = None;
        for pid in contain::orphans(Some(self.pid)) {
            if pid == self.pid {
                continue;
            }
            let mut status: libc::c_int = 0;
            // SAFETY: all-zero is a valid `rusage`.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: `wait4` writes through the two pointers, to locals of the right types;
            // `pid` is this process's child (listed with it as its parent, not reaped yet).
            let rc = unsafe { libc::wait4(pid, &raw mut status, libc::WNOHANG, &raw mut usage) };
            if rc == pid {
                let one = rusage(&usage);
                total = Some(total.map_or(one, |t| t.plus(one)));
            }
        }
        total
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

impl Drop for ChildTree {
    /// A tree of its own does not outlive its handle: what is left of it (its leaf, its process
    /// group) is killed, the leaf removed, and the tree forgotten by the registry.
    fn drop(&mut self) {
        if self.own_group {
            let left = self.members().is_ok_and(|m| m.iter().any(|m| !m.exited));
            if left {
                let _ = self.kill();
            }
            if let Some(leaf) = &self.leaf {
                contain::remove_leaf(leaf);
            }
        }
        contain::unregister(self.pid);
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
fn adopt_orphans() -> io::Result<()> {
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
