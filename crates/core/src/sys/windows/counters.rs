//! Counters of this process and thread: CPU times (`GetProcessTimes`, `GetThreadTimes`), the peak
//! working set (`GetProcessMemoryInfo`), the current processor (`GetCurrentProcessorNumberEx`),
//! the thread id, and context switches: Windows counts them per thread (thread profiling),
//! without telling why a thread switched, so the process's voluntary/involuntary split stays
//! absent and each worker's own count is recorded.

use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Kernel::PROCESSOR_NUMBER;
use windows_sys::Win32::System::Performance::HardwareCounterProfiling::{
    DisableThreadProfiling, EnableThreadProfiling, PERFORMANCE_DATA, ReadThreadProfilingData,
};
use windows_sys::Win32::System::Threading::GetThreadTimes;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentProcessorNumberEx, GetCurrentThread, GetCurrentThreadId,
};

/// From winnt.h: `THREAD_PROFILING_FLAG_DISPATCH`, `READ_THREAD_PROFILING_FLAG_DISPATCHING`,
/// `PERFORMANCE_DATA_VERSION`.
const THREAD_PROFILING_FLAG_DISPATCH: u32 = 1;
const READ_THREAD_PROFILING_FLAG_DISPATCHING: u32 = 1;
const PERFORMANCE_DATA_VERSION: u32 = 1;

use super::child::{peak_working_set, process_times_raw};
use super::handle::{check, filetime};
use super::handle::{is_wine, ticks};
use crate::sys::error::SysError;
use crate::sys::types::{ResourceUsage, UsageOf};

/// This process's CPU times and peak working set. Its children's are read from their job
/// object instead (`ChildTree::usage`).
pub(crate) fn resource_usage(of: UsageOf) -> Result<ResourceUsage, SysError> {
    if of == UsageOf::Children {
        return Err(SysError::Unsupported {
            what: "resource usage of waited-for children (read from the job object instead)",
        });
    }
    // SAFETY: a pseudo-handle for this process; no resource is involved.
    let me = unsafe { GetCurrentProcess() };
    let (user, system) = process_times_raw(me).ok_or_else(|| SysError::Call {
        call: "GetProcessTimes",
        error: std::io::Error::last_os_error(),
    })?;
    Ok(ResourceUsage {
        user,
        system,
        voluntary_ctx_switches: None,
        involuntary_ctx_switches: None,
        max_rss_bytes: peak_working_set(me).unwrap_or(0),
    })
}

/// The processor the calling thread runs on, in hwloc's numbering (64 × group + number).
pub(crate) fn current_cpu() -> Result<usize, SysError> {
    let mut n = PROCESSOR_NUMBER::default();
    // SAFETY: `n` is a writable PROCESSOR_NUMBER; the call cannot fail.
    unsafe { GetCurrentProcessorNumberEx(&mut n) };
    Ok(usize::from(n.Group) * 64 + usize::from(n.Number))
}

/// The calling thread's id.
pub(crate) fn current_tid() -> Result<i32, SysError> {
    // SAFETY: no arguments.
    let tid = unsafe { GetCurrentThreadId() };
    i32::try_from(tid).map_err(|_| SysError::Unsupported {
        what: "thread ids above 2^31",
    })
}

/// CPU time the calling thread has used.
pub(crate) fn thread_cpu_time() -> Result<std::time::Duration, SysError> {
    let mut t = [FILETIME::default(); 4];
    let [c, e, k, u] = &mut t;
    // SAFETY: the calling thread's pseudo-handle; four writable FILETIMEs.
    check(unsafe { GetThreadTimes(GetCurrentThread(), c, e, k, u) }).map_err(|error| {
        SysError::Call {
            call: "GetThreadTimes",
            error,
        }
    })?;
    Ok(filetime(t[2]) + filetime(t[3]))
}

