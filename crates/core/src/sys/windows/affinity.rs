//! Group affinity of threads and processes: `SetThreadGroupAffinity`/`GetThreadGroupAffinity`,
//! `SetProcessAffinityMask`, `GetProcessGroupAffinity` and CPU sets
//! (`SetProcessDefaultCpuSets`, `GetSystemCpuSetInformation`): the real [`GroupCalls`]. Which
//! calls a CPU set needs is decided in `sys/groups.rs`; CPU `n` is bit `n % 64` of group `n / 64`,
//! hwloc's numbering of Windows CPUs.

use std::io;

use hwlocality::cpu::cpuset::CpuSet;
use windows_sys::Win32::Foundation::{ERROR_INSUFFICIENT_BUFFER, ERROR_INVALID_PARAMETER};
use windows_sys::Win32::System::SystemInformation::{
    GROUP_AFFINITY, GetSystemCpuSetInformation, SYSTEM_CPU_SET_INFORMATION,
};
use windows_sys::Win32::System::Threading::{
    GetActiveProcessorGroupCount, GetCurrentThread, GetProcessGroupAffinity,
    GetThreadGroupAffinity, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SET_INFORMATION,
    SetProcessAffinityMask, SetProcessDefaultCpuSets, SetThreadGroupAffinity,
    THREAD_QUERY_INFORMATION, THREAD_SET_INFORMATION,
};

use super::handle::{Handle, check, is_wine, open_process, open_thread};
use crate::sys::cpu_list::{set_from_indexes, set_to_vec};
use crate::sys::groups::{GroupCalls, GroupMask, largest, place_new_process};

/// `cpus` as one mask per processor group, in hwloc's numbering.
fn group_masks(cpus: &CpuSet) -> Vec<GroupMask> {
    crate::sys::groups::group_masks(&set_to_vec(cpus))
}

fn thread_id(tid: i32) -> io::Result<u32> {
    u32::try_from(tid).map_err(|_| io::Error::from_raw_os_error(ERROR_INVALID_PARAMETER as i32))
}

/// A thread's handle for `access` (the calling thread's pseudo-handle for tid 0).
enum Thread {
    Current,
    Opened(Handle),
}

impl Thread {
    fn open(tid: i32, access: u32) -> io::Result<Self> {
        if tid == 0 {
            return Ok(Thread::Current);
        }
        open_thread(thread_id(tid)?, access).map(Thread::Opened)
    }

    fn raw(&self) -> windows_sys::Win32::Foundation::HANDLE {
        match self {
            // SAFETY: returns a pseudo-handle for the calling thread; no resource is involved.
            Thread::Current => unsafe { GetCurrentThread() },
            Thread::Opened(h) => h.raw(),
        }
    }
}

fn set_thread_group_affinity(thread: &Thread, m: GroupMask) -> io::Result<()> {
    let mask = usize::try_from(m.mask)
        .map_err(|_| io::Error::other("a 64-bit mask on a 32-bit Windows"))?;
    let affinity = GROUP_AFFINITY {
        Mask: mask,
        Group: m.group,
        Reserved: [0; 3],
    };
    // SAFETY: `thread` is a valid handle with THREAD_SET_INFORMATION (or the calling thread's
    // pseudo-handle); `affinity` is an initialised GROUP_AFFINITY with its reserved
    // words zero, only read; no previous affinity is asked for (null).
    check(unsafe { SetThreadGroupAffinity(thread.raw(), &affinity, std::ptr::null_mut()) })
}

/// Binds thread `tid` (0 = the calling thread) to `cpus`. A thread runs in one processor group:
/// a set crossing groups binds it to its largest part (the lowest group on a tie), as the pool's
/// workers are.
pub(crate) fn set_task_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    let Some(part) = largest(&group_masks(cpus)) else {
        return Err(io::Error::from_raw_os_error(ERROR_INVALID_PARAMETER as i32));
    };
    let thread = Thread::open(tid, THREAD_SET_INFORMATION | THREAD_QUERY_INFORMATION)?;
    set_thread_group_affinity(&thread, part)
}

