//! Nice values: `getpriority`/`setpriority` on one thread. Linux keeps the nice value per
//! thread (`PRIO_PROCESS` with a thread id changes that thread only), so a process is reniced
//! thread by thread; new threads inherit their creator's.

use std::io;

/// The nice value of thread `tid` (-20 to 19).
pub(crate) fn task_nice(tid: i32) -> io::Result<i32> {
    let id = libc::id_t::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // `getpriority` may legitimately return -1: errno tells an error from that value.
    nix::errno::Errno::clear();
    // SAFETY: a plain system call on integers; no memory is shared with the kernel.
    let value = unsafe { libc::getpriority(libc::PRIO_PROCESS, id) };
    if value == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error().is_some_and(|e| e != 0) {
            return Err(err);
        }
    }
    Ok(value)
}

/// Sets the nice value of thread `tid`. Lowering it below the current value needs
/// `CAP_SYS_NICE` (EACCES otherwise).
pub(crate) fn set_task_nice(tid: i32, nice: i32) -> io::Result<()> {
    let id = libc::id_t::try_from(tid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: a plain system call on integers; no memory is shared with the kernel.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, id, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn own_nice_reads_and_sets() {
        // A thread of its own, so the test runner's other threads keep their value.
        std::thread::spawn(|| {
            let me = crate::sys::current_tid().unwrap();
            let before = task_nice(me).unwrap();
            let raised = (before + 1).min(19);
            set_task_nice(me, raised).unwrap();
            assert_eq!(task_nice(me).unwrap(), raised);
            assert!(task_nice(i32::MAX).is_err());
        })
        .join()
        .unwrap();
    }
}
