//! A server for one measured run: started in a process tree of its own (bound to a CPU set when
//! given), waited for until it is ready (a TCP port accepts a connection, or a command
//! succeeds), and stopped once its client has run: SIGTERM to its whole process group, a grace
//! period, SIGKILL to what is left, then a check that no process of the group still runs.
//!
//! The readiness wait is a polling loop (an attempt, a pause of 10 ms doubling to 200 ms, again),
//! and it happens before anything is measured: [`Server::start`] returns only once the server is
//! ready, and the client is started after that. While the client runs coretune does not poll
//! the server; [`Server::stop`] blocks in the kernel until the server ends or the grace period
//! is over.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use coretune_core::program::PlacedCommand;
//! use coretune_core::program::server::{Ready, Server};
//!
//! let mut cmd = Command::new("redis-server");
//! cmd.args(["--port", "6390", "--save", ""]);
//! let ready: Ready = "tcp:127.0.0.1:6390".parse()?;
//! let server = Server::start(PlacedCommand::new(cmd), "test", &ready, Duration::from_secs(10))?;
//! // ... run and measure the client here ...
//! let stopped = server.stop(Duration::from_secs(5))?;
//! assert!(!stopped.killed, "redis-server ends on SIGTERM");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::File;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{ExitStatus, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::program::placed::describe;
use crate::program::{LaunchError, Placed, PlacedCommand, shell_command};

/// The first pause between two readiness attempts; each pause doubles up to [`LAST_PAUSE`].
/// A server on the local machine is usually ready within tens of milliseconds (nginx and
/// redis-server here: 5 to 20 ms), so the first attempts come quickly.
const FIRST_PAUSE: Duration = Duration::from_millis(10);

/// The longest pause between two readiness attempts: a server slow to start (a database
/// loading its data) is found ready at most this late.
const LAST_PAUSE: Duration = Duration::from_millis(200);

/// The longest a single connection attempt waits: a local port refuses at once, a remote host
/// that drops packets would hold the attempt to the whole timeout and hide the server's death.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The least time an attempt gets, even when less of the timeout is left: a readiness command
/// takes a few milliseconds (`redis-cli ping`: 2 to 5 ms here, a shell and a fork more), and
/// one cut short would say only that it was cut short. The last attempt may end this much
/// after the timeout.
const ATTEMPT_FLOOR: Duration = Duration::from_millis(100);

/// How long the processes of a killed tree get to finish dying (SIGKILL takes effect when a
/// process next returns from the kernel; one in uninterruptible sleep, on a hung NFS mount for
/// example, only once its I/O returns) before they are reported as left.
const GONE_WAIT: Duration = Duration::from_secs(2);

/// How long the exited processes of the tree (zombies) get to be reaped: the server's children
/// are reparented to init or the nearest subreaper, which reaps them when it next runs. A
/// zombie still there after this is not reported: it runs nothing, holds no port and no memory.
const REAP_WAIT: Duration = Duration::from_millis(200);

/// How often the tree is looked at while its processes end (after the client has run, so
/// polling costs the measurement nothing).
const TREE_POLL: Duration = Duration::from_millis(10);

/// How much of the server's stderr an error keeps: its end, where the reason usually is (the
/// same as a failed run's record in a sweep).
const STDERR_TAIL_BYTES: u64 = 4096;

/// How to tell that a server is ready for its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ready {
    /// A TCP connection to `host:port` succeeds (`tcp:HOST:PORT`; `tcp:[::1]:PORT` for an IPv6
    /// address).
    Tcp {
        /// A host name or an address (an IPv6 address without its brackets).
        host: String,
        /// The port.
        port: u16,
    },
    /// A shell command (`sh -c`, on Windows `cmd /C`) exits with status 0.
    Command(String),
}

/// Why a readiness test could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error("readiness test '{input}': {reason}")]
pub struct ParseReadyError {
    /// The text as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FromStr for Ready {
    type Err = ParseReadyError;

    /// `tcp:HOST:PORT` (`tcp:[ADDRESS]:PORT` for an IPv6 address) is a TCP test; anything else
    /// is a shell command that succeeds once the server is ready.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = |reason: String| ParseReadyError {
            input: s.to_owned(),
            reason,
        };
        let Some(rest) = s.strip_prefix("tcp:") else {
            if s.trim().is_empty() {
                return Err(error(
                    "empty: give tcp:HOST:PORT or a command that succeeds once the server is ready"
                        .to_owned(),
                ));
            }
            return Ok(Self::Command(s.to_owned()));
        };
        let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']').ok_or_else(|| {
                error("no ']' after the IPv6 address: write tcp:[::1]:PORT".into())
            })?;
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| error(format!("no port after [{host}]: write tcp:[{host}]:PORT")))?;
            (host, port)
        } else {
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| error(format!("no port: write tcp:{rest}:PORT")))?;
            if host.contains(':') {
                return Err(error(format!(
                    "an IPv6 address goes in brackets: write tcp:[{host}]:{port}"
                )));
            }
            (host, port)
        };
        if host.is_empty() {
            return Err(error(format!(
                "no host: write tcp:HOST:{port} (tcp:127.0.0.1:{port} for this machine)"
            )));
        }
        let port = match port.parse::<u16>() {
            Ok(0) | Err(_) => {
                return Err(error(format!("'{port}' is not a port (1 to 65535)")));
            }
            Ok(port) => port,
        };
        Ok(Self::Tcp {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp { host, port } if host.contains(':') => write!(f, "tcp:[{host}]:{port}"),
            Self::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
            Self::Command(script) => f.write_str(script),
        }
    }
}

