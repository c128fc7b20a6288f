//! Keeping CPUs free (`coretune reserve`): every process is kept off a CPU set (CPU 0 by
//! default), which is left to the kernel (interrupts, kernel threads) and to whatever is placed
//! there on purpose — Linux's way of "keeping CPU 0 free for the system".
//!
//! Three ways, the first that applies (or the one asked for):
//!
//! 1. **systemd** (it runs the machine, on cgroup v2 with the cpuset controller):
//!    `systemctl set-property --runtime UNIT AllowedCPUs=REST` on `user.slice`, `system.slice`
//!    and `init.scope`; undone by setting each back to the value `systemctl show` gave;
//! 2. **cgroup**: the cpuset files written directly (`cpuset.cpus`; v2, or v1's `cpuset`
//!    hierarchy) in the cgroups named, or else in every top-level cgroup when no process (but
//!    kernel threads) is left in the root cgroup, which cannot be limited. In v1 a cgroup's
//!    children are narrowed first (the kernel refuses a parent narrower than a child); undone by
//!    writing each file's old bytes back, parents first;
//! 3. **rules** (no cgroup to write): every process this user may change is moved off the set
//!    once, and a rules file is written for `coretune rules watch` to keep new ones off; undone
//!    by giving each process that still runs its old CPUs back.
//!
//! What was there is saved (durably) before anything changes, so `--undo` restores it even
//! after a crash halfway.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use crate::sys::{self, CgroupVersion, SysError};
use crate::sys::{format_list, parse_list, set_from_indexes, set_to_vec};
use crate::topology::Topology;

/// The systemd units `reserve` limits: every process systemd starts is under one of them.
pub const SYSTEMD_UNITS: [&str; 3] = ["user.slice", "system.slice", "init.scope"];

/// The schema of the saved state.
pub const RESERVE_SCHEMA: &str = "coretune-reserve/1";

/// How CPUs are kept free.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReserveMethod {
    /// `AllowedCPUs=` on systemd's slices.
    Systemd,
    /// cgroup cpuset files written directly.
    Cgroup,
    /// Each process's affinity, kept by `coretune rules watch`.
    Rules,
}

impl ReserveMethod {
    /// Its name (`systemd`, `cgroup`, `rules`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReserveMethod::Systemd => "systemd",
            ReserveMethod::Cgroup => "cgroup",
            ReserveMethod::Rules => "rules",
        }
    }
}

impl std::fmt::Display for ReserveMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReserveMethod {
    type Err = ReserveError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "systemd" => Ok(Self::Systemd),
            "cgroup" => Ok(Self::Cgroup),
            "rules" => Ok(Self::Rules),
            _ => Err(ReserveError::UnknownMethod(s.to_owned())),
        }
    }
}

/// Why CPUs could not be reserved or given back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReserveError {
    /// Not `systemd`, `cgroup` or `rules`.
    #[error("'{0}': unknown method (systemd, cgroup, rules)")]
    UnknownMethod(String),
    /// The set is every usable CPU: nothing would be left to run on.
    #[error("reserving CPUs {reserved} leaves no CPU to run on (this machine has {all})")]
    NothingLeft {
        /// The set asked for.
        reserved: String,
        /// Every usable CPU.
        all: String,
    },
    /// A cgroup holds only reserved CPUs, so it cannot be kept off them.
    #[error("{path}: has only CPUs {cpus}, all reserved: it cannot be kept off them")]
    OnlyReserved {
        /// The cpuset file.
        path: PathBuf,
        /// Its CPUs.
        cpus: String,
    },
    /// The method asked for cannot be used here.
    #[error("--via {method}: {reason}")]
    Unavailable {
        /// The method.
        method: ReserveMethod,
        /// Why.
        reason: String,
    },
    /// CPUs are reserved already: undo first, so what was there before stays saved.
    #[error(
        "CPUs {reserved} are reserved already (saved in {path}): run '{undo}' first",
        undo = undo_command(path)
    )]
    AlreadyReserved {
        /// The saved state.
        path: PathBuf,
        /// What it reserves.
        reserved: String,
    },
    /// The `rules` way's rules file is there already, and is not coretune's to overwrite.
    #[error(
        "{path} exists: the rules way writes its rules file there (beside the state); move it \
         away, or choose another --state"
    )]
    RulesFileExists {
        /// The rules file.
        path: PathBuf,
    },
    /// Nothing to undo.
    #[error("nothing to undo: {path} does not exist")]
    NotReserved {
        /// Where the state would be.
        path: PathBuf,
    },
    /// The saved state is not readable as such.
    #[error("{path}: not a saved reserve state: {message}")]
    BadState {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A change failed (the changes made before it were undone).
    #[error(transparent)]
    Sys(#[from] SysError),
}

/// One change, with what was there before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ReserveStep {
    /// A systemd unit's `AllowedCPUs=`.
    Systemd {
        /// The unit.
        unit: String,
        /// Its value before (`systemctl show`; empty = all CPUs).
        old: String,
        /// The value set.
        new: String,
    },
    /// A cgroup cpuset file.
    Cgroup {
        /// The file.
        path: PathBuf,
        /// Its bytes before, exactly.
        old: String,
        /// The bytes written.
        new: String,
    },
    /// One process's CPUs (every thread).
    Process {
        /// The process.
        pid: i32,
        /// Its start time (a pid reused by another process is left alone).
        start_ticks: u64,
        /// Its executable, for messages.
        exe: String,
        /// Its CPUs before (a Linux CPU list).
        old: String,
        /// The CPUs given.
        new: String,
    },
}

