//! Is the machine quiet enough to measure on? Load, steal time and other processes' CPU use
//! around each run, read from `/proc`.
//!
//! - **load average** (`/proc/loadavg`, 1 minute) before the run;
//! - **steal** (`/proc/stat`, the `steal` column of the `cpu` line): time a virtual machine's
//!   vCPUs were runnable but the hypervisor ran something else, as a share of all CPU time
//!   during the run;
//! - **others' CPU**: CPU time all processes used during the run (`/proc/stat` busy time) minus
//!   this process's own and that of the children it waited for — the program it ran
//!   (`/proc/self/stat` utime + stime + cutime + cstime), in CPUs (1.0 = one CPU's worth of time
//!   for the whole run).
//!
//! A run is *busy* when others used more than [`BUSY_OTHERS_CPUS`] CPUs or steal exceeded
//! [`BUSY_STEAL`]. Clock ticks (`USER_HZ`) are 100 per second on every Linux ABI.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::sys;

/// Others' CPU use above which a run is flagged busy: a quarter of a CPU is enough to shift a
/// 2-thread run on a 2-CPU machine by several percent.
pub const BUSY_OTHERS_CPUS: f64 = 0.25;
/// Steal share above which a run is flagged busy (5% of CPU time taken by the hypervisor).
pub const BUSY_STEAL: f64 = 0.05;
/// `USER_HZ`: the unit of `/proc/stat` and `/proc/PID/stat` times.
const TICKS_PER_SEC: f64 = 100.0;

/// What the machine was doing around one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// 1-minute load average before the run.
    pub loadavg: Option<f64>,
    /// Share of CPU time stolen by the hypervisor during the run.
    pub steal: Option<f64>,
    /// CPUs' worth of time other processes used during the run.
    pub others_cpus: Option<f64>,
    /// Whether the run is flagged as taken on a busy machine.
    pub busy: bool,
    /// Periods in which the cgroup CPU quota throttled this process's cgroup during the run
    /// (`cpu.stat` `nr_throttled`); absent without a quota (and on Windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_periods: Option<u64>,
    /// Seconds the quota kept the cgroup's threads, the program's among them, off the CPUs
    /// during the run (`throttled_usec`, v1 `throttled_time`); absent without a quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
}

/// `/proc` counters at the start of a run.
#[derive(Clone, Copy, Debug)]
pub struct NoiseProbe {
    loadavg: Option<f64>,
    system: Option<CpuTicks>,
    own: Option<u64>,
    throttling: Option<sys::Throttling>,
    start: std::time::Instant,
}

#[derive(Clone, Copy, Debug)]
struct CpuTicks {
    busy: u64,
    /// `None` where the system keeps no steal time (Windows).
    steal: Option<u64>,
    total: u64,
}

fn system_ticks() -> Option<CpuTicks> {
    let stat = sys::cpu_stat(Path::new(sys::PROC_DIR)).ok()?;
    cpu_ticks(&stat.total?)
}

/// Busy, steal and total time from the aggregate `cpu` line's user nice system idle iowait irq
/// softirq steal. Linux (since 2.6.11) reports all eight; Windows only user, system and idle
/// (interrupt time is inside its kernel time, and it keeps no I/O wait or steal): what a system
/// does not report separately is 0 here, and steal unknown.
fn cpu_ticks(t: &sys::CpuTicks) -> Option<CpuTicks> {
    let (iowait, irq, softirq) = (
        t.iowait.unwrap_or(0),
        t.irq.unwrap_or(0),
        t.softirq.unwrap_or(0),
    );
    let steal = t.steal.unwrap_or(0);
    // guest and guest_nice are already counted in user and nice.
    let total = t.user + t.nice + t.system + t.idle + iowait + irq + softirq + steal;
    let idle = t.idle + iowait;
    Some(CpuTicks {
        busy: total.checked_sub(idle + steal)?,
        steal: t.steal,
        total,
    })
}

