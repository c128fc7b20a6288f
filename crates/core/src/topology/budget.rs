//! The CPU budget this process really has, with its working shown.
//!
//! Runtimes keep getting this wrong in containers (TBB, rayon, Go and others have all shipped
//! bugs where a container limited to 2.5 CPUs was told it had 64), because the answer has four
//! parts that live in different places:
//!
//! 1. the online CPUs (`/sys/devices/system/cpu/online`);
//! 2. this process's affinity mask (`Cpus_allowed_list` in `/proc/self/status`, which is what
//!    `sched_getaffinity` returns for the main thread);
//! 3. the cgroup cpuset (v2 `cpuset.cpus.effective`, v1 `cpuset.effective_cpus`), which the
//!    kernel already folds into the affinity mask but which we show because it is the *reason*;
//! 4. the cgroup CPU quota: v2 `cpu.max` of the process's cgroup **and every ancestor** (the
//!    smallest wins), v1 `cpu.cfs_quota_us / cpu.cfs_period_us` likewise.
//!
//! The usable PUs are (1) ∩ (2) ∩ (3) ∩ the topology's PUs; the budget is the smaller of their
//! number and the quota. Isolated CPUs (`/sys/devices/system/cpu/isolated`, from `isolcpus=`)
//! are listed: the scheduler does not balance onto them even when they are in the mask.
//!
//! Every path is read under a root directory (`/` for the live machine) so tests can lay the
//! files out in a temporary folder; the platform layer (`sys`) reads them, this module does the
//! arithmetic. cgroup file systems are looked for at their standard mount points
//! (`/sys/fs/cgroup` for v2, `/sys/fs/cgroup/<controller>` for v1), which is where systemd,
//! Docker and Kubernetes put them.

use std::fmt;
use std::path::{Path, PathBuf};

use hwlocality::object::types::ObjectType;
use serde::Serialize;

use super::Topology;
use crate::sys::{self, format_list, set_from_indexes, set_to_vec};

/// A CPU quota from a cgroup: `quota / period` CPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quota {
    /// CPUs' worth of time per period (e.g. 2.5).
    pub cpus: f64,
    /// Quota in microseconds per period.
    pub quota_us: u64,
    /// Period in microseconds.
    pub period_us: u64,
    /// The file the limiting value came from (under the probed root).
    pub file: PathBuf,
}

/// The CPUs a cgroup cpuset allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CgroupCpuset {
    /// The CPUs.
    pub cpus: Vec<usize>,
    /// The file they came from (as the live machine names it).
    pub file: PathBuf,
}

/// The CPU budget of this process, and each input to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuBudget {
    /// Online CPUs, when the kernel says.
    pub online: Option<Vec<usize>>,
    /// This process's affinity mask, when readable.
    pub affinity: Option<Vec<usize>>,
    /// The cgroup cpuset, and the file it came from.
    pub cgroup_cpuset: Option<CgroupCpuset>,
    /// The smallest CPU quota on the path from this process's cgroup to the root.
    pub quota: Option<Quota>,
    /// CPUs isolated from the scheduler's load balancing.
    pub isolated: Vec<usize>,
    /// All PUs the topology has (the denominator of "affinity X of Y").
    pub topology_pus: Vec<usize>,
    /// PUs this process can run on.
    pub usable: Vec<usize>,
    /// Physical cores those PUs belong to.
    pub usable_cores: usize,
    /// How many CPUs' worth of time the process can use: min(usable PUs, quota).
    pub budget: f64,
}

impl CpuBudget {
    /// Probes the live machine.
    pub fn live(topology: &Topology) -> Self {
        Self::probe(Path::new("/"), topology)
    }

