//! Thread-by-thread placement of programs coretune did not write: the pinning library
//! (`libcoretune_pin.so`, crate `coretune-pin`) preloaded into the program, what reaches a
//! program where the library cannot, and checking afterwards where its threads ran.
//!
//! **The library** wraps `pthread_create` as likwid-pin's does: the main thread on the first
//! place, the k-th created thread on place k + 1 (wrapping around), set in the new thread's
//! attributes; a skip mask (likwid-pin's `-s`: bit i = the i-th `pthread_create` call makes a
//! helper that is not pinned) leaves runtime helper threads on the process's CPUs. The plan
//! travels in one variable, [`PLAN_VAR`] (`CORETUNE_PIN='places=0/2/1,3 skip=0x0'`: places
//! separated by `/`, each a CPU list; the skip mask in hex or `auto`).
//!
//! **Mechanisms** ([`Mechanism`]), chosen per program by [`per_thread`]:
//!
//! | mechanism | when | what the threads get |
//! |---|---|---|
//! | `preload` | the library is found and can be loaded into the program | each thread its place |
//! | `openmp` | it cannot, and the program uses an OpenMP runtime | `OMP_PLACES` + `OMP_PROC_BIND=close`: each OpenMP thread its place |
//! | `process-set` | neither, or `--bind shared` | every thread the union of the places |
//!
//! The library cannot reach (checked in the ELF file, before anything runs, see
//! [`inspect_program`]) a statically linked program (no `PT_INTERP`), a set-user-ID or
//! set-group-ID program run by another user (the loader ignores `LD_PRELOAD` there), a Go
//! program built without cgo (its threads start with `clone`, never `pthread_create`), a
//! program for another libc (musl) or another architecture (a 32-bit program).
//!
//! **Where the library is found** ([`find_library`]): `$CORETUNE_PIN_LIB` when set, else
//! `libcoretune_pin.so` next to the `coretune` executable (where cargo builds both), else
//! `../lib/coretune/libcoretune_pin.so` from it (where `make install` puts it), else the copy
//! the binary carries ([`embed_library`]), written to the user's cache folder on first use
//! (so that `cargo install` and a copied binary place threads with no extra step).

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use object::elf;
use object::read::elf::{Dyn as _, ElfFile, FileHeader, ProgramHeader as _};
use object::{Endianness, Object as _, ObjectSymbol as _, ReadCache};
use serde::{Deserialize, Serialize};

use hwlocality::cpu::cpuset::CpuSet;

use super::launch::{LaunchError, bind_one};
use super::watch::Sample;
use crate::placement::{Binding, Placement};
use crate::sys::{self, format_list, set_to_vec};

/// The environment variable carrying the plan to the library.
pub const PLAN_VAR: &str = "CORETUNE_PIN";
/// The environment variable naming the library file, overriding the search.
pub const LIB_VAR: &str = "CORETUNE_PIN_LIB";
/// The library's file name.
pub const LIB_FILE: &str = "libcoretune_pin.so";
/// The section a program that builds coretune-pool from the environment carries
/// (`coretune_pool::ThreadPoolBuilder::from_env`).
const POOL_SECTION: &str = ".coretune_pool";

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

/// An OpenMP runtime a program links against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenMpRuntime {
    /// GNU libgomp.
    Gnu,
    /// LLVM libomp (Debian's `libiomp5.so` is a link to it).
    Llvm,
    /// Intel's libiomp5.
    Intel,
    /// Linked in statically: which one is not told.
    Static,
}

