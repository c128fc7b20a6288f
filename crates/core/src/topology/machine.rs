//! The reproducibility record of a sweep: what machine, kernel, CPU, frequency governor and
//! environment the numbers were measured on, so a sweep can be compared with one from another
//! machine and re-run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Topology;
use crate::sys;

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
    /// Gathers the record for this process on this machine; `topology_summary` describes the
    /// topology the sweep used.
    pub fn gather(topology_summary: String, tool_version: &str) -> Self {
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
            governor: sys::cpu_governor(0).ok(),
            topology: topology_summary,
            tool_version: tool_version.to_owned(),
            command: std::env::args().collect(),
            environment,
        }
    }
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
        let record = MachineRecord::gather("x".into(), "0.0.0");
        for (k, v) in &record.environment {
            if k.to_uppercase().contains("TOKEN") {
                assert_eq!(v, "<redacted>");
            }
        }
        assert!(!record.kernel.is_empty());
    }
}
