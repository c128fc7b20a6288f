//! The kernel's process-event connector: a netlink socket (`NETLINK_CONNECTOR`) subscribed to
//! the `CN_IDX_PROC` group, on which the kernel announces every `fork` (processes and threads),
//! `exec` and `exit` as it happens. neli provides the socket and the `cn_msg` / `proc_event`
//! layouts (neither libc nor nix defines those structs).
//!
//! Subscribing needs `CAP_NET_ADMIN` before Linux 6.6 (any user after), and the events name
//! processes by their pids in the initial PID namespace: where that is not this process's (a
//! container), or the kernel does not answer, [`ProcEvents::open`] fails and the caller polls
//! `/proc` instead.

use std::io::{self, Cursor};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use neli::connector::{CnMsg, CnMsgBuilder, ProcEvent as Raw, ProcEventHeader};
use neli::consts::connector::{CnMsgIdx, CnMsgVal, ProcCnMcastOp};
use neli::consts::nl::{NlmF, Nlmsg};
use neli::consts::socket::{Msg, NlFamily};
use neli::nl::{NlPayload, Nlmsghdr, NlmsghdrBuilder};
use neli::socket::NlSocket;
use neli::utils::Groups;
use neli::{FromBytes, Size, ToBytes};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{setsockopt, sockopt};

use crate::sys::error::SysError;
use crate::sys::types::ProcEvent;

/// How long to wait for the kernel to acknowledge the subscription. It answers at once where it
/// answers at all (outside the initial PID namespace it stays silent).
const ACK_TIMEOUT: Duration = Duration::from_secs(1);

/// The socket's receive buffer: room for about 100,000 events (40 bytes of event, 20 of
/// `cn_msg`, 16 of netlink header each) before the kernel drops any; a burst of process starts
/// must not overflow it while rules are applied.
const RECV_BUFFER: usize = 8 << 20;

/// Bytes read per `recv`: one datagram carries one event, far below this.
const DATAGRAM: usize = 4096;

/// A subscription to the kernel's process events.
pub(crate) struct ProcEvents {
    socket: NlSocket,
    buf: Vec<u8>,
}

impl std::fmt::Debug for ProcEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcEvents")
            .field("fd", &self.socket.as_raw_fd())
            .finish()
    }
}

fn call(call: &'static str) -> impl FnOnce(io::Error) -> SysError {
    move |error| SysError::Call { call, error }
}

impl ProcEvents {
    /// Opens the socket, subscribes, and waits for the kernel's acknowledgement.
    ///
    /// # Errors
    ///
    /// [`SysError::Call`] naming what failed: the socket, the subscription (EPERM without
    /// `CAP_NET_ADMIN`), or no acknowledgement (not in the initial PID namespace).
    pub(crate) fn open() -> Result<Self, SysError> {
        let socket = NlSocket::connect(
            NlFamily::Connector,
            None,
            Groups::new_bitmask(CnMsgIdx::Proc.into()),
        )
        .map_err(call("netlink connector socket"))?;
        // SAFETY: the descriptor belongs to `socket`, which outlives this borrow (it is only
        // used for the two calls below).
        let fd = unsafe { BorrowedFd::borrow_raw(socket.as_raw_fd()) };
        // A larger buffer than `rmem_max` allows needs CAP_NET_ADMIN (which subscribing needs
        // anyway); without it, ask for what the limit allows.
        if setsockopt(&fd, sockopt::RcvBufForce, &RECV_BUFFER).is_err() {
            let _ = setsockopt(&fd, sockopt::RcvBuf, &RECV_BUFFER);
        }
        socket
            .nonblock()
            .map_err(call("netlink connector socket"))?;
        let mut events = Self {
            socket,
            buf: vec![0; DATAGRAM],
        };
        events.subscribe()?;
        events.check_pids()?;
        Ok(events)
    }

    /// Makes sure the events name processes as this process sees them. The kernel reports pids
    /// of the initial PID namespace; inside a container (a PID namespace of its own) those are
    /// other numbers, and acting on them would touch the wrong processes. So: fork a child that
    /// exits at once, and wait for its fork event with the pids this process knows.
    fn check_pids(&mut self) -> Result<(), SysError> {
        use nix::unistd::{ForkResult, fork, getpid};
        let me = getpid().as_raw();
        // SAFETY: the child calls only `_exit`, which is async-signal-safe, so it touches no
        // lock or allocator state another thread may have held at the fork.
        let child = match unsafe { fork() } {
            Ok(ForkResult::Child) => unsafe_exit(),
            Ok(ForkResult::Parent { child }) => child,
            Err(e) => {
                return Err(SysError::Call {
                    call: "fork",
                    error: e.into(),
                });
            }
        };
        let _ = nix::sys::wait::waitpid(child, None);
        let deadline = Instant::now() + ACK_TIMEOUT;
        let mut events = Vec::new();
        while let Some(left) = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        {
            if !self.wait_readable(left)? {
                break;
            }
            events.clear();
            self.read(&mut events)?;
            let seen = events.iter().any(|e| {
                matches!(*e, ProcEvent::Fork { parent, tgid, .. }
                    if parent == me && tgid == child.as_raw())
            });
            if seen {
                return Ok(());
            }
        }
        Err(SysError::Call {
            call: "PROC_CN_MCAST_LISTEN",
            error: io::Error::other(
                "the events name processes by pids of another PID namespace (a container?)",
            ),
        })
    }