/// Why a server could not be started, did not get ready, or did not stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The server could not be started (not found, not executable, CPU set refused).
    #[error("server: {0}")]
    Start(#[from] LaunchError),
    /// Waiting for the server or listing its process tree failed.
    #[error("server '{program}' (pid {pid}): {what}: {error}")]
    Io {
        /// The server's program.
        program: String,
        /// Its process id.
        pid: u32,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        error: io::Error,
    },
    /// The server ended before it was ready.
    #[error(
        "server '{program}' (pid {pid}) ended before it was ready ({status}){}",
        stderr_says(.stderr_tail)
    )]
    Died {
        /// The server's program.
        program: String,
        /// Its process id.
        pid: u32,
        /// How it ended.
        status: ExitStatus,
        /// The end of its stderr, when it wrote any.
        stderr_tail: Option<String>,
    },
    /// The server was not ready in time; it has been killed with its whole tree.
    #[error(
        "server '{program}' (pid {pid}) not ready after {}: {ready}: {last}; killed{}",
        seconds(*.waited),
        stderr_says(.stderr_tail)
    )]
    NotReady {
        /// The server's program.
        program: String,
        /// Its process id.
        pid: u32,
        /// The readiness test, as written (`tcp:HOST:PORT` or the command).
        ready: String,
        /// How long it was waited for.
        waited: Duration,
        /// What the last readiness attempt found (`connection refused`, `exit status: 1`).
        last: String,
        /// The end of its stderr, when it wrote any.
        stderr_tail: Option<String>,
    },
    /// Something already accepts connections at the readiness address before the server
    /// starts: the client would measure it, not the server.
    #[error(
        "{ready} already accepts connections before the server starts{}: another server holds \
         the port, and it is what the client would measure; stop it or give the server another \
         port",
        owner_says(.owners)
    )]
    PortTaken {
        /// The readiness test.
        ready: String,
        /// The processes holding the port, described (`pid 12 (python3 -m http.server)`),
        /// where they can be read.
        owners: Vec<String>,
    },
    /// What listens at the readiness address is not a process of the server's tree.
    #[error(
        "server '{program}' (pid {pid}): {ready} is answered by {}, not by the server or what \
         it started; stopped",
        .owners.join(", ")
    )]
    NotOurs {
        /// The server's command.
        program: String,
        /// Its process id.
        pid: u32,
        /// The readiness test.
        ready: String,
        /// Who listens there instead.
        owners: Vec<String>,
    },
    /// The server's first process ended and left the rest of it running in the background (a
    /// daemon): coretune could not stop it with its client, so it is stopped now.
    #[error(
        "server '{program}' daemonized: its first process (pid {pid}) ended ({status}) and left \
         {} running in the background; coretune stops a server once its client is done, so run \
         it in the foreground (nginx: -g 'daemon off;', redis-server: --daemonize no, most \
         others: a --foreground or -f option); its processes have been stopped",
        .left.join(", ")
    )]
    Daemonized {
        /// The server's command.
        program: String,
        /// Its first process's id.
        pid: u32,
        /// How that process ended.
        status: ExitStatus,
        /// What it left running, described.
        left: Vec<String>,
    },
    /// Processes of the server's group still ran after SIGKILL and a wait.
    #[error(
        "server '{program}' (pid {pid}): {} of its process group still running after SIGKILL: {}{}",
        if .pids.len() == 1 { "a process" } else { "processes" },
        pid_list(.pids),
        stderr_says(.stderr_tail)
    )]
    Left {
        /// The server's program.
        program: String,
        /// Its process id.
        pid: u32,
        /// The processes still running.
        pids: Vec<u32>,
        /// The end of its stderr, when it wrote any.
        stderr_tail: Option<String>,
    },
}

impl ServerError {
    /// The end of the server's stderr, when the error kept it.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            Self::Died { stderr_tail, .. }
            | Self::NotReady { stderr_tail, .. }
            | Self::Left { stderr_tail, .. } => stderr_tail.as_deref(),
            Self::Start(_)
            | Self::Io { .. }
            | Self::PortTaken { .. }
            | Self::NotOurs { .. }
            | Self::Daemonized { .. } => None,
        }
    }
}

/// Two resource records added up, either possibly absent.
fn add_usage(
    a: Option<crate::sys::ResourceUsage>,
    b: Option<crate::sys::ResourceUsage>,
) -> Option<crate::sys::ResourceUsage> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (one, None) | (None, one) => one,
    }
}

/// `; its stderr ends: LAST LINE`, or nothing without stderr.
fn stderr_says(tail: &Option<String>) -> String {
    tail.as_deref()
        .and_then(|t| t.lines().rev().map(str::trim).find(|l| !l.is_empty()))
        .map_or_else(String::new, |line| format!("; its stderr ends: {line}"))
}

/// ` (pid 12 (python3 -m http.server))`, or nothing when no owner could be read.
fn owner_says(owners: &[String]) -> String {
    if owners.is_empty() {
        String::new()
    } else {
        format!(" ({})", owners.join(", "))
    }
}

/// `pid 12`, `pids 12, 13`.
fn pid_list(pids: &[u32]) -> String {
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let noun = if pids.len() == 1 { "pid" } else { "pids" };
    format!("{noun} {}", list.join(", "))
}

/// A duration in seconds, as the error messages say it (`0.3 s`).
fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// How a server ended when it was stopped.
#[derive(Debug)]
#[non_exhaustive]
pub struct Stopped {
    /// Its exit status (a signal on Unix when the SIGTERM or SIGKILL ended it without a handler).
    pub status: ExitStatus,
    /// It had ended before it was asked to stop: it died while its client ran.
    pub ended_before: bool,
    /// SIGKILL had to end it or something of its group after the grace period (on Windows,
    /// which has no SIGTERM, whenever something of its job still ran: the job is ended).
    pub killed: bool,
    /// The end of its stderr, when it wrote any.
    pub stderr_tail: Option<String>,
    /// Its CPU time, context switches and peak memory over its whole life, with the children
    /// it waited for (nginx's workers), where the OS gives them for the one program.
    pub(crate) usage: Option<crate::sys::ResourceUsage>,
    /// The placed server, ended, for the audit of its run.
    pub(crate) placed: Option<Placed>,
}

