//! Starting other programs and rebinding running ones: the CPU set of a command started by
//! coretune (set before `exec`, so every thread it makes inherits it), its process tree, waiting
//! for it with a timeout, and rebinding a running process with all its threads.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;

use crate::sys::{self, ResourceUsage, Tree, TreeMember};

/// Why a program could not be started, waited for, or rebound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The program is not on `PATH` (or the path does not exist).
    #[error("'{program}': command not found")]
    CommandNotFound {
        /// The program as given.
        program: String,
    },
    /// The program exists but the execute permission is missing, or it is not a file.
    #[error("'{program}': {path} is not an executable file")]
    NotExecutable {
        /// The program as given.
        program: String,
        /// Where it was found.
        path: PathBuf,
    },
    /// The program exists but could not be started (affinity refused, bad format, ...).
    #[error("'{program}': cannot start it: {error}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The OS error.
        error: io::Error,
    },
    /// Waiting for the child failed.
    #[error("waiting for '{program}': {error}")]
    Wait {
        /// The program as given.
        program: String,
        /// The OS error.
        error: io::Error,
    },
    /// No process has this pid.
    #[error("no process with pid {pid}")]
    NoSuchProcess {
        /// The pid.
        pid: u32,
    },
    /// The process belongs to another user.
    #[error(
        "pid {pid} belongs to uid {owner}, not to you (uid {me}): changing another user's CPU \
         affinity needs root or CAP_SYS_NICE (EPERM)"
    )]
    PermissionDenied {
        /// The pid.
        pid: u32,
        /// Its owner's uid.
        owner: String,
        /// This process's uid.
        me: String,
    },
    /// The process may not be changed by this user, on a system without uids (Windows: another
    /// user's or an elevated process, from a prompt that is not elevated).
    #[error(
        "pid {pid}: {error}: changing another user's or an elevated process needs an elevated prompt"
    )]
    AccessDenied {
        /// The pid.
        pid: u32,
        /// The OS error.
        error: io::Error,
    },
    /// The kernel refused the set for a thread.
    #[error("thread {tid} of pid {pid}: {error}{hint}")]
    Affinity {
        /// The process.
        pid: u32,
        /// The thread.
        tid: i32,
        /// The OS error.
        error: io::Error,
        /// An explanation for EINVAL (no allowed CPU in the set), else empty.
        hint: &'static str,
    },
}

/// Finds the program a command would run, as `execvp` does: a name with a `/` is a path, any
/// other name is looked up in the directories of `PATH` (on Windows also with each extension of
/// `PATHEXT`, and a name with `\\` or a drive is a path). Called before anything runs, so a
/// typo is one clear error rather than a sweep of failed runs.
///
/// # Errors
///
/// [`LaunchError::CommandNotFound`] when there is no such file, [`LaunchError::NotExecutable`]
/// when it is a directory or lacks the execute permission.
pub fn find_program(program: &str) -> Result<PathBuf, LaunchError> {
    let not_found = || LaunchError::CommandNotFound {
        program: program.to_owned(),
    };
    if program.is_empty() {
        return Err(not_found());
    }
    if sys::is_path(program) {
        let path = Path::new(program);
        if !path.exists() {
            // `prog` for `prog.exe` on Windows.
            let dir = path.parent().unwrap_or(Path::new(""));
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            return name
                .and_then(|name| {
                    sys::executable_candidates(dir, &name)
                        .into_iter()
                        .find(|p| sys::is_executable_file(p))
                })
                .ok_or_else(not_found);
        }
        return if sys::is_executable_file(path) {
            Ok(path.to_path_buf())
        } else {
            Err(LaunchError::NotExecutable {
                program: program.to_owned(),
                path: path.to_path_buf(),
            })
        };
    }
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .flat_map(|dir| sys::executable_candidates(&dir, program))
        .find(|p| sys::is_executable_file(p))
        .ok_or_else(not_found)
}

/// The command that runs `script` in the system's shell: `sh -c SCRIPT`, on Windows
/// `cmd /C SCRIPT`.
pub fn shell_command(script: &str) -> Command {
    sys::shell_command(script)
}

