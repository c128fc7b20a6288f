//! Applying a placement to other programs: the CPU set of a command started by coretune (set
//! before `exec`, so every thread it makes inherits it), the thread-count variables common
//! runtimes read, and rebinding a running process with all its threads.
//!
//! | variable | read by | set to |
//! |---|---|---|
//! | `OMP_NUM_THREADS` | OpenMP runtimes (libgomp, libomp, Intel) | N |
//! | `OMP_PLACES`, `OMP_PROC_BIND` | OpenMP | one place per thread and `close` when pinned, else `OMP_PROC_BIND=false` |
//! | `RAYON_NUM_THREADS` | Rust rayon's global pool | N |
//! | `MKL_NUM_THREADS` | Intel MKL | N |
//! | `OPENBLAS_NUM_THREADS` | OpenBLAS | N |
//! | `BLIS_NUM_THREADS` | BLIS | N |
//! | `NUMEXPR_NUM_THREADS` | Python numexpr | N |
//! | `JULIA_NUM_THREADS` | Julia | N |
//! | `GOMAXPROCS` | Go runtime | N |
//! | `TOKIO_WORKER_THREADS` | Rust tokio's multi-thread runtime (`#[tokio::main]`) | N |
//! | `TBB_NUM_THREADS` | programs that size oneTBB's arena from it (oneTBB itself reads no variable) | N |

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use hwlocality::cpu::cpuset::CpuSet;

use crate::placement::Placement;
use crate::sys;

/// The thread-count environment for `threads` threads, plus OpenMP's placement variables when a
/// pinned placement is given (see the module table).
pub fn thread_env(threads: usize, placement: Option<&Placement>) -> Vec<(&'static str, String)> {
    let n = threads.to_string();
    let mut env: Vec<(&'static str, String)> = [
        "OMP_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "JULIA_NUM_THREADS",
        "GOMAXPROCS",
        "TOKIO_WORKER_THREADS",
        "TBB_NUM_THREADS",
    ]
    .into_iter()
    .map(|k| (k, n.clone()))
    .collect();
    if let Some(p) = placement {
        if let Some(places) = p.omp_places() {
            env.push(("OMP_PLACES", places));
        }
        env.push(("OMP_PROC_BIND", p.omp_proc_bind().to_owned()));
    }
    env
}

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
/// other name is looked up in the directories of `PATH`. Called before anything runs, so a typo
/// is one clear error rather than a sweep of failed runs.
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
    if program.contains('/') {
        let path = Path::new(program);
        if !path.exists() {
            return Err(not_found());
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
        .map(|dir| dir.join(program))
        .find(|p| sys::is_executable_file(p))
        .ok_or_else(not_found)
}

/// Runs `cmd` bound to `cpus` (when given), with stdio passed through and SIGINT/SIGTERM
/// forwarded to it, and returns its exit status.
///
/// # Errors
///
/// [`LaunchError::CommandNotFound`], [`LaunchError::Spawn`] (including a CPU set the kernel
/// refuses), [`LaunchError::Wait`].
pub fn run(cmd: Command, cpus: Option<&CpuSet>) -> Result<ExitStatus, LaunchError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = spawn(cmd, cpus)?;
    // Not fatal: without forwarding, Ctrl-C still reaches the child through the terminal's
    // process group.
    let _ = sys::forward_signals_to(child.id());
    child
        .wait()
        .map_err(|error| LaunchError::Wait { program, error })
}

