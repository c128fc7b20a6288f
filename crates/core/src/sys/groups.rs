//! Windows processor groups as the group-affinity calls see them: a CPU set as one mask per
//! group in hwloc's numbering of Windows CPUs (CPU `n` is bit `n % 64` of group `n / 64`,
//! `topology-windows.c`), and which calls put a new process or running threads on such a set.
//! Decided here on every OS (so tested on Linux through a recording [`GroupCalls`]), made by
//! `windows/affinity.rs`. Which group each CPU of *another* machine would be in is
//! `crate::topology::groups`' model. Standard library only.

use std::fmt;
use std::io;

/// The most logical processors in one group (`MAXIMUM_PROC_PER_GROUP`).
pub const GROUP_SIZE: usize = 64;

/// Part of a CPU set in one processor group: the group and the set's bits in it, as
/// `SetThreadGroupAffinity` takes them (`GROUP_AFFINITY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupMask {
    /// The group's number.
    pub group: u16,
    /// Bit `i` = the group's logical processor `i`.
    pub mask: u64,
}

impl GroupMask {
    /// Its CPUs in hwloc's numbering of Windows CPUs (64 × group + bit), ascending.
    pub fn cpus(self) -> impl Iterator<Item = usize> {
        let base = usize::from(self.group) * GROUP_SIZE;
        (0..GROUP_SIZE)
            .filter(move |b| self.mask & (1 << b) != 0)
            .map(move |b| base + b)
    }
}

impl fmt::Display for GroupMask {
    /// `G:HEX`, as coretune's `win:` masks write one group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{:X}", self.group, self.mask)
    }
}

/// `cpus` (OS indexes) as one mask per group, by group number, in hwloc's numbering of Windows
/// CPUs; a CPU past the last group Windows can number is left out.
// Called by the Windows platform layer; built and tested on every system.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn group_masks(cpus: &[usize]) -> Vec<GroupMask> {
    let mut masks: Vec<GroupMask> = Vec::new();
    for &cpu in cpus {
        let Some((group, bit)) = group_and_bit(cpu) else {
            continue;
        };
        match masks.iter_mut().find(|m| m.group == group) {
            Some(m) => m.mask |= 1 << bit,
            None => masks.push(GroupMask {
                group,
                mask: 1 << bit,
            }),
        }
    }
    masks.sort_by_key(|m| m.group);
    masks
}

/// The group and bit of CPU `cpu` in hwloc's numbering of Windows CPUs.
pub(crate) fn group_and_bit(cpu: usize) -> Option<(u16, u8)> {
    Some((
        u16::try_from(cpu / GROUP_SIZE).ok()?,
        u8::try_from(cpu % GROUP_SIZE).ok()?,
    ))
}

/// The Windows calls that put threads and processes on processor groups: the part of the
/// platform interface that [`place_new_process`] and [`rebind_threads`] use. The real calls are
/// in `windows/affinity.rs`; the tests record them.
// Called by the Windows platform layer; built and tested on every system.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) trait GroupCalls {
    /// The groups the threads of process `pid` are in; the first is its primary group
    /// (`GetProcessGroupAffinity`).
    fn process_groups(&mut self, pid: u32) -> io::Result<Vec<u16>>;
    /// Every thread of `pid`, now and later, within `mask` of its primary group
    /// (`SetProcessAffinityMask`).
    fn set_process_mask(&mut self, pid: u32, mask: u64) -> io::Result<()>;
    /// Thread `tid` into group `affinity.group`, on `affinity.mask` (`SetThreadGroupAffinity`).
    fn set_thread_group(&mut self, tid: u32, affinity: GroupMask) -> io::Result<()>;
    /// The CPU sets every thread of `pid` is scheduled on unless it has its own: these
    /// processors of these groups (`SetProcessDefaultCpuSets`, Windows 10 and later).
    fn set_process_cpu_sets(&mut self, pid: u32, masks: &[GroupMask]) -> io::Result<()>;
}

/// The group holding the most of `masks`' CPUs (the lowest on a tie): where a thread goes when
/// its set crosses groups, since it runs in one at a time.
// Called by the Windows platform layer; built and tested on every system.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn largest(masks: &[GroupMask]) -> Option<GroupMask> {
    let cpus: Vec<usize> = masks.iter().flat_map(|m| m.cpus()).collect();
    // The pool pins its workers by the same rule; one definition keeps them in the same group.
    coretune_pool::thread_group(&cpus).map(|(group, mask)| GroupMask { group, mask })
}

/// Puts a process that was started suspended on the CPU set `masks` (one per group), before its
/// first thread `main` runs:
///
/// 1. the first thread into the group with the most of the set, on that part
///    (`SetThreadGroupAffinity`): threads follow their creator's group, so the program's threads
///    start there;
/// 2. when that group is the process's primary group, the process mask too
///    (`SetProcessAffinityMask`), so that every thread, including those the program creates, is
///    held within it;
/// 3. when the set crosses groups, or lies outside the primary group, the process's default CPU
///    sets as well (`SetProcessDefaultCpuSets`): threads moved to other groups by the program or
///    the scheduler stay within the set.
///
/// # Errors
///
/// The first call that fails.
// Called by the Windows platform layer; built and tested on every system.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn place_new_process(
    calls: &mut impl GroupCalls,
    pid: u32,
    main: u32,
    masks: &[GroupMask],
) -> io::Result<()> {
    let Some(first) = largest(masks) else {
        return Ok(());
    };
    let primary = calls.process_groups(pid)?.first().copied();
    calls.set_thread_group(main, first)?;
    if primary == Some(first.group) {
        calls.set_process_mask(pid, first.mask)?;
    }
    if masks.len() > 1 || primary != Some(first.group) {
        calls.set_process_cpu_sets(pid, masks)?;
    }
    Ok(())
}

/// Puts the running threads `tids` of process `pid` on the CPU set `masks`, as `taskset -a -p`
/// does on Linux: within one group, the process mask when it is the primary group and each
/// thread's group affinity; across groups, the threads dealt out over the groups in turn (thread
/// `k` to the `k`-th part, wrapping around: each thread on one part, every part used) and the
/// process's default CPU sets for threads created later. Returns each thread's part and the
/// outcome of its call, in `tids`' order.
///
/// # Errors
///
/// A failing process-wide call (the per-thread ones are returned one by one).
// Called by the Windows platform layer; built and tested on every system.
#[cfg_attr(not(windows), allow(dead_code))]
pub(crate) fn rebind_threads(
    calls: &mut impl GroupCalls,
    pid: u32,
    tids: &[u32],
    masks: &[GroupMask],
) -> io::Result<Vec<(u32, GroupMask, io::Result<()>)>> {
    if masks.is_empty() {
        return Ok(Vec::new());
    }
    let primary = calls.process_groups(pid)?.first().copied();
    if let [only] = masks
        && primary == Some(only.group)
    {
        calls.set_process_mask(pid, only.mask)?;
    }
    let out = tids
        .iter()
        .enumerate()
        .map(|(k, &tid)| {
            let part = masks[k % masks.len()];
            (tid, part, calls.set_thread_group(tid, part))
        })
        .collect();
    if masks.len() > 1 || primary != Some(masks[0].group) {
        calls.set_process_cpu_sets(pid, masks)?;
    }
    Ok(out)
}