/// The system's shell program: `sh`, on Windows `cmd`.
pub(crate) fn shell_program() -> String {
    sys::shell_command("")
        .get_program()
        .to_string_lossy()
        .into_owned()
}

/// Starts `cmd` bound to `cpus` (when given) and returns the running program, which stays in
/// coretune's process group (the terminal's Ctrl-C reaches both); the caller waits.
///
/// # Errors
///
/// [`LaunchError::CommandNotFound`], [`LaunchError::Spawn`] (including a CPU set the kernel
/// refuses).
pub fn spawn(cmd: Command, cpus: Option<&CpuSet>) -> Result<Launched, LaunchError> {
    Launched::start(cmd, cpus, Tree::Shared)
}

/// A program coretune started, with the processes it starts.
#[derive(Debug)]
pub struct Launched {
    child: Child,
    tree: sys::ChildTree,
}

impl Launched {
    pub(crate) fn start(
        mut cmd: Command,
        cpus: Option<&CpuSet>,
        tree: Tree,
    ) -> Result<Self, LaunchError> {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let spawn_error = |error| LaunchError::Spawn {
            program: program.clone(),
            error,
        };
        let prepared = sys::prepare_child(&mut cmd, cpus, tree).map_err(spawn_error)?;
        let mut child = cmd.spawn().map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => LaunchError::CommandNotFound {
                program: program.clone(),
            },
            _ => spawn_error(source),
        })?;
        match sys::ChildTree::adopt(&child, cpus, tree, prepared) {
            Ok(tree) => Ok(Self { child, tree }),
            Err(error) => {
                // Started but not placed (on Windows still suspended): it must not run.
                let _ = child.kill();
                let _ = child.wait();
                Err(spawn_error(error))
            }
        }
    }

    /// The program's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status if it has ended.
    ///
    /// # Errors
    ///
    /// The OS error of the wait.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.tree.wait(&mut self.child, Some(Duration::ZERO))
    }

    /// Waits for it to end.
    ///
    /// # Errors
    ///
    /// The OS error of the wait.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.tree
            .wait(&mut self.child, None)?
            .ok_or_else(|| io::Error::other("the wait ended before the program"))
    }

    /// Waits for it to end, at most `timeout` (`None`: as long as it takes): its status, or
    /// `None` if it still runs when the time is up. Blocked in the kernel the whole time (a
    /// pidfd on Linux, the process handle on Windows), so waiting costs the program no CPU and
    /// no preemption.
    ///
    /// # Errors
    ///
    /// The OS error of the wait.
    pub fn wait_timeout(&mut self, timeout: Option<Duration>) -> io::Result<Option<ExitStatus>> {
        self.tree.wait(&mut self.child, timeout)
    }

    /// When it was about to `exec` (`CLOCK_MONOTONIC`, nanoseconds), where the OS module
    /// records it: a run is timed from there.
    pub(crate) fn exec_ns(&self) -> Option<u64> {
        self.tree.exec_ns()
    }

    /// Whether every process it starts is tracked, daemons that leave its process group
    /// included (a cgroup leaf on Linux, a job object on Windows).
    pub(crate) fn catches_daemons(&self) -> bool {
        self.tree.catches_daemons()
    }

    /// Ends it and what it started (its process group; on Windows its job object), or the
    /// program alone where its tree cannot be reached.
    pub fn kill(&mut self) {
        if self.tree.kill().is_err() {
            let _ = self.child.kill();
        }
    }

    /// Asks it and what it started to end (SIGTERM to its process group when it has one of its
    /// own, else to the program alone).
    ///
    /// # Errors
    ///
    /// The OS error; `Unsupported` where there is no such request (Windows: [`Self::kill`]).
    pub(crate) fn terminate(&self) -> io::Result<()> {
        self.tree.terminate()
    }

    /// The processes of its tree the OS still has (its process group, on Windows its job
    /// object), exited ones not yet reaped marked as such.
    ///
    /// # Errors
    ///
    /// The OS error; `Unsupported` where trees are not tracked.
    pub(crate) fn members(&self) -> io::Result<Vec<TreeMember>> {
        self.tree.members()
    }

    /// Reaps the exited processes of its tree that were handed to coretune (see
    /// coretune being the subreaper), and returns their resource use added up.
    pub(crate) fn reap_orphans(&self) -> Option<ResourceUsage> {
        self.tree.reap_orphans()
    }

    /// The CPU time and peak memory of the whole tree so far, where the OS keeps them for it
    /// (Windows: the job object's accounting); `None` elsewhere.
    pub(crate) fn usage(&self) -> Option<ResourceUsage> {
        self.tree.usage()
    }
}

