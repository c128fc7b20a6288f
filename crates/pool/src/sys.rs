//! The pool's only system call: `membarrier(2)`, the heavy half of the asymmetric fence
//! in the sleep protocol (`sleep.rs`, "Memory ordering").
//!
//! Elsewhere, or if the kernel refuses, [`register`] returns false and the protocol uses
//! a symmetric `SeqCst` fence on both sides.

#[cfg(all(target_os = "linux", not(loom)))]
mod imp {
    use std::sync::OnceLock;

    // From <linux/membarrier.h>.
    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    fn membarrier(cmd: libc::c_int) -> bool {
        // SAFETY: membarrier(cmd, flags = 0) reads and writes no memory of this process
        // through its arguments; a failure is reported in the return value.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0) == 0 }
    }

    /// Registers the process for expedited private barriers (once); true if available.
    pub(crate) fn register() -> bool {
        static REGISTERED: OnceLock<bool> = OnceLock::new();
        *REGISTERED.get_or_init(|| membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
    }

    /// Makes every running thread of the process pass a full memory barrier before this
    /// returns true. Only call after [`register`] returned true.
    pub(crate) fn heavy_barrier() -> bool {
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
    }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
mod imp {
    /// No asymmetric fence here (or under loom, which models the symmetric protocol).
    pub(crate) fn register() -> bool {
        false
    }

    /// Never called: `register` returned false.
    pub(crate) fn heavy_barrier() -> bool {
        false
    }
}

pub(crate) use imp::{heavy_barrier, register};
