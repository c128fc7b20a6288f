//! Signals: forwarding SIGINT/SIGTERM to a child, the signal that ended one, and a daemon's
//! SIGHUP/SIGINT/SIGTERM read from a `signalfd`.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::sys::{DaemonSignal, SysError, Woken};

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

/// SIGHUP, SIGINT and SIGTERM, blocked in the calling thread and read from a `signalfd`, so a
/// daemon waits for them and for its events in one `poll` and handles them between actions,
/// never inside a handler.
#[derive(Debug)]
pub(crate) struct DaemonSignals {
    fd: nix::sys::signalfd::SignalFd,
}

impl DaemonSignals {
    /// Blocks the three signals in this thread (call it before starting other threads, which
    /// inherit the mask) and opens the descriptor they are read from.
    ///
    /// # Errors
    ///
    /// [`SysError::Call`] when the mask or the descriptor cannot be set up.
    pub(crate) fn install() -> Result<Self, SysError> {
        use nix::sys::signal::{SigSet, Signal};
        use nix::sys::signalfd::{SfdFlags, SignalFd};
        let mut set = SigSet::empty();
        for s in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGTERM] {
            set.add(s);
        }
        set.thread_block().map_err(|e| SysError::Call {
            call: "pthread_sigmask",
            error: e.into(),
        })?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| SysError::Call {
                call: "signalfd",
                error: e.into(),
            })?;
        Ok(Self { fd })
    }

    /// Waits until a signal arrives, `events` (when given) is readable, or `timeout` passes.
    ///
    /// # Errors
    ///
    /// [`SysError::Call`] when `poll` or reading the signal fails.
    pub(crate) fn wait(
        &mut self,
        events: Option<crate::sys::EventsFd<'_>>,
        timeout: Option<Duration>,
    ) -> Result<Woken, SysError> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let timeout = timeout.map_or(PollTimeout::NONE, |t| {
            PollTimeout::try_from(t).unwrap_or(PollTimeout::MAX)
        });
        let ready = {
            let mut fds = vec![PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            if let Some(events) = events {
                fds.push(PollFd::new(events, PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => return Ok(Woken::default()),
                Err(e) => {
                    return Err(SysError::Call {
                        call: "poll",
                        error: e.into(),
                    });
                }
            }
            let readable = |fd: &PollFd<'_>| {
                fd.revents()
                    .is_some_and(|r| r.intersects(PollFlags::POLLIN | PollFlags::POLLERR))
            };
            (readable(&fds[0]), fds.get(1).is_some_and(readable))
        };
        let mut woken = Woken {
            events: ready.1,
            signal: None,
        };
        if ready.0 {
            // The first pending signal; others stay queued for the next wait.
            if let Some(info) = self.fd.read_signal().map_err(|e| SysError::Call {
                call: "read (signalfd)",
                error: e.into(),
            })? {
                let number = i32::try_from(info.ssi_signo).unwrap_or(libc::SIGTERM);
                woken.signal = Some(if number == libc::SIGHUP {
                    DaemonSignal::Reload
                } else {
                    DaemonSignal::Stop(number)
                });
            }
        }
        Ok(woken)
    }
}