/// A saved value for messages: `(empty)` for an empty one.
fn show(value: &str) -> String {
    if value.trim().is_empty() {
        "(empty)".to_owned()
    } else {
        value.trim_end().to_owned()
    }
}

impl std::fmt::Display for ReserveStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReserveStep::Systemd { unit, old, new } => write!(
                f,
                "systemctl set-property --runtime {unit} AllowedCPUs={new}   (was {})",
                show(old)
            ),
            ReserveStep::Cgroup { path, old, new } => {
                write!(f, "{}: {} → {}", path.display(), show(old), show(new))
            }
            ReserveStep::Process {
                pid, exe, old, new, ..
            } => write!(f, "pid {pid} {exe}: CPUs {old} → {new}"),
        }
    }
}

impl ReserveStep {
    /// What taking it back does, for `--undo`.
    pub fn undo_text(&self) -> String {
        match self {
            ReserveStep::Systemd { unit, old, .. } => {
                format!(
                    "systemctl set-property --runtime {unit} AllowedCPUs={}",
                    old.trim()
                )
            }
            ReserveStep::Cgroup { path, old, .. } => {
                format!("{}: back to {}", path.display(), show(old))
            }
            ReserveStep::Process { pid, exe, old, .. } => {
                format!("pid {pid} {exe}: back to CPUs {old} (if it still runs)")
            }
        }
    }
}

/// What `reserve` does (or did): the saved state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservePlan {
    /// [`RESERVE_SCHEMA`].
    pub schema: String,
    /// How.
    pub method: ReserveMethod,
    /// Why this way.
    pub reason: String,
    /// The CPUs kept free (a Linux CPU list).
    pub reserved: String,
    /// The CPUs everything else gets.
    pub allowed: String,
    /// The changes, in the order they are made (undone in reverse).
    pub steps: Vec<ReserveStep>,
}

/// The command that undoes the reservation saved in `state`: `--state` is named unless it is
/// the default, which `--undo` alone finds.
fn undo_command(state: &Path) -> String {
    if state == default_state_path() {
        "coretune reserve --undo".to_owned()
    } else {
        format!("coretune reserve --undo --state {}", state.display())
    }
}

