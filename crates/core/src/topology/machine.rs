//! The reproducibility record of a sweep: what machine, kernel, CPU, CPU settings (governors,
//! boost, SMT control, isolated CPUs, quota) and environment the numbers were measured on, so a
//! sweep can be compared with one from another machine and re-run; and the one-line warnings
//! about the settings that make timings vary.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{CpuBudget, Topology};
use crate::sys::{self, format_list};

/// Environment variables whose names contain one of these are recorded as `<redacted>`.
const SECRET_MARKERS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];

/// Facts about the machine and the invocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineRecord {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// The cpufreq governor of CPU 0, when the kernel exposes one (VMs often do not).
    pub governor: Option<String>,
    /// The CPU settings that change timings (absent from folders of coretune before them, and
    /// left out when nothing is known).
    #[serde(default, skip_serializing_if = "CpuSettings::is_unknown")]
    pub settings: CpuSettings,
    /// One-line topology summary.
    pub topology: String,
    /// coretune's version.
    pub tool_version: String,
    /// The command line, as given.
    pub command: Vec<String>,
    /// The environment (secret-looking values redacted).
    pub environment: BTreeMap<String, String>,
}

impl MachineRecord {
    /// Gathers the record for this process on this machine, whose topology is `topology`.
    pub fn gather(topology: &Topology, tool_version: &str) -> Self {
        let settings = CpuSettings::live(topology);
        let unknown = |_| "unknown".to_owned();
        let cpu_model = sys::cpu_model().unwrap_or_else(unknown);
        let environment = std::env::vars()
            .map(|(k, v)| {
                let upper = k.to_uppercase();
                let v = if SECRET_MARKERS.iter().any(|m| upper.contains(m)) {
                    "<redacted>".to_owned()
                } else {
                    v
                };
                (k, v)
            })
            .collect();
        Self {
            hostname: sys::host_name().unwrap_or_else(unknown),
            kernel: sys::kernel_release().unwrap_or_else(unknown),
            cpu_model,
            governor: settings
                .governors
                .iter()
                .find(|(_, cpus)| sys::parse_list(cpus).is_some_and(|l| l.contains(&0)))
                .map(|(governor, _)| governor.clone()),
            settings,
            topology: topology_summary(topology),
            tool_version: tool_version.to_owned(),
            command: std::env::args().collect(),
            environment,
        }
    }
}

/// The kernel's CPU settings that change timings, as found (`/sys/devices/system/cpu` and the
/// cgroup quota): absent where the file is absent (a VM without cpufreq, Windows), never guessed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSettings {
    /// Each cpufreq governor in use, with the CPUs (a list) it governs; empty without cpufreq.
    #[serde(default)]
    pub governors: BTreeMap<String, String>,
    /// Whether boost (turbo) is on.
    #[serde(default)]
    pub boost: Option<bool>,
    /// SMT control: `on`, `off`, `forceoff`, `notsupported`, `notimplemented`.
    #[serde(default)]
    pub smt_control: Option<String>,
    /// CPUs isolated from the scheduler's load balancing (`isolcpus=`), as a list.
    #[serde(default)]
    pub isolated: Option<String>,
    /// CPUs without the periodic tick while one task runs there (`nohz_full=`), as a list.
    #[serde(default)]
    pub nohz_full: Option<String>,
    /// The smallest cgroup CPU quota on this process's path, in CPUs' worth.
    #[serde(default)]
    pub cpu_quota: Option<f64>,
}

impl CpuSettings {
    /// Whether nothing at all is known (every setting absent).
    pub fn is_unknown(&self) -> bool {
        *self == Self::default()
    }

    /// The settings of the live machine, for this process (its quota).
    pub fn live(topology: &Topology) -> Self {
        Self::probe(Path::new("/"), &CpuBudget::live(topology))
    }

    /// The settings under `root` (a saved `/sys` tree, or `/`), with the quota of `budget`.
    pub(crate) fn probe(root: &Path, budget: &CpuBudget) -> Self {
        let s = sys::cpu_settings(root);
        let mut by_governor: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (cpu, governor) in s.governors {
            by_governor.entry(governor).or_default().push(cpu);
        }
        Self {
            governors: by_governor
                .into_iter()
                .map(|(g, cpus)| (g, format_list(&cpus)))
                .collect(),
            boost: s.boost,
            smt_control: s.smt_control,
            isolated: s.isolated.map(|l| format_list(&l)),
            nohz_full: s.nohz_full.map(|l| format_list(&l)),
            cpu_quota: budget.quota.as_ref().map(|q| q.cpus),
        }
    }

