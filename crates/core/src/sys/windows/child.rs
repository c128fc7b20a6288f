//! A started program: created suspended, put in a job object (its whole process tree, ended
//! together, accounted together and listed together), placed on its CPU set before its first instruction
//! ([`crate::sys::groups::place_new_process`]), then resumed. Also the shell (`cmd /C`), how a command
//! name is found (`PATHEXT`), Ctrl-C while a program runs, and exit statuses.

use std::io;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};

use hwlocality::cpu::cpuset::CpuSet;
use windows_sys::Win32::Foundation::{
    DUPLICATE_SAME_ACCESS, DuplicateHandle, FILETIME, HANDLE, STATUS_CONTROL_C_EXIT,
};
use windows_sys::Win32::Foundation::{WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_BASIC_PROCESS_ID_LIST,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectBasicAccountingInformation,
    JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation, QueryInformationJobObject,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::ProcessStatus::{GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    CREATE_SUSPENDED, GetCurrentProcess, GetProcessTimes, ResumeThread, THREAD_SUSPEND_RESUME,
    WaitForSingleObject,
};

use super::affinity::place_suspended;
use super::handle::{Handle, check, filetime, hundred_ns, open_thread};
use super::processes::thread_list;
use crate::sys::types::{Prepared, ResourceUsage, StopSignal, Tree, TreeMember};

/// Every program starts suspended, so that it is in its job object and on its CPU set before it
/// runs an instruction (and before it can start a process of its own outside the job).
pub(crate) fn prepare_child(
    cmd: &mut Command,
    _cpus: Option<&CpuSet>,
    _tree: Tree,
) -> io::Result<Prepared> {
    cmd.creation_flags(CREATE_SUSPENDED);
    Ok(Prepared::default())
}

/// The callback [`on_stop_signals`] installed.
static ON_STOP: std::sync::OnceLock<Box<dyn Fn(StopSignal) + Send + Sync>> =
    std::sync::OnceLock::new();

/// The console control handler: Ctrl-C and Ctrl-Break are an interrupt, closing the console a
/// hang-up, a logoff or shutdown a termination. The system runs it on a thread of its own.
unsafe extern "system" fn stop_handler(ctrl: u32) -> windows_sys::core::BOOL {
    let signal = match ctrl {
        0 | 1 => StopSignal::Interrupt,
        2 => StopSignal::Hangup,
        _ => StopSignal::Terminate,
    };
    if let Some(on) = ON_STOP.get() {
        on(signal);
    }
    1
}

/// From now on Ctrl-C, Ctrl-Break, closing the console, logoff and shutdown are handed to `on`
/// (on the thread the system runs console handlers on) instead of ending this process.
pub(crate) fn on_stop_signals(on: Box<dyn Fn(StopSignal) + Send + Sync>) -> io::Result<()> {
    if ON_STOP.set(on).is_err() {
        return Err(io::Error::other("stop signals are already handled"));
    }
    // SAFETY: `stop_handler` has the handler routine's signature and lives for the program.
    check(unsafe { SetConsoleCtrlHandler(Some(stop_handler), 1) })
}

/// The trees of its own are job objects that end when coretune's last handle to them closes
/// (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`), that is when coretune exits: nothing to do first.
pub(crate) fn stop_everything() -> usize {
    0
}

/// A started program's process tree: its job object, and its own handle.
#[derive(Debug)]
pub(crate) struct ChildTree {
    job: Handle,
    process: Handle,
}

impl ChildTree {
    /// Takes charge of `child`, started suspended by [`prepare_child`]: into a job object (which
    /// ends with coretune for [`Tree::Own`]), onto `cpus`, then running.
    pub(crate) fn adopt(
        child: &Child,
        cpus: Option<&CpuSet>,
        tree: Tree,
        _prepared: Prepared,
    ) -> io::Result<Self> {
        let process = duplicate(child.as_raw_handle() as HANDLE)?;
        // SAFETY: no security attributes and no name (both null): an anonymous job.
        let job = Handle::new(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
        if tree == Tree::Own {
            let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            // SAFETY: `job` is a valid job handle; `limits` is an initialised structure of the
            // class's type and size, only read.
            check(unsafe {
                SetInformationJobObject(
                    job.raw(),
                    JobObjectExtendedLimitInformation,
                    (&raw const limits).cast(),
                    std::mem::size_of_val(&limits) as u32,
                )
            })?;
        }
        // SAFETY: both handles are valid (the process handle has the access a child handle
        // has, PROCESS_ALL_ACCESS, duplicated with the same access).
        check(unsafe { AssignProcessToJobObject(job.raw(), process.raw()) })?;
        let threads = thread_list(child.id())?;
        if let (Some(cpus), Some(&main)) = (cpus, threads.first()) {
            place_suspended(child.id(), main, cpus)?;
        }
        for tid in threads {
            let thread = open_thread(tid, THREAD_SUSPEND_RESUME)?;
            // SAFETY: `thread` is valid with THREAD_SUSPEND_RESUME. The call returns the previous
            // suspend count, or u32::MAX on failure.
            if unsafe { ResumeThread(thread.raw()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Self { job, process })
    }

    /// A job object holds every process the program starts, daemons included.
    /// Programs are not timed from their `exec` here: from before they are started.
    pub(crate) fn exec_ns(&self) -> Option<u64> {
        None
    }

    pub(crate) fn catches_daemons(&self) -> bool {
        true
    }

    /// Ends every process of the job (exit code 1).
    pub(crate) fn kill(&self) -> io::Result<()> {
        // SAFETY: `self.job` is a valid job handle with JOB_OBJECT_TERMINATE (a creator's handle
        // has all access).
        check(unsafe { TerminateJobObject(self.job.raw(), 1) })
    }

    /// Nothing to reap: a job's processes are not this process's children, and the job's
    /// accounting ([`Self::usage`]) already counts every one of them.
    pub(crate) fn reap_orphans(&self) -> Option<ResourceUsage> {
        None
    }

    /// Windows has no SIGTERM to ask a tree to end with: the caller ends it with [`Self::kill`].
    pub(crate) fn terminate(&self) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "Windows has no SIGTERM: the job is ended instead",
        ))
    }

    /// The processes of the job still running (a process leaves the job's list when it ends).
    pub(crate) fn members(&self) -> io::Result<Vec<TreeMember>> {
        // The list's header (two u32: one usize on 64-bit Windows, two on 32-bit) and room for
        // the ids after it; grown when the job holds more processes than the room.
        let skip = std::mem::offset_of!(JOBOBJECT_BASIC_PROCESS_ID_LIST, ProcessIdList)
            / std::mem::size_of::<usize>();
        let mut room = 64usize;
        loop {
            let mut buffer = vec![0usize; skip + room];
            let header = buffer
                .as_mut_ptr()
                .cast::<JOBOBJECT_BASIC_PROCESS_ID_LIST>();
            let bytes = u32::try_from(std::mem::size_of_val(buffer.as_slice()))
                .map_err(|_| io::Error::other("job process list too large"))?;
            // SAFETY: `self.job` is a valid job handle with JOB_OBJECT_QUERY; `buffer` is
            // writable, `bytes` long and aligned for the structure (its fields are u32, u32,
            // then usize ids: the header is `skip` usizes); the returned length is not asked
            // for.
            let ok = check(unsafe {
                QueryInformationJobObject(
                    self.job.raw(),
                    JobObjectBasicProcessIdList,
                    header.cast(),
                    bytes,
                    std::ptr::null_mut(),
                )
            });
            // SAFETY: the header was initialised (zeroed) above and written by the call.
            let (assigned, listed) = unsafe {
                (
                    (*header).NumberOfAssignedProcesses as usize,
                    (*header).NumberOfProcessIdsInList as usize,
                )
            };
            match ok {
                Ok(()) => {
                    return Ok(buffer[skip..skip + listed.min(room)]
                        .iter()
                        .filter_map(|&id| u32::try_from(id).ok())
                        .map(|pid| TreeMember { pid, exited: false })
                        .collect());
                }
                // ERROR_MORE_DATA: room for all of them (and a few started meanwhile), again.
                Err(_) if assigned > room => room = assigned + 16,
                Err(e) => return Err(e),
            }
        }
    }

    /// The CPU time of the whole tree (the job's accounting, ended processes included) and the
    /// program's peak working set; `None` where the job keeps no account (Wine). Windows counts
    /// context switches per thread and forgets them with the thread: absent.
    pub(crate) fn usage(&self) -> Option<ResourceUsage> {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: `self.job` is a valid job handle with JOB_OBJECT_QUERY; `info` is a writable
        // structure of the class's type and size; the returned length is not asked for.
        let job = check(unsafe {
            QueryInformationJobObject(
                self.job.raw(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                std::mem::size_of_val(&info) as u32,
                std::ptr::null_mut(),
            )
        })
        .ok()
        .filter(|()| info.TotalProcesses > 0 && info.TotalUserTime + info.TotalKernelTime > 0)
        .map(|()| {
            (
                hundred_ns(u64::try_from(info.TotalUserTime).unwrap_or(0)),
                hundred_ns(u64::try_from(info.TotalKernelTime).unwrap_or(0)),
            )
        });
        // Without the job's account (Wine keeps none) the tree's time is not known: another
        // process's own times under Wine are not trustworthy either (a 300 ms spin read as
        // 10 ms of user time), so nothing is said.
        let (user, system) = job?;
        Some(ResourceUsage {
            user,
            system,
            voluntary_ctx_switches: None,
            involuntary_ctx_switches: None,
            max_rss_bytes: peak_working_set(self.process.raw()).unwrap_or(0),
        })
    }

    /// Waits for `child` (this tree's program) to end, blocked in `WaitForSingleObject` on its
    /// process handle: its status, or `None` when `timeout` passed first (it still runs).
    /// Nothing wakes coretune while the program runs.
    pub(crate) fn wait(
        &self,
        child: &mut Child,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<Option<ExitStatus>> {
        let Some(timeout) = timeout else {
            return child.wait().map(Some);
        };
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            // Rounded up to the next millisecond; INFINITE (u32::MAX) is never asked for, at
            // most 49 days a call, then again.
            let ms = u32::try_from(left.as_millis() + 1).unwrap_or(u32::MAX - 1);
            // SAFETY: `self.process` is a valid process handle with SYNCHRONIZE (a duplicate of
            // the child's, which has all access); the timeout is a plain integer.
            match unsafe { WaitForSingleObject(self.process.raw(), ms) } {
                WAIT_OBJECT_0 | WAIT_TIMEOUT => {}
                _ => return Err(io::Error::last_os_error()),
            }
        }
    }
}

/// This process's own copy of `handle`, with the same access.
fn duplicate(handle: HANDLE) -> io::Result<Handle> {
    let mut out: HANDLE = std::ptr::null_mut();
    // SAFETY: `handle` is a valid handle of this process (the child's, owned by `Child` for the
    // duration of the call); source and target are this process (pseudo-handles); `out` is
    // writable.
    check(unsafe {
        DuplicateHandle(
            GetCurrentProcess(),
            handle,
            GetCurrentProcess(),
            &mut out,
            0,
            0,
            DUPLICATE_SAME_ACCESS,
        )
    })?;
    Handle::new(out)
}

/// User and kernel time of the process behind `process` (a handle or pseudo-handle).
pub(super) fn process_times_raw(
    process: HANDLE,
) -> Option<(std::time::Duration, std::time::Duration)> {
    let mut t = [FILETIME::default(); 4];
    let [c, e, k, u] = &mut t;
    // SAFETY: `process` is valid with PROCESS_QUERY_LIMITED_INFORMATION (or the current process's
    // pseudo-handle); the four FILETIMEs are writable.
    check(unsafe { GetProcessTimes(process, c, e, k, u) }).ok()?;
    Some((filetime(t[3]), filetime(t[2])))
}

/// The peak working set of a process, in bytes.
pub(super) fn peak_working_set(process: HANDLE) -> Option<u64> {
    let mut counters = PROCESS_MEMORY_COUNTERS {
        cb: std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32,
        ..PROCESS_MEMORY_COUNTERS::default()
    };
    // SAFETY: `process` is valid with PROCESS_QUERY_LIMITED_INFORMATION (or the current
    // process's pseudo-handle); `counters` is writable and `cb` is its size.
    check(unsafe { GetProcessMemoryInfo(process, &mut counters, counters.cb) }).ok()?;
    u64::try_from(counters.PeakWorkingSetSize).ok()
}

/// `cmd /C SCRIPT`, the script passed as written (`raw_arg`: cmd.exe does its own parsing, which
/// quoting for C programs would break).
pub(crate) fn shell_command(script: &str) -> Command {
    let mut cmd = Command::new("cmd");
    cmd.arg("/C").raw_arg(script);
    cmd
}

/// A name with a `/`, `\` or drive colon is a path; any other is looked up on `PATH`.
pub(crate) fn is_path(program: &str) -> bool {
    program.contains(['/', '\\', ':'])
}

/// The extensions a command may have (`PATHEXT`, `.COM;.EXE;.BAT;.CMD` when unset), lowercase.
fn path_extensions() -> Vec<String> {
    std::env::var("PATHEXT")
        .unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_owned())
        .split(';')
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// The files a command name may be in a directory of `PATH`: the name as given when it has an
/// extension, then the name with each extension of `PATHEXT`, as `cmd.exe` looks.
pub(crate) fn executable_candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if Path::new(name).extension().is_some() {
        out.push(dir.join(name));
    }
    out.extend(
        path_extensions()
            .into_iter()
            .map(|ext| dir.join(format!("{name}{ext}"))),
    );
    out
}

/// Whether `path` is a file with an executable extension (`PATHEXT`): Windows has no execute bit.
pub(crate) fn is_executable_file(path: &Path) -> bool {
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy().to_ascii_lowercase()));
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && extension.is_some_and(|e| path_extensions().contains(&e))
}

/// While a program runs, Ctrl-C and Ctrl-Break reach it directly (it shares the console);
/// coretune ignores them from now on, so that it waits for the program and reports how it ended.
pub(crate) fn forward_signals_to(_pid: u32) -> io::Result<()> {
    // SAFETY: no handler routine (None) with TRUE: the documented way to ignore Ctrl-C.
    check(unsafe { SetConsoleCtrlHandler(None, 1) })
}

/// Windows has no signals: no exit is one.
pub(crate) fn exit_signal(_status: ExitStatus) -> Option<i32> {
    None
}

/// Whether a program ended because Ctrl-C or Ctrl-Break was pressed (`STATUS_CONTROL_C_EXIT`).
pub(crate) fn stopped_by_request(status: ExitStatus) -> bool {
    status.code() == Some(STATUS_CONTROL_C_EXIT)
}
