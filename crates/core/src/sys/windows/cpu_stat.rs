//! Time each processor spent idle, in the kernel and in user code:
//! `NtQuerySystemInformation(SystemProcessorPerformanceInformation)`, which answers for the
//! processor group of the calling thread. With several groups, one short-lived thread per group,
//! moved into it, asks for that group.

use std::collections::BTreeMap;
use std::path::Path;

use windows_sys::Wdk::System::SystemInformation::{
    NtQuerySystemInformation, SystemProcessorPerformanceInformation,
};
use windows_sys::Win32::System::Threading::GetActiveProcessorCount;
use windows_sys::Win32::System::Threading::GetActiveProcessorGroupCount;
use windows_sys::Win32::System::WindowsProgramming::SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION;

use super::handle::ticks;
use crate::sys::error::SysError;
use crate::sys::types::{CpuStat, CpuTicks};

/// Per-processor times of the calling thread's group, by number within the group.
fn this_group() -> Result<Vec<SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION>, SysError> {
    let mut info = vec![SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION::default(); 64];
    let mut len = 0u32;
    let size = std::mem::size_of_val(info.as_slice());
    // SAFETY: `info` is a writable array of `size` bytes (64 entries: a group's most); the call
    // writes at most that and the length it wrote.
    let status = unsafe {
        NtQuerySystemInformation(
            SystemProcessorPerformanceInformation,
            info.as_mut_ptr().cast(),
            u32::try_from(size).unwrap_or(u32::MAX),
            &mut len,
        )
    };
    if status < 0 {
        return Err(SysError::Call {
            call: "NtQuerySystemInformation(SystemProcessorPerformanceInformation)",
            error: std::io::Error::other(format!("NTSTATUS {status:#x}")),
        });
    }
    info.truncate(len as usize / std::mem::size_of::<SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION>());
    Ok(info)
}

/// One processor's times as the ticks of 10 ms Linux's `/proc/stat` uses. Windows' kernel time
/// includes the idle time; it does not split out interrupts, I/O wait, nice or steal here.
fn cpu_ticks(p: &SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION) -> CpuTicks {
    let t = |n: i64| ticks(u64::try_from(n).unwrap_or(0));
    CpuTicks {
        user: t(p.UserTime),
        nice: 0,
        system: t(p.KernelTime.saturating_sub(p.IdleTime)),
        idle: t(p.IdleTime),
        iowait: None,
        irq: None,
        softirq: None,
        steal: None,
    }
}

/// Every processor's times, by hwloc's number (64 × group + number), and their sum.
pub(crate) fn cpu_stat(_proc_dir: &Path) -> Result<CpuStat, SysError> {
    // SAFETY: no arguments.
    let groups = unsafe { GetActiveProcessorGroupCount() };
    let mut per_cpu = BTreeMap::new();
    if groups <= 1 {
        for (i, p) in this_group()?.iter().enumerate() {
            per_cpu.insert(i, cpu_ticks(p));
        }
    } else {
        for group in 0..groups {
            // SAFETY: a plain group number in, its active processor count out.
            let active = unsafe { GetActiveProcessorCount(group) } as usize;
            let infos = std::thread::scope(|s| {
                s.spawn(move || {
                    // Windows numbers a group's active processors from 0.
                    let cpus = crate::sys::cpu_list::set_from_indexes(
                        (0..active.min(64)).map(|b| usize::from(group) * 64 + b),
                    );
                    super::affinity::set_task_affinity(0, &cpus).map_err(|error| {
                        SysError::Call {
                            call: "SetThreadGroupAffinity",
                            error,
                        }
                    })?;
                    this_group()
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(SysError::Unsupported {
                        what: "per-processor times (the reading thread panicked)",
                    })
                })
            })?;
            for (i, p) in infos.iter().enumerate() {
                per_cpu.insert(usize::from(group) * 64 + i, cpu_ticks(p));
            }
        }
    }
    let mut total = CpuTicks::default();
    for t in per_cpu.values() {
        total.user += t.user;
        total.system += t.system;
        total.idle += t.idle;
    }
    Ok(CpuStat {
        total: Some(total),
        per_cpu,
    })
}