    /// One line for each setting that makes timings on the CPUs `usable` vary or differ from an
    /// unrestricted run: a governor other than `performance`, boost on, isolated or `nohz_full`
    /// CPUs among them, a CPU quota below them. Nothing for what is not known.
    pub fn warnings(&self, usable: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        let among = |list: &Option<String>| -> Vec<usize> {
            list.as_deref()
                .and_then(sys::parse_list)
                .unwrap_or_default()
                .into_iter()
                .filter(|c| usable.contains(c))
                .collect()
        };
        for (governor, cpus) in &self.governors {
            let cpus = among(&Some(cpus.clone()));
            if governor != "performance" && !cpus.is_empty() {
                let (run, their) = if cpus.len() == 1 {
                    ("runs", "its")
                } else {
                    ("run", "their")
                };
                out.push(format!(
                    "{} {run} the '{governor}' frequency governor: {their} clock follows the \
                     load, so a run's speed depends on what ran before it (cpupower \
                     frequency-set -g performance holds it)",
                    crate::sys::cpus_named(&cpus)
                ));
            }
        }
        if self.boost == Some(true) {
            out.push(
                "boost (turbo) is on: the clock rises with temperature headroom and falls with \
                 the number of busy cores, which differs between configurations"
                    .to_owned(),
            );
        }
        for (list, what) in [
            (
                &self.isolated,
                "isolated (isolcpus=): the scheduler balances no thread onto them",
            ),
            (
                &self.nohz_full,
                "nohz_full: they run without the periodic tick when one task runs",
            ),
        ] {
            let cpus = among(list);
            if !cpus.is_empty() {
                let are = if cpus.len() == 1 { "is" } else { "are" };
                out.push(format!("{} {are} {what}", crate::sys::cpus_named(&cpus)));
            }
        }
        #[allow(clippy::cast_precision_loss)] // CPU counts are far below 2^52
        if let Some(q) = self.cpu_quota.filter(|&q| q < usable.len() as f64) {
            out.push(format!(
                "a cgroup CPU quota allows {} CPUs' worth of time on {} CPUs: runs that use more \
                 are throttled (each run's throttled time is recorded)",
                trim(q),
                usable.len()
            ));
        }
        out
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A one-line summary of a topology ("2 packages, 8 NUMA nodes, 16 L3, 64 cores, 128 PUs, SMT 2").
pub fn topology_summary(topology: &Topology) -> String {
    let c = topology.counts();
    let smt = topology.smt();
    let smt = if smt.min == smt.max {
        format!("SMT {}", smt.max)
    } else {
        format!("SMT {}-{}", smt.min, smt.max)
    };
    let n = |count: usize, one: &str| {
        if count == 1 {
            format!("1 {one}")
        } else {
            format!("{count} {one}s")
        }
    };
    let mut parts = vec![n(c.packages, "package")];
    if c.dies > 0 {
        parts.push(n(c.dies, "die"));
    }
    parts.push(n(c.numa_nodes, "NUMA node"));
    parts.push(format!("{} L3", c.l3));
    parts.push(n(c.cores, "core"));
    parts.push(n(c.pus, "PU"));
    parts.push(smt);
    parts.join(", ")
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::topology::TopologySource;

    #[test]
    fn summary_line_and_record() {
        let topo = Topology::load(&TopologySource::Synthetic(
            "pack:2 numa:2 core:4 pu:2".into(),
        ))
        .unwrap();
        assert_eq!(
            topology_summary(&topo),
            "2 packages, 4 NUMA nodes, 0 L3, 16 cores, 32 PUs, SMT 2"
        );
        // The record never echoes a secret-looking variable.
        let record = MachineRecord::gather(&topo, "0.0.0");
        for (k, v) in &record.environment {
            if k.to_uppercase().contains("TOKEN") {
                assert_eq!(v, "<redacted>");
            }
        }
        assert!(!record.kernel.is_empty());
    }

    /// A saved `/sys` and `/proc` tree: a laptop-like machine with two governors, boost on, an
    /// isolated CPU and a quota of 1.5 CPUs; each gives one warning line, and nothing is said
    /// about what the tree does not have.
    #[cfg(target_os = "linux")]
    #[test]
    fn cpu_settings_from_a_saved_tree_and_their_warnings() {
        use crate::test_util::write;
        let topo = Topology::load(&TopologySource::Synthetic("pack:1 core:4 pu:1".into())).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "sys/devices/system/cpu/online", "0-3\n");
        write(
            root,
            "proc/self/status",
            &crate::test_util::status("0-3", 1000, 2048),
        );
        write(root, "proc/self/cgroup", "0::/job\n");
        let budget = CpuBudget::probe(root, &topo);
        let bare = CpuSettings::probe(root, &budget);
        assert_eq!(bare, CpuSettings::default());
        assert!(bare.warnings(&[0, 1, 2, 3]).is_empty());

        write(root, "sys/fs/cgroup/job/cpu.max", "150000 100000\n");
        for cpu in 0..4 {
            let governor = if cpu < 2 { "powersave" } else { "performance" };
            let file = format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
            write(root, &file, governor);
        }
        write(root, "sys/devices/system/cpu/cpufreq/boost", "1\n");
        write(root, "sys/devices/system/cpu/smt/control", "notsupported\n");
        write(root, "sys/devices/system/cpu/isolated", "3\n");
        let budget = CpuBudget::probe(root, &topo);
        let s = CpuSettings::probe(root, &budget);
        assert_eq!(
            s.governors,
            BTreeMap::from([
                ("performance".to_owned(), "2-3".to_owned()),
                ("powersave".to_owned(), "0-1".to_owned())
            ])
        );
        assert_eq!(s.boost, Some(true));
        assert_eq!(s.smt_control.as_deref(), Some("notsupported"));
        assert_eq!(s.isolated.as_deref(), Some("3"));
        assert_eq!(s.nohz_full, None);
        assert_eq!(s.cpu_quota, Some(1.5));
        let warnings = s.warnings(&[0, 1, 2, 3]);
        assert_eq!(warnings.len(), 4, "{warnings:#?}");
        assert!(warnings[0].starts_with("CPUs 0-1 run the 'powersave' frequency governor"));
        assert!(warnings[1].starts_with("boost (turbo) is on"));
        assert!(warnings[2].starts_with("CPU 3 is isolated"));
        assert!(warnings[3].starts_with("a cgroup CPU quota allows 1.5 CPUs' worth of time on 4"));
        // Only what touches the CPUs used: on CPU 2 alone, neither the governed-down nor the
        // isolated ones, and a quota of 1.5 is more than one CPU: boost is all that is left.
        let one = s.warnings(&[2]);
        assert_eq!(one.len(), 1, "{one:#?}");
        assert!(one[0].starts_with("boost"));
        // It reads back from machine.json, and a record without it (older folders) too.
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<CpuSettings>(&json).unwrap(), s);
    }
}