impl OpenMpRuntime {
    /// The runtime a shared library's file name belongs to.
    fn of_library(name: &str) -> Option<Self> {
        let file = name.rsplit('/').next().unwrap_or(name);
        if file.starts_with("libgomp.so") {
            Some(Self::Gnu)
        } else if file.starts_with("libiomp5.so") {
            Some(Self::Intel)
        } else if file.starts_with("libomp.so") || file.starts_with("libomp5.so") {
            Some(Self::Llvm)
        } else {
            None
        }
    }

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

/// Why the library cannot be loaded into a program.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Obstacle {
    /// Statically linked: no dynamic loader, so no `LD_PRELOAD`.
    Static,
    /// Set-user-ID or set-group-ID to someone else: the loader ignores `LD_PRELOAD`.
    SetId,
    /// A Go program built without cgo: its threads start with `clone`, not `pthread_create`.
    GoWithoutCgo,
    /// Linked against musl: the library is built for glibc.
    Musl,
    /// Built for another machine than the library (a 32-bit program, another CPU).
    Foreign,
    /// The library itself was not found, or its path cannot go into `LD_PRELOAD`.
    NoLibrary(String),
}

impl fmt::Display for Obstacle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Obstacle::Static => "it is statically linked (LD_PRELOAD cannot reach it)",
            Obstacle::SetId => {
                "it is set-user-ID or set-group-ID (the dynamic loader ignores LD_PRELOAD)"
            }
            Obstacle::GoWithoutCgo => {
                "it is a Go program built without cgo (its threads never call pthread_create)"
            }
            Obstacle::Musl => "it is linked against musl (the pinning library is built for glibc)",
            Obstacle::Foreign => {
                "it is built for another architecture than coretune (the pinning library cannot \
                 be loaded into it)"
            }
            Obstacle::NoLibrary(why) => why,
        })
    }
}

/// What [`inspect_program`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramInfo {
    /// The program file (after following one `#!` line).
    pub path: PathBuf,
    /// Why the library cannot be loaded into it (`None`: it can, as far as its file tells).
    pub obstacle: Option<Obstacle>,
    /// The OpenMP runtime it links against directly, if any.
    pub openmp: Option<OpenMpRuntime>,
    /// It builds a coretune-pool from the environment (`ThreadPoolBuilder::from_env`, which
    /// leaves a `.coretune_pool` section in the executable): the pool places its own workers.
    pub pool: bool,
}

/// Reads the program's ELF headers: `PT_INTERP` (none: static; musl's loader), `DT_NEEDED`
/// (the OpenMP runtime; libc for Go programs with cgo), the `.go.buildinfo` section, the
/// symbol table of a static binary (OpenMP entry points), its class and machine, and its
/// set-ID bits. A script (`#!`) is judged by its interpreter. A file that cannot be read or is
/// not ELF has no obstacle: the loader decides.
pub fn inspect_program(path: &Path) -> ProgramInfo {
    inspect(path, 0)
}

fn inspect(path: &Path, depth: usize) -> ProgramInfo {
    let mut info = ProgramInfo {
        path: path.to_path_buf(),
        obstacle: None,
        openmp: None,
        pool: false,
    };
    let Ok(program) = sys::open_program(path) else {
        return info;
    };
    let secure = program.secure;
    let cache = ReadCache::new(program.file);
    match object::FileKind::parse(&cache) {
        Ok(object::FileKind::Elf64) => read_elf::<elf::FileHeader64<Endianness>>(&cache, &mut info),
        Ok(object::FileKind::Elf32) => read_elf::<elf::FileHeader32<Endianness>>(&cache, &mut info),
        _ => {
            if depth == 0 {
                if let Some(interpreter) = shebang(&cache) {
                    return inspect(&interpreter, 1);
                }
            }
        }
    }
    if secure {
        info.obstacle = Some(Obstacle::SetId);
    }
    info
}

/// The interpreter of a `#!` script.
fn shebang(cache: &ReadCache<File>) -> Option<PathBuf> {
    use object::ReadRef as _;
    let head = cache.read_bytes_at(0, 256).or_else(|()| {
        let len = cache.len()?;
        cache.read_bytes_at(0, len.min(256))
    });
    let head = head.ok()?;
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n')?];
    let text = std::str::from_utf8(line).ok()?;
    text.split_ascii_whitespace().next().map(PathBuf::from)
}

