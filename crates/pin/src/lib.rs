//! coretune-pin: placing every thread of a program coretune did not write.
//!
//! `libcoretune_pin.so` is loaded into a program with `LD_PRELOAD` (`coretune run --place`,
//! `coretune tune -- prog` do that) and wraps `pthread_create`, as likwid-pin's
//! `liblikwidpin.so` does:
//!
//! - the **main thread** goes to the plan's first place, in the library's constructor, before
//!   the program's `main` runs;
//! - the **k-th thread created** (k = 0, 1, …, counting the calls that are not skipped) goes to
//!   place `(k + 1) mod P` — wrapping around past the last place — and it gets that place in
//!   the **attributes it is created with** (`pthread_attr_setaffinity_np` on a copy of the
//!   caller's attributes), so it never runs anywhere else;
//! - the **skip mask** has likwid-pin's `-s` meaning: bit `i` set means the `i`-th call to
//!   `pthread_create` (0-based, every call counted, only the first 64 can be skipped) makes a
//!   helper thread that is not pinned and does not use up a place. A skipped thread may run on
//!   every CPU the process had when it started (likwid-pin gives it every online CPU; under
//!   coretune the process starts on the union of the places, which then is the same set unless
//!   the plan leaves CPUs out on purpose). Without a mask in the plan (`skip=auto`) the default
//!   of the OpenMP runtime found loaded applies: GNU libgomp `0x0` and LLVM libomp `0x0` (both
//!   create exactly the workers, measured), Intel's libiomp5 `0x1` (its monitor thread comes
//!   first: likwid-pin(1)'s notice for Intel's runtime), otherwise `0x0`.
//!
//! - the **k-th process forked** (k = 0, 1, …, `fork` without `exec`: a pre-forking server's
//!   workers — nginx, gunicorn, php-fpm, postgres — or a `multiprocessing` pool) goes to place
//!   `k mod P`, set in the child right after `fork`, before it returns to the program: process k
//!   in fork order on place k, as thread k is placed. In a forked child the counting starts
//!   again from its place `b`: its k-th thread goes to place `(b + k + 1) mod P`, its k-th
//!   forked child to `(b + k) mod P`. A program that `exec`s starts again from place 0 (the
//!   constructor runs again in the new image), so a shell that forks and execs its commands
//!   places each command as if coretune had started it;
//!
//! The plan comes in one environment variable, `CORETUNE_PIN`:
//!
//! ```text
//! CORETUNE_PIN = item { " " item }
//! item         = "places=" place { "/" place }        (required)
//!              | "skip=" ( "0x" HEX | "auto" )          (optional; default auto)
//! place        = CPU list, as the kernel writes them: "0-3,8"
//! ```
//!
//! e.g. `CORETUNE_PIN='places=0/2/1,3 skip=0x1'`: the main thread on CPU 0, the first
//! `pthread_create` call skipped (a runtime's helper), the next threads on CPU 2, on CPUs 1 and
//! 3, on CPU 0, on CPU 2, and so on around the list. Without it, or with a plan that does not parse,
//! the library does nothing.
//!
//! With `CORETUNE_PIN_LOG=PATH` (an existing file: coretune makes one per run), each process
//! appends one line when its image starts (`exec PID NS cpus=LIST [rank=R]`: the constructor,
//! once the main thread is on place 0 when there is a plan; the CPUs it may run on then, and its
//! MPI rank when a launcher started it: this is written without a plan too, so that what a
//! launcher applied to each rank, before the rank's `MPI_Init` moves anything, is on record)
//! and one when it is forked (`fork PARENT PID PLACE NS`; `NS` is `CLOCK_MONOTONIC` in
//! nanoseconds once the place is set), each with a single
//! `write(2)` on a descriptor opened `O_APPEND`: coretune's audit of the run reads which place
//! each process was given, whatever it does with its threads and however briefly it lived.
//!
//! It writes nothing to the program's stdout or stderr unless
//! `CORETUNE_PIN_DEBUG=1`, which reports the plan, the main thread's place and every creation
//! on stderr.
//!
//! # Safety of the wrapper
//!
//! The plan is parsed once, in the constructor (which runs single-threaded, before `main`),
//! into masks that are never freed or changed; `pthread_create` then only reads them and takes
//! its numbers from two atomic counters. It takes no lock and allocates nothing of its own
//! (glibc's `pthread_attr_setaffinity_np` copies the mask into the attributes, and
//! `pthread_create` itself allocates the stack: POSIX does not make `pthread_create`
//! async-signal-safe, and the wrapper adds nothing that is less safe). After `fork` the child
//! keeps the counters where they were, with no lock that could be held. If the kernel refuses
//! a place (`EINVAL`/`EPERM`: none of its CPUs is allowed any more), the thread is created
//! with the caller's own attributes rather than not at all.
//!
//! `pthread_create` is found with `dlsym(RTLD_NEXT)` in the constructor, or at the first call
//! when another library's constructor creates a thread before this one's has run.
//!
//! The library is Linux-only (`LD_PRELOAD`, glibc's `pthread_create`); on every other system
//! the crate builds empty, and coretune places a program's threads another way there (the
//! process CPU set, or a running program's threads one by one: `coretune run --pid`).
#![cfg(target_os = "linux")]

