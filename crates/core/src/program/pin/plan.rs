//! The per-thread plan: which mechanism reaches a program ([`per_thread`]), the environment
//! that carries the plan to the pinning library, the place of each thread in creation order
//! (likwid-pin's model), and re-pinning a running program's threads the same way.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use hwlocality::cpu::cpuset::CpuSet;

use super::elf::{Obstacle, OpenMpRuntime, ProgramInfo};
use crate::placement::{Binding, Placement};
use crate::program::launch::{LaunchError, bind_one};
use crate::sys::{self, format_list};

/// The environment variable carrying the plan to the library.
pub const PLAN_VAR: &str = "CORETUNE_PIN";

/// How a placement reached a program's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Mechanism {
    /// The pinning library, preloaded: each thread its place as it is created.
    Preload,
    /// OpenMP's own binding (`OMP_PLACES`, `OMP_PROC_BIND=close`).
    Openmp,
    /// Only the process CPU set: every thread may run on the union of the places.
    ProcessSet,
}

impl Mechanism {
    /// Its name in records: `preload`, `openmp`, `process-set`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::Preload => "preload",
            Mechanism::Openmp => "openmp",
            Mechanism::ProcessSet => "process-set",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A skip mask with likwid-pin's `-s` meaning: bit i set = the i-th call to `pthread_create`
/// (0-based, every call counted) makes a helper thread that is not pinned. Written in hex with
/// `0x`, as likwid-pin takes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct SkipMask(pub u64);

impl SkipMask {
    /// Whether call `i` is skipped (only the first 64 calls can be).
    pub fn skips(self, i: usize) -> bool {
        i < 64 && self.0 >> i & 1 == 1
    }
}

impl fmt::Display for SkipMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl FromStr for SkipMask {
    type Err = PinError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || PinError::BadSkipMask(s.to_owned());
        let hex = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .ok_or_else(bad)?;
        u64::from_str_radix(hex, 16)
            .map(SkipMask)
            .map_err(|_| bad())
    }
}

impl From<SkipMask> for String {
    fn from(m: SkipMask) -> Self {
        m.to_string()
    }
}

impl TryFrom<String> for SkipMask {
    type Error = PinError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// Why per-thread placement input was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// A skip mask that is not `0x` + at most 16 hex digits.
    #[error("skip mask '{0}' must be hex starting with 0x (likwid-pin's -s), e.g. 0x1")]
    BadSkipMask(String),
}

impl OpenMpRuntime {
    /// The skip mask its helper threads need: libgomp and LLVM's libomp create exactly their
    /// workers (measured; `crates/cli/tests/pin.rs`), Intel's runtime starts a monitor thread
    /// first (likwid-pin(1): `-s 0x1` for Intel's runtime). The library keeps the same table
    /// for plans with `skip=auto` (`crates/pin/src/runtime.rs`).
    pub fn default_skip(self) -> SkipMask {
        match self {
            Self::Intel => SkipMask(0x1),
            Self::Gnu | Self::Llvm | Self::Static => SkipMask(0),
        }
    }
}

/// How one program gets a placement: the mechanism, the skip mask in force, and a warning
/// to show before it runs when per-thread placement cannot reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerThread {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// The skip mask the library applies (with [`Mechanism::Preload`]; zero otherwise).
    pub skip: SkipMask,
    /// Why per-thread placement falls back, in one line, when it does.
    pub warning: Option<String>,
    /// Who places which threads, in one line, when the program places some itself (its
    /// coretune-pool reads the plan: [`pool_note`]).
    pub note: Option<String>,
    library: Option<PathBuf>,
    places: Vec<Vec<usize>>,
}

/// Chooses how `placement` reaches `program` (see the module table): the library when it is
/// found (`library`) and the program has no obstacle, else OpenMP's places for an OpenMP
/// program, else the process CPU set. `skip` is the user's mask; without one, the default of
/// the program's OpenMP runtime.
pub fn per_thread(
    program: &ProgramInfo,
    library: Result<&Path, &str>,
    placement: &Placement,
    skip: Option<SkipMask>,
) -> PerThread {
    let mut out = PerThread {
        mechanism: Mechanism::ProcessSet,
        skip: SkipMask(0),
        warning: None,
        note: None,
        library: None,
        places: placement.thread_cpus(),
    };
    if !placement.is_pinned() || placement.binding == Binding::Shared {
        return out;
    }
    out.note = pool_note(program, library);
    match (fallback(program, library), library) {
        (Some((mechanism, warning)), _) => {
            out.mechanism = mechanism;
            // A program whose pool reads the plan is placed all the same: the note says how.
            out.warning = out.note.is_none().then_some(warning);
        }
        (None, Ok(lib)) => {
            out.mechanism = Mechanism::Preload;
            out.skip = skip.unwrap_or_else(|| {
                program
                    .openmp
                    .map_or(SkipMask(0), OpenMpRuntime::default_skip)
            });
            out.library = Some(lib.to_path_buf());
        }
        // `fallback` has a warning whenever the library is missing.
        (None, Err(_)) => {}
    }
    out
}