/// The ELF part of [`inspect_program`].
fn read_elf<Elf: FileHeader<Endian = Endianness>>(cache: &ReadCache<File>, info: &mut ProgramInfo) {
    let Ok(file) = ElfFile::<Elf, &ReadCache<File>>::parse(cache) else {
        return;
    };
    let endian = file.endian();
    let header = file.elf_header();
    let host_machine = if cfg!(target_arch = "x86_64") {
        Some(elf::EM_X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(elf::EM_AARCH64)
    } else {
        None
    };
    let foreign = file.is_64() != cfg!(target_pointer_width = "64")
        || host_machine.is_some_and(|m| header.e_machine(endian) != m);
    let interpreter = file.elf_program_headers().iter().find_map(|ph| {
        (ph.p_type(endian) == elf::PT_INTERP)
            .then(|| ph.interpreter(endian, cache).ok().flatten())
            .flatten()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    });
    let needed = needed_libraries(&file);
    info.openmp = needed.iter().find_map(|n| OpenMpRuntime::of_library(n));
    let go = file.section_by_name(".go.buildinfo").is_some();
    info.pool = file.section_by_name(POOL_SECTION).is_some();
    let libc = needed
        .iter()
        .any(|n| n.starts_with("libc.so") || n.starts_with("libpthread.so"));
    info.obstacle = if go && !libc {
        Some(Obstacle::GoWithoutCgo)
    } else if interpreter.is_none() {
        if file.symbols().any(|s| {
            matches!(
                s.name(),
                Ok("GOMP_parallel" | "GOMP_parallel_start" | "__kmpc_fork_call")
            )
        }) {
            info.openmp = Some(OpenMpRuntime::Static);
        }
        Some(Obstacle::Static)
    } else if interpreter
        .as_deref()
        .is_some_and(|i| i.contains("ld-musl"))
    {
        Some(Obstacle::Musl)
    } else if foreign {
        Some(Obstacle::Foreign)
    } else {
        None
    };
}

/// The `DT_NEEDED` entries of a dynamically linked file.
fn needed_libraries<'a, Elf: FileHeader<Endian = Endianness>>(
    file: &ElfFile<'a, Elf, &'a ReadCache<File>>,
) -> Vec<String> {
    let endian = file.endian();
    let data = file.data();
    let sections = file.elf_section_table();
    let Ok(Some((entries, link))) = sections.dynamic(endian, data) else {
        return Vec::new();
    };
    let Ok(strings) = sections.strings(endian, data, link) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter(|d| d.tag32(endian) == Some(elf::DT_NEEDED))
        .filter_map(|d| {
            let offset = u32::try_from(d.d_val(endian).into()).ok()?;
            strings.get(offset).ok()
        })
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect()
}

/// The pinning library's bytes, when the running binary carries a copy ([`embed_library`]).
static EMBEDDED: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();

/// Hands [`find_library`] the bytes of a pinning library the binary carries (the `coretune`
/// binary embeds the one it was built with), for when none is installed beside it. The first
/// call wins; an empty slice means none.
pub fn embed_library(bytes: &'static [u8]) {
    let _ = EMBEDDED.set(bytes);
}

