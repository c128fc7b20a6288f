//! Signals: forwarding SIGINT/SIGTERM to a child, the signal that ended one, and a daemon's
//! SIGHUP/SIGINT/SIGTERM read from a `signalfd`.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use crate::sys::error::SysError;
use crate::sys::types::{DaemonSignal, Woken};

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

/// The write end of the pipe [`on_stop_signals`]' handler writes each signal's number to (-1:
/// not installed).
static STOP_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn stop_requested(signal: libc::c_int) {
    let fd = STOP_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = u8::try_from(signal).unwrap_or(0);
        // SAFETY: `write` is async-signal-safe; one byte from a local to the pipe's write end,
        // which stays open for the life of the process. A full pipe (EAGAIN: dozens of signals
        // not yet read) drops the byte, which loses nothing the reader has not been told.
        unsafe {
            libc::write(fd, (&raw const byte).cast(), 1);
        }
    }
}

/// From now on SIGINT, SIGTERM and SIGHUP do not end this process: each is handed to `on`, on
/// a thread of its own (the handler only writes the signal's number to a pipe, which that
/// thread reads), so that `on` may lock, print, end what coretune started and exit.
pub(crate) fn on_stop_signals(
    on: Box<dyn Fn(crate::sys::types::StopSignal) + Send + Sync>,
) -> io::Result<()> {
    use crate::sys::types::StopSignal;
    let mut fds = [0; 2];
    // SAFETY: `pipe2` writes two descriptors into the two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, write_end] = fds;
    // SAFETY: `read_end` is a descriptor just returned by `pipe2`, owned by nobody else.
    let reader = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(read_end) };
    // Blocking reads on the thread's side.
    // SAFETY: `fcntl` on a descriptor this function owns, with integer arguments.
    unsafe { libc::fcntl(read_end, libc::F_SETFL, 0) };
    STOP_PIPE.store(write_end, Ordering::Relaxed);
    std::thread::Builder::new()
        .name("coretune-signals".into())
        .spawn(move || {
            use std::io::Read as _;
            let mut reader = std::fs::File::from(reader);
            let mut byte = [0u8; 1];
            while let Ok(1) = reader.read(&mut byte) {
                let signal = match libc::c_int::from(byte[0]) {
                    libc::SIGINT => StopSignal::Interrupt,
                    libc::SIGTERM => StopSignal::Terminate,
                    libc::SIGHUP => StopSignal::Hangup,
                    _ => continue,
                };
                on(signal);
            }
        })?;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: as in `forward_signals_to`: a zero-initialised `sigaction` whose handler,
        // `stop_requested`, only loads an atomic and calls `write`, both async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction =
                stop_requested as extern "C" fn(libc::c_int) as libc::sighandler_t;
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
        events: Option<crate::sys::types::EventsFd<'_>>,
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
