//! A started program: its CPU set applied before `exec`, and its process tree (a process group
//! of its own when asked, so that a timeout ends the program and everything it started).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use hwlocality::cpu::cpuset::CpuSet;

use super::affinity::bind_before_exec;
use crate::sys::{ResourceUsage, Tree};

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
        })
    }

    /// Ends the program with SIGKILL: its whole process group when it has one of its own (what
    /// it started and did not move elsewhere goes with it), else the program alone.
    pub(crate) fn kill(&self) -> io::Result<()> {
        let target = if self.own_group { -self.pid } else { self.pid };
        // SAFETY: `kill` takes plain integers. The pid is that of a child not yet reaped (the
        // caller waits for it after this), so neither it nor its process group id (equal to it,
        // set before `exec`) can name an unrelated process.
        let rc = unsafe { libc::kill(target, libc::SIGKILL) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Not read here: the caller reads `getrusage(RUSAGE_CHILDREN)` around the run, which
    /// counts the program and the children it waited for.
    pub(crate) fn usage(&self) -> Option<ResourceUsage> {
        None
    }
}