mod plan;
mod runtime;

/// What this library was built from, as coretune looks for it in the file (`build.rs`): a
/// library of other sources is not used.
const STAMP: &str = concat!("coretune-pin-source:", env!("CORETUNE_PIN_SOURCE"));

/// The stamp's bytes, `coretune-pin-source:` and the hash of the sources, exported so that the
/// linker keeps them.
#[unsafe(no_mangle)]
pub static CORETUNE_PIN_SOURCE: [u8; STAMP.len()] = {
    let (from, mut out, mut i) = (STAMP.as_bytes(), [0; STAMP.len()], 0);
    while i < from.len() {
        out[i] = from[i];
        i += 1;
    }
    out
};

use std::ffi::{CStr, c_int, c_void};
use std::fmt::Write as _;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};

use plan::WORD_BITS;

/// A thread's start routine.
type StartRoutine = Option<unsafe extern "C" fn(*mut c_void) -> *mut c_void>;

/// glibc's `fork`.
type ForkFn = unsafe extern "C" fn() -> libc::pid_t;
/// `pthread_setaffinity_np`'s signature.
type ThreadAffinityFn =
    unsafe extern "C" fn(libc::pthread_t, libc::size_t, *const libc::cpu_set_t) -> c_int;
/// `sched_setaffinity`'s signature.
type SchedAffinityFn =
    unsafe extern "C" fn(libc::pid_t, libc::size_t, *const libc::cpu_set_t) -> c_int;
/// An affinity mask of up to 4096 CPUs.
type Mask = [libc::c_ulong; 64];

/// glibc's `pthread_create`.
type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartRoutine,
    *mut c_void,
) -> c_int;

/// `pthread_attr_getsigmask_np` / `pthread_attr_setsigmask_np` (glibc ≥ 2.32), looked up at
/// run time so that the library still loads under an older glibc.
type GetSigmaskFn = unsafe extern "C" fn(*const libc::pthread_attr_t, *mut libc::sigset_t) -> c_int;
type SetSigmaskFn = unsafe extern "C" fn(*mut libc::pthread_attr_t, *const libc::sigset_t) -> c_int;

/// What `pthread_attr_getsigmask_np` returns when the attributes carry no signal mask
/// (`pthread.h`).
const PTHREAD_ATTR_NO_SIGMASK_NP: c_int = -1;

