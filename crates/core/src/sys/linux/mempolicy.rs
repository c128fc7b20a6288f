//! Memory policy: `set_mempolicy` between `fork` and `exec`, as `numactl --localalloc`,
//! `--interleave`, `--membind` and `--preferred` set it, so the program's pages follow it from
//! its first allocation.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::sys::types::MemMode;

/// Bits in one word of the kernel's node mask.
const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The kernel's `MPOL_*` value of a mode (`include/uapi/linux/mempolicy.h`).
fn mpol(mode: MemMode) -> libc::c_int {
    match mode {
        MemMode::Preferred => 1,
        MemMode::Bind => 2,
        MemMode::Interleave => 3,
        MemMode::Local => 4,
    }
}

/// The kernel's mode, node mask words and node count for `mode` over `nodes` (no mask for
/// [`MemMode::Local`]).
fn mask(mode: MemMode, nodes: &[usize]) -> (libc::c_int, Vec<libc::c_ulong>, usize) {
    let mode = mpol(mode);
    let mut words: Vec<libc::c_ulong> = Vec::new();
    let mut max_node = 0;
    if mode != mpol(MemMode::Local) {
        max_node = nodes.iter().max().map_or(0, |&n| n + 1);
        words = vec![0; max_node.div_ceil(WORD_BITS).max(1)];
        for &node in nodes {
            words[node / WORD_BITS] |= 1 << (node % WORD_BITS);
        }
    }
    (mode, words, max_node)
}

/// Sets the calling thread's memory policy to `mode` over `nodes` (OS indexes): the pages it
/// touches first from now on follow it (a built-in workload's worker, before it touches its
/// data).
pub(crate) fn set_thread_mempolicy(mode: MemMode, nodes: &[usize]) -> io::Result<()> {
    let (mode, words, max_node) = mask(mode, nodes);
    let (ptr, len) = if words.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (words.as_ptr(), max_node + 1)
    };
    // SAFETY: `set_mempolicy` reads `len - 1` bits (rounded up to whole words, all of them in
    // `words`, alive for the call) from the mask, or nothing from a null one with 0 for
    // MPOL_LOCAL; it changes only the calling thread's policy.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes `cmd`'s child set its memory policy to `mode` over `nodes` (OS indexes; ignored for
/// [`MemMode::Local`]) before `exec`.
pub(crate) fn set_mempolicy_before_exec(
    cmd: &mut Command,
    mode: MemMode,
    nodes: &[usize],
) -> io::Result<()> {
    // Prepared here, before fork: the closure below must not allocate.
    let (mode, words, max_node) = mask(mode, nodes);
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called: `set_mempolicy` is a plain system call, reading `max_node` bits
    // (rounded up to whole words, all of them in `words`) from a buffer allocated before the
    // fork and moved into the closure; a null mask with 0 nodes for MPOL_LOCAL, as the kernel
    // wants it. On failure the error is built from errno without allocating.
    unsafe {
        cmd.pre_exec(move || {
            let (mask, len) = if words.is_empty() {
                (std::ptr::null(), 0)
            } else {
                // The kernel reads `maxnode - 1` bits: one more than the highest node.
                (words.as_ptr(), max_node + 1)
            };
            let rc = libc::syscall(libc::SYS_set_mempolicy, mode, mask, len);
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
    Ok(())
}