/// Finds the pinning library: `$CORETUNE_PIN_LIB`, else next to the running executable, else
/// in `../lib/coretune/` from it, else the copy the binary carries ([`embed_library`]), written
/// once to the user's cache folder (`$XDG_CACHE_HOME/coretune/`, else `~/.cache/coretune/`)
/// under a name made from its contents, so that a binary of another version never uses it.
///
/// # Errors
///
/// A one-line reason, naming where it looked, when it is not there or its path cannot go into
/// `LD_PRELOAD` (which splits at spaces and colons).
pub fn find_library() -> Result<PathBuf, String> {
    if !crate::sys::PRELOAD {
        return Err(
            "per-thread placement preloads a library into the program, which only Linux does \
             here"
                .to_owned(),
        );
    }
    let usable = |p: PathBuf| -> Result<PathBuf, String> {
        let text = p.to_string_lossy();
        if text.contains([' ', ':']) {
            Err(format!(
                "the pinning library's path {} has a space or colon, which LD_PRELOAD cannot take",
                p.display()
            ))
        } else {
            Ok(p)
        }
    };
    if let Some(path) = std::env::var_os(LIB_VAR) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            usable(std::path::absolute(&path).unwrap_or(path))
        } else {
            Err(format!("{LIB_VAR}={} is not a file", path.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find coretune itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIB_FILE),
        dir.join("../lib/coretune").join(LIB_FILE),
    ];
    for c in &candidates {
        if c.is_file() {
            return usable(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
        }
    }
    if let Some(bytes) = EMBEDDED.get().filter(|b| !b.is_empty()) {
        return cached_copy(bytes).and_then(usable);
    }
    Err(format!(
        "the pinning library {LIB_FILE} is not next to {} nor in {} (set {LIB_VAR} to its path)",
        exe.display(),
        dir.join("../lib/coretune").display()
    ))
}

/// The carried library as a file in the user's cache folder: `libcoretune_pin-<hash>.so`, where
/// the hash is of its bytes. An existing file is used only if it holds exactly these bytes;
/// otherwise it is written to a temporary name in the same folder and renamed into place, so
/// that two coretunes starting at once never preload a half-written file.
fn cached_copy(bytes: &[u8]) -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let home = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = home("XDG_CACHE_HOME")
        .or_else(|| home("HOME").map(|h| h.join(".cache")))
        .ok_or_else(|| {
            format!(
                "no pinning library installed beside coretune, and no cache folder to write the \
                 one it carries ($XDG_CACHE_HOME and $HOME are unset; set {LIB_VAR})"
            )
        })?
        .join("coretune");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let path = dir.join(format!("libcoretune_pin-{:016x}.so", hasher.finish()));
    if std::fs::read(&path).is_ok_and(|on_disk| on_disk == bytes) {
        return Ok(path);
    }
    let fail = |what: &str, p: &Path, e: std::io::Error| format!("{what} {}: {e}", p.display());
    sys::create_private_dir(&dir).map_err(|e| fail("cannot create", &dir, e))?;
    let temp = dir.join(format!(".{LIB_FILE}.{}", std::process::id()));
    std::fs::write(&temp, bytes).map_err(|e| fail("cannot write", &temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail("cannot write", &path, e)
    })?;
    Ok(path)
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
    /// [`thread_env`](super::thread_env) gives them. With the library, the variables of
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
            return own(super::env::thread_env(threads, Some(placement)));
        };
        let mut env = own(super::env::thread_env(threads, None));
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
        match self.mechanism {
            Mechanism::ProcessSet => vec![None; threads],
            Mechanism::Preload | Mechanism::Openmp => assign(threads, self.skip, self.places.len())
                .into_iter()
                .map(|p| p.map(|i| self.places[i].as_slice()))
                .collect(),
        }
    }
}

/// The place index of each of `threads` threads in creation order (main first), as the library
/// assigns them: main on place 0, the k-th pinned creation on place (k + 1) mod `places`,
/// `None` for creations the skip mask skips.
pub(crate) fn assign(threads: usize, skip: SkipMask, places: usize) -> Vec<Option<usize>> {
    let places = places.max(1);
    let mut out = Vec::with_capacity(threads);
    if threads == 0 {
        return out;
    }
    out.push(Some(0));
    let mut pinned = 0;
    for call in 0..threads - 1 {
        if skip.skips(call) {
            out.push(None);
        } else {
            pinned += 1;
            out.push(Some(pinned % places));
        }
    }
    out
}

/// A thread seen outside its planned place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffPlace {
    /// Its process.
    pub pid: i32,
    /// Its thread id.
    pub tid: i32,
    /// Its name, as last seen.
    pub name: String,
    /// Its position in its process's creation order (0 = the main thread).
    pub thread: usize,
    /// The CPUs planned for it (the union of the places for a skipped helper).
    pub planned: String,
    /// The CPUs it was seen on outside them.
    pub seen: Vec<usize>,
}