unsafe extern "C" {
    // POSIX; the libc crate declares only the setter for Linux.
    fn pthread_attr_getdetachstate(attr: *const libc::pthread_attr_t, state: *mut c_int) -> c_int;
    // In glibc since 2.1, deprecated but kept: the raw stack address, null unless the caller
    // gave one (`pthread_attr_getstack` computes an address even when none was set).
    fn pthread_attr_getstackaddr(
        attr: *const libc::pthread_attr_t,
        addr: *mut *mut c_void,
    ) -> c_int;
}

/// The plan in force, parsed in the constructor.
#[derive(Debug)]
struct Active {
    /// Words per mask.
    words: usize,
    /// Number of places.
    count: usize,
    /// Every place's mask, `words` words each.
    places: &'static [libc::c_ulong],
    /// The CPUs the process had when it started: what skipped threads get.
    initial: &'static [libc::c_ulong],
    /// Bit `i`: skip the `i`-th call.
    skip: u64,
    get_sigmask: Option<GetSigmaskFn>,
    set_sigmask: Option<SetSigmaskFn>,
}

impl Active {
    fn place(&self, i: usize) -> &[libc::c_ulong] {
        &self.places[i * self.words..(i + 1) * self.words]
    }
}

/// The real `pthread_create` (a `CreateFn`), null until found.
static REAL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// The plan (a leaked `Active`), null when there is none.
static PLAN: AtomicPtr<Active> = AtomicPtr::new(std::ptr::null_mut());
/// Calls to `pthread_create` so far (the skip mask's index).
static CALLS: AtomicUsize = AtomicUsize::new(0);
/// Threads pinned so far (the place index, less one).
static PINNED: AtomicUsize = AtomicUsize::new(0);
/// The real `fork` (a `ForkFn`), null until found.
static REAL_FORK: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Processes forked so far by this process (the fork place index, less the base).
static FORKS: AtomicUsize = AtomicUsize::new(0);
/// This process's own place: 0 in an image coretune (or an `exec`) started, the place a forked
/// child was given.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// The descriptor of `CORETUNE_PIN_LOG` (-1: none).
static LOG: AtomicI32 = AtomicI32::new(-1);
/// `CORETUNE_PIN_DEBUG=1`.
static DEBUG: AtomicBool = AtomicBool::new(false);
/// The affinity the image started with, kept by the first change of any thread's affinity made
/// through the C library (see [`keep_start`]).
static START: std::sync::OnceLock<Mask> = std::sync::OnceLock::new();
/// The real `pthread_setaffinity_np` and `sched_setaffinity`, looked up on first use.
static REAL_THREAD_AFFINITY: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_SCHED_AFFINITY: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = init;

/// The constructor: reads the environment, finds `pthread_create`, parses the plan and pins
/// the main thread to the first place.
extern "C" fn init() {
    DEBUG.store(env(c"CORETUNE_PIN_DEBUG") == Some(b"1"), Ordering::Relaxed);
    let _ = real_create();
    // The CPUs the image was started on, before the plan places its main thread.
    keep_start();
    place_main();
    log_start(START.get());
}

/// Keeps the affinity the image started with, once: called in the constructor and before any
/// change of a thread's affinity made through the C library, since other libraries'
/// constructors may run before this one's (libgomp's, which binds the main thread to the
/// first of `OMP_PLACES` when `OMP_PROC_BIND` is set, runs first: a library an executable
/// links is initialised before a preloaded one). Only reads the calling thread's mask
/// (`sched_getaffinity`, async-signal-safe) — the image's own while nothing has changed it.
fn keep_start() {
    if START.get().is_none()
        && let Some(mask) = affinity()
    {
        let _ = START.set(mask);
    }
}

/// A real function of the libraries loaded after this one, looked up once into `cache`.
///
/// # Safety
///
/// `F` must be the symbol's real function pointer type.
unsafe fn real_cached<F: Copy>(cache: &AtomicPtr<c_void>, name: &CStr) -> Option<F> {
    let mut ptr = cache.load(Ordering::Acquire);
    if ptr.is_null() {
        // SAFETY: `name` is NUL-terminated.
        ptr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if ptr.is_null() {
            return None;
        }
        cache.store(ptr, Ordering::Release);
    }
    // SAFETY: `F` is the symbol's function pointer type (the caller's promise), the same size
    // as `*mut c_void` on every Linux target.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&ptr) })
}

