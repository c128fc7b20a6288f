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

mod check;
mod elf;
mod library;
mod plan;

pub use check::{LoggedRank, OffPlace, PinLog, PinRecord, check_samples};

pub(crate) use check::off_place;
pub use elf::{Obstacle, OpenMpRuntime, ProgramInfo, inspect_program};
pub use library::{
    EXEC_FILE, EXEC_VAR, LIB_FILE, LIB_VAR, embed_exec_helper, embed_library, find_exec_helper,
    find_library,
};
pub use plan::{
    Mechanism, PLAN_VAR, PerThread, PinError, SkipMask, fallback, per_thread, pool_note,
    repin_process,
};