/// Where the state is saved unless told: `/var/lib/coretune/reserve.json` for root, else
/// `$XDG_STATE_HOME/coretune/reserve.json` (`~/.local/state/...`).
pub fn default_state_path() -> PathBuf {
    if sys::effective_uid() == 0 {
        return PathBuf::from("/var/lib/coretune/reserve.json");
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("coretune/reserve.json")
}

/// The rules file that keeps new processes off the reserved CPUs (the `rules` method writes it
/// beside the state).
pub fn rules_path(state: &Path) -> PathBuf {
    state.with_file_name("reserve-rules.toml")
}

/// Plans keeping `reserved` free on `topology`'s machine: by `via`, or the first way that
/// applies; `cgroups` names the cgroup folders to limit (the `cgroup` way) instead of every
/// top-level one. Reads what is there; changes nothing.
///
/// # Errors
///
/// [`ReserveError::NothingLeft`], [`ReserveError::Unavailable`], [`ReserveError::OnlyReserved`],
/// [`ReserveError::Sys`] when the current values cannot be read.
pub fn plan(
    topology: &Topology,
    reserved: &CpuSet,
    via: Option<ReserveMethod>,
    cgroups: &[PathBuf],
) -> Result<ReservePlan, ReserveError> {
    let all = topology.cpuset();
    let mut rest = all.clone();
    rest -= reserved;
    let reserved_list = format_list(&set_to_vec(reserved));
    if rest.weight() == Some(0) {
        return Err(ReserveError::NothingLeft {
            reserved: reserved_list,
            all: format_list(&set_to_vec(&all)),
        });
    }
    let root = Path::new("/");
    let hierarchies = sys::cpuset_hierarchies(root)?;
    let v2 = hierarchies.iter().any(|h| h.version == CgroupVersion::V2);
    let booted = sys::systemd_booted(root);
    let method = match via {
        Some(m) => m,
        None if !cgroups.is_empty() => ReserveMethod::Cgroup,
        None if booted && v2 => ReserveMethod::Systemd,
        None => match cgroup_targets(&hierarchies) {
            Ok(_) if sys::effective_uid() == 0 => ReserveMethod::Cgroup,
            _ => ReserveMethod::Rules,
        },
    };
    let (reason, steps) = match method {
        ReserveMethod::Systemd => {
            let reason = if booted && v2 {
                "systemd manages this machine (cgroup v2 with the cpuset controller)".to_owned()
            } else {
                "asked for (--via systemd)".to_owned()
            };
            (reason, systemd_steps(&rest)?)
        }
        ReserveMethod::Cgroup => {
            let (reason, dirs, version) = if cgroups.is_empty() {
                let (dirs, version, mount) = cgroup_targets(&hierarchies)
                    .map_err(|reason| ReserveError::Unavailable { method, reason })?;
                (
                    format!(
                        "every process is in a child cgroup of {}: each top-level cgroup is limited",
                        mount.display()
                    ),
                    dirs,
                    version,
                )
            } else {
                let version = version_of(&hierarchies, &cgroups[0]).ok_or_else(|| {
                    ReserveError::Unavailable {
                        method,
                        reason: format!(
                            "{} is not in a mounted cpuset hierarchy",
                            cgroups[0].display()
                        ),
                    }
                })?;
                (
                    "the cgroups named (--cgroup)".to_owned(),
                    cgroups.to_vec(),
                    version,
                )
            };
            (reason, cgroup_steps(&dirs, version, &rest)?)
        }
        ReserveMethod::Rules => {
            let why = if booted && v2 {
                "asked for (--via rules)".to_owned()
            } else {
                match cgroup_targets(&hierarchies) {
                    Err(why) => format!("no cgroup to limit ({why}): each process instead"),
                    Ok(_) => "no write access to the cgroup cpusets: each process instead".into(),
                }
            };
            (why, process_steps(&rest)?)
        }
    };
    Ok(ReservePlan {
        schema: RESERVE_SCHEMA.to_owned(),
        method,
        reason,
        reserved: reserved_list,
        allowed: format_list(&set_to_vec(&rest)),
        steps,
    })
}

/// The top-level cgroups of the first cpuset hierarchy, when the root cgroup holds no process
/// but kernel threads; else why not.
fn cgroup_targets(
    hierarchies: &[sys::CpusetHierarchy],
) -> Result<(Vec<PathBuf>, CgroupVersion, PathBuf), String> {
    let h = hierarchies
        .first()
        .ok_or("no cpuset controller is mounted")?;
    let pids = sys::cgroup_pids(&h.mount).map_err(|e| e.to_string())?;
    let proc_dir = Path::new(sys::PROC_DIR);
    let in_root = pids
        .iter()
        .filter(|&&pid| sys::process_facts(proc_dir, pid).is_ok_and(|f| !f.kernel_thread))
        .count();
    if in_root > 0 {
        return Err(format!(
            "{in_root} processes are in the root cgroup of {}, which cannot be limited",
            h.mount.display()
        ));
    }
    let dirs = sys::child_cgroups(&h.mount).map_err(|e| e.to_string())?;
    if dirs.is_empty() {
        return Err(format!("{} has no child cgroup", h.mount.display()));
    }
    Ok((dirs, h.version, h.mount.clone()))
}

fn version_of(hierarchies: &[sys::CpusetHierarchy], dir: &Path) -> Option<CgroupVersion> {
    let real = sys::canonical_path(dir).ok()?;
    hierarchies
        .iter()
        .filter(|h| real.starts_with(&h.mount))
        .max_by_key(|h| h.mount.as_os_str().len())
        .map(|h| h.version)
}

fn systemd_steps(rest: &CpuSet) -> Result<Vec<ReserveStep>, ReserveError> {
    let new = format_list(&set_to_vec(rest));
    SYSTEMD_UNITS
        .iter()
        .map(|unit| {
            let old = sys::systemctl(&["show", "--property=AllowedCPUs", "--value", unit])?;
            Ok(ReserveStep::Systemd {
                unit: (*unit).to_owned(),
                old: old.trim().to_owned(),
                new: new.clone(),
            })
        })
        .collect()
}

/// Folders under `dir` (itself included), children before parents.
fn post_order(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SysError> {
    for child in sys::child_cgroups(dir)? {
        post_order(&child, out)?;
    }
    out.push(dir.to_path_buf());
    Ok(())
}

fn cgroup_steps(
    dirs: &[PathBuf],
    version: CgroupVersion,
    rest: &CpuSet,
) -> Result<Vec<ReserveStep>, ReserveError> {
    let mut folders = Vec::new();
    for dir in dirs {
        match version {
            // v1: a parent may not be narrower than its children.
            CgroupVersion::V1 => post_order(dir, &mut folders)?,
            // v2: children are clipped to their parent's effective set by the kernel.
            CgroupVersion::V2 => folders.push(dir.clone()),
        }
    }
    let mut steps = Vec::new();
    for dir in folders {
        let path = dir.join("cpuset.cpus");
        let old_bytes = sys::read_cgroup_file(&path)?;
        let old = String::from_utf8_lossy(&old_bytes).into_owned();
        let current = parse_list(old.trim()).unwrap_or_default();
        let mut new_set = if current.is_empty() {
            // v2's empty file: the parent's CPUs.
            rest.clone()
        } else {
            set_from_indexes(current.iter().copied())
        };
        new_set &= rest;
        if new_set.weight() == Some(0) {
            return Err(ReserveError::OnlyReserved {
                path,
                cpus: old.trim().to_owned(),
            });
        }
        let new = format!("{}\n", format_list(&set_to_vec(&new_set)));
        if new.trim() != old.trim() {
            steps.push(ReserveStep::Cgroup { path, old, new });
        }
    }
    Ok(steps)
}

fn process_steps(rest: &CpuSet) -> Result<Vec<ReserveStep>, ReserveError> {
    let proc_dir = Path::new(sys::PROC_DIR);
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let uid = sys::effective_uid();
    let mut steps = Vec::new();
    for pid in sys::pids(proc_dir)? {
        let Ok(facts) = sys::process_facts(proc_dir, pid) else {
            continue;
        };
        if pid == me || facts.kernel_thread || (uid != 0 && facts.uid != uid && facts.ruid != uid) {
            continue;
        }
        let Ok(old) = sys::task_affinity(pid) else {
            continue;
        };
        let mut new = old.clone();
        new &= rest;
        if new.weight() == Some(0) {
            new = rest.clone();
        }
        if new != old {
            steps.push(ReserveStep::Process {
                pid,
                start_ticks: facts.start_ticks,
                exe: facts.exe.map_or_else(
                    || format!("[{}]", facts.comm),
                    |p| p.to_string_lossy().into_owned(),
                ),
                old: format_list(&set_to_vec(&old)),
                new: format_list(&set_to_vec(&new)),
            });
        }
    }
    Ok(steps)
}

fn set_of(list: &str) -> CpuSet {
    set_from_indexes(parse_list(list).unwrap_or_default())
}

/// Makes one change (`forward`) or takes it back; a process that has ended (or whose pid is
/// another process now) is not an error.
fn run_step(step: &ReserveStep, forward: bool) -> Result<(), SysError> {
    match step {
        ReserveStep::Systemd { unit, old, new } => {
            let value = if forward { new } else { old };
            sys::systemctl(&[
                "set-property",
                "--runtime",
                unit,
                &format!("AllowedCPUs={value}"),
            ])
            .map(|_| ())
        }
        ReserveStep::Cgroup { path, old, new } => {
            sys::write_cgroup_file(path, if forward { new } else { old }.as_bytes())
        }
        ReserveStep::Process {
            pid,
            start_ticks,
            old,
            new,
            ..
        } => {
            let proc_dir = Path::new(sys::PROC_DIR);
            let same =
                sys::process_facts(proc_dir, *pid).is_ok_and(|f| f.start_ticks == *start_ticks);
            if !same {
                return Ok(());
            }
            let cpus = set_of(if forward { new } else { old });
            for tid in sys::thread_ids(proc_dir, *pid).unwrap_or_default() {
                match sys::set_task_affinity(tid, &cpus) {
                    Err(e) if !sys::is_no_such_task(&e) => {
                        return Err(SysError::Call {
                            call: "sched_setaffinity",
                            error: e,
                        });
                    }
                    _ => {}
                }
            }
            Ok(())
        }
    }
}

/// Fails when a state is saved at `state` already: reserving again would lose what was there
/// before the first time.
///
/// # Errors
///
/// [`ReserveError::AlreadyReserved`].
pub fn ensure_not_reserved(state: &Path) -> Result<(), ReserveError> {
    match sys::read_if_exists(state)? {
        None => Ok(()),
        Some(bytes) => Err(ReserveError::AlreadyReserved {
            path: state.to_path_buf(),
            reserved: serde_json::from_slice::<ReservePlan>(&bytes)
                .map_or_else(|_| "?".to_owned(), |p| p.reserved),
        }),
    }
}

/// Saves `plan` at `state` (durably), then makes its changes in order. When one fails, those
/// made are taken back and the state removed. The `rules` way also writes the rules file that
/// keeps new processes off the set ([`rules_path`]).
///
/// # Errors
///
/// [`ReserveError::AlreadyReserved`] when `state` exists, [`ReserveError::RulesFileExists`]
/// when the `rules` way's file does (nothing is changed then); [`ReserveError::Sys`] for a
/// change that failed (after taking the others back).
pub fn apply(plan: &ReservePlan, state: &Path) -> Result<(), ReserveError> {
    ensure_not_reserved(state)?;
    // Written beside the state: a file of that name that is already there is not coretune's.
    let rules = rules_path(state);
    if plan.method == ReserveMethod::Rules && sys::read_if_exists(&rules)?.is_some() {
        return Err(ReserveError::RulesFileExists { path: rules });
    }
    let json = serde_json::to_vec_pretty(plan).map_err(|e| ReserveError::BadState {
        path: state.to_path_buf(),
        message: e.to_string(),
    })?;
    sys::write_durably(state, &json)?;
    for (i, step) in plan.steps.iter().enumerate() {
        if let Err(e) = run_step(step, true) {
            for done in plan.steps[..i].iter().rev() {
                let _ = run_step(done, false);
            }
            let _ = sys::remove_durably(state);
            return Err(e.into());
        }
    }
    if plan.method == ReserveMethod::Rules {
        let rules = format!(
            "# Written by 'coretune reserve' ({}): keeps new processes off CPUs {}.\n\
             # Keep it in force with: coretune rules watch {}\n\n\
             [[rule]]\nname = \"coretune reserve: keep CPUs {} free\"\nexe = \"*\"\ncpus = \"{}\"\n",
            plan.reason,
            plan.reserved,
            rules_path(state).display(),
            plan.reserved,
            plan.allowed
        );
        sys::write_durably(&rules_path(state), rules.as_bytes())?;
    }
    Ok(())
}

/// The saved state at `state`.
///
/// # Errors
///
/// [`ReserveError::NotReserved`], [`ReserveError::BadState`].
pub fn read_state(state: &Path) -> Result<ReservePlan, ReserveError> {
    let bytes = sys::read_if_exists(state)?.ok_or_else(|| ReserveError::NotReserved {
        path: state.to_path_buf(),
    })?;
    let plan: ReservePlan = serde_json::from_slice(&bytes).map_err(|e| ReserveError::BadState {
        path: state.to_path_buf(),
        message: e.to_string(),
    })?;
    if plan.schema != RESERVE_SCHEMA {
        return Err(ReserveError::BadState {
            path: state.to_path_buf(),
            message: format!("schema '{}', expected '{RESERVE_SCHEMA}'", plan.schema),
        });
    }
    Ok(plan)
}

/// Puts back what the state at `state` saved, last change first, then removes the state (and
/// the `rules` way's rules file). Returns what was put back.
///
/// # Errors
///
/// [`ReserveError::NotReserved`], [`ReserveError::BadState`], [`ReserveError::Sys`] for a
/// change that could not be taken back (the state is kept, so `--undo` can be run again).
pub fn undo(state: &Path) -> Result<ReservePlan, ReserveError> {
    let plan = read_state(state)?;
    let mut first_error = None;
    for step in plan.steps.iter().rev() {
        if let Err(e) = run_step(step, false) {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e.into());
    }
    if plan.method == ReserveMethod::Rules {
        let rules = rules_path(state);
        if sys::read_if_exists(&rules)?.is_some() {
            sys::remove_durably(&rules)?;
        }
    }
    sys::remove_durably(state)?;
    Ok(plan)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn states_round_trip_and_read_as_written() {
        let plan = ReservePlan {
            schema: RESERVE_SCHEMA.into(),
            method: ReserveMethod::Cgroup,
            reason: "test".into(),
            reserved: "0".into(),
            allowed: "1-3".into(),
            steps: vec![
                ReserveStep::Cgroup {
                    path: "/sys/fs/cgroup/a/cpuset.cpus".into(),
                    old: "0-3\n".into(),
                    new: "1-3\n".into(),
                },
                ReserveStep::Systemd {
                    unit: "user.slice".into(),
                    old: String::new(),
                    new: "1-3".into(),
                },
            ],
        };
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains(r#""kind":"cgroup""#), "{json}");
        assert_eq!(serde_json::from_str::<ReservePlan>(&json).unwrap(), plan);
        assert_eq!(
            plan.steps[0].to_string(),
            "/sys/fs/cgroup/a/cpuset.cpus: 0-3 → 1-3"
        );
        assert_eq!(
            plan.steps[1].to_string(),
            "systemctl set-property --runtime user.slice AllowedCPUs=1-3   (was (empty))"
        );
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("reserve.json");
        assert!(matches!(
            read_state(&state),
            Err(ReserveError::NotReserved { .. })
        ));
        std::fs::write(&state, "{}").unwrap();
        assert!(matches!(
            read_state(&state),
            Err(ReserveError::BadState { .. })
        ));
        assert_eq!(
            "cgroup".parse::<ReserveMethod>().unwrap(),
            ReserveMethod::Cgroup
        );
        assert!("zfs".parse::<ReserveMethod>().is_err());
    }

    /// The `rules` way writes `reserve-rules.toml` beside the state: a file of that name that
    /// is there already (the user's, beside a `--state` they chose) is refused, not overwritten.
    #[test]
    fn the_rules_way_never_overwrites_a_rules_file_it_did_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("reserve.json");
        let theirs = rules_path(&state);
        std::fs::write(&theirs, "# my own rules\n").unwrap();
        let plan = ReservePlan {
            schema: RESERVE_SCHEMA.into(),
            method: ReserveMethod::Rules,
            reason: "test".into(),
            reserved: "0".into(),
            allowed: "1".into(),
            steps: Vec::new(),
        };
        let e = apply(&plan, &state).unwrap_err();
        assert!(matches!(e, ReserveError::RulesFileExists { .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(&theirs).unwrap(),
            "# my own rules\n"
        );
        assert!(!state.exists(), "nothing saved, nothing changed");
        // Without it, the rules file is written, and --undo removes the one it wrote.
        std::fs::remove_file(&theirs).unwrap();
        apply(&plan, &state).unwrap();
        assert!(theirs.is_file());
        undo(&state).unwrap();
        assert!(!theirs.exists() && !state.exists());
    }
}