/// `pthread_setaffinity_np`, after keeping the affinity the image started with (for the start log).
///
/// # Safety
///
/// As `pthread_setaffinity_np(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_setaffinity_np(
    thread: libc::pthread_t,
    size: libc::size_t,
    set: *const libc::cpu_set_t,
) -> c_int {
    keep_start();
    // SAFETY: `ThreadAffinityFn` is the symbol's signature.
    match unsafe {
        real_cached::<ThreadAffinityFn>(&REAL_THREAD_AFFINITY, c"pthread_setaffinity_np")
    } {
        // SAFETY: the caller's call, passed on.
        Some(real) => unsafe { real(thread, size, set) },
        None => libc::ENOSYS,
    }
}

/// `sched_setaffinity`, after keeping the affinity the image started with (for the start log).
///
/// # Safety
///
/// As `sched_setaffinity(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sched_setaffinity(
    pid: libc::pid_t,
    size: libc::size_t,
    set: *const libc::cpu_set_t,
) -> c_int {
    keep_start();
    // SAFETY: `SchedAffinityFn` is the symbol's signature.
    match unsafe { real_cached::<SchedAffinityFn>(&REAL_SCHED_AFFINITY, c"sched_setaffinity") } {
        // SAFETY: the caller's call, passed on.
        Some(real) => unsafe { real(pid, size, set) },
        None => {
            // SAFETY: errno is thread-local.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            -1
        }
    }
}

/// The calling thread's affinity mask (`None` when it cannot be read).
fn affinity() -> Option<Mask> {
    let mut mask: Mask = [0; 64];
    // SAFETY: `mask` is a live, writable buffer; the kernel writes at most its size in bytes.
    let rc = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of_val(&mask),
            mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    (rc == 0).then_some(mask)
}

/// The log line of an image that starts (`exec PID NS cpus=LIST [rank=R]`: `NS` once its main
/// thread is placed, `LIST` the CPUs it was started on), when `CORETUNE_PIN_LOG` names the
/// run's log: with or without a plan, so that what a launcher started (an MPI rank, on the CPUs
/// the launcher bound it to, before its `MPI_Init` moves anything) is on record.
fn log_start(started_on: Option<&Mask>) {
    let Some(path) = env_c(c"CORETUNE_PIN_LOG") else {
        return;
    };
    // SAFETY: `path` is a NUL-terminated string from the environment; no file is created (the
    // run's log exists, made by coretune), and the descriptor does not survive `exec`.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
        )
    };
    LOG.store(fd, Ordering::Relaxed);
    // Room for the list of every other CPU of the 4096 the mask holds.
    let mut line = Line::<16384>::default();
    let _ = write!(line, "exec {} {}", std::process::id(), monotonic_ns());
    if let Some(mask) = started_on {
        let _ = write!(line, " cpus={}", MaskList(mask));
    }
    let rank = [c"OMPI_COMM_WORLD_RANK", c"PMIX_RANK", c"PMI_RANK"]
        .into_iter()
        .find_map(env);
    if let Some(rank) = rank.and_then(|r| std::str::from_utf8(r).ok()) {
        let _ = write!(line, " rank={rank}");
    }
    line.push(b"\n");
    log(&line);
}

