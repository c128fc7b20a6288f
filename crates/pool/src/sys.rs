//! The pool's two system calls: `membarrier(2)`, the heavy half of the asymmetric fence
//! in the sleep protocol (`sleep/README.md`, "Memory ordering"), and `sched_setaffinity(2)`,
//! which pins a worker to the CPUs its builder was given
//! ([`ThreadPoolBuilder::cpus`](crate::ThreadPoolBuilder::cpus)).
//!
//! On Windows a worker is pinned with `SetThreadGroupAffinity` to the processor group and
//! mask [`thread_group`](crate::thread_group) chooses: CPU `n` is bit `n % 64` of group
//! `n / 64`, hwloc's numbering of Windows CPUs, and a set that crosses groups pins the
//! worker to its largest part (the lowest such group on a tie); coretune's placements give
//! each worker a PU or a core, which never cross.
//!
//! Elsewhere, or if the kernel refuses, [`register`] returns false and the protocol uses
//! a symmetric `SeqCst` fence on both sides; [`pin_current_thread`] fails with
//! `Unsupported` where there is no affinity call.

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

    /// The CPUs the calling thread may run on, ascending.
    pub(crate) fn current_affinity() -> std::io::Result<Vec<usize>> {
        const WORD_BITS: usize = libc::c_ulong::BITS as usize;
        // Doubled until the kernel's mask fits (EINVAL: too short).
        let mut words: Vec<libc::c_ulong> =
            vec![0; std::mem::size_of::<libc::cpu_set_t>() / (WORD_BITS / 8)];
        loop {
            let bytes = std::mem::size_of_val(words.as_slice());
            // SAFETY: `words` is a live, writable buffer of `bytes` bytes; the kernel writes
            // at most that many, and `cpu_set_t` is an array of `unsigned long`.
            let rc = unsafe {
                libc::sched_getaffinity(0, bytes, words.as_mut_ptr().cast::<libc::cpu_set_t>())
            };
            if rc == 0 {
                break;
            }
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINVAL) || words.len() > 1 << 16 {
                return Err(error);
            }
            words.resize(words.len() * 2, 0);
        }
        Ok((0..words.len() * WORD_BITS)
            .filter(|&cpu| words[cpu / WORD_BITS] & (1 << (cpu % WORD_BITS)) != 0)
            .collect())
    }

    /// Binds the calling thread to `cpus` (OS CPU numbers).
    pub(crate) fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
        const WORD_BITS: usize = libc::c_ulong::BITS as usize;
        // A mask as long as the highest CPU needs, at least the size of `cpu_set_t`
        // (the kernel takes any length of whole words).
        let highest = cpus.iter().copied().max().unwrap_or(0);
        let min_words = std::mem::size_of::<libc::cpu_set_t>() / (WORD_BITS / 8);
        let mut words: Vec<libc::c_ulong> = vec![0; (highest / WORD_BITS + 1).max(min_words)];
        for &cpu in cpus {
            words[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
        }
        let bytes = std::mem::size_of_val(words.as_slice());
        // SAFETY: `words` is a live buffer of `bytes` bytes, which the kernel only reads;
        // `cpu_set_t` is an array of `unsigned long`, so the cast pointer is aligned.
        let rc =
            unsafe { libc::sched_setaffinity(0, bytes, words.as_ptr().cast::<libc::cpu_set_t>()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
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

    /// Binds the calling thread to `cpus` (hwloc's numbers: 64 × group + bit).
    #[cfg(all(windows, not(loom)))]
    pub(crate) fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
        use windows_sys::Win32::System::SystemInformation::GROUP_AFFINITY;
        use windows_sys::Win32::System::Threading::{GetCurrentThread, SetThreadGroupAffinity};

        let (group, mask) = crate::thread_group(cpus).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no CPU to pin to")
        })?;
        // A 64-bit target's `usize` holds every mask; a 32-bit one's holds the 32 CPUs its
        // groups can have.
        let mask = usize::try_from(mask).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "CPU beyond a 32-bit thread's affinity mask",
            )
        })?;
        let affinity = GROUP_AFFINITY {
            Mask: mask,
            Group: group,
            Reserved: [0; 3],
        };
        // SAFETY: `GetCurrentThread` returns a pseudo-handle that is always valid for the
        // calling thread; `affinity` is a live, initialised GROUP_AFFINITY with its reserved
        // words zeroed (the call fails with ERROR_INVALID_PARAMETER otherwise), read only;
        // the previous affinity is not asked for (null).
        let ok =
            unsafe { SetThreadGroupAffinity(GetCurrentThread(), &affinity, std::ptr::null_mut()) };
        if ok == 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// No thread affinity here.
    #[cfg(not(all(windows, not(loom))))]
    pub(crate) fn pin_current_thread(_cpus: &[usize]) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "pinning threads is implemented on Linux and Windows only",
        ))
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) use imp::current_affinity;
pub(crate) use imp::{heavy_barrier, pin_current_thread, register};