/// The CPUs thread `tid` (0 = the calling thread) may run on: its group and mask.
pub(crate) fn task_affinity(tid: i32) -> io::Result<CpuSet> {
    let thread = Thread::open(tid, THREAD_QUERY_INFORMATION)?;
    let mut affinity = GROUP_AFFINITY::default();
    // SAFETY: `thread` is a valid handle with THREAD_QUERY_INFORMATION (or the pseudo-handle of
    // the calling thread); `affinity` is a writable GROUP_AFFINITY.
    check(unsafe { GetThreadGroupAffinity(thread.raw(), &mut affinity) })?;
    let part = GroupMask {
        group: affinity.Group,
        mask: affinity.Mask as u64,
    };
    Ok(set_from_indexes(part.cpus()))
}

/// Whether `error` says the thread no longer exists: `OpenThread` on a thread id that names no
/// thread fails with `ERROR_INVALID_PARAMETER`.
pub(crate) fn is_no_such_task(error: &io::Error) -> bool {
    error.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32)
}

/// Puts threads `tids` of process `pid` on `cpus` ([`crate::sys::groups::rebind_threads`]): each
/// thread with the set (or, across groups, the group part) it got and the outcome.
///
/// # Errors
///
/// A process-wide call that failed (the process is gone, or access is denied).
pub(crate) fn rebind_threads(
    pid: i32,
    tids: &[i32],
    cpus: &CpuSet,
) -> io::Result<Vec<(i32, CpuSet, io::Result<()>)>> {
    let pid = thread_id(pid)?;
    let ids: Vec<u32> = tids.iter().filter_map(|&t| u32::try_from(t).ok()).collect();
    let out = crate::sys::groups::rebind_threads(&mut RealCalls, pid, &ids, &group_masks(cpus))?;
    Ok(out
        .into_iter()
        .map(|(tid, part, result)| {
            let set = set_from_indexes(part.cpus());
            (i32::try_from(tid).unwrap_or(i32::MAX), set, result)
        })
        .collect())
}

/// Puts a process started suspended on `cpus` before its first thread `main` runs
/// ([`place_new_process`]).
pub(super) fn place_suspended(pid: u32, main: u32, cpus: &CpuSet) -> io::Result<()> {
    place_new_process(&mut RealCalls, pid, main, &group_masks(cpus))
}

/// The groups the threads of a process are in, the primary group first
/// (`GetProcessGroupAffinity`). Where the call fails on a machine of one group (Wine's is a stub
/// that fails), that group.
pub(super) fn process_groups_of(
    process: windows_sys::Win32::Foundation::HANDLE,
) -> io::Result<Vec<u16>> {
    let mut groups = vec![0u16; 64];
    let mut count = u16::try_from(groups.len()).unwrap_or(u16::MAX);
    // SAFETY: `process` is valid with PROCESS_QUERY_LIMITED_INFORMATION (or a pseudo-handle);
    // `groups` has room for `count` entries, which the call writes at most (it fails with
    // ERROR_INSUFFICIENT_BUFFER otherwise, reported as an error).
    match check(unsafe { GetProcessGroupAffinity(process, &mut count, groups.as_mut_ptr()) }) {
        Ok(()) => {
            groups.truncate(usize::from(count));
            Ok(groups)
        }
        // SAFETY: no arguments.
        Err(_) if unsafe { GetActiveProcessorGroupCount() } == 1 => Ok(vec![0]),
        Err(e) => Err(e),
    }
}

/// The Windows calls themselves.
struct RealCalls;