/// Pins the main thread to the plan's first place (`CORETUNE_PIN`), when there is a plan.
fn place_main() {
    let Some(text) = env(c"CORETUNE_PIN") else {
        debug(format_args!(
            "no CORETUNE_PIN in the environment: not pinning"
        ));
        return;
    };
    let plan = match std::str::from_utf8(text)
        .map_err(|_| "not UTF-8".to_owned())
        .and_then(plan::parse)
    {
        Ok(plan) => plan,
        Err(why) => {
            debug(format_args!("CORETUNE_PIN: {why}: not pinning"));
            return;
        }
    };
    let words = plan.words();
    let mut initial = vec![0 as libc::c_ulong; words];
    // SAFETY: `initial` is a live, writable buffer of `words` words; the kernel writes at most
    // that many bytes, and `cpu_set_t` is an array of `unsigned long`.
    let rc = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of_val(initial.as_slice()),
            initial.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        // A kernel with more CPUs than the mask holds: skipped threads then get every CPU the
        // mask can name.
        initial.iter_mut().for_each(|w| *w = !0);
    }
    let (skip, source) = match plan.skip {
        Some(mask) => (mask, "the plan"),
        None => runtime::default_skip(),
    };
    let active = Active {
        words,
        count: plan.places.len(),
        places: plan.masks(words).leak(),
        initial: initial.leak(),
        skip,
        // SAFETY: the names are NUL-terminated; the symbols, where glibc has them, have these
        // signatures (glibc ≥ 2.32, pthread.h).
        get_sigmask: unsafe { lookup::<GetSigmaskFn>(c"pthread_attr_getsigmask_np") },
        // SAFETY: as above.
        set_sigmask: unsafe { lookup::<SetSigmaskFn>(c"pthread_attr_setsigmask_np") },
    };
    let main = active.place(0);
    // SAFETY: `main` is a live mask of `words` words that the kernel only reads.
    let rc = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of_val(main),
            main.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    debug(format_args!(
        "plan of {} place{}, skip mask {skip:#x} ({source}); main thread -> place 0 (CPUs {}){}",
        active.count,
        if active.count == 1 { "" } else { "s" },
        MaskList(main),
        if rc == 0 {
            ""
        } else {
            ": refused by the kernel"
        }
    ));
    PLAN.store(Box::into_raw(Box::new(active)), Ordering::Release);
}

/// Appends one line to the run's log, in one `write(2)` (whole, since the file is `O_APPEND`
/// and the line short).
fn log<const N: usize>(line: &Line<N>) {
    let fd = LOG.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: writes `line.len` initialised bytes of `line.buf` to an open descriptor.
        let _ = unsafe { libc::write(fd, line.buf.as_ptr().cast(), line.len) };
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock of coretune's samples), 0 if unreadable.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` (async-signal-safe) writes one `timespec` to a local.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut t) } != 0 {
        return 0;
    }
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// The value of environment variable `name` as a C string, read before `main`.
fn env_c(name: &CStr) -> Option<&'static CStr> {
    // SAFETY: as in `env`.
    let value = unsafe { libc::getenv(name.as_ptr()) };
    // SAFETY: non-null `getenv` results are NUL-terminated strings that live as long as the
    // environment is not changed for that variable.
    (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) })
}

/// The real `fork`, looked up on first use.
fn real_fork() -> Option<ForkFn> {
    // SAFETY: `ForkFn` is `fork`'s signature.
    unsafe { real_cached(&REAL_FORK, c"fork") }
}