impl NoiseProbe {
    /// Reads the counters before a run.
    pub fn start() -> Self {
        Self {
            loadavg: sys::load_average().ok(),
            system: system_ticks(),
            own: sys::own_cpu_ticks().ok(),
            throttling: sys::cgroup_throttling(Path::new("/")),
            start: std::time::Instant::now(),
        }
    }

    /// Reads them again after the run and judges it.
    pub fn finish(self) -> Noise {
        let wall = self.start.elapsed().as_secs_f64().max(1e-9);
        let (mut steal, mut others_cpus) = (None, None);
        if let (Some(a), Some(b)) = (self.system, system_ticks()) {
            let total = b.total.saturating_sub(a.total);
            if let (true, Some(sa), Some(sb)) = (total > 0, a.steal, b.steal) {
                #[allow(clippy::cast_precision_loss)]
                let share = sb.saturating_sub(sa) as f64 / total as f64;
                steal = Some(share);
            }
            if let (Some(own_a), Ok(own_b)) = (self.own, sys::own_cpu_ticks()) {
                let busy = b.busy.saturating_sub(a.busy);
                let own = own_b.saturating_sub(own_a);
                #[allow(clippy::cast_precision_loss)]
                let others = busy.saturating_sub(own) as f64 / TICKS_PER_SEC / wall;
                others_cpus = Some(others);
            }
        }
        let busy = others_cpus.is_some_and(|o| o > BUSY_OTHERS_CPUS)
            || steal.is_some_and(|s| s > BUSY_STEAL);
        let throttled = self
            .throttling
            .zip(sys::cgroup_throttling(Path::new("/")))
            .map(|(a, b)| {
                (
                    b.periods.saturating_sub(a.periods),
                    b.time.saturating_sub(a.time).as_secs_f64(),
                )
            });
        Noise {
            loadavg: self.loadavg,
            steal,
            others_cpus,
            busy,
            throttled_periods: throttled.map(|t| t.0),
            throttled_s: throttled.map(|t| t.1),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A program the run started and waited for is the run's own time, not others': an external
    /// program's sweep would otherwise flag every run busy.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_waited_for_child_counts_as_own_time() {
        let before = sys::own_cpu_ticks().unwrap();
        let burn = "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done";
        let status = std::process::Command::new("sh")
            .args(["-c", burn])
            .status()
            .unwrap();
        assert!(status.success());
        let after = sys::own_cpu_ticks().unwrap();
        // A million shell iterations take well over 0.1 s of CPU (10 ticks) on any machine.
        assert!(
            after - before >= 10,
            "own ticks grew by {} only",
            after - before
        );
    }

    #[test]
    fn a_cpu_line_counts_busy_and_idle_ticks() {
        // cpu  100 5 50 1000 20 1 2 30 0 0
        let mut line = sys::CpuTicks {
            user: 100,
            nice: 5,
            system: 50,
            idle: 1000,
            iowait: Some(20),
            irq: Some(1),
            softirq: Some(2),
            steal: Some(30),
        };
        let t = cpu_ticks(&line).unwrap();
        assert_eq!(t.total, 1208);
        assert_eq!(t.steal, Some(30));
        assert_eq!(t.busy, 1208 - 1020 - 30);
        // Windows' three: steal unknown, not 0; busy and total from what there is.
        line.steal = None;
        (line.iowait, line.irq, line.softirq) = (None, None, None);
        let t = cpu_ticks(&line).unwrap();
        assert_eq!((t.total, t.busy, t.steal), (1155, 155, None));
    }

    #[test]
    fn probe_reads_this_machine() {
        let probe = NoiseProbe::start();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let n = probe.finish();
        // Windows has no load average.
        assert!(n.loadavg.is_some() || !cfg!(target_os = "linux"));
        assert!(n.others_cpus.is_some_and(|o| o >= 0.0));
        assert!(sys::own_cpu_ticks().is_ok());
    }
}
