//! Containment of what coretune starts: nothing it starts may outlive it.
//!
//! Three mechanisms, from the strongest:
//!
//! 1. **A transient cgroup v2 leaf per started tree**, where the unified hierarchy is mounted
//!    and writable: `<own cgroup>/coretune-<pid>/<n>`, beneath coretune's own cgroup so that the
//!    limits it lives under (a container's cpuset and quota) still apply. The child joins it
//!    between `fork` and `exec` (it writes `0` to the leaf's `cgroup.procs`), so everything it
//!    starts is in it too: a daemon that forks, calls `setsid` and forks again stays in it, as a
//!    systemd service's processes stay in the service's cgroup. `cgroup.kill` (Linux 5.14) ends
//!    the leaf whole; without it each process in it is killed, again until none is left.
//! 2. **A process group of its own** (the `Tree::Own` trees): what the program starts and does
//!    not move to another group or session goes with it.
//! 3. **coretune as the child subreaper** (`PR_SET_CHILD_SUBREAPER`): a process whose parent
//!    ends before it (a daemon's second fork, a server's worker outliving its master) is handed
//!    to coretune, not to init, so it is still found (its parent is coretune) and reaped.
//!
//! Every contained tree is registered while it lives, so that [`stop_everything`] — called when
//! coretune is told to quit (a second Ctrl-C, SIGTERM, SIGHUP) — can end them all before coretune
//! exits, from any thread. The leaves are removed when their tree is dropped; a `coretune-<pid>`
//! folder left by a coretune that was killed with SIGKILL is emptied and removed by the next one
//! (its processes, left behind by that coretune, are ended).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The folder of this process's leaves, made on first use (`None` where there is no writable
/// cgroup v2 hierarchy: the process group and the subreaper then contain what is started).
static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Leaves made so far (their names).
static LEAVES: AtomicUsize = AtomicUsize::new(0);

/// The trees alive now: each one's process group and leaf.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// One registered tree.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Live {
    /// Its program, which its own `Child` waits for (never reaped here).
    root: libc::pid_t,
    /// Its process group (0 when it shares coretune's: not signalled as a group).
    pgid: libc::pid_t,
    leaf: Option<PathBuf>,
}

/// Set once [`stop_everything`] has begun: no tree may start any more, and one registered
/// meanwhile is ended at once.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// How long ending everything waits for the processes to be gone.
const GONE_WAIT: Duration = Duration::from_secs(2);

/// How often a killed leaf or group is looked at while its processes end.
const POLL: Duration = Duration::from_millis(5);

/// A new, empty leaf for one tree, or `None` where cgroups v2 cannot be used here (not mounted,
/// not writable: not root and nothing delegated).
pub(crate) fn new_leaf() -> Option<PathBuf> {
    let base = BASE.get_or_init(make_base).as_ref()?;
    let n = LEAVES.fetch_add(1, Ordering::Relaxed);
    let leaf = base.join(n.to_string());
    // The base is removed with the last leaf (see `remove_leaf`), and made again here.
    std::fs::create_dir_all(&leaf).ok()?;
    if is_stopping() {
        // Made as everything is being ended: not used, and not left behind.
        let _ = std::fs::remove_dir(&leaf);
        let _ = std::fs::remove_dir(base);
        return None;
    }
    Some(leaf)
}

/// `<own v2 cgroup>/coretune-<pid>`, created, after removing what dead coretunes left beside it.
fn make_base() -> Option<PathBuf> {
    let own = own_v2_cgroup()?;
    clear_stale(&own);
    let base = own.join(format!("coretune-{}", std::process::id()));
    match std::fs::create_dir(&base) {
        Ok(()) => Some(base),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Some(base),
        Err(_) => None,
    }
}

/// The folder of this process's cgroup in the unified (v2) hierarchy, when one is mounted:
/// the `0::PATH` line of `/proc/self/cgroup` under the `cgroup2` mount point.
fn own_v2_cgroup() -> Option<PathBuf> {
    let mounts = super::cgroup_mounts(Path::new("/")).ok()?;
    let mount = mounts
        .into_iter()
        .find(|m| m.version == crate::sys::types::CgroupVersion::V2)?
        .mount;
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = mount.join(path.trim_start_matches('/'));
    dir.join("cgroup.procs").exists().then_some(dir)
}

/// Removes the `coretune-<pid>` folders under `dir` whose coretune no longer runs: their
/// processes were left by a coretune that was killed (SIGKILL), and are ended now.
fn clear_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("coretune-"))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 checks for existence only; it sends nothing.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if alive && pid != 0 {
            continue;
        }
        let base = entry.path();
        if let Ok(leaves) = std::fs::read_dir(&base) {
            for leaf in leaves.filter_map(Result::ok) {
                let leaf = leaf.path();
                if leaf.is_dir() {
                    kill_leaf(&leaf);
                    remove_leaf(&leaf);
                }
            }
        }
        let _ = std::fs::remove_dir(&base);
    }
}