impl GroupCalls for RealCalls {
    fn process_groups(&mut self, pid: u32) -> io::Result<Vec<u16>> {
        let process = open_process(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
        process_groups_of(process.raw())
    }

    fn set_process_mask(&mut self, pid: u32, mask: u64) -> io::Result<()> {
        let process = open_process(
            pid,
            PROCESS_SET_INFORMATION | PROCESS_QUERY_LIMITED_INFORMATION,
        )?;
        let mask = usize::try_from(mask)
            .map_err(|_| io::Error::other("a 64-bit mask on a 32-bit Windows"))?;
        // SAFETY: `process` is valid with PROCESS_SET_INFORMATION; the mask is a plain integer.
        check(unsafe { SetProcessAffinityMask(process.raw(), mask) })
    }

    fn set_thread_group(&mut self, tid: u32, affinity: GroupMask) -> io::Result<()> {
        let thread = open_thread(tid, THREAD_SET_INFORMATION | THREAD_QUERY_INFORMATION)?;
        set_thread_group_affinity(&Thread::Opened(thread), affinity)
    }

    fn set_process_cpu_sets(&mut self, pid: u32, masks: &[GroupMask]) -> io::Result<()> {
        if is_wine() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "Wine has no CPU sets",
            ));
        }
        let ids: Vec<u32> = cpu_sets()?
            .into_iter()
            .filter(|c| {
                masks
                    .iter()
                    .any(|m| m.group == c.group && m.mask & (1 << c.index) != 0)
            })
            .map(|c| c.id)
            .collect();
        let process = open_process(
            pid,
            PROCESS_SET_INFORMATION | PROCESS_QUERY_LIMITED_INFORMATION,
        )?;
        let count = u32::try_from(ids.len()).map_err(io::Error::other)?;
        // SAFETY: `process` is valid with PROCESS_SET_INFORMATION; `ids` holds `count` CPU set
        // ids, only read.
        check(unsafe { SetProcessDefaultCpuSets(process.raw(), ids.as_ptr(), count) })
    }
}

/// One CPU set of the system: its id and the logical processor it is.
#[derive(Clone, Copy, Debug)]
pub(super) struct CpuSetEntry {
    pub(super) id: u32,
    pub(super) group: u16,
    pub(super) index: u8,
}

/// Every CPU set of the system (`GetSystemCpuSetInformation`, Windows 10 and later).
pub(super) fn cpu_sets() -> io::Result<Vec<CpuSetEntry>> {
    let mut len = 0u32;
    // SAFETY: asking for the size: a null buffer of length 0, the needed length written to `len`.
    let ok = unsafe {
        GetSystemCpuSetInformation(std::ptr::null_mut(), 0, &mut len, std::ptr::null_mut(), 0)
    };
    if ok == 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(ERROR_INSUFFICIENT_BUFFER as i32) {
            return Err(err);
        }
    }
    // u64 words: the entries' alignment (they hold a u64).
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: `buf` is a writable, 8-aligned buffer of at least `len` bytes, as the call asked.
    check(unsafe {
        GetSystemCpuSetInformation(
            buf.as_mut_ptr().cast::<SYSTEM_CPU_SET_INFORMATION>(),
            len,
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    })?;
    let bytes = (len as usize).min(buf.len() * 8);
    let mut out = Vec::new();
    let mut offset = 0usize;
    let head = std::mem::size_of::<SYSTEM_CPU_SET_INFORMATION>();
    while offset + head <= bytes {
        // SAFETY: the call wrote `bytes` bytes of consecutive entries, each `Size` bytes long and
        // starting with its `Size`; `offset` is the start of one (the loop adds each entry's
        // size, and stops at a zero size) and a whole header fits before `bytes`.
        // `read_unaligned`: an entry's size need not keep the next one aligned.
        let entry = unsafe {
            std::ptr::read_unaligned(
                buf.as_ptr()
                    .cast::<u8>()
                    .add(offset)
                    .cast::<SYSTEM_CPU_SET_INFORMATION>(),
            )
        };
        if entry.Size == 0 {
            break;
        }
        // Type 0 = CpuSetInformation, the only kind there is.
        if entry.Type == 0 {
            // SAFETY: for `CpuSetInformation` the union holds the `CpuSet` variant.
            let c = unsafe { entry.Anonymous.CpuSet };
            out.push(CpuSetEntry {
                id: c.Id,
                group: c.Group,
                index: c.LogicalProcessorIndex,
            });
        }
        offset += entry.Size as usize;
    }
    Ok(out)
}