/// Who places a program's threads when it builds its coretune-pool from the environment
/// (`ThreadPoolBuilder::from_env`): with the library, the pool pins its workers (after the
/// library, so it has the last word) and the library the main thread and the program's other
/// threads; without it, the pool reads `OMP_PLACES` and binds its workers and the thread that
/// builds it. `None` for any other program.
pub fn pool_note(program: &ProgramInfo, library: Result<&Path, &str>) -> Option<String> {
    if !program.pool {
        return None;
    }
    let name = program.path.display();
    Some(match (&program.obstacle, library) {
        (None, Ok(_)) => format!(
            "{name} builds its coretune-pool from the environment: the pool pins its workers \
             (places 1, 2, …), the pinning library its main thread (place 0) and its other threads"
        ),
        (Some(o), _) => format!(
            "{name}: {o}: its coretune-pool pins its workers and the thread that builds it from \
             OMP_PLACES; its other threads share the placement's CPUs"
        ),
        (None, Err(why)) => format!(
            "{name}: {why}: its coretune-pool pins its workers and the thread that builds it \
             from OMP_PLACES; its other threads share the placement's CPUs"
        ),
    })
}

/// What a pinned placement falls back to when the library cannot reach `program` (or is not
/// found), with the one-line warning to show before it runs; `None` when the library can be
/// preloaded.
pub fn fallback(
    program: &ProgramInfo,
    library: Result<&Path, &str>,
) -> Option<(Mechanism, String)> {
    let obstacle = match (&program.obstacle, library) {
        (Some(o), _) => o.clone(),
        (None, Err(why)) => Obstacle::NoLibrary(why.to_owned()),
        (None, Ok(_)) => return None,
    };
    let (mechanism, what) = if program.openmp.is_some() || program.pool {
        (
            Mechanism::Openmp,
            "OpenMP's places pin its OpenMP threads, its other threads share the placement's CPUs",
        )
    } else {
        (
            Mechanism::ProcessSet,
            "its threads share the placement's CPUs (the process CPU set)",
        )
    };
    Some((
        mechanism,
        format!(
            "{}: {obstacle}: no per-thread placement; {what}",
            program.path.display()
        ),
    ))
}

impl PerThread {
    /// The plan in [`PLAN_VAR`]'s format: `places=0/2/1,3 skip=0x0`.
    pub fn plan(&self) -> String {
        let places: Vec<String> = self.places.iter().map(|p| format_list(p)).collect();
        format!("places={} skip={}", places.join("/"), self.skip)
    }

    /// The environment a program started with this placement gets, with the thread-count
    /// variables: with the library, `LD_PRELOAD` (prepended to `ld_preload`, the one in force),
    /// the plan, and `KMP_AFFINITY=disabled` so that LLVM's and Intel's OpenMP runtimes keep
    /// the places their threads were created with (LLVM's libomp otherwise resets every worker
    /// to the process's CPUs; likwid-pin sets it the same way); otherwise OpenMP's places, as
    /// [`thread_env`](crate::program::thread_env) gives them. With the library, the variables of
    /// [`PerThread::cleared_env`] are removed too.
    pub fn env(
        &self,
        threads: usize,
        placement: &Placement,
        ld_preload: Option<&str>,
    ) -> Vec<(String, String)> {
        let own = |v: Vec<(&'static str, String)>| {
            v.into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<Vec<_>>()
        };
        let Some(lib) = &self.library else {
            return own(crate::program::thread_env(threads, Some(placement)));
        };
        let mut env = own(crate::program::thread_env(threads, None));
        let lib = lib.to_string_lossy().into_owned();
        let preload = match ld_preload.filter(|p| !p.trim().is_empty()) {
            Some(rest) => format!("{lib}:{rest}"),
            None => lib,
        };
        env.push(("LD_PRELOAD".into(), preload));
        env.push((PLAN_VAR.into(), self.plan()));
        env.push(("KMP_AFFINITY".into(), "disabled".into()));
        env
    }

