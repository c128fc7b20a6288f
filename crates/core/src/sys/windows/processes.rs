//! Processes and threads: ToolHelp snapshots (`CreateToolhelp32Snapshot`) for the lists, a thread's
//! creation time (`GetThreadTimes`), a process's state (`GetExitCodeProcess`) and executable
//! (`QueryFullProcessImageNameW`). Windows does not tell the CPU another process's thread last
//! ran on, nor count its migrations: those fields stay `None` (`coretune watch` says so).

use std::io;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{FILETIME, STILL_ACTIVE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
    TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcessId, GetExitCodeProcess, GetThreadTimes, PROCESS_NAME_WIN32,
    PROCESS_QUERY_LIMITED_INFORMATION, QueryFullProcessImageNameW,
    THREAD_QUERY_LIMITED_INFORMATION,
};

use super::handle::{Handle, check, from_wide, open_process, open_thread};
use crate::sys::error::SysError;
use crate::sys::types::{ProcessInfo, ThreadInfo};

fn snapshot_error(error: io::Error) -> SysError {
    SysError::Call {
        call: "CreateToolhelp32Snapshot",
        error,
    }
}

/// Every process with its parent.
pub(crate) fn processes(_proc_dir: &Path) -> Result<Vec<ProcessInfo>, SysError> {
    // SAFETY: plain flags in, a snapshot handle (or INVALID_HANDLE_VALUE) out.
    let snap = Handle::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) })
        .map_err(snapshot_error)?;
    let mut entry = PROCESSENTRY32W {
        dwSize: std::mem::size_of::<PROCESSENTRY32W>() as u32,
        ..PROCESSENTRY32W::default()
    };
    let mut out = Vec::new();
    // SAFETY: `snap` is a process snapshot; `entry` is writable with `dwSize` set, as the
    // ToolHelp calls require.
    let mut ok = unsafe { Process32FirstW(snap.raw(), &mut entry) };
    while ok != 0 {
        if let (Ok(pid), Ok(ppid)) = (
            i32::try_from(entry.th32ProcessID),
            i32::try_from(entry.th32ParentProcessID),
        ) {
            out.push(ProcessInfo {
                pid,
                ppid,
                forked_only: false,
                group: 0,
                session: 0,
            });
        }
        // SAFETY: as above.
        ok = unsafe { Process32NextW(snap.raw(), &mut entry) };
    }
    Ok(out)
}

/// The ids of every process, in increasing order.
pub(crate) fn pids(proc_dir: &Path) -> Result<Vec<i32>, SysError> {
    let mut pids: Vec<i32> = processes(proc_dir)?.into_iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    Ok(pids)
}

/// The thread ids of process `pid`, in the snapshot's order (creation order on Windows as far
/// as it goes; callers that need it order by [`ThreadInfo::started`]).
pub(super) fn thread_list(pid: u32) -> io::Result<Vec<u32>> {
    // SAFETY: plain flags in, a snapshot handle (or INVALID_HANDLE_VALUE) out.
    let snap = Handle::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
    let mut entry = THREADENTRY32 {
        dwSize: std::mem::size_of::<THREADENTRY32>() as u32,
        ..THREADENTRY32::default()
    };
    let mut out = Vec::new();
    // SAFETY: `snap` is a thread snapshot; `entry` is writable with `dwSize` set.
    let mut ok = unsafe { Thread32First(snap.raw(), &mut entry) };
    while ok != 0 {
        if entry.th32OwnerProcessID == pid {
            out.push(entry.th32ThreadID);
        }
        // SAFETY: as above.
        ok = unsafe { Thread32Next(snap.raw(), &mut entry) };
    }
    Ok(out)
}