/// The wrapper: `fork`, and in the child, before it returns to the program, its place (the
/// k-th fork of this process on place `(base + k) mod P`). The child has one thread and no
/// lock of this library's: it calls only `sched_setaffinity`, `getpid`, `getppid` and `write`,
/// all async-signal-safe, and formats its log line on the stack.
///
/// # Safety
///
/// As `fork(2)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fork() -> libc::pid_t {
    let Some(real) = real_fork() else {
        // SAFETY: errno is thread-local; ENOSYS says there is no fork to call.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    };
    let plan = PLAN.load(Ordering::Acquire);
    if plan.is_null() {
        // SAFETY: the function the caller meant to call.
        return unsafe { real() };
    }
    // SAFETY: a non-null `PLAN` points to an `Active` leaked in the constructor, never freed.
    let plan = unsafe { &*plan };
    let k = FORKS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: as `fork(2)`.
    let pid = unsafe { real() };
    if pid != 0 {
        return pid;
    }
    let place = (BASE.load(Ordering::Relaxed) + k) % plan.count;
    BASE.store(place, Ordering::Relaxed);
    FORKS.store(0, Ordering::Relaxed);
    PINNED.store(0, Ordering::Relaxed);
    let mask = plan.place(place);
    // SAFETY: `mask` is a live mask of `size_of_val(mask)` bytes that the kernel only reads.
    let rc = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of_val(mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    // SAFETY: `getpid` and `getppid` take nothing and cannot fail.
    let (me, parent) = unsafe { (libc::getpid(), libc::getppid()) };
    let mut line: Line = Line::default();
    let _ = writeln!(line, "fork {parent} {me} {place} {}", monotonic_ns());
    log(&line);
    debug(format_args!(
        "fork #{k} -> place {place} (CPUs {}){}",
        MaskList(mask),
        if rc == 0 {
            ""
        } else {
            ": refused by the kernel"
        }
    ));
    0
}

/// The value of environment variable `name`, read before `main` (no other thread yet).
fn env(name: &CStr) -> Option<&'static [u8]> {
    // SAFETY: `name` is NUL-terminated; `getenv` returns null or a pointer into the
    // environment, which stays valid as long as nobody calls `setenv` on that variable — the
    // bytes are used right away in the constructor.
    let value = unsafe { libc::getenv(name.as_ptr()) };
    if value.is_null() {
        None
    } else {
        // SAFETY: non-null `getenv` results are NUL-terminated strings.
        Some(unsafe { CStr::from_ptr(value) }.to_bytes())
    }
}

/// A symbol of the libraries loaded after this one, as a function pointer of type `F`.
///
/// # Safety
///
/// `F` must be the symbol's real function pointer type.
unsafe fn lookup<F: Copy>(name: &CStr) -> Option<F> {
    // SAFETY: `name` is NUL-terminated; `dlsym` only reads it.
    let sym = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if sym.is_null() {
        None
    } else {
        // SAFETY: `F` is a function pointer type (the caller's promise), the same size as
        // `*mut c_void` on every Linux target.
        Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&sym) })
    }
}

/// The real `pthread_create`, looked up on first use.
fn real_create() -> Option<CreateFn> {
    // SAFETY: `CreateFn` is `pthread_create`'s signature.
    unsafe { real_cached(&REAL, c"pthread_create") }
}