/// The exit code a launcher should end with for a child's status: its code, or 128 + the signal
/// that killed it (the shell's convention).
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| sys::exit_signal(status).map(|s| 128 + s))
        .unwrap_or(1)
}

/// Binds every thread of process `pid` to `cpus`, as `taskset -a -p` does, and returns the
/// thread ids it bound. Threads created afterwards inherit the set from the thread that creates
/// them only if that thread was already rebound.
///
/// # Errors
///
/// [`LaunchError::NoSuchProcess`], [`LaunchError::PermissionDenied`] (another user's process),
/// [`LaunchError::Affinity`] when the kernel refuses the set for a thread.
pub fn rebind_process(pid: u32, cpus: &CpuSet) -> Result<Vec<(i32, CpuSet)>, LaunchError> {
    let no_such_process = || LaunchError::NoSuchProcess { pid };
    let id = i32::try_from(pid).map_err(|_| no_such_process())?;
    let tids = sys::thread_ids(Path::new(sys::PROC_DIR), id).map_err(|_| no_such_process())?;
    let results =
        sys::rebind_threads(id, &tids, cpus).map_err(|e| affinity_error(pid, id, id, e))?;
    let mut bound = Vec::new();
    for (tid, set, result) in results {
        if bound_or_gone(pid, id, tid, result)? {
            bound.push((tid, set));
        }
    }
    if bound.is_empty() {
        return Err(LaunchError::NoSuchProcess { pid });
    }
    Ok(bound)
}

/// The CPU set of each thread of process `pid` now (main thread first), as `taskset -a -p` and
/// `hwloc-bind --get` read them; threads that exit meanwhile are left out.
///
/// # Errors
///
/// [`LaunchError::NoSuchProcess`]; [`LaunchError::AccessDenied`] when a thread's set cannot be
/// read.
pub fn process_binding(pid: u32) -> Result<Vec<(i32, CpuSet)>, LaunchError> {
    let no_such_process = || LaunchError::NoSuchProcess { pid };
    let id = i32::try_from(pid).map_err(|_| no_such_process())?;
    let mut tids = sys::thread_ids(Path::new(sys::PROC_DIR), id).map_err(|_| no_such_process())?;
    tids.sort_by_key(|&t| (t != id, t));
    let mut out = Vec::new();
    for tid in tids {
        match sys::task_affinity(tid) {
            Ok(set) => out.push((tid, set)),
            Err(e) if sys::is_no_such_task(&e) => {}
            Err(error) => return Err(LaunchError::AccessDenied { pid, error }),
        }
    }
    if out.is_empty() {
        return Err(no_such_process());
    }
    Ok(out)
}

/// The number of threads process `pid` has now.
///
/// # Errors
///
/// [`LaunchError::NoSuchProcess`].
pub fn thread_count(pid: u32) -> Result<usize, LaunchError> {
    let id = i32::try_from(pid).map_err(|_| LaunchError::NoSuchProcess { pid })?;
    sys::thread_ids(Path::new(sys::PROC_DIR), id)
        .map(|t| t.len())
        .map_err(|_| LaunchError::NoSuchProcess { pid })
}

/// Binds thread `tid` of process `pid` (`id`) to `cpus`: `Ok(false)` when the thread has gone
/// meanwhile.
pub(crate) fn bind_one(pid: u32, id: i32, tid: i32, cpus: &CpuSet) -> Result<bool, LaunchError> {
    bound_or_gone(pid, id, tid, sys::set_task_affinity(tid, cpus))
}

