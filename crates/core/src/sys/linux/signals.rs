//! Signals: forwarding SIGINT/SIGTERM to a child, and the signal that ended one.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

/// The child that SIGINT and SIGTERM are forwarded to (0 = none yet).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let child = CHILD.load(Ordering::Relaxed);
    if child > 0 {
        // SAFETY: `kill` is async-signal-safe; `child` is the pid of a child this process has
        // not yet reaped (the launcher waits for it after installing this handler), so the pid
        // cannot have been reused for an unrelated process.
        unsafe {
            libc::kill(child, signal);
        }
    }
}

/// From now on, SIGINT and SIGTERM delivered to this process are passed on to `pid` instead of
/// terminating this process, so the child decides how to end and its status is reported.
pub(crate) fn forward_signals_to(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::other("pid out of range"))?;
    CHILD.store(pid, Ordering::Relaxed);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` is given a zero-initialised struct (a valid `sigaction` value: empty
        // mask, no flags) whose handler is `forward`, an `extern "C" fn(c_int)` that only performs
        // an atomic load and `kill`, both async-signal-safe. The old action is not requested
        // (null pointer), which the call allows.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal that killed a child, when a signal did.
pub(crate) fn exit_signal(status: ExitStatus) -> Option<i32> {
    status.signal()
}

/// Whether a child was ended by SIGINT or SIGTERM: someone asked it (and usually this process
/// too: Ctrl-C, `scancel`, a shutdown) to stop.
pub(crate) fn stopped_by_request(status: ExitStatus) -> bool {
    matches!(status.signal(), Some(libc::SIGINT | libc::SIGTERM))
}