    /// Variables to remove from the program's environment: with the library, `OMP_PLACES` and
    /// `OMP_PROC_BIND`, so that GNU libgomp does not bind its threads elsewhere (setting
    /// `OMP_PROC_BIND=false` instead would make LLVM's libomp warn that `KMP_AFFINITY` wins).
    pub fn cleared_env(&self) -> &'static [&'static str] {
        if self.library.is_some() {
            &["OMP_PLACES", "OMP_PROC_BIND"]
        } else {
            &[]
        }
    }

    /// Each thread's planned CPUs, in creation order (main thread first), for `threads` threads
    /// of one process: `None` for a helper the skip mask leaves unpinned.
    pub fn planned(&self, threads: usize) -> Vec<Option<&[usize]>> {
        self.planned_from(threads, 0)
    }

    /// [`PerThread::planned`] for a process whose own place is `base`: a process the library
    /// forked from another (its k-th fork on place `base`), whose threads go on from there.
    pub fn planned_from(&self, threads: usize, base: usize) -> Vec<Option<&[usize]>> {
        match self.mechanism {
            Mechanism::ProcessSet => vec![None; threads],
            Mechanism::Preload | Mechanism::Openmp => {
                assign(threads, self.skip, self.places.len(), base)
                    .into_iter()
                    .map(|p| p.map(|i| self.places[i].as_slice()))
                    .collect()
            }
        }
    }

    /// Whether the pinning library is preloaded into the program (which then logs the place
    /// of each of its processes).
    pub fn is_preloaded(&self) -> bool {
        self.mechanism == Mechanism::Preload && self.library.is_some()
    }

    /// How many places the plan has.
    pub fn places(&self) -> usize {
        self.places.len()
    }
}

/// The place index of each of `threads` threads in creation order (main first), as the library
/// assigns them in a process whose own place is `base` (0 for a program started or `exec`ed,
/// a forked process's place): main on place `base`, the k-th pinned creation on place
/// (`base` + k + 1) mod `places`, `None` for creations the skip mask skips.
pub(super) fn assign(
    threads: usize,
    skip: SkipMask,
    places: usize,
    base: usize,
) -> Vec<Option<usize>> {
    let places = places.max(1);
    let mut out = Vec::with_capacity(threads);
    if threads == 0 {
        return out;
    }
    out.push(Some(base % places));
    let mut pinned = 0;
    for call in 0..threads - 1 {
        if skip.skips(call) {
            out.push(None);
        } else {
            pinned += 1;
            out.push(Some((base + pinned) % places));
        }
    }
    out
}