/// Starts `cmd` bound to `cpus` (when given) and returns the running child; the caller waits
/// (a sweep does, with a timeout).
///
/// # Errors
///
/// [`LaunchError::CommandNotFound`], [`LaunchError::Spawn`] (including a CPU set the kernel
/// refuses).
pub fn spawn(mut cmd: Command, cpus: Option<&CpuSet>) -> Result<std::process::Child, LaunchError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    if let Some(cpus) = cpus {
        sys::bind_before_exec(&mut cmd, cpus).map_err(|error| LaunchError::Spawn {
            program: program.clone(),
            error,
        })?;
    }
    cmd.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => LaunchError::CommandNotFound { program },
        _ => LaunchError::Spawn {
            program,
            error: source,
        },
    })
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
pub fn rebind_process(pid: u32, cpus: &CpuSet) -> Result<Vec<i32>, LaunchError> {
    let no_such_process = || LaunchError::NoSuchProcess { pid };
    let id = i32::try_from(pid).map_err(|_| no_such_process())?;
    let tids = sys::thread_ids(Path::new(sys::PROC_DIR), id).map_err(|_| no_such_process())?;
    let mut bound = Vec::new();
    for tid in tids {
        if bind_one(pid, id, tid, cpus)? {
            bound.push(tid);
        }
    }
    if bound.is_empty() {
        return Err(LaunchError::NoSuchProcess { pid });
    }
    Ok(bound)
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

/// Re-pins the threads of running process `pid` one by one, as the pinning library would have
/// placed them: ordered by creation (start time, then thread id), the first (the main thread)
/// on the first of `places`, the k-th thread created after it on place k + 1 (wrapping
/// around), threads whose creation `skip` skips on the union of the places. Returns each
/// thread id with the CPUs it got, in that order.
///
/// # Errors
///
/// As [`rebind_process`].
pub fn repin_process(
    pid: u32,
    places: &[CpuSet],
    skip: crate::pin::SkipMask,
) -> Result<Vec<(i32, CpuSet)>, LaunchError> {
    let no_such_process = || LaunchError::NoSuchProcess { pid };
    let id = i32::try_from(pid).map_err(|_| no_such_process())?;
    let mut threads = sys::threads(Path::new(sys::PROC_DIR), id).map_err(|_| no_such_process())?;
    threads.sort_by_key(|t| (t.tid != id, t.started.unwrap_or(0), t.tid));
    let union = places.iter().fold(CpuSet::new(), |mut u, p| {
        u |= p;
        u
    });
    let plan = crate::pin::assign(threads.len(), skip, places.len());
    let mut out = Vec::new();
    for (thread, place) in threads.iter().zip(plan) {
        let set = place.map_or(&union, |i| &places[i]);
        if bind_one(pid, id, thread.tid, set)? {
            out.push((thread.tid, set.clone()));
        }
    }
    if out.is_empty() {
        return Err(no_such_process());
    }
    Ok(out)
}

/// Binds thread `tid` of process `pid` (`id`) to `cpus`: `Ok(false)` when the thread has gone
/// meanwhile.
fn bind_one(pid: u32, id: i32, tid: i32, cpus: &CpuSet) -> Result<bool, LaunchError> {
    match sys::set_task_affinity(tid, cpus) {
        Ok(()) => Ok(true),
        // A thread that exited meanwhile.
        Err(e) if sys::is_no_such_task(&e) => Ok(false),
        // EPERM.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            Err(LaunchError::PermissionDenied {
                pid,
                owner: uid_text(sys::process_uid(Path::new(sys::PROC_DIR), id)),
                me: uid_text(sys::own_uid()),
            })
        }
        Err(source) => {
            // EINVAL.
            let hint = if source.kind() == io::ErrorKind::InvalidInput {
                " (none of these CPUs is allowed to it: its cgroup cpuset excludes them)"
            } else {
                ""
            };
            Err(LaunchError::Affinity {
                pid,
                tid,
                error: source,
                hint,
            })
        }
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
fn uid_text(uid: Result<u32, crate::SysError>) -> String {
    uid.map_or_else(|_| "?".to_owned(), |uid| uid.to_string())
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::placement::{Binding, Policy, plan};
    use crate::topology::{Topology, TopologySource};

    #[test]
    fn env_has_every_runtime_and_omp_placement() {
        let topo = Topology::load(&TopologySource::Synthetic("core:2 pu:2".into())).unwrap();
        let p = plan(&topo, 2, Policy::Cores, None, Binding::Pu).unwrap();
        let env = thread_env(2, Some(&p));
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        for k in [
            "OMP_NUM_THREADS",
            "RAYON_NUM_THREADS",
            "GOMAXPROCS",
            "TBB_NUM_THREADS",
        ] {
            assert_eq!(get(k), Some("2"), "{k}");
        }
        assert_eq!(get("OMP_PLACES"), Some("{0},{2}"));
        assert_eq!(get("OMP_PROC_BIND"), Some("close"));
        let unpinned = thread_env(2, None);
        assert!(
            unpinned.iter().all(|(k, _)| !k.starts_with("OMP_P")),
            "{unpinned:?}"
        );
    }

    #[test]
    fn missing_pid_and_command_are_named() {
        let err =
            rebind_process(u32::MAX - 1, &crate::topology::set_from_indexes([0])).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no process with pid {}", u32::MAX - 1)
        );
        let err = run(Command::new("/nonexistent/coretune-test-cmd"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "'/nonexistent/coretune-test-cmd': command not found"
        );
    }

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        assert!(find_program("sh").unwrap().is_absolute());
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
