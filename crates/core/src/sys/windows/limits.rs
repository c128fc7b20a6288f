//! The inputs of the CPU budget on Windows: the active processors of each group, this process's
//! affinity (`GetProcessGroupAffinity`, `GetProcessAffinityMask`), its CPU sets
//! (`GetProcessDefaultCpuSets`: Windows 10's soft restriction, what Process Lasso and
//! `SetProcessDefaultCpuSets` set) and the CPU rate cap of the job object it runs in
//! (`JobObjectCpuRateControlInformation`: how containers and `Start-Job` limits cap CPU time).
//! CPU `n` is bit `n % 64` of group `n / 64`, hwloc's numbering.

use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::ERROR_INSUFFICIENT_BUFFER;
use windows_sys::Win32::System::JobObjects::{
    JOB_OBJECT_CPU_RATE_CONTROL_ENABLE, JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP,
    JOB_OBJECT_CPU_RATE_CONTROL_MIN_MAX_RATE, JOBOBJECT_CPU_RATE_CONTROL_INFORMATION,
    JobObjectCpuRateControlInformation, QueryInformationJobObject,
};
use windows_sys::Win32::System::Threading::GetActiveProcessorGroupCount;
use windows_sys::Win32::System::Threading::{
    GetActiveProcessorCount, GetCurrentProcess, GetProcessAffinityMask, GetProcessDefaultCpuSets,
};

use super::affinity::cpu_sets;
use super::handle::{check, is_wine};
use crate::sys::error::SysError;
use crate::sys::groups::GroupMask;
use crate::sys::types::{CgroupCpus, CgroupLimits, CgroupQuota};

/// What the budget calls the restrictions on this system.
pub(crate) const LIMIT_NAMES: crate::sys::types::LimitNames = crate::sys::types::LimitNames {
    cpuset: "CPU sets",
    quota: "job CPU rate cap",
    no_quota: "no job CPU rate cap",
};

fn call(call: &'static str) -> impl Fn(std::io::Error) -> SysError {
    move |error| SysError::Call { call, error }
}

/// The active processors of group `group`: Windows numbers them from 0 within the group.
fn group_cpus(group: u16) -> impl Iterator<Item = usize> {
    // SAFETY: a plain group number in, a count out.
    let n = unsafe { GetActiveProcessorCount(group) } as usize;
    (0..n.min(64)).map(move |b| usize::from(group) * 64 + b)
}

/// Every active processor of every group.
pub(crate) fn online_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    // SAFETY: no arguments.
    let groups = unsafe { GetActiveProcessorGroupCount() };
    Ok((0..groups).flat_map(group_cpus).collect())
}

/// The processors this process may run on: its mask in its group, or every active processor of
/// each of its groups once its threads span several (Windows then has no process mask).
pub(crate) fn allowed_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    // SAFETY: a pseudo-handle for this process.
    let me = unsafe { GetCurrentProcess() };
    let groups = super::affinity::process_groups_of(me).map_err(call("GetProcessGroupAffinity"))?;
    if let [group] = groups[..] {
        let (mut process, mut system) = (0usize, 0usize);
        // SAFETY: both outputs are writable.
        check(unsafe { GetProcessAffinityMask(me, &mut process, &mut system) })
            .map_err(call("GetProcessAffinityMask"))?;
        return Ok(GroupMask {
            group,
            mask: process as u64,
        }
        .cpus()
        .collect());
    }
    Ok(groups.into_iter().flat_map(group_cpus).collect())
}

/// Windows isolates no CPUs from its scheduler the way `isolcpus=` does.
pub(crate) fn isolated_cpus(_root: &Path) -> Result<Vec<usize>, SysError> {
    Ok(Vec::new())
}

/// This process's CPU sets (when any are set: none means every processor) and its job's CPU rate
/// cap (when it is in a job that has one), in the shape of cgroup limits: the sets as a cpuset,
/// the cap as a quota of `rate × processors` per 10,000 (the rate is in hundredths of a percent
/// of the whole machine).
pub(crate) fn cgroup_limits(root: &Path) -> Result<CgroupLimits, SysError> {
    Ok(CgroupLimits {
        cpuset: process_cpu_sets()?,
        quotas: job_cap(root).into_iter().collect(),
    })
}

fn process_cpu_sets() -> Result<Option<CgroupCpus>, SysError> {
    if is_wine() {
        // Wine has no CPU sets (its calls are stubs that abort).
        return Ok(None);
    }
    let mut needed = 0u32;
    // SAFETY: a pseudo-handle for this process; asking for the count (null array of 0 ids).
    let ok = unsafe {
        GetProcessDefaultCpuSets(GetCurrentProcess(), std::ptr::null_mut(), 0, &mut needed)
    };
    if ok != 0 && needed == 0 {
        return Ok(None);
    }
    if ok == 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(ERROR_INSUFFICIENT_BUFFER as i32) {
            return Err(call("GetProcessDefaultCpuSets")(err));
        }
    }
    let mut ids = vec![0u32; needed as usize];
    // SAFETY: `ids` has room for `needed` ids, which the call writes at most.
    check(unsafe {
        GetProcessDefaultCpuSets(GetCurrentProcess(), ids.as_mut_ptr(), needed, &mut needed)
    })
    .map_err(call("GetProcessDefaultCpuSets"))?;
    ids.truncate(needed as usize);
    let all = cpu_sets().map_err(call("GetSystemCpuSetInformation"))?;
    let mut cpus: Vec<usize> = all
        .iter()
        .filter(|c| ids.contains(&c.id))
        .map(|c| usize::from(c.group) * 64 + usize::from(c.index))
        .collect();
    cpus.sort_unstable();
    Ok(Some(CgroupCpus {
        cpus,
        file: PathBuf::from("GetProcessDefaultCpuSets"),
    }))
}

fn job_cap(_root: &Path) -> Option<CgroupQuota> {
    let mut info = JOBOBJECT_CPU_RATE_CONTROL_INFORMATION::default();
    // SAFETY: a null job handle means the job of the calling process; `info` is a writable
    // structure of the class's type and size. Outside a job the call fails: no cap.
    check(unsafe {
        QueryInformationJobObject(
            std::ptr::null_mut(),
            JobObjectCpuRateControlInformation,
            (&raw mut info).cast(),
            std::mem::size_of_val(&info) as u32,
            std::ptr::null_mut(),
        )
    })
    .ok()?;
    let flags = info.ControlFlags;
    if flags & JOB_OBJECT_CPU_RATE_CONTROL_ENABLE == 0 {
        return None;
    }
    let rate = if flags & JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP != 0 {
        // SAFETY: with HARD_CAP the union holds `CpuRate`.
        unsafe { info.Anonymous.CpuRate }
    } else if flags & JOB_OBJECT_CPU_RATE_CONTROL_MIN_MAX_RATE != 0 {
        // SAFETY: with MIN_MAX_RATE the union holds the min/max pair.
        u32::from(unsafe { info.Anonymous.Anonymous.MaxRate })
    } else {
        // A weight shares the CPU, it does not cap it.
        return None;
    };
    let processors = u64::try_from(online_cpus(Path::new("")).ok()?.len()).ok()?;
    Some(CgroupQuota {
        quota_us: u64::from(rate) * processors,
        period_us: 10_000,
        file: PathBuf::from("JobObjectCpuRateControlInformation"),
    })
}