/// A running server: its process tree (a process group of its own, a cgroup leaf where one
/// can be made; on Windows a job object), killed when dropped unless it was stopped.
#[derive(Debug)]
pub struct Server {
    /// The placed server (taken out by [`Server::stop`], for the run's audit).
    placed: Option<Placed>,
    /// Its first process's id.
    pid: u32,
    program: String,
    /// What was checked about who answers at the readiness address.
    listener: Option<String>,
    /// The unnamed file its stderr goes to (`None` when one could not be made: then to nowhere).
    stderr: Option<File>,
    /// Its tree has been ended and the server reaped.
    ended: bool,
    /// What the processes of its group that outlived it and were reaped here used.
    orphans: std::cell::Cell<Option<crate::sys::ResourceUsage>>,
}

impl Server {
    /// Starts `cmd` (placed: its CPU set, threads and memory policy) as a server in a process
    /// tree of its own, with stdin and stdout on the null device and stderr into an unnamed
    /// temporary file (its end is quoted when the server fails), and returns once `ready` says
    /// it is ready. `name` is how messages call it (the user's command line).
    ///
    /// A TCP readiness address is checked before the server starts (something that already
    /// answers there would be measured instead: [`ServerError::PortTaken`]) and after it is
    /// ready (the listener must be a process of the server's tree: [`ServerError::NotOurs`]).
    ///
    /// Readiness is polled: an attempt (a TCP connection, or the command run to its end), a
    /// pause of 10 ms doubling up to 200 ms, again, until `ready_timeout` is over (an attempt
    /// started just before gets 100 ms all the same). This happens
    /// before the server's client starts, so nothing measured runs beside the poll. The server's
    /// exit is checked between attempts: a server whose first process ends leaving the rest
    /// running has daemonized ([`ServerError::Daemonized`]).
    ///
    /// # Errors
    ///
    /// [`ServerError::Start`] when it cannot be started; [`ServerError::PortTaken`];
    /// [`ServerError::Died`] when it ends before it is ready; [`ServerError::Daemonized`];
    /// [`ServerError::NotReady`] when `ready_timeout` passes first (the server is killed, with
    /// its tree); [`ServerError::NotOurs`]; [`ServerError::Io`] when waiting for it fails.
    pub fn start(
        mut cmd: PlacedCommand,
        name: &str,
        ready: &Ready,
        ready_timeout: Duration,
    ) -> Result<Self, ServerError> {
        if let Some(taken) = port_taken(ready) {
            return Err(taken);
        }
        // Not fatal without it (as for a sweep's runs): errors then quote no stderr.
        let stderr = tempfile::tempfile().ok();
        let child_stderr = stderr
            .as_ref()
            .and_then(|f| f.try_clone().ok())
            .map_or_else(Stdio::null, Stdio::from);
        cmd.command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(child_stderr);
        let placed = cmd.contained().start()?;
        let mut server = Self {
            pid: placed.id(),
            placed: Some(placed),
            program: name.to_owned(),
            listener: None,
            stderr,
            ended: false,
            orphans: std::cell::Cell::new(None),
        };
        server.wait_ready(ready, ready_timeout)?;
        if let Ready::Tcp { port, .. } = ready {
            server.check_listener(ready, *port)?;
        }
        Ok(server)
    }

    /// What was checked about the server's run so far, in words (who answers at its readiness
    /// address), for the run's audit.
    pub fn checked(&self) -> Vec<String> {
        self.listener.iter().cloned().collect()
    }

    /// The server's tree (until it is stopped).
    fn tree(&self) -> &crate::program::Launched {
        self.placed
            .as_ref()
            .expect("a server is placed until it is stopped")
            .launched()
    }

    /// The server's tree, to wait on and end (until it is stopped).
    fn tree_mut(&mut self) -> &mut crate::program::Launched {
        self.placed
            .as_mut()
            .expect("a server is placed until it is stopped")
            .launched_mut()
    }

    /// Checks that what listens on `port` is a process of the server's tree (where the socket
    /// table and the processes' descriptors can be read); the server is stopped when it is not.
    fn check_listener(&mut self, ready: &Ready, port: u16) -> Result<(), ServerError> {
        let owners = listeners(port);
        if owners.is_empty() {
            self.listener = Some(format!(
                "who answers at {ready} (not readable here: unchecked)"
            ));
            return Ok(());
        }
        let ours: Vec<u32> = self.pids();
        if owners.iter().any(|o| ours.contains(o)) {
            let mine: Vec<String> = owners
                .iter()
                .filter(|o| ours.contains(o))
                .map(u32::to_string)
                .collect();
            self.listener = Some(format!(
                "{ready} answered by the server (pid {})",
                mine.join(", ")
            ));
            return Ok(());
        }
        let described: Vec<String> = owners.into_iter().map(describe).collect();
        self.end();
        Err(ServerError::NotOurs {
            program: self.program.clone(),
            pid: self.pid(),
            ready: ready.to_string(),
            owners: described,
        })
    }

