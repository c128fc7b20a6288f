//! What the pinning library can reach: a program's ELF headers read before it runs (static,
//! set-ID, Go without cgo, another libc or architecture, its OpenMP runtime, a coretune-pool
//! built from the environment).

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{Dyn as _, ElfFile, FileHeader, ProgramHeader as _};
use object::{Endianness, Object as _, ObjectSymbol as _, ReadCache};

use crate::sys;

/// The section a program that builds coretune-pool from the environment carries
/// (`coretune_pool::ThreadPoolBuilder::from_env`).
const POOL_SECTION: &str = ".coretune_pool";

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