/// Makes the child of `cmd` join `leaf` between `fork` and `exec` (before it can start anything),
/// writing `0` (itself) to the leaf's `cgroup.procs`. A refused write leaves it where it was:
/// [`in_leaf`] tells afterwards.
pub(crate) fn join_before_exec(cmd: &mut Command, leaf: &Path) -> io::Result<()> {
    let procs = CString::new(leaf.join("cgroup.procs").as_os_str().as_bytes())
        .map_err(|_| io::Error::other("a cgroup path with a NUL byte"))?;
    // SAFETY: the closure runs in the child between fork and exec and calls only `open`,
    // `write` and `close`, which are async-signal-safe; `procs` is a NUL-terminated path owned
    // by the closure, and the buffer written is a static byte string.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"0\n".as_ptr().cast(), 2);
                libc::close(fd);
            }
            Ok(())
        });
    }
    Ok(())
}

/// Whether process `pid` is in `leaf` (it joined before `exec`).
pub(crate) fn in_leaf(leaf: &Path, pid: libc::pid_t) -> bool {
    leaf_pids(leaf).is_ok_and(|pids| pids.contains(&pid))
}

/// The processes in `leaf` now (those that have exited are not listed).
pub(crate) fn leaf_pids(leaf: &Path) -> io::Result<Vec<libc::pid_t>> {
    Ok(std::fs::read_to_string(leaf.join("cgroup.procs"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// Ends every process of `leaf`: `cgroup.kill` where the kernel has it, else SIGKILL to each
/// process listed, again until the list is empty or [`GONE_WAIT`] has passed. Returns whether
/// it is empty.
pub(crate) fn kill_leaf(leaf: &Path) -> bool {
    let mut seen = leaf_pids(leaf).unwrap_or_default();
    let killed = std::fs::write(leaf.join("cgroup.kill"), b"1").is_ok();
    let start = Instant::now();
    loop {
        let pids = leaf_pids(leaf).unwrap_or_default();
        for pid in &pids {
            if !seen.contains(pid) {
                seen.push(*pid);
            }
        }
        reap(&seen);
        if pids.is_empty() {
            return true;
        }
        if start.elapsed() >= GONE_WAIT {
            return false;
        }
        if !killed {
            for pid in pids {
                // SAFETY: `kill` takes integers. The pid was just listed in a leaf only
                // coretune's trees join; a reused pid would have had to join it too.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Removes an empty leaf (its last processes may take a moment to leave it).
pub(crate) fn remove_leaf(leaf: &Path) {
    let start = Instant::now();
    while std::fs::remove_dir(leaf).is_err() && start.elapsed() < GONE_WAIT && leaf.exists() {
        std::thread::sleep(POLL);
    }
    // The base too, once it is empty: a coretune that ends leaves no folder behind (another
    // tree's leaf keeps it, and the removal fails harmlessly).
    if let Some(base) = leaf.parent() {
        let _ = std::fs::remove_dir(base);
    }
}

/// Registers a tree that is alive: its program `root`, its process group (0 when it shares
/// coretune's: then it is not ended by [`stop_everything`]) and its leaf.
pub(crate) fn register(root: libc::pid_t, pgid: libc::pid_t, leaf: Option<&Path>) {
    if let Ok(mut live) = LIVE.lock() {
        live.push(Live {
            root,
            pgid,
            leaf: leaf.map(Path::to_path_buf),
        });
    }
    // Started while everything is being ended (after `stop_everything` copied the registry):
    // ended now, as it would have been.
    if STOPPING.load(Ordering::SeqCst) && pgid > 0 {
        if let Some(leaf) = leaf {
            kill_leaf(leaf);
        }
        // SAFETY: `kill` takes integers; the group is the just-started tree's.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Whether coretune is ending everything it started (no tree may start any more).
pub(crate) fn is_stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Forgets the tree of program `root`, which has ended.
pub(crate) fn unregister(root: libc::pid_t) {
    if let Ok(mut live) = LIVE.lock() {
        if let Some(i) = live.iter().position(|l| l.root == root) {
            live.swap_remove(i);
        }
    }
}

/// Ends everything coretune started and has not ended: every contained tree (its leaf, its
/// process group) and every orphan handed to coretune as the subreaper; waits until they are
/// gone (at most about 2 s) and returns how many processes were running. Callable from any
/// thread (a signal-handling one): it takes the registry's lock only to copy it.
pub(crate) fn stop_everything() -> usize {
    STOPPING.store(true, Ordering::SeqCst);
    let live: Vec<Live> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    let proc_dir = Path::new(super::PROC_DIR);
    let mut running: Vec<libc::pid_t> = Vec::new();
    for tree in live.iter().filter(|t| t.pgid > 0) {
        if let Some(leaf) = &tree.leaf {
            running.extend(leaf_pids(leaf).unwrap_or_default());
        }
        running.extend(
            super::proc::group_members(proc_dir, tree.pgid)
                .unwrap_or_default()
                .into_iter()
                .filter(|m| !m.exited)
                .filter_map(|m| libc::pid_t::try_from(m.pid).ok()),
        );
    }
    for tree in live.iter().filter(|t| t.pgid > 0) {
        if let Some(leaf) = &tree.leaf {
            kill_leaf(leaf);
        }
        // SAFETY: `kill` takes integers; a negative pid names the tree's process group, which
        // keeps its id while any process of it lives (ESRCH otherwise: nothing is sent).
        unsafe { libc::kill(-tree.pgid, libc::SIGKILL) };
    }
    let orphans = orphans(None);
    running.extend(&orphans);
    kill_and_reap(&orphans);
    // Every leaf of this process, registered or not yet (a tree starting meanwhile), then the
    // base: nothing is left behind.
    if let Some(Some(base)) = BASE.get() {
        if let Ok(leaves) = std::fs::read_dir(base) {
            for leaf in leaves.filter_map(Result::ok).map(|e| e.path()) {
                if leaf.is_dir() {
                    running.extend(leaf_pids(&leaf).unwrap_or_default());
                    kill_leaf(&leaf);
                    remove_leaf(&leaf);
                }
            }
        }
        let _ = std::fs::remove_dir(base);
    }
    running.sort_unstable();
    running.dedup();
    running.len()
}

/// This process's children as `/proc` lists them.
fn children() -> Vec<crate::sys::types::ProcessInfo> {
    let me = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
    super::processes(Path::new(super::PROC_DIR))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.ppid == me)
        .collect()
}

/// The orphans handed to coretune as the subreaper by its contained trees: its children that
/// are not a tree's program and are either in a contained tree's process group or in a session
/// of their own (a daemon's `setsid`). Children that a program using this library started
/// itself, in its own group and session, are not among them. With `of`, only those of the
/// tree whose process group that is: in that group, or in a session of their own and in no
/// other tree's group (a daemon cannot be told apart from another tree's then).
pub(crate) fn orphans(of: Option<libc::pid_t>) -> Vec<libc::pid_t> {
    let (roots, groups): (Vec<libc::pid_t>, Vec<libc::pid_t>) = LIVE
        .lock()
        .map(|l| l.iter().map(|t| (t.root, t.pgid)).unzip())
        .unwrap_or_default();
    // SAFETY: `getsid(0)` takes an integer and returns this process's session id.
    let session = unsafe { libc::getsid(0) };
    children()
        .into_iter()
        .filter(|p| {
            let in_a_tree = p.group > 0 && groups.contains(&p.group);
            let daemon = p.session != session && !in_a_tree;
            !roots.contains(&p.pid)
                && match of {
                    None => in_a_tree || daemon,
                    Some(group) => p.group == group || daemon,
                }
        })
        .map(|p| p.pid)
        .collect()
}

/// Reaps those of `pids` that are this process's exited children and no `Child` waits for (not
/// a registered tree's program): orphans handed to coretune, once killed.
fn reap(pids: &[libc::pid_t]) {
    let roots: Vec<libc::pid_t> = LIVE
        .lock()
        .map(|l| l.iter().map(|t| t.root).collect())
        .unwrap_or_default();
    for &pid in pids.iter().filter(|p| !roots.contains(p)) {
        let mut status = 0;
        // SAFETY: `waitpid` with WNOHANG writes one int; `pid` names one process, which is only
        // reaped if it is this process's child and has exited.
        unsafe { libc::waitpid(pid, &raw mut status, libc::WNOHANG) };
    }
}

/// SIGKILL to the orphans handed to coretune by the tree of process group `group`
/// ([`orphans`]), then reaps them.
pub(crate) fn kill_orphans(group: libc::pid_t) {
    kill_and_reap(&orphans(Some(group)));
}

/// SIGKILL to each of `pids` (this process's children, not reaped yet), then waits (at most
/// [`GONE_WAIT`]) until none runs, reaping those no `Child` waits for.
fn kill_and_reap(pids: &[libc::pid_t]) {
    for &pid in pids {
        // SAFETY: `kill` takes integers; `pid` is this process's child (listed with it as the
        // parent, not yet reaped: a child's pid is not reused before its parent reaps it).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let start = Instant::now();
    let proc_dir = Path::new(super::PROC_DIR);
    let running = |pid: &libc::pid_t| {
        super::proc::process_state(proc_dir, *pid).is_ok_and(|s| s != 'Z' && s != 'X')
    };
    loop {
        reap(pids);
        if !pids.iter().any(running) || start.elapsed() >= GONE_WAIT {
            return;
        }
        std::thread::sleep(POLL);
    }
}