    /// The server's process id (its process group's id on Linux).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's exit status when it has ended (reaped), else `None`; for a caller that
    /// keeps a server running and looks whether it still serves (`adapt --server`).
    ///
    /// # Errors
    ///
    /// [`ServerError::Io`] when waiting for it fails.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, ServerError> {
        self.tree_mut()
            .try_wait()
            .map_err(|e| self.io("waiting for it", e))
    }

    /// Stops the server: SIGTERM to its whole process group, then up to `grace` for the server
    /// to end (blocked in the kernel) and for the rest of its group to follow, then SIGKILL to
    /// whatever of the group still runs. Returns once no process of the group remains (waiting
    /// a little for exited ones to be reaped by init). On Windows, which has no SIGTERM, the job
    /// object is ended at once.
    ///
    /// Processes the server moved out of its group (a daemon calling `setsid`) are not seen.
    ///
    /// # Errors
    ///
    /// [`ServerError::Left`] when processes of the group still run after SIGKILL and a wait of
    /// 2 s; [`ServerError::Io`] when waiting for the server or reading its tree fails.
    pub fn stop(mut self, grace: Duration) -> Result<Stopped, ServerError> {
        let start = Instant::now();
        let before = self
            .tree_mut()
            .try_wait()
            .map_err(|e| self.io("waiting for it", e))?;
        let ended_before = before.is_some();
        if let Some(status) = before.filter(ExitStatus::success) {
            let left = self.left_behind();
            if !left.is_empty() {
                self.end();
                return Err(ServerError::Daemonized {
                    program: self.program.clone(),
                    pid: self.pid(),
                    status,
                    left,
                });
            }
        }
        // Once the server is reaped its group's id is signalled only while processes of the
        // group remain (they keep the id the group's). `asked`: SIGTERM reached what runs, so
        // it is worth waiting for (not on Windows).
        let asked = if ended_before && self.running()?.is_empty() {
            true
        } else {
            self.tree().terminate().is_ok()
        };
        let mut killed = false;
        let status = match before {
            Some(status) => status,
            None => {
                let status = if asked {
                    self.tree_mut()
                        .wait_timeout(Some(grace))
                        .map_err(|e| self.io("waiting for it", e))?
                } else {
                    None
                };
                match status {
                    Some(status) => status,
                    None => {
                        killed = true;
                        self.tree_mut().kill();
                        self.tree_mut()
                            .wait()
                            .map_err(|e| self.io("waiting for it", e))?
                    }
                }
            }
        };
        // The server is reaped; what it started may still be ending on the SIGTERM.
        if !killed {
            loop {
                if self.running()?.is_empty() {
                    break;
                }
                if !asked || start.elapsed() >= grace {
                    killed = true;
                    self.tree_mut().kill();
                    break;
                }
                std::thread::sleep(TREE_POLL);
            }
        }
        let left = self.wait_gone()?;
        self.ended = true;
        let stderr_tail = self.stderr_tail();
        if left.is_empty() {
            let own = self.placed.as_ref().and_then(Placed::usage);
            let usage = add_usage(own, self.orphans.get());
            Ok(Stopped {
                status,
                ended_before,
                killed,
                stderr_tail,
                usage,
                placed: self.placed.take(),
            })
        } else {
            Err(ServerError::Left {
                program: self.program.clone(),
                pid: self.pid(),
                pids: left,
                stderr_tail,
            })
        }
    }

    /// Polls `ready` until it succeeds, the server ends, or `timeout` is over.
    fn wait_ready(&mut self, ready: &Ready, timeout: Duration) -> Result<(), ServerError> {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut pause = FIRST_PAUSE;
        loop {
            self.check_alive()?;
            let left = deadline.saturating_duration_since(Instant::now());
            let last = match attempt(ready, left) {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Its death, rather than the timeout, when it died meanwhile.
                self.check_alive()?;
                self.end();
                return Err(ServerError::NotReady {
                    program: self.program.clone(),
                    pid: self.pid(),
                    ready: ready.to_string(),
                    waited: start.elapsed(),
                    last,
                    stderr_tail: self.stderr_tail(),
                });
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(LAST_PAUSE);
        }
    }

    /// [`ServerError::Died`] when the server has ended (what it started is killed).
    fn check_alive(&mut self) -> Result<(), ServerError> {
        let status = self
            .tree_mut()
            .try_wait()
            .map_err(|e| self.io("waiting for it", e))?;
        match status {
            None => Ok(()),
            Some(status) => {
                let left = if status.success() {
                    self.left_behind()
                } else {
                    Vec::new()
                };
                self.end();
                if !left.is_empty() {
                    return Err(ServerError::Daemonized {
                        program: self.program.clone(),
                        pid: self.pid(),
                        status,
                        left,
                    });
                }
                Err(ServerError::Died {
                    program: self.program.clone(),
                    pid: self.pid(),
                    status,
                    stderr_tail: self.stderr_tail(),
                })
            }
        }
    }

    /// What of the server's tree still runs once its first process has ended, described
    /// (`pid 12 (nginx: master process nginx)`).
    fn left_behind(&self) -> Vec<String> {
        let first = self.pid();
        self.running()
            .unwrap_or_default()
            .into_iter()
            .filter(|&pid| pid != first)
            .map(describe)
            .collect()
    }

    /// Kills the tree and reaps the server, giving what it started a moment to end (errors
    /// are the caller's error already: nothing more is said).
    fn end(&mut self) {
        // Not reaped yet, or reaped with processes of its group left: the group's id is still
        // the group's.
        let reaped = matches!(self.tree_mut().try_wait(), Ok(Some(_)));
        if !reaped || self.running().is_ok_and(|r| !r.is_empty()) {
            self.tree_mut().kill();
        }
        let _ = self.tree_mut().wait();
        let _ = self.wait_gone();
        self.ended = true;
    }

    /// The processes of the tree still running (exited ones waiting to be reaped left out);
    /// empty where the OS does not list a tree's processes.
    fn running(&self) -> Result<Vec<u32>, ServerError> {
        Ok(self
            .members()?
            .iter()
            .filter(|m| !m.exited)
            .map(|m| m.pid)
            .collect())
    }

    /// The processes of its tree now (the server and what it started: nginx's workers), for
    /// telling its threads from others' in a run's samples; empty where the OS does not list
    /// a tree's processes.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.members()
            .map(|m| m.iter().map(|m| m.pid).collect())
            .unwrap_or_default()
    }

    /// The processes of the tree; none where the OS does not list them. Those that exited and
    /// were handed to coretune are reaped first (and their use counted).
    fn members(&self) -> Result<Vec<crate::sys::TreeMember>, ServerError> {
        if let Some(reaped) = self.tree().reap_orphans() {
            self.orphans
                .set(add_usage(self.orphans.get(), Some(reaped)));
        }
        match self.tree().members() {
            Ok(members) => Ok(members),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(Vec::new()),
            Err(e) => Err(self.io("listing its process group", e)),
        }
    }

    /// Waits for the processes of the killed tree to be gone: those still running after
    /// [`GONE_WAIT`] are returned; exited ones get [`REAP_WAIT`] to be reaped, then are let be.
    fn wait_gone(&self) -> Result<Vec<u32>, ServerError> {
        let start = Instant::now();
        loop {
            let members = self.members()?;
            let running: Vec<u32> = members
                .iter()
                .filter(|m| !m.exited)
                .map(|m| m.pid)
                .collect();
            let elapsed = start.elapsed();
            if members.is_empty()
                || (running.is_empty() && elapsed >= REAP_WAIT)
                || elapsed >= GONE_WAIT
            {
                return Ok(running);
            }
            std::thread::sleep(TREE_POLL);
        }
    }

    /// The end of the server's stderr. Read only once its tree has ended: the file's offset is
    /// shared with the server's descriptor, so a seek while it writes would move its writes.
    fn stderr_tail(&self) -> Option<String> {
        let file = self.stderr.as_ref()?.try_clone().ok()?;
        file_tail(file, STDERR_TAIL_BYTES)
    }

    fn io(&self, what: &'static str, error: io::Error) -> ServerError {
        ServerError::Io {
            program: self.program.clone(),
            pid: self.pid(),
            what,
            error,
        }
    }
}