    /// Probes the files under `root` (a copy of `/proc` and `/sys`, or `/` itself).
    pub fn probe(root: &Path, topology: &Topology) -> Self {
        let online = sys::online_cpus(root).ok();
        let affinity = sys::allowed_cpus(root).ok();
        let isolated = sys::isolated_cpus(root).unwrap_or_default();
        let cgroups = sys::cgroup_limits(root).unwrap_or_default();
        let cgroup_cpuset = cgroups.cpuset.map(|c| CgroupCpuset {
            cpus: c.cpus,
            file: c.file,
        });
        // The smallest quota on the path wins (the first of equals, v2 before v1, leaf first).
        let quota = cgroups
            .quotas
            .into_iter()
            .map(Quota::from)
            .min_by(|a, b| a.cpus.total_cmp(&b.cpus));

        let topology_pus = set_to_vec(&topology.cpuset());
        let usable: Vec<usize> = topology_pus
            .iter()
            .copied()
            .filter(|cpu| online.as_ref().is_none_or(|l| l.contains(cpu)))
            .filter(|cpu| affinity.as_ref().is_none_or(|l| l.contains(cpu)))
            .filter(|cpu| cgroup_cpuset.as_ref().is_none_or(|c| c.cpus.contains(cpu)))
            .collect();
        let usable_set = set_from_indexes(usable.iter().copied());
        let usable_cores = topology
            .objects(ObjectType::Core)
            .iter()
            .filter(|core| core.cpuset().is_some_and(|s| s.intersects(&usable_set)))
            .count();
        #[allow(clippy::cast_precision_loss)] // CPU counts are far below 2^52
        let pus = usable.len() as f64;
        let budget = quota.as_ref().map_or(pus, |q| q.cpus.min(pus));
        Self {
            online,
            affinity,
            cgroup_cpuset,
            quota,
            isolated,
            topology_pus,
            usable,
            usable_cores,
            budget,
        }
    }
}

impl fmt::Display for CpuBudget {
    /// One line: "usable: 6 PUs on 3 cores (affinity 0-5 of 0-15; cgroup quota 2.5 CPUs →
    /// budget 2.5)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "usable: {} PU{} on {} core{} (",
            self.usable.len(),
            plural(self.usable.len()),
            self.usable_cores,
            plural(self.usable_cores)
        )?;
        let all = format_list(&self.topology_pus);
        match &self.affinity {
            Some(aff) => write!(f, "affinity {} of {all}", format_list(aff))?,
            None => write!(f, "affinity unknown; PUs {all}")?,
        }
        if let Some(online) = &self.online {
            if online.len() < self.topology_pus.len()
                || !self.topology_pus.iter().all(|c| online.contains(c))
            {
                write!(f, "; online {}", format_list(online))?;
            }
        }
        if let Some(cpuset) = &self.cgroup_cpuset {
            if cpuset.cpus.len() < self.topology_pus.len() {
                let (cpus, file) = (format_list(&cpuset.cpus), cpuset.file.display());
                let name = sys::LIMIT_NAMES.cpuset;
                write!(f, "; {name} {cpus} ({file})")?;
            }
        }
        match &self.quota {
            Some(q) => write!(
                f,
                "; {} {} CPUs → budget {}",
                sys::LIMIT_NAMES.quota,
                trim_float(q.cpus),
                trim_float(self.budget)
            )?,
            None => write!(
                f,
                "; {} → budget {}",
                sys::LIMIT_NAMES.no_quota,
                trim_float(self.budget)
            )?,
        }
        if !self.isolated.is_empty() {
            write!(f, "; isolated {}", format_list(&self.isolated))?;
        }
        f.write_str(")")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl From<sys::CgroupQuota> for Quota {
    fn from(q: sys::CgroupQuota) -> Self {
        #[allow(clippy::cast_precision_loss)] // microsecond counts are far below 2^52
        let cpus = q.quota_us as f64 / q.period_us as f64;
        Quota {
            cpus,
            quota_us: q.quota_us,
            period_us: q.period_us,
            file: q.file,
        }
    }
}

#[cfg(test)]
mod test;