/// The thread ids of process `pid`, ascending.
///
/// # Errors
///
/// [`SysError::NoProcess`] when it has no thread (it does not exist).
pub(crate) fn thread_ids(_proc_dir: &Path, pid: i32) -> Result<Vec<i32>, SysError> {
    let id = u32::try_from(pid).map_err(|_| SysError::NoProcess { pid })?;
    let mut tids: Vec<i32> = thread_list(id)
        .map_err(snapshot_error)?
        .into_iter()
        .filter_map(|t| i32::try_from(t).ok())
        .collect();
    if tids.is_empty() {
        return Err(SysError::NoProcess { pid });
    }
    tids.sort_unstable();
    Ok(tids)
}

/// When thread `tid` was created, in 100 ns units since 1601 (`None` when it cannot be read).
fn created(tid: u32) -> Option<u64> {
    let thread = open_thread(tid, THREAD_QUERY_LIMITED_INFORMATION).ok()?;
    let mut times = [FILETIME::default(); 4];
    let [c, e, k, u] = &mut times;
    // SAFETY: `thread` is valid with THREAD_QUERY_LIMITED_INFORMATION; the four FILETIMEs are
    // writable.
    check(unsafe { GetThreadTimes(thread.raw(), c, e, k, u) }).ok()?;
    Some(u64::from(times[0].dwHighDateTime) << 32 | u64::from(times[0].dwLowDateTime))
}

/// The threads of process `pid`: their ids and creation times (in 100 ns units since 1601, in
/// [`ThreadInfo::started`]); Windows does not show another thread's current CPU from outside.
pub(crate) fn threads(proc_dir: &Path, pid: i32) -> Result<Vec<ThreadInfo>, SysError> {
    Ok(thread_ids(proc_dir, pid)?
        .into_iter()
        .map(|tid| ThreadInfo {
            tid,
            name: None,
            cpu: None,
            migrations: None,
            started: u32::try_from(tid).ok().and_then(created),
            cpu_ticks: None,
        })
        .collect())
}

/// The threads of this process.
pub(crate) fn own_threads() -> Result<Vec<ThreadInfo>, SysError> {
    // SAFETY: no arguments; returns this process's id.
    let pid = unsafe { GetCurrentProcessId() };
    threads(Path::new(""), i32::try_from(pid).unwrap_or(i32::MAX))
}

/// `R` while process `pid` runs, `X` once it has exited (`Z` is never reported: Windows keeps no
/// zombies, only handles to an ended process).
pub(crate) fn process_state(_proc_dir: &Path, pid: i32) -> Result<char, SysError> {
    let id = u32::try_from(pid).map_err(|_| SysError::NoProcess { pid })?;
    let process = open_process(id, PROCESS_QUERY_LIMITED_INFORMATION)
        .map_err(|_| SysError::NoProcess { pid })?;
    let mut code = 0u32;
    // SAFETY: `process` is valid with PROCESS_QUERY_LIMITED_INFORMATION; `code` is writable.
    check(unsafe { GetExitCodeProcess(process.raw(), &mut code) }).map_err(|error| {
        SysError::Call {
            call: "GetExitCodeProcess",
            error,
        }
    })?;
    Ok(if code == STILL_ACTIVE as u32 {
        'R'
    } else {
        'X'
    })
}

/// The executable of process `pid`, `None` where it cannot be read.
pub(crate) fn process_exe(_proc_dir: &Path, pid: i32) -> Option<PathBuf> {
    let process = open_process(u32::try_from(pid).ok()?, PROCESS_QUERY_LIMITED_INFORMATION).ok()?;
    let mut buf = vec![0u16; 32_768];
    let mut len = u32::try_from(buf.len()).ok()?;
    // SAFETY: `process` is valid with PROCESS_QUERY_LIMITED_INFORMATION; `buf` holds `len`
    // UTF-16 units, and the call writes at most that many and the new length.
    check(unsafe {
        QueryFullProcessImageNameW(
            process.raw(),
            PROCESS_NAME_WIN32,
            buf.as_mut_ptr(),
            &mut len,
        )
    })
    .ok()?;
    Some(PathBuf::from(from_wide(&buf[..len as usize])))
}