/// What a run of an external program records about its placement (`pinning` in `runs.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRecord {
    /// How the placement reached the program.
    pub mechanism: Mechanism,
    /// The skip mask the library applied (with `preload` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipMask>,
    /// Threads of the program the run's sampling saw.
    pub threads_seen: usize,
    /// Threads seen outside their planned places: the run is flagged when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_place: Vec<OffPlace>,
}

impl PinRecord {
    /// Whether the run is flagged: a thread was seen outside its planned place.
    pub fn is_flagged(&self) -> bool {
        !self.off_place.is_empty()
    }
}

/// Checks the samples of a run against the plan: in every process but `own_pid` (coretune),
/// threads are numbered in creation order (by start time, then thread id — tids are handed
/// out in order), each planned as [`PerThread::planned`] says (a skipped helper, and every
/// thread under `process-set`, on the union of the places), and every sample that found a
/// thread on a CPU outside its plan is reported — except the main thread while its process has
/// no other thread (the library's constructor may not have run yet) and, within the union, a
/// new thread at its first sample (it may not have left its creator's CPU yet).
pub fn check_samples(
    samples: &[Sample],
    own_pid: i32,
    per_thread: &PerThread,
    placement: &Placement,
) -> PinRecord {
    use std::collections::{BTreeMap, BTreeSet};
    /// One thread over the samples.
    struct Seen {
        name: String,
        started: u64,
        cpus: BTreeSet<usize>,
    }
    let union = set_to_vec(&placement.union());
    // pid → tid → what was seen of it.
    let mut procs: BTreeMap<i32, BTreeMap<i32, Seen>> = BTreeMap::new();
    for s in samples {
        let mut per_process: BTreeMap<i32, usize> = BTreeMap::new();
        for t in s.threads.iter().filter(|t| t.pid != own_pid) {
            *per_process.entry(t.pid).or_insert(0) += 1;
        }
        for t in s.threads.iter().filter(|t| t.pid != own_pid) {
            let threads = procs.entry(t.pid).or_default();
            let first = !threads.contains_key(&t.tid);
            let seen = threads.entry(t.tid).or_insert_with(|| Seen {
                name: t.name.clone(),
                started: t.started.unwrap_or(0),
                cpus: BTreeSet::new(),
            });
            seen.name.clone_from(&t.name);
            // Two windows in which a thread may be seen elsewhere without anything having gone
            // wrong: the main thread while its process has no other thread (between `fork` and
            // `exec`, and before the library's constructor has run), and, within the union, a
            // new thread at its first sample (it starts on its creator's CPUs, and glibc
            // applies the attributes' CPU set right after `clone`).
            let window = if t.tid == t.pid {
                per_process.get(&t.pid) == Some(&1)
            } else {
                first && union.contains(&t.cpu)
            };
            if !window {
                seen.cpus.insert(t.cpu);
            }
        }
    }
    let mut record = PinRecord {
        mechanism: per_thread.mechanism,
        skip: (per_thread.mechanism == Mechanism::Preload).then_some(per_thread.skip),
        threads_seen: 0,
        off_place: Vec::new(),
    };
    for (pid, threads) in procs {
        let mut order: Vec<(i32, Seen)> = threads.into_iter().collect();
        // The main thread (tid = pid) first, then by start time and order of creation.
        order.sort_by_key(|(tid, seen)| (*tid != pid, seen.started, made_after(pid, *tid)));
        let plan = per_thread.planned(order.len());
        record.threads_seen += order.len();
        for (i, (tid, seen)) in order.into_iter().enumerate() {
            let planned = plan[i].unwrap_or(&union);
            let outside: Vec<usize> = seen
                .cpus
                .iter()
                .copied()
                .filter(|c| !planned.contains(c))
                .collect();
            if !outside.is_empty() {
                record.off_place.push(OffPlace {
                    pid,
                    tid,
                    name: seen.name,
                    thread: i,
                    planned: format_list(planned),
                    seen: outside,
                });
            }
        }
    }
    record
}

