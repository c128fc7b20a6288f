//! CPU affinity: `sched_setaffinity`/`sched_getaffinity` on a process or thread, and before
//! `exec` in a child.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use hwlocality::cpu::cpuset::CpuSet;

use crate::sys::cpu_list::{set_from_indexes, set_to_vec};

/// Bits in one word of the kernel's CPU mask.
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// A CPU mask in the kernel's layout: an array of `unsigned long`, CPU `i` at bit `i % WORD_BITS`
/// of word `i / WORD_BITS`. At least as large as glibc's `cpu_set_t` (1024 CPUs), larger when the
/// set needs it, because `sched_getaffinity` fails with EINVAL on a mask smaller than the
/// kernel's CPU count.
fn mask_words(cpus: &CpuSet) -> Vec<libc::c_ulong> {
    let min_words = std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<libc::c_ulong>();
    let needed = cpus
        .last_set()
        .map_or(0, |c| usize::from(c) / WORD_BITS + 1);
    let mut words = vec![0; needed.max(min_words)];
    for cpu in set_to_vec(cpus) {
        words[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    words
}

fn set_affinity_raw(tid: libc::pid_t, words: &[libc::c_ulong]) -> io::Result<()> {
    let bytes = std::mem::size_of_val(words);
    // SAFETY: `words` is a live, initialised buffer of `bytes` bytes; the kernel reads at most
    // `bytes` bytes from it, and `cpu_set_t` is itself an array of `unsigned long`, so the pointer
    // has the alignment and layout the call expects. The call only reads the buffer.
    // `sched_setaffinity` is async-signal-safe (a plain system call), which `bind_before_exec`
    // relies on.
    let rc =
        unsafe { libc::sched_setaffinity(tid, bytes, words.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes `cmd`'s child bind itself to `cpus` between `fork` and `exec`, so the program starts
/// (and every thread it creates inherits) the set.
pub(crate) fn bind_before_exec(cmd: &mut Command, cpus: &CpuSet) -> io::Result<()> {
    // Prepared here, before fork: the closure below must not allocate.
    let words = mask_words(cpus);
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called. It calls `sched_setaffinity` (a system call) on a buffer allocated
    // before the fork and moved into the closure, and on failure builds an `io::Error` from errno
    // (no allocation: the OS-error representation is a plain integer). It takes no locks and
    // touches no other state.
    unsafe {
        cmd.pre_exec(move || set_affinity_raw(0, &words));
    }
    Ok(())
}

/// Binds one thread (or a process's main thread: its pid is its tid) to `cpus`.
pub(crate) fn set_task_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    set_affinity_raw(tid, &mask_words(cpus))
}

/// The CPU set a thread (or process) may run on.
pub(crate) fn task_affinity(tid: i32) -> io::Result<CpuSet> {
    // Grow the buffer until the kernel accepts it (EINVAL = smaller than its CPU count).
    let mut words: Vec<libc::c_ulong> = vec![0; 16];
    loop {
        let bytes = std::mem::size_of_val(words.as_slice());
        // SAFETY: `words` is a live, writable buffer of `bytes` bytes; the kernel writes at most
        // `bytes` bytes into it. `cpu_set_t` is an array of `unsigned long`, so the cast pointer
        // is suitably aligned.
        let rc = unsafe {
            libc::sched_getaffinity(tid, bytes, words.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            let cpus = words.iter().enumerate().flat_map(|(i, &w)| {
                (0..WORD_BITS)
                    .filter(move |b| w & (1 << b) != 0)
                    .map(move |b| i * WORD_BITS + b)
            });
            return Ok(set_from_indexes(cpus));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINVAL) && words.len() < 1 << 16 {
            words.resize(words.len() * 2, 0);
            continue;
        }
        return Err(err);
    }
}

/// Binds each of `tids` (threads of process `pid`) to `cpus`, as `taskset -a -p` does: each
/// thread with the set and the outcome.
pub(crate) fn rebind_threads(
    _pid: i32,
    tids: &[i32],
    cpus: &CpuSet,
) -> io::Result<Vec<(i32, CpuSet, io::Result<()>)>> {
    let words = mask_words(cpus);
    Ok(tids
        .iter()
        .map(|&tid| (tid, cpus.clone(), set_affinity_raw(tid, &words)))
        .collect())
}

/// Whether `error` says the thread (or process) no longer exists (ESRCH).
pub(crate) fn is_no_such_task(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ESRCH)
}
