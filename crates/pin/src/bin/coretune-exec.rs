//! `coretune-exec PROGRAM ARGS…`: starts a program for coretune and reports what the program
//! itself used, which coretune cannot read from its own `wait4` exactly.
//!
//! A process's peak memory (`ru_maxrss`) keeps, across `exec`, the peak of the image it had
//! before: a program forked from coretune and `exec`ed counts coretune's own pages (a megabyte
//! or more) as its peak, whatever it uses. This helper is small; it is started instead of the
//! program (on the program's CPU set, with its memory policy, in its cgroup and process group:
//! all of that is inherited), forks, and the child `exec`s the program, so that the program's
//! peak is its own. The helper waits for it with `wait4` and appends to the report file named by
//! `CORETUNE_EXEC_REPORT` (opened `O_APPEND`; each line written whole):
//!
//! ```text
//! exec NS                                  the child, just before exec: CLOCK_MONOTONIC ns
//! end MAXRSS_KB UTIME_US STIME_US NVCSW NIVCSW   the program's own (and its waited children's)
//! ```
//!
//! then ends as the program ended (its exit code, or the signal that killed it, raised again
//! without a core dump). `CORETUNE_EXEC_PRELOAD` is the `LD_PRELOAD` the program gets (the
//! pinning library is not loaded into the helper); both variables are removed from the
//! program's environment. SIGINT, SIGTERM, SIGHUP and SIGQUIT are ignored by the helper (they
//! reach the program through its process group or cgroup, and the helper then ends as it did)
//! and restored for the program. The program gets `PR_SET_PDEATHSIG` (SIGKILL), so that it does
//! not outlive the helper.
//!
//! Exit status 127 when the program cannot be found, 126 when it cannot be run, as a shell's.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("coretune-exec: only for Linux");
    std::process::exit(1);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{CString, OsString};
    use std::io::Write as _;
    use std::os::unix::ffi::OsStringExt;

    /// The signals the helper ignores and the program gets back.
    const STOPS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

    pub(super) fn main() {
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        let Some(program) = args.first() else {
            // With the sources it was built from (`build.rs`), which coretune looks for.
            eprintln!(concat!(
                "usage: coretune-exec PROGRAM [ARGS…] (coretune-pin-source:",
                env!("CORETUNE_PIN_SOURCE"),
                ")"
            ));
            std::process::exit(2);
        };
        let cstr = |s: &OsString| CString::new(s.clone().into_vec());
        let Ok(argv) = args.iter().map(cstr).collect::<Result<Vec<CString>, _>>() else {
            eprintln!("coretune-exec: an argument holds a NUL byte");
            std::process::exit(2);
        };
        let report = std::env::var_os("CORETUNE_EXEC_REPORT")
            .and_then(|path| std::fs::OpenOptions::new().append(true).open(path).ok());
        let preload = std::env::var_os("CORETUNE_EXEC_PRELOAD");
        // SAFETY: this process has one thread (nothing has started another), so nothing reads
        // the environment while it changes.
        unsafe {
            std::env::remove_var("CORETUNE_EXEC_REPORT");
            std::env::remove_var("CORETUNE_EXEC_PRELOAD");
            match &preload {
                Some(p) if !p.is_empty() => std::env::set_var("LD_PRELOAD", p),
                Some(_) => std::env::remove_var("LD_PRELOAD"),
                None => {}
            }
        }
        for signal in STOPS {
            // SAFETY: `signal` with SIG_IGN installs no handler code.
            unsafe { libc::signal(signal, libc::SIG_IGN) };
        }
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        // SAFETY: `getpid` takes nothing.
        let helper = unsafe { libc::getpid() };
        // SAFETY: this process has one thread: the child may do anything after `fork`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            eprintln!("coretune-exec: fork: {}", std::io::Error::last_os_error());
            std::process::exit(126);
        }
        if pid == 0 {
            child(program, &argv_ptrs, report.as_ref(), helper);
        }
        let mut status: libc::c_int = 0;
        // SAFETY: all-zero is a valid `rusage`.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: `wait4` writes an int and a `rusage` through pointers to locals of those
            // types; `pid` is this process's child.
            let rc = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
            if rc == pid {
                break;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                std::process::exit(126);
            }
        }
        if let Some(mut report) = report.as_ref() {
            let micros = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
            let _ = report.write_all(
                format!(
                    "end {} {} {} {} {}\n",
                    usage.ru_maxrss,
                    micros(usage.ru_utime),
                    micros(usage.ru_stime),
                    usage.ru_nvcsw,
                    usage.ru_nivcsw
                )
                .as_bytes(),
            );
        }
        if libc::WIFEXITED(status) {
            std::process::exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain calls with integers and a pointer to a local `rlimit`: no core file for
        // the helper, the signal's default action back, then the signal, as the program had it.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
            libc::raise(signal);
        }
        std::process::exit(128 + signal);
    }

    /// The forked child: the signals back, the death signal, the time of the `exec` in the
    /// report, then the program.
    fn child(
        program: &OsString,
        argv: &[*const libc::c_char],
        report: Option<&std::fs::File>,
        helper: libc::pid_t,
    ) -> ! {
        for signal in STOPS {
            // SAFETY: `signal` with SIG_DFL installs no handler code.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
        // SAFETY: `prctl(PR_SET_PDEATHSIG)` and `getppid` take integers.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != helper {
                libc::_exit(126);
            }
        }
        if let Some(mut report) = report {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `clock_gettime` writes one `timespec` to a local.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut t) };
            let ns = t.tv_sec * 1_000_000_000 + t.tv_nsec;
            let _ = report.write_all(format!("exec {ns}\n").as_bytes());
        }
        // SAFETY: `argv` is a null-terminated array of pointers to NUL-terminated strings that
        // live until `execvp` returns (it returns only on failure).
        unsafe { libc::execvp(argv[0], argv.as_ptr()) };
        let error = std::io::Error::last_os_error();
        eprintln!("coretune-exec: {}: {error}", program.to_string_lossy());
        let code = if error.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        // SAFETY: `_exit` ends this child at once.
        unsafe { libc::_exit(code) }
    }
}