impl Drop for Server {
    /// Kills the server's tree unless it was stopped, and reaps the server.
    fn drop(&mut self) {
        if !self.ended
            && let Some(placed) = &mut self.placed
        {
            placed.kill();
            let _ = placed.wait();
        }
    }
}

/// [`ServerError::PortTaken`] when something already answers at a TCP readiness address
/// (with who holds the port, where that can be read): a server started now would not be what
/// its client measures. `None` for a free port or a readiness command.
pub fn port_taken(ready: &Ready) -> Option<ServerError> {
    let Ready::Tcp { port, .. } = ready else {
        return None;
    };
    attempt(ready, ATTEMPT_FLOOR).ok()?;
    Some(ServerError::PortTaken {
        ready: ready.to_string(),
        owners: listeners(*port).into_iter().map(describe).collect(),
    })
}

/// The processes holding a socket that listens on TCP `port` (empty where that cannot be read).
fn listeners(port: u16) -> Vec<u32> {
    let inodes: Vec<u64> = crate::sys::tcp_listeners(port)
        .into_iter()
        .map(|(_, inode)| inode)
        .collect();
    if inodes.is_empty() {
        return Vec::new();
    }
    crate::sys::socket_owners(std::path::Path::new(crate::sys::PROC_DIR), &inodes)
        .into_iter()
        .filter_map(|pid| u32::try_from(pid).ok())
        .collect()
}

/// One readiness attempt with at most `left` to take: `Err` says what it found instead.
fn attempt(ready: &Ready, left: Duration) -> Result<(), String> {
    let left = left.max(ATTEMPT_FLOOR);
    match ready {
        Ready::Tcp { host, port } => {
            let addrs = (host.as_str(), *port)
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {host}: {e}"))?;
            let mut last = format!("{host} has no address");
            for addr in addrs {
                match TcpStream::connect_timeout(&addr, left.min(CONNECT_TIMEOUT)) {
                    Ok(_) => return Ok(()),
                    Err(e) => last = lowercase_first(&e.to_string()),
                }
            }
            Err(last)
        }
        Ready::Command(script) => {
            let mut cmd = shell_command(script);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut check = PlacedCommand::new(cmd)
                .contained()
                .start()
                .map_err(|e| e.to_string())?;
            match check.wait_timeout(Some(left)) {
                Ok(Some(status)) if status.success() => Ok(()),
                Ok(Some(status)) => Err(status.to_string()),
                Ok(None) => {
                    check.kill();
                    let _ = check.wait();
                    Err("the command still ran when the time was up".to_owned())
                }
                Err(e) => {
                    check.kill();
                    let _ = check.wait();
                    Err(format!("waiting for the command: {e}"))
                }
            }
        }
    }
}

