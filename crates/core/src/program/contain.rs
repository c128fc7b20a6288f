//! Nothing coretune starts outlives it: the programs of a sweep, a server and its client, a
//! readiness check each run in a tree of their own (a process group; a cgroup v2 leaf where one
//! can be made, which holds daemons that call `setsid` too; on Windows a job object), with
//! coretune the subreaper of their orphans. Every such tree is ended when its handle is
//! dropped, and all of them at once by [`stop_everything`] — what a command does when it is
//! told to quit ([`on_stop_signals`]).

use std::io;

pub use crate::sys::StopSignal;

/// From now on SIGINT, SIGTERM and SIGHUP (on Windows Ctrl-C, Ctrl-Break, closing the console,
/// logoff and shutdown) no longer end coretune: each is handed to `on`, on a thread of its own,
/// which may print, call [`stop_everything`] and exit with [`StopSignal::exit_code`].
///
/// # Errors
///
/// The OS error when the handlers cannot be installed; `Unsupported` on systems without them.
pub fn on_stop_signals(on: impl Fn(StopSignal) + Send + Sync + 'static) -> io::Result<()> {
    crate::sys::on_stop_signals(Box::new(on))
}

/// Ends everything coretune started and has not ended yet — every contained tree, with the
/// daemons its cgroup leaf holds, and every orphan handed to coretune — and waits (at most
/// about 2 s) until they are gone; returns how many processes and groups were ended. Callable
/// from any thread.
pub fn stop_everything() -> usize {
    crate::sys::stop_everything()
}