/// The working set cannot be reset to take a run's own peak: fails, so the caller reports the
/// process's lifetime peak and says so.
pub(crate) fn reset_peak_rss() -> Result<(), SysError> {
    Err(SysError::Unsupported {
        what: "resetting the peak working set",
    })
}

/// This process's peak working set, in bytes.
pub(crate) fn peak_rss_bytes() -> Result<u64, SysError> {
    // SAFETY: a pseudo-handle for this process.
    peak_working_set(unsafe { GetCurrentProcess() }).ok_or(SysError::Unsupported {
        what: "the peak working set",
    })
}

/// CPU time this process has used, in clock ticks of 10 ms.
pub(crate) fn own_cpu_ticks() -> Result<u64, SysError> {
    // SAFETY: a pseudo-handle for this process.
    let (user, system) =
        process_times_raw(unsafe { GetCurrentProcess() }).ok_or(SysError::Unsupported {
            what: "process CPU time",
        })?;
    let hundred_ns = (user + system).as_nanos() / 100;
    Ok(ticks(u64::try_from(hundred_ns).unwrap_or(u64::MAX)))
}

/// The calling thread's context switches since [`SwitchCounter::open`], from Windows' thread
/// profiling (`EnableThreadProfiling` with `THREAD_PROFILING_FLAG_DISPATCH`, Windows 7 and
/// later): a count per thread, voluntary and involuntary together.
#[derive(Debug)]
pub(crate) struct SwitchCounter {
    handle: HANDLE,
}

impl SwitchCounter {
    /// Starts counting on the calling thread.
    pub(crate) fn open() -> Result<Self, SysError> {
        if is_wine() {
            // Wine's EnableThreadProfiling is a stub that aborts the process.
            return Err(SysError::Unsupported {
                what: "counting a thread's context switches under Wine",
            });
        }
        let mut handle: HANDLE = std::ptr::null_mut();
        // SAFETY: the calling thread's pseudo-handle, the dispatch flag, no hardware counters;
        // `handle` is writable. Returns a Win32 error code (0 = success).
        let rc = unsafe {
            EnableThreadProfiling(
                GetCurrentThread(),
                THREAD_PROFILING_FLAG_DISPATCH,
                0,
                &mut handle,
            )
        };
        if rc != 0 || handle.is_null() {
            return Err(SysError::Call {
                call: "EnableThreadProfiling",
                error: std::io::Error::from_raw_os_error(rc as i32),
            });
        }
        Ok(Self { handle })
    }

    /// The context switches counted so far (read on the thread that opened it).
    pub(crate) fn read(&mut self) -> Result<u64, SysError> {
        let mut data = PERFORMANCE_DATA {
            Size: std::mem::size_of::<PERFORMANCE_DATA>() as u16,
            Version: PERFORMANCE_DATA_VERSION as u8,
            ..PERFORMANCE_DATA::default()
        };
        // SAFETY: `self.handle` came from EnableThreadProfiling and is still enabled; `data` is
        // writable with its size and version set, as the call requires.
        let rc = unsafe {
            ReadThreadProfilingData(
                self.handle,
                READ_THREAD_PROFILING_FLAG_DISPATCHING,
                &mut data,
            )
        };
        if rc != 0 {
            return Err(SysError::Call {
                call: "ReadThreadProfilingData",
                error: std::io::Error::from_raw_os_error(rc as i32),
            });
        }
        Ok(u64::from(data.ContextSwitchCount))
    }
}

impl Drop for SwitchCounter {
    fn drop(&mut self) {
        // SAFETY: `self.handle` came from EnableThreadProfiling and is disabled exactly once.
        unsafe {
            DisableThreadProfiling(self.handle);
        }
    }
}

/// Windows has no per-thread migration count: the caller records the count as unavailable.
pub(crate) fn thread_migrations() -> Result<u64, SysError> {
    Err(SysError::Unsupported {
        what: "counting CPU migrations",
    })
}