/// `Connection refused (os error 111)` as `connection refused (os error 111)`, to follow a colon.
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// The last `max` bytes of `file`, starting at a whole line when that cuts into one; `None`
/// when it is empty (or only white space) or cannot be read.
pub(crate) fn file_tail(mut file: File, max: u64) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let len = file.seek(SeekFrom::End(0)).ok()?;
    if len == 0 {
        return None;
    }
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    if start > 0 {
        // Cut mid-line (or mid-character): start at the next whole line.
        if let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            bytes.drain(..=nl);
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn readiness_tests_are_read() {
        let tcp = |host: &str, port| Ready::Tcp {
            host: host.to_owned(),
            port,
        };
        for (text, want) in [
            ("tcp:127.0.0.1:8080", tcp("127.0.0.1", 8080)),
            ("tcp:localhost:1", tcp("localhost", 1)),
            ("tcp:[::1]:6379", tcp("::1", 6379)),
            ("tcp:[fe80::1%lo]:65535", tcp("fe80::1%lo", 65535)),
            (
                "redis-cli -p 6390 ping | grep -q PONG",
                Ready::Command("redis-cli -p 6390 ping | grep -q PONG".to_owned()),
            ),
            (
                "curl -sf http://x/",
                Ready::Command("curl -sf http://x/".to_owned()),
            ),
        ] {
            let got: Ready = text.parse().unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
        }
        for (text, says) in [
            ("tcp:", "no port: write tcp::PORT"),
            ("tcp:localhost", "no port: write tcp:localhost:PORT"),
            ("tcp:localhost:", "'' is not a port (1 to 65535)"),
            ("tcp:localhost:0", "'0' is not a port (1 to 65535)"),
            ("tcp:localhost:70000", "'70000' is not a port (1 to 65535)"),
            ("tcp:localhost:http", "'http' is not a port (1 to 65535)"),
            (
                "tcp::80",
                "no host: write tcp:HOST:80 (tcp:127.0.0.1:80 for this machine)",
            ),
            (
                "tcp:::1:80",
                "an IPv6 address goes in brackets: write tcp:[::1]:80",
            ),
            ("tcp:[::1]", "no port after [::1]: write tcp:[::1]:PORT"),
            ("tcp:[::1]80", "no port after [::1]: write tcp:[::1]:PORT"),
            (
                "tcp:[::1:80",
                "no ']' after the IPv6 address: write tcp:[::1]:PORT",
            ),
            (
                "tcp:[]:80",
                "no host: write tcp:HOST:80 (tcp:127.0.0.1:80 for this machine)",
            ),
            (
                " ",
                "empty: give tcp:HOST:PORT or a command that succeeds once the server is ready",
            ),
        ] {
            let err = text.parse::<Ready>().unwrap_err();
            assert_eq!(err.to_string(), format!("readiness test '{text}': {says}"));
        }
    }

    #[test]
    fn a_file_tail_starts_at_a_whole_line() {
        use std::io::Write as _;
        let mut file = tempfile::tempfile().unwrap();
        assert_eq!(file_tail(file.try_clone().unwrap(), 10), None);
        file.write_all(b"first line\nsecond\nthird\n").unwrap();
        assert_eq!(
            file_tail(file.try_clone().unwrap(), 100).as_deref(),
            Some("first line\nsecond\nthird\n")
        );
        // 10 bytes: "ond\nthird\n", cut into "second".
        assert_eq!(
            file_tail(file.try_clone().unwrap(), 10).as_deref(),
            Some("third\n")
        );
        let mut blank = tempfile::tempfile().unwrap();
        blank.write_all(b"\n  \n").unwrap();
        assert_eq!(file_tail(blank, 10), None);
    }

    #[test]
    fn messages_quote_the_last_line_of_stderr() {
        assert_eq!(stderr_says(&None), "");
        assert_eq!(
            stderr_says(&Some("one\ntwo  \n\n".to_owned())),
            "; its stderr ends: two"
        );
        assert_eq!(pid_list(&[12]), "pid 12");
        assert_eq!(pid_list(&[12, 13]), "pids 12, 13");
    }

    /// Windows (run under Wine by `make test-windows`): no SIGTERM, the job object is ended, and
    /// its process list is what is checked.
    #[cfg(windows)]
    #[test]
    fn a_windows_server_is_ended_with_its_job() {
        // `ping -n 30` waits a second between echoes: a server that runs 30 s unless ended.
        let cmd = shell_command("ping -n 30 127.0.0.1 >NUL");
        let ready: Ready = "exit 0".parse().unwrap();
        let server = Server::start(
            PlacedCommand::new(cmd),
            "test",
            &ready,
            Duration::from_secs(10),
        )
        .unwrap();
        let job = server.running().unwrap();
        assert!(job.contains(&server.pid()), "{job:?}");
        let start = Instant::now();
        let stopped = server.stop(Duration::from_secs(5)).unwrap();
        assert!(stopped.killed, "{stopped:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no grace period to wait out"
        );
    }

    /// Real servers and their clients, and process groups as Linux has them.
    #[cfg(target_os = "linux")]
    mod live {
        use std::net::TcpListener;
        use std::path::Path;
        use std::process::{Command, Output};
        use std::time::{Duration, Instant};

        use super::super::*;
        use crate::program::find_program;

        /// Whether every one of `programs` is installed; says which is not when one is missing
        /// (and fails under `CORETUNE_TEST_STRICT=1`, as `make test` runs: it installs them).
        fn have(programs: &[&str]) -> bool {
            for program in programs {
                if find_program(program).is_err() {
                    crate::test_util::skip(format!("{program} is not installed"));
                    return false;
                }
            }
            true
        }

        /// A port nothing listens on now (bound to port 0, then let go).
        fn free_port() -> u16 {
            let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
            listener.local_addr().unwrap().port()
        }

        fn output(cmd: &mut Command) -> String {
            let Output {
                status,
                stdout,
                stderr,
            } = cmd.output().unwrap();
            let stdout = String::from_utf8_lossy(&stdout).into_owned();
            assert!(
                status.success(),
                "{cmd:?}: {status}\n{stdout}\n{}",
                String::from_utf8_lossy(&stderr)
            );
            stdout
        }

        /// The processes of the server's group running now.
        fn running(server: &Server) -> Vec<u32> {
            server.running().unwrap()
        }

        fn alive(pid: u32) -> bool {
            crate::sys::process_state(Path::new(crate::sys::PROC_DIR), pid as i32)
                .is_ok_and(|state| state != 'Z' && state != 'X')
        }

        #[test]
        fn nginx_serves_wrk_and_ends_on_sigterm() {
            if !have(&["nginx", "wrk"]) {
                return;
            }
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().display();
            let port = free_port();
            // Everything nginx writes is in the folder: no root needed (as root, the workers
            // run as `nobody` and need nothing written either: `return` answers).
            let config = format!(
                "pid {d}/nginx.pid;\n\
                 error_log stderr;\n\
                 events {{}}\n\
                 http {{\n\
                 \x20   access_log off;\n\
                 \x20   client_body_temp_path {d}/body;\n\
                 \x20   proxy_temp_path {d}/proxy;\n\
                 \x20   fastcgi_temp_path {d}/fastcgi;\n\
                 \x20   uwsgi_temp_path {d}/uwsgi;\n\
                 \x20   scgi_temp_path {d}/scgi;\n\
                 \x20   server {{\n\
                 \x20       listen 127.0.0.1:{port};\n\
                 \x20       location / {{ return 200 \"ok\\n\"; }}\n\
                 \x20   }}\n\
                 }}\n"
            );
            let conf = dir.path().join("nginx.conf");
            std::fs::write(&conf, config).unwrap();
            let mut cmd = Command::new("nginx");
            cmd.arg("-p").arg(dir.path()).arg("-c").arg(&conf).args([
                "-e",
                "stderr",
                "-g",
                "daemon off; worker_processes 2;",
            ]);
            let ready = Ready::Tcp {
                host: "127.0.0.1".to_owned(),
                port,
            };
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let url = format!("http://127.0.0.1:{port}/");
            let out = output(Command::new("wrk").args(["-t1", "-c4", "-d1s", "--latency", &url]));
            let rate: f64 = out
                .lines()
                .find_map(|l| l.strip_prefix("Requests/sec:"))
                .unwrap_or_else(|| panic!("no Requests/sec in wrk's output:\n{out}"))
                .trim()
                .parse()
                .unwrap();
            assert!(rate > 0.0, "{out}");
            // The master and its two workers, in the server's group.
            let group = running(&server);
            assert!(group.len() >= 3, "{group:?}");
            let stopped = server.stop(Duration::from_secs(5)).unwrap();
            assert!(!stopped.killed, "nginx ends on SIGTERM: {stopped:?}");
            assert!(!stopped.ended_before);
            assert!(group.iter().all(|&pid| !alive(pid)), "{group:?}");
            TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
        }

        #[test]
        fn redis_serves_redis_benchmark_and_ends_on_sigterm() {
            if !have(&["redis-server", "redis-cli", "redis-benchmark"]) {
                return;
            }
            let dir = tempfile::tempdir().unwrap();
            let port = free_port().to_string();
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port, "--bind", "127.0.0.1", "--save", ""])
                .args(["--appendonly", "no", "--io-threads", "2", "--dir"])
                .arg(dir.path());
            // redis-cli exits 1 when it cannot connect, but 0 on an error reply (a server still
            // loading its data answers `-LOADING`): only PONG is ready.
            let ready: Ready = format!("redis-cli -p {port} ping | grep -q PONG")
                .parse()
                .unwrap();
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let out = output(
                Command::new("redis-benchmark")
                    .args(["-p", &port, "-n", "2000", "-c", "4", "-t", "get", "--csv"]),
            );
            // "test","rps",...  then  "GET","95238.10",...
            let rate: f64 = out
                .lines()
                .find_map(|l| l.strip_prefix("\"GET\",\""))
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("no GET line in redis-benchmark's output:\n{out}"))
                .parse()
                .unwrap();
            assert!(rate > 0.0, "{out}");
            let pid = server.pid();
            let stopped = server.stop(Duration::from_secs(5)).unwrap();
            assert!(!stopped.killed, "redis-server ends on SIGTERM: {stopped:?}");
            assert!(stopped.status.success(), "{stopped:?}");
            assert!(!alive(pid));
        }

        #[test]
        fn a_server_that_dies_at_once_says_why() {
            let ready = Ready::Tcp {
                host: "127.0.0.1".to_owned(),
                port: free_port(),
            };
            let cmd = shell_command("echo starting >&2; echo boom >&2; exit 3");
            let err = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap_err();
            let ServerError::Died {
                status,
                ref stderr_tail,
                ..
            } = err
            else {
                panic!("{err}");
            };
            assert_eq!(status.code(), Some(3));
            assert_eq!(stderr_tail.as_deref(), Some("starting\nboom\n"));
            let text = err.to_string();
            assert!(
                text.starts_with("server 'test' (pid ")
                    && text.ends_with(
                        ") ended before it was ready (exit status: 3); its stderr ends: boom"
                    ),
                "{text}"
            );
        }

        #[test]
        fn a_server_never_ready_is_killed_in_time() {
            let ready = Ready::Tcp {
                host: "127.0.0.1".to_owned(),
                port: free_port(),
            };
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let start = Instant::now();
            let err = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_millis(300),
            )
            .unwrap_err();
            let took = start.elapsed();
            let ServerError::NotReady { pid, waited, .. } = err else {
                panic!("{err}");
            };
            assert!(waited >= Duration::from_millis(300), "{waited:?}");
            assert!(took < Duration::from_secs(1), "{took:?}");
            assert!(!alive(pid), "sleep {pid} still runs");
            let text = err.to_string();
            assert!(
                text.contains("not ready after 0.3 s: tcp:127.0.0.1:")
                    && text.contains("connection refused")
                    && text.ends_with("; killed"),
                "{text}"
            );
        }

        #[test]
        fn a_server_never_ready_by_command_is_killed_in_time() {
            let ready: Ready = "exit 1".parse().unwrap();
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let err = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_millis(300),
            )
            .unwrap_err();
            let ServerError::NotReady { pid, ref last, .. } = err else {
                panic!("{err}");
            };
            assert_eq!(last, "exit status: 1");
            assert!(!alive(pid), "sleep {pid} still runs");
        }

        #[test]
        fn a_server_ignoring_sigterm_is_killed_with_its_children() {
            let dir = tempfile::tempdir().unwrap();
            let up = dir.path().join("up");
            // The shell and its child ignore SIGTERM (an ignored signal stays ignored across
            // fork and exec); `up` is written once both do.
            let cmd = shell_command(&format!(
                "trap '' TERM; sleep 30 & touch '{}'; wait",
                up.display()
            ));
            let ready: Ready = format!("test -e '{}'", up.display()).parse().unwrap();
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let group = running(&server);
            assert_eq!(group.len(), 2, "sh and sleep: {group:?}");
            let start = Instant::now();
            let stopped = server.stop(Duration::from_millis(200)).unwrap();
            assert!(stopped.killed, "{stopped:?}");
            assert_eq!(crate::sys::exit_signal(stopped.status), Some(9));
            assert!(start.elapsed() >= Duration::from_millis(200));
            assert!(group.iter().all(|&pid| !alive(pid)), "{group:?}");
        }

        #[test]
        fn children_left_after_the_server_ends_are_waited_for_then_killed() {
            // The server ends on SIGTERM at once, but its child ignores it: the child is killed
            // after the grace period.
            let dir = tempfile::tempdir().unwrap();
            let up = dir.path().join("up");
            let cmd = shell_command(&format!(
                "(trap '' TERM; exec sleep 30) & touch '{}'; wait",
                up.display()
            ));
            let ready: Ready = format!("test -e '{}'", up.display()).parse().unwrap();
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let group = running(&server);
            assert_eq!(group.len(), 2, "sh and sleep: {group:?}");
            let stopped = server.stop(Duration::from_millis(200)).unwrap();
            assert!(stopped.killed, "{stopped:?}");
            assert_eq!(crate::sys::exit_signal(stopped.status), Some(15));
            assert!(group.iter().all(|&pid| !alive(pid)), "{group:?}");
        }

        #[test]
        fn a_server_that_ended_during_its_run_is_told_apart() {
            let dir = tempfile::tempdir().unwrap();
            let up = dir.path().join("up");
            let ready: Ready = format!("test -e '{}'", up.display()).parse().unwrap();
            // Alone: nothing to ask or kill.
            let cmd = shell_command(&format!("touch '{}'; sleep 0.2; exit 5", up.display()));
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            std::thread::sleep(Duration::from_millis(600));
            let stopped = server.stop(Duration::from_millis(200)).unwrap();
            assert!(stopped.ended_before && !stopped.killed, "{stopped:?}");
            assert_eq!(stopped.status.code(), Some(5));
            // With a child left behind that ignores SIGTERM: killed after the grace period.
            std::fs::remove_file(&up).unwrap();
            let cmd = shell_command(&format!(
                "(trap '' TERM; exec sleep 30) & touch '{}'; sleep 0.2; exit 5",
                up.display()
            ));
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let group = running(&server);
            std::thread::sleep(Duration::from_millis(600));
            let stopped = server.stop(Duration::from_millis(200)).unwrap();
            assert!(stopped.ended_before && stopped.killed, "{stopped:?}");
            assert_eq!(stopped.status.code(), Some(5));
            assert!(group.iter().all(|&pid| !alive(pid)), "{group:?}");
        }

        /// Something else starts listening at the server's address while it starts: what
        /// answers is not the server, which is refused (and stopped), naming who answers.
        #[test]
        fn a_listener_that_is_not_the_servers_is_refused() {
            let port = free_port();
            let squatter = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
                std::thread::sleep(Duration::from_secs(3));
                drop(listener);
            });
            let ready = Ready::Tcp {
                host: "127.0.0.1".to_owned(),
                port,
            };
            let cmd = shell_command("exec sleep 28.75");
            let err = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap_err();
            let me = std::process::id();
            assert!(
                matches!(err, ServerError::NotOurs { .. })
                    && err
                        .to_string()
                        .contains(&format!("is answered by pid {me}")),
                "{err}"
            );
            squatter.join().unwrap();
        }

        #[test]
        fn a_dropped_server_is_killed_with_its_tree() {
            let dir = tempfile::tempdir().unwrap();
            let up = dir.path().join("up");
            let cmd = shell_command(&format!("sleep 30 & touch '{}'; wait", up.display()));
            let ready: Ready = format!("test -e '{}'", up.display()).parse().unwrap();
            let server = Server::start(
                PlacedCommand::new(cmd),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let group = running(&server);
            assert_eq!(group.len(), 2, "{group:?}");
            drop(server);
            // The child was killed by the same SIGKILL; it is reaped by init in its own time.
            let start = Instant::now();
            while group.iter().any(|&pid| alive(pid)) && start.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(group.iter().all(|&pid| !alive(pid)), "{group:?}");
        }

        #[test]
        fn a_server_on_a_cpu_set_runs_there() {
            let cpus = crate::program::affinity_of(0).unwrap();
            let first = cpus.first_set().unwrap();
            let one = crate::sys::set_from_indexes([usize::from(first)]);
            let dir = tempfile::tempdir().unwrap();
            let up = dir.path().join("up");
            let cmd = shell_command(&format!("touch '{}'; exec sleep 30", up.display()));
            let ready: Ready = format!("test -e '{}'", up.display()).parse().unwrap();
            let server = Server::start(
                PlacedCommand::new(cmd).cpus(Some(one.clone())),
                "test",
                &ready,
                Duration::from_secs(10),
            )
            .unwrap();
            let bound = crate::program::process_binding(server.pid()).unwrap();
            assert!(bound.iter().all(|(_, set)| *set == one), "{bound:?}");
            let stopped = server.stop(Duration::from_secs(5)).unwrap();
            assert!(!stopped.killed);
        }
    }
}