/// How long after thread `pid` (a process's main thread) thread `tid` was given its id, for
/// ordering threads created in the same clock tick: ids are handed out upwards and wrap past
/// `pid_max` (at most 2^22), so a thread made after a wrap has a smaller id than the main
/// thread but was made after it.
fn made_after(pid: i32, tid: i32) -> i64 {
    (i64::from(tid) - i64::from(pid)).rem_euclid(1 << 22)
}

/// Re-pins the threads of running process `pid` one by one, as the pinning library would have
/// placed them: ordered by creation (start time, then thread id), the first (the main thread)
/// on the first of `places`, the k-th thread created after it on place k + 1 (wrapping
/// around), threads whose creation `skip` skips on the union of the places. Returns each
/// thread id with the CPUs it got, in that order.
///
/// # Errors
///
/// As [`rebind_process`](super::rebind_process).
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
    let plan = assign(threads.len(), skip, places.len());
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

#[cfg(test)]
mod test {
    use super::*;
    use crate::placement::{Policy, plan};
    use crate::program::watch::ThreadSample;
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
        assert_eq!(assign(1, SkipMask(0), 2), [Some(0)]);
        assert_eq!(
            assign(5, SkipMask(0), 2),
            [Some(0), Some(1), Some(0), Some(1), Some(0)]
        );
        assert_eq!(
            assign(5, SkipMask(0b10), 3),
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

    #[test]
    fn threads_made_after_a_pid_wrap_sort_after_the_main_thread() {
        // pid_max 32768: the main thread 32613, then 32614, then (wrapped) 334 and 335.
        let mut tids = vec![335, 32614, 334, 32613];
        tids.sort_by_key(|&t| made_after(32613, t));
        assert_eq!(tids, [32613, 32614, 334, 335]);
    }

    fn seen(pid: i32, tid: i32, cpu: usize) -> ThreadSample {
        ThreadSample {
            pid,
            tid,
            name: format!("t{tid}"),
            cpu,
            migrations: None,
            started: Some(100),
            cpu_time_s: None,
        }
    }

    #[test]
    fn samples_are_checked_against_each_threads_place() {
        let p = placement(2, Binding::Pu); // places {0}, {2}
        let fine = ProgramInfo {
            path: "/bin/x".into(),
            obstacle: None,
            openmp: None,
            pool: false,
        };
        let pt = per_thread(&fine, Ok(Path::new("/l.so")), &p, Some(SkipMask(0b10)));
        let sample = |threads| Sample {
            t_s: 0.0,
            cpus: Vec::new(),
            threads,
            irqs: Default::default(),
            softirqs: Default::default(),
        };
        let good = [
            sample(vec![seen(1, 99, 3), seen(50, 50, 0), seen(50, 51, 2)]),
            // Thread 52 is the skipped helper: anywhere in the union; 53 is back on place 0.
            sample(vec![seen(50, 50, 0), seen(50, 52, 2), seen(50, 53, 0)]),
        ];
        let record = check_samples(&good, 1, &pt, &p);
        assert_eq!(
            (record.threads_seen, record.is_flagged()),
            (4, false),
            "{record:?}"
        );
        assert_eq!(record.skip, Some(SkipMask(2)));
        // Before the constructor: main alone, anywhere in the union; a new thread's first
        // sample on its creator's CPU.
        let windows = [
            sample(vec![seen(50, 50, 2)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 0)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 2)]),
        ];
        assert!(!check_samples(&windows, 1, &pt, &p).is_flagged());
        // Outside the union even at the first sample, and back on the wrong CPU later.
        let bad = [
            sample(vec![seen(50, 50, 0), seen(50, 51, 2), seen(50, 52, 1)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 0)]),
        ];
        let record = check_samples(&bad, 1, &pt, &p);
        let off: Vec<(i32, usize, &str, &[usize])> = record
            .off_place
            .iter()
            .map(|o| (o.tid, o.thread, o.planned.as_str(), o.seen.as_slice()))
            .collect();
        assert_eq!(off, [(51, 1, "2", &[0][..]), (52, 2, "0,2", &[1][..])]);
    }
}