/// The wrapper: `pthread_create` with the new thread's place in its attributes.
///
/// # Safety
///
/// As `pthread_create(3)`: `thread` must be writable, `attr` null or initialised attributes,
/// `start` a thread start routine.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let Some(real) = real_create() else {
        return libc::EAGAIN;
    };
    let plan = PLAN.load(Ordering::Acquire);
    if plan.is_null() {
        // SAFETY: the caller's arguments, unchanged, to the function it meant to call.
        return unsafe { real(thread, attr, start, arg) };
    }
    // SAFETY: a non-null `PLAN` points to an `Active` leaked in the constructor, never freed.
    let plan = unsafe { &*plan };
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let (mask, place) = if call < 64 && plan.skip & (1 << call) != 0 {
        (plan.initial, None)
    } else {
        let k = PINNED.fetch_add(1, Ordering::Relaxed);
        let i = (BASE.load(Ordering::Relaxed) + k % plan.count + 1) % plan.count;
        (plan.place(i), Some(i))
    };
    let mut copy = MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `copy` is writable storage for attributes; `attr` is the caller's (null or
    // initialised, as pthread_create requires).
    let rc = unsafe { copy_attributes(attr, copy.as_mut_ptr(), plan) };
    if rc != 0 {
        debug(format_args!(
            "pthread_create #{call}: cannot copy the attributes (error {rc}): created unpinned"
        ));
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { real(thread, attr, start, arg) };
    }
    // SAFETY: `copy` is initialised (copy_attributes returned 0); `mask` is a live mask of
    // `size_of_val(mask)` bytes that glibc copies.
    let mut rc = unsafe {
        libc::pthread_attr_setaffinity_np(
            copy.as_mut_ptr(),
            std::mem::size_of_val(mask),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc == 0 {
        // SAFETY: the caller's thread, routine and argument with initialised attributes.
        rc = unsafe { real(thread, copy.as_ptr(), start, arg) };
    }
    // SAFETY: `copy` was initialised by pthread_attr_init in copy_attributes.
    unsafe { libc::pthread_attr_destroy(copy.as_mut_ptr()) };
    let refused = rc == libc::EINVAL || rc == libc::EPERM;
    if refused {
        // SAFETY: the caller's arguments, unchanged.
        rc = unsafe { real(thread, attr, start, arg) };
    }
    if DEBUG.load(Ordering::Relaxed) {
        match place {
            Some(i) => debug(format_args!(
                "pthread_create #{call} -> place {i} (CPUs {}){}",
                MaskList(mask),
                if refused {
                    ": refused, created unpinned"
                } else {
                    ""
                }
            )),
            None => debug(format_args!(
                "pthread_create #{call} -> skipped (CPUs {})",
                MaskList(mask)
            )),
        }
    }
    rc
}

/// Initialises `copy` with every attribute of `attr` (or the defaults when `attr` is null)
/// except the CPU set, which the caller sets next. Returns 0, or the error of the first call
/// that failed (then `copy` is destroyed again).
///
/// # Safety
///
/// `attr` is null or initialised attributes; `copy` points to writable storage for attributes.
unsafe fn copy_attributes(
    attr: *const libc::pthread_attr_t,
    copy: *mut libc::pthread_attr_t,
    plan: &Active,
) -> c_int {
    // SAFETY: `copy` is writable storage for attributes.
    let rc = unsafe { libc::pthread_attr_init(copy) };
    if rc != 0 || attr.is_null() {
        return rc;
    }
    // SAFETY: `attr` is initialised attributes and `copy` was just initialised; each getter
    // writes one value of the type its setter takes.
    let rc = unsafe { copy_each(attr, copy, plan) };
    if rc != 0 {
        // SAFETY: `copy` is initialised.
        unsafe { libc::pthread_attr_destroy(copy) };
    }
    rc
}

/// The attribute-by-attribute copy of [`copy_attributes`].
///
/// # Safety
///
/// `attr` and `copy` are initialised attributes.
unsafe fn copy_each(
    attr: *const libc::pthread_attr_t,
    copy: *mut libc::pthread_attr_t,
    plan: &Active,
) -> c_int {
    macro_rules! try_rc {
        ($e:expr) => {
            match $e {
                0 => {}
                rc => return rc,
            }
        };
    }
    let mut int: c_int = 0;
    let mut size: libc::size_t = 0;
    let mut addr: *mut c_void = std::ptr::null_mut();
    // SAFETY: both attribute objects are initialised (the caller's promise); every
    // out-pointer is a live local of the type the getter writes; zeroed `sched_param` and
    // `sigset_t` are valid values of those plain C structs.
    unsafe {
        try_rc!(pthread_attr_getdetachstate(attr, &mut int));
        try_rc!(libc::pthread_attr_setdetachstate(copy, int));
        try_rc!(libc::pthread_attr_getinheritsched(attr, &mut int));
        try_rc!(libc::pthread_attr_setinheritsched(copy, int));
        // The policy before the parameters: glibc checks the priority against the policy.
        try_rc!(libc::pthread_attr_getschedpolicy(attr, &mut int));
        try_rc!(libc::pthread_attr_setschedpolicy(copy, int));
        let mut param = MaybeUninit::<libc::sched_param>::zeroed().assume_init();
        try_rc!(libc::pthread_attr_getschedparam(attr, &mut param));
        try_rc!(libc::pthread_attr_setschedparam(copy, &param));
        // The contention scope is left out: Linux has only PTHREAD_SCOPE_SYSTEM.
        try_rc!(libc::pthread_attr_getguardsize(attr, &mut size));
        try_rc!(libc::pthread_attr_setguardsize(copy, size));
        try_rc!(pthread_attr_getstackaddr(attr, &mut addr));
        if addr.is_null() {
            // glibc reports its default size when none was set, which is what a size of 0
            // would have meant.
            try_rc!(libc::pthread_attr_getstacksize(attr, &mut size));
            try_rc!(libc::pthread_attr_setstacksize(copy, size));
        } else {
            try_rc!(libc::pthread_attr_getstack(attr, &mut addr, &mut size));
            try_rc!(libc::pthread_attr_setstack(copy, addr, size));
        }
        if let (Some(get), Some(set)) = (plan.get_sigmask, plan.set_sigmask) {
            let mut mask = MaybeUninit::<libc::sigset_t>::zeroed().assume_init();
            match get(attr, &mut mask) {
                0 => try_rc!(set(copy, &mask)),
                PTHREAD_ATTR_NO_SIGMASK_NP => {}
                rc => return rc,
            }
        }
    }
    0
}

/// Writes `coretune-pin: <message>` to stderr when `CORETUNE_PIN_DEBUG=1`, formatted in a
/// buffer on the stack (no allocation) and written with one `write(2)`.
fn debug(message: std::fmt::Arguments<'_>) {
    if !DEBUG.load(Ordering::Relaxed) {
        return;
    }
    let mut line: Line = Line::default();
    let _ = write!(line, "coretune-pin[{}]: {message}", std::process::id());
    line.push(b"\n");
    // SAFETY: writes `line.len` initialised bytes of `line.buf` to fd 2.
    let _ = unsafe { libc::write(2, line.buf.as_ptr().cast(), line.len) };
}

/// A line of at most `N` bytes, on the stack; what does not fit is cut, and the line then ends
/// with `...` and a newline (anything pushed after that is dropped).
struct Line<const N: usize = 512> {
    buf: [u8; N],
    len: usize,
    full: bool,
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self {
            buf: [0; N],
            len: 0,
            full: false,
        }
    }
}