/// Re-pins the threads of running process `pid` one by one, as the pinning library would have
/// placed them: ordered by creation (start time, then thread id), the first (the main thread)
/// on the first of `places`, the k-th thread created after it on place k + 1 (wrapping
/// around), threads whose creation `skip` skips on the union of the places. Returns each
/// thread id with the CPUs it got, in that order.
///
/// # Errors
///
/// As [`rebind_process`](crate::program::rebind_process).
pub fn repin_process(
    pid: u32,
    places: &[CpuSet],
    skip: SkipMask,
) -> Result<Vec<(i32, CpuSet)>, LaunchError> {
    let no_such_process = || LaunchError::NoSuchProcess { pid };
    let id = i32::try_from(pid).map_err(|_| no_such_process())?;
    let mut threads = sys::threads(Path::new(sys::PROC_DIR), id).map_err(|_| no_such_process())?;
    threads.sort_by_key(|t| (t.tid != id, t.started.unwrap_or(0), made_after(id, t.tid)));
    let union = places.iter().fold(CpuSet::new(), |mut u, p| {
        u |= p;
        u
    });
    let plan = assign(threads.len(), skip, places.len(), 0);
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

/// How long after thread `pid` (a process's main thread) thread `tid` was given its id, for
/// ordering threads created in the same clock tick: ids are handed out upwards and wrap past
/// `pid_max` (at most 2^22), so a thread made after a wrap has a smaller id than the main
/// thread but was made after it.
pub(super) fn made_after(pid: i32, tid: i32) -> i64 {
    (i64::from(tid) - i64::from(pid)).rem_euclid(1 << 22)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::placement::{Policy, plan};
    use crate::topology::{Topology, TopologySource};

    fn placement(n: usize, binding: Binding) -> Placement {
        let topo = Topology::load(&TopologySource::Synthetic("core:2 pu:2".into())).unwrap();
        plan(&topo, n, Policy::Cores, None, binding).unwrap()
    }

    #[test]
    fn skip_masks_parse_as_likwid_pin_takes_them() {
        assert_eq!("0x5".parse::<SkipMask>().unwrap(), SkipMask(5));
        assert_eq!(SkipMask(0x1f).to_string(), "0x1f");
        assert!("5".parse::<SkipMask>().is_err());
        assert!("0x1ffffffffffffffff".parse::<SkipMask>().is_err());
        assert!(SkipMask(0b10).skips(1) && !SkipMask(0b10).skips(0) && !SkipMask(!0).skips(64));
    }

    #[test]
    fn assignment_follows_likwid_pin() {
        // likwid's liblikwidpin: main on the first CPU, created threads on the next ones,
        // round robin, skipped calls take no place.
        assert_eq!(assign(1, SkipMask(0), 2, 0), [Some(0)]);
        assert_eq!(
            assign(5, SkipMask(0), 2, 0),
            [Some(0), Some(1), Some(0), Some(1), Some(0)]
        );
        assert_eq!(
            assign(5, SkipMask(0b10), 3, 0),
            [Some(0), Some(1), None, Some(2), Some(0)]
        );
    }

    #[test]
    fn mechanisms_and_environment() {
        let p = placement(3, Binding::Pu);
        let fine = ProgramInfo {
            path: "/bin/x".into(),
            obstacle: None,
            openmp: Some(OpenMpRuntime::Intel),
            pool: false,
        };
        let lib = Path::new("/lib/coretune/libcoretune_pin.so");
        let pt = per_thread(&fine, Ok(lib), &p, None);
        assert_eq!(
            (pt.mechanism, pt.skip, &pt.warning),
            (Mechanism::Preload, SkipMask(1), &None)
        );
        assert_eq!(pt.plan(), "places=0/2/1 skip=0x1");
        let env = pt.env(3, &p, Some("/other.so"));
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("LD_PRELOAD"),
            Some("/lib/coretune/libcoretune_pin.so:/other.so")
        );
        assert_eq!(get(PLAN_VAR), Some("places=0/2/1 skip=0x1"));
        assert_eq!(get("OMP_NUM_THREADS"), Some("3"));
        assert_eq!(get("KMP_AFFINITY"), Some("disabled"));
        assert_eq!(get("OMP_PLACES"), None);
        assert_eq!(pt.cleared_env(), ["OMP_PLACES", "OMP_PROC_BIND"]);
        let user = per_thread(&fine, Ok(lib), &p, Some(SkipMask(0)));
        assert_eq!(user.skip, SkipMask(0));

        let static_omp = ProgramInfo {
            obstacle: Some(Obstacle::Static),
            openmp: Some(OpenMpRuntime::Static),
            ..fine.clone()
        };
        let pt = per_thread(&static_omp, Ok(lib), &p, None);
        assert_eq!(pt.mechanism, Mechanism::Openmp);
        let warning = pt.warning.clone().unwrap();
        assert!(
            warning.starts_with("/bin/x: it is statically linked"),
            "{warning}"
        );
        let env = pt.env(3, &p, None);
        assert!(
            env.iter()
                .any(|(k, v)| k == "OMP_PLACES" && v == "{0},{2},{1}"),
            "{env:?}"
        );
        assert!(env.iter().all(|(k, _)| k != "LD_PRELOAD"));

        let go = ProgramInfo {
            obstacle: Some(Obstacle::GoWithoutCgo),
            openmp: None,
            ..fine.clone()
        };
        assert_eq!(
            per_thread(&go, Ok(lib), &p, None).mechanism,
            Mechanism::ProcessSet
        );
        let missing = per_thread(&fine, Err("not found"), &p, None);
        assert_eq!(missing.mechanism, Mechanism::Openmp);
        assert!(missing.warning.unwrap().contains("not found"));
        // One shared set: nothing per thread to do, nothing to warn about.
        let shared = per_thread(&fine, Ok(lib), &placement(3, Binding::Shared), None);
        assert_eq!(
            (shared.mechanism, shared.warning),
            (Mechanism::ProcessSet, None)
        );
    }
}