/// The outcome of binding thread `tid` of process `pid` (`id`): `Ok(false)` when the thread has
/// gone meanwhile.
fn bound_or_gone(pid: u32, id: i32, tid: i32, result: io::Result<()>) -> Result<bool, LaunchError> {
    match result {
        Ok(()) => Ok(true),
        // A thread that exited meanwhile.
        Err(e) if sys::is_no_such_task(&e) => Ok(false),
        Err(e) => Err(affinity_error(pid, id, tid, e)),
    }
}

fn affinity_error(pid: u32, id: i32, tid: i32, error: io::Error) -> LaunchError {
    match error.kind() {
        // EPERM; ERROR_ACCESS_DENIED on Windows.
        io::ErrorKind::PermissionDenied => match sys::process_uid(Path::new(sys::PROC_DIR), id) {
            Ok(owner) => LaunchError::PermissionDenied {
                pid,
                owner: owner.to_string(),
                me: uid_text(sys::own_uid()),
            },
            // No uids here (Windows): the OS error says it.
            Err(_) => LaunchError::AccessDenied { pid, error },
        },
        // EINVAL.
        io::ErrorKind::InvalidInput => LaunchError::Affinity {
            pid,
            tid,
            error,
            hint: " (none of these CPUs is allowed to it: its cgroup cpuset excludes them)",
        },
        _ => LaunchError::Affinity {
            pid,
            tid,
            error,
            hint: "",
        },
    }
}

/// The CPUs thread or process `tid` may run on (0 = the calling thread).
///
/// # Errors
///
/// The OS error (no such thread, or not on Linux).
pub fn affinity_of(tid: i32) -> io::Result<CpuSet> {
    sys::task_affinity(tid)
}

/// A real uid as text, or `?` when it could not be read.
fn uid_text(uid: Result<u32, sys::SysError>) -> String {
    uid.map_or_else(|_| "?".to_owned(), |uid| uid.to_string())
}

/// `word` quoted for a POSIX shell: as it is when it is plain, else in single quotes.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn missing_pid_and_command_are_named() {
        let err = rebind_process(u32::MAX - 1, &crate::sys::set_from_indexes([0])).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no process with pid {}", u32::MAX - 1)
        );
        let err = spawn(Command::new("/nonexistent/coretune-test-cmd"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'/nonexistent/coretune-test-cmd': command not found"
        );
    }

    /// A program in coretune's group is its tree alone; one in a group of its own brings what
    /// it starts.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_tree_lists_its_processes() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut alone = spawn(cmd, None).unwrap();
        let members = alone.members().unwrap();
        assert_eq!(members.len(), 1, "{members:?}");
        assert_eq!(members[0].pid, alone.id());
        alone.kill();
        alone.wait().unwrap();
        assert_eq!(alone.members().unwrap(), []);

        let dir = tempfile::tempdir().unwrap();
        let up = dir.path().join("up");
        // The file is made by the shell itself (`: >`), not by a `touch` that could still be
        // exiting, a third member, when the file is seen (seen once).
        let cmd = shell_command(&format!("sleep 30 & : > '{}'; wait", up.display()));
        let mut tree = Launched::start(cmd, None, Tree::Own).unwrap();
        let start = std::time::Instant::now();
        while !up.exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let members = tree.members().unwrap();
        assert_eq!(members.len(), 2, "sh and sleep: {members:?}");
        assert!(members.iter().all(|m| !m.exited));
        tree.terminate().unwrap();
        let status = tree.wait_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(status.and_then(sys::exit_signal), Some(15));
    }

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        // `sh`, `cmd` on Windows (found through PATHEXT as cmd.exe).
        assert!(find_program(&shell_program()).unwrap().is_absolute());
        assert!(matches!(
            find_program("coretune-no-such-program"),
            Err(LaunchError::CommandNotFound { .. })
        ));
        assert!(matches!(
            find_program("/nonexistent/x"),
            Err(LaunchError::CommandNotFound { .. })
        ));
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("data.txt");
        std::fs::write(&plain, "not a program").unwrap();
        let err = find_program(plain.to_str().unwrap()).unwrap_err();
        assert!(
            err.to_string().ends_with("is not an executable file"),
            "{err}"
        );
        let err = find_program(dir.path().to_str().unwrap()).unwrap_err();
        assert!(matches!(err, LaunchError::NotExecutable { .. }), "{err}");
    }
}