impl<const N: usize> Line<N> {
    fn push(&mut self, bytes: &[u8]) {
        if self.full {
            return;
        }
        // Four bytes stay free for the `...\n` of a cut line.
        let room = N - 4 - self.len;
        if bytes.len() > room {
            self.buf[self.len..self.len + room].copy_from_slice(&bytes[..room]);
            self.len += room;
            self.buf[self.len..self.len + 4].copy_from_slice(b"...\n");
            self.len += 4;
            self.full = true;
        } else {
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        }
    }
}

impl<const N: usize> std::fmt::Write for Line<N> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

/// A mask shown as a CPU list (`0-3,8`).
struct MaskList<'a>(&'a [libc::c_ulong]);

impl std::fmt::Display for MaskList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bit = |c: usize| self.0[c / WORD_BITS] & (1 << (c % WORD_BITS)) != 0;
        let end = self.0.len() * WORD_BITS;
        let mut c = 0;
        let mut first = true;
        while c < end {
            if !bit(c) {
                c += 1;
                continue;
            }
            let mut last = c;
            while last + 1 < end && bit(last + 1) {
                last += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if last > c {
                write!(f, "{c}-{last}")?;
            } else {
                write!(f, "{c}")?;
            }
            c = last + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn mask_lists_and_cut_lines() {
        let mask = [0b1011_0111 as libc::c_ulong, 1];
        assert_eq!(
            MaskList(&mask).to_string(),
            format!("0-2,4-5,7,{WORD_BITS}")
        );
        let mut line = Line::<512>::default();
        let long = "x".repeat(600);
        let _ = write!(line, "{long}");
        line.push(b"\n");
        let _ = write!(line, "more");
        assert_eq!(line.len, 512);
        assert!(line.buf[..line.len].ends_with(b"x...\n"));
    }
}