    fn subscribe(&mut self) -> Result<(), SysError> {
        let subscribe = call("PROC_CN_MCAST_LISTEN");
        // The kernel's acknowledgement goes to every listener; it answers with this number
        // plus one in its `ack` field (`cn_proc_ack`), which tells ours from another's. The
        // pid is unique among running processes.
        let tag = std::process::id();
        let cn = CnMsgBuilder::default()
            .idx(CnMsgIdx::Proc)
            .val(CnMsgVal::Proc)
            .ack(tag)
            .payload(ProcCnMcastOp::Listen)
            .build()
            .map_err(|e| io::Error::other(e.to_string()))
            .map_err(call("PROC_CN_MCAST_LISTEN"))?;
        let msg = NlmsghdrBuilder::default()
            .nl_type(Nlmsg::Done)
            .nl_flags(NlmF::empty())
            .nl_pid(self.socket.pid().unwrap_or(0))
            .nl_payload(NlPayload::Payload(cn))
            .build()
            .map_err(|e| io::Error::other(e.to_string()))
            .map_err(call("PROC_CN_MCAST_LISTEN"))?;
        let mut bytes = Cursor::new(vec![0; msg.padded_size()]);
        msg.to_bytes(&mut bytes)
            .map_err(|e| io::Error::other(e.to_string()))
            .map_err(call("PROC_CN_MCAST_LISTEN"))?;
        self.socket
            .send(bytes.get_ref(), Msg::empty())
            .map_err(subscribe)?;
        // Events of other listeners' subscriptions may come first: skip them (the caller scans
        // every running process after subscribing anyway).
        let deadline = Instant::now() + ACK_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.wait_readable(left)? {
                return Err(SysError::Call {
                    call: "PROC_CN_MCAST_LISTEN",
                    error: io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the kernel did not answer (not in the initial PID namespace?)",
                    ),
                });
            }
            while let Some(n) = self.recv_datagram()? {
                for (raw, ack) in parse_datagram(&self.buf[..n]) {
                    if ack != tag.wrapping_add(1) {
                        continue;
                    }
                    if let Raw::Ack { err } = raw.event {
                        return if err == 0 {
                            Ok(())
                        } else {
                            Err(SysError::Call {
                                call: "PROC_CN_MCAST_LISTEN",
                                error: io::Error::from_raw_os_error(
                                    i32::try_from(err).unwrap_or(libc::EPERM),
                                ),
                            })
                        };
                    }
                }
            }
        }
    }

    fn wait_readable(&self, timeout: Duration) -> Result<bool, SysError> {
        let mut fds = [PollFd::new(self.fd(), PollFlags::POLLIN)];
        let ms = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, ms) {
            Ok(n) => Ok(n > 0),
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(e) => Err(SysError::Call {
                call: "poll",
                error: e.into(),
            }),
        }
    }

    /// One datagram into the buffer: its length, or `None` when nothing is queued. An overflow
    /// (ENOBUFS) is reported as a datagram of length 0.
    fn recv_datagram(&mut self) -> Result<Option<usize>, SysError> {
        loop {
            match self.socket.recv(&mut self.buf[..], Msg::empty()) {
                Ok((n, _)) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => return Ok(Some(0)),
                Err(source) => {
                    return Err(SysError::Call {
                        call: "recv (netlink connector)",
                        error: source,
                    });
                }
            }
        }
    }

    /// The socket, for waiting on it.
    pub(crate) fn fd(&self) -> crate::sys::types::EventsFd<'_> {
        // SAFETY: the descriptor belongs to `self.socket`, which lives as long as the borrow.
        unsafe { BorrowedFd::borrow_raw(self.socket.as_raw_fd()) }
    }

    /// Every event queued now (without blocking), in the order the kernel sent them, appended
    /// to `out`. Events the kernel dropped because the queue was full are one
    /// [`ProcEvent::Lost`].
    ///
    /// # Errors
    ///
    /// [`SysError::Call`] when the socket fails.
    pub(crate) fn read(&mut self, out: &mut Vec<ProcEvent>) -> Result<(), SysError> {
        while let Some(n) = self.recv_datagram()? {
            if n == 0 {
                out.push(ProcEvent::Lost);
                continue;
            }
            for (raw, _) in parse_datagram(&self.buf[..n]) {
                let at = raw.timestamp_ns;
                match raw.event {
                    Raw::Exec { process_tgid, .. } => out.push(ProcEvent::Exec {
                        pid: process_tgid,
                        timestamp_ns: at,
                    }),
                    Raw::Fork {
                        parent_tgid,
                        child_pid,
                        child_tgid,
                        ..
                    } => out.push(ProcEvent::Fork {
                        parent: parent_tgid,
                        tid: child_pid,
                        tgid: child_tgid,
                        timestamp_ns: at,
                    }),
                    Raw::Exit {
                        process_pid,
                        process_tgid,
                        ..
                    } => out.push(ProcEvent::Exit {
                        tid: process_pid,
                        tgid: process_tgid,
                    }),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The end of the check's child: `_exit(0)`, without running this process's exit handlers.
fn unsafe_exit() -> ! {
    // SAFETY: `_exit` ends the process at once; it is async-signal-safe and needs nothing.
    unsafe { libc::_exit(0) }
}

/// The process events in one datagram, each with its `cn_msg` acknowledgement number. Each netlink
/// message is parsed from its own slice, so an event type neli does not know (a newer kernel's)
/// skips that message only.
fn parse_datagram(bytes: &[u8]) -> Vec<(ProcEventHeader, u32)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 4 <= bytes.len() {
        let len = u32::from_ne_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
            as usize;
        if len < 16 || pos + len > bytes.len() {
            break;
        }
        let mut cursor = Cursor::new(&bytes[pos..pos + len]);
        if let Ok(msg) = Nlmsghdr::<Nlmsg, CnMsg<ProcEventHeader>>::from_bytes(&mut cursor) {
            if let NlPayload::Payload(cn) = msg.nl_payload() {
                let header = cn.payload();
                out.push((
                    ProcEventHeader {
                        cpu: header.cpu,
                        timestamp_ns: header.timestamp_ns,
                        event: header.event,
                    },
                    *cn.ack(),
                ));
            }
        }
        // Netlink messages are 4-byte aligned.
        pos += (len + 3) & !3;
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    fn datagram(what: u32, data: &[i32]) -> Vec<u8> {
        let mut event = Vec::new();
        event.extend_from_slice(&what.to_ne_bytes());
        event.extend_from_slice(&1u32.to_ne_bytes()); // cpu
        event.extend_from_slice(&123u64.to_ne_bytes()); // timestamp
        for d in data {
            event.extend_from_slice(&d.to_ne_bytes());
        }
        let mut cn = Vec::new();
        cn.extend_from_slice(&1u32.to_ne_bytes()); // idx
        cn.extend_from_slice(&1u32.to_ne_bytes()); // val
        cn.extend_from_slice(&0u32.to_ne_bytes()); // seq
        cn.extend_from_slice(&9u32.to_ne_bytes()); // ack
        cn.extend_from_slice(&u16::try_from(event.len()).unwrap().to_ne_bytes());
        cn.extend_from_slice(&0u16.to_ne_bytes()); // flags
        cn.extend_from_slice(&event);
        let mut msg = Vec::new();
        msg.extend_from_slice(&u32::try_from(16 + cn.len()).unwrap().to_ne_bytes());
        msg.extend_from_slice(&3u16.to_ne_bytes()); // NLMSG_DONE
        msg.extend_from_slice(&0u16.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(&cn);
        msg
    }

    #[test]
    fn kernel_layouts_parse() {
        let exec = parse_datagram(&datagram(2, &[7, 7]));
        assert!(matches!(
            exec[..],
            [(
                ProcEventHeader {
                    timestamp_ns: 123,
                    event: Raw::Exec {
                        process_pid: 7,
                        process_tgid: 7
                    },
                    ..
                },
                9
            )]
        ));
        let fork = parse_datagram(&datagram(1, &[1, 1, 9, 8]));
        assert!(matches!(
            fork[..],
            [(
                ProcEventHeader {
                    event: Raw::Fork {
                        parent_tgid: 1,
                        child_pid: 9,
                        child_tgid: 8,
                        ..
                    },
                    ..
                },
                _
            )]
        ));
        // An event type from a newer kernel is skipped, the message after it still parses.
        let mut two = datagram(0x0400_0000, &[1, 2]);
        two.extend(datagram(2, &[5, 5]));
        let parsed = parse_datagram(&two);
        assert_eq!(parsed.len(), 1);
        assert!(matches!(
            parsed[0].0.event,
            Raw::Exec {
                process_tgid: 5,
                ..
            }
        ));
        assert!(parse_datagram(&[1, 2]).is_empty());
    }

    #[test]
    fn live_events_of_a_child() {
        if crate::sys::effective_uid() != 0 {
            crate::test_util::skip("live_events_of_a_child needs root");
            return;
        }
        let mut events = match ProcEvents::open() {
            Ok(e) => e,
            Err(e) => {
                crate::test_util::skip(format!(
                    "live_events_of_a_child: the connector is unavailable: {e}"
                ));
                return;
            }
        };
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        child.wait().unwrap();
        let (mut exec, mut exit) = (false, false);
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(exec && exit) && Instant::now() < deadline {
            if events.wait_readable(Duration::from_millis(100)).unwrap() {
                got.clear();
                events.read(&mut got).unwrap();
                exec |= got
                    .iter()
                    .any(|e| matches!(*e, ProcEvent::Exec { pid: p, .. } if p == pid));
                exit |= got.iter().any(
                    |e| matches!(*e, ProcEvent::Exit { tid, tgid } if tid == pid && tgid == pid),
                );
            }
        }
        assert!(exec && exit, "exec {exec}, exit {exit}");
    }
}
