#[cfg(target_os = "linux")]
use std::path::Path;

use super::*;
#[cfg(target_os = "linux")]
use crate::test_util::write;
use crate::topology::TopologySource;

#[cfg(target_os = "linux")]
/// 1 package, 8 cores, 2 PUs each: synthetic OS indexes run in order, so core i has PUs 2i, 2i+1.
fn laptop() -> Topology {
    Topology::load(&TopologySource::Synthetic("pack:1 core:8 pu:2".into())).unwrap()
}

#[cfg(target_os = "linux")]
/// This process's `status` with `cpus` as its `Cpus_allowed_list`.
fn status(cpus: &str) -> String {
    crate::test_util::status(cpus, 1000, 2048)
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn v2_smallest_quota_on_the_path_wins() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/devices/system/cpu/online", "0-15\n");
    write(root, "proc/self/status", &status("0-5"));
    write(root, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
    write(root, "sys/fs/cgroup/cpu.max", "max 100000\n");
    write(root, "sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n");
    write(
        root,
        "sys/fs/cgroup/kubepods/pod1/cpu.max",
        "250000 100000\n",
    );
    write(
        root,
        "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max",
        "max 100000\n",
    );
    write(
        root,
        "sys/fs/cgroup/kubepods/pod1/ctr/cpuset.cpus.effective",
        "0-7\n",
    );

    let budget = CpuBudget::probe(root, &laptop());
    assert_eq!(budget.usable, vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(budget.usable_cores, 3);
    let quota = budget.quota.as_ref().unwrap();
    assert!((quota.cpus - 2.5).abs() < 1e-12);
    assert_eq!(
        quota.file,
        Path::new("/sys/fs/cgroup/kubepods/pod1/cpu.max")
    );
    assert!((budget.budget - 2.5).abs() < 1e-12);
    assert_eq!(
        budget.to_string(),
        "usable: 6 PUs on 3 cores (affinity 0-5 of 0-15; cgroup cpuset 0-7 \
         (/sys/fs/cgroup/kubepods/pod1/ctr/cpuset.cpus.effective); \
         cgroup quota 2.5 CPUs → budget 2.5)"
    );
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn v2_without_quota_budget_is_usable_pus() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/devices/system/cpu/online", "0-15");
    write(root, "proc/self/status", &status("0-15"));
    write(root, "proc/self/cgroup", "0::/user.slice/session-1.scope\n");
    write(
        root,
        "sys/fs/cgroup/user.slice/session-1.scope/cpu.max",
        "max 100000\n",
    );
    let budget = CpuBudget::probe(root, &laptop());
    assert_eq!(budget.quota, None);
    assert_eq!(budget.usable.len(), 16);
    assert_eq!(budget.usable_cores, 8);
    assert!((budget.budget - 16.0).abs() < 1e-12);
    assert_eq!(
        budget.to_string(),
        "usable: 16 PUs on 8 cores (affinity 0-15 of 0-15; no cgroup CPU quota → budget 16)"
    );
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn quota_above_the_pu_count_does_not_raise_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "proc/self/status", &status("0-3"));
    write(root, "proc/self/cgroup", "0::/\n");
    write(root, "sys/fs/cgroup/cpu.max", "800000 100000\n");
    let budget = CpuBudget::probe(root, &laptop());
    assert!((budget.quota.unwrap().cpus - 8.0).abs() < 1e-12);
    assert!((budget.budget - 4.0).abs() < 1e-12);
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn v2_path_missing_in_namespace_falls_back_to_the_mount() {
    // Inside a container with its own cgroup namespace the path may not exist under the mount.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "proc/self/status", &status("0-15"));
    write(root, "proc/self/cgroup", "0::/../../docker-abc.scope\n");
    write(root, "sys/fs/cgroup/cpu.max", "150000 100000\n");
    let budget = CpuBudget::probe(root, &laptop());
    assert!((budget.budget - 1.5).abs() < 1e-12);
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn v1_cfs_quota_and_cpuset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/devices/system/cpu/online", "0-15");
    write(root, "proc/self/status", &status("2-9"));
    write(
        root,
        "proc/self/cgroup",
        "12:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
    );
    write(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    write(
        root,
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us",
        "100000\n",
    );
    write(
        root,
        "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
        "150000\n",
    );
    write(
        root,
        "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us",
        "100000\n",
    );
    write(root, "sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus", "2-9\n");
    let budget = CpuBudget::probe(root, &laptop());
    let quota = budget.quota.as_ref().unwrap();
    assert!((quota.cpus - 1.5).abs() < 1e-12);
    assert_eq!(
        quota.file,
        Path::new("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us")
    );
    assert_eq!(
        budget.cgroup_cpuset.as_ref().unwrap().cpus,
        (2..=9).collect::<Vec<_>>()
    );
    // PUs 2-9 are cores 1-4.
    assert_eq!(budget.usable_cores, 4);
    assert!((budget.budget - 1.5).abs() < 1e-12);
}

// Linux's /proc, /sys and cgroup files, laid out in a folder.
#[cfg(target_os = "linux")]
#[test]
fn offline_and_isolated_cpus_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sys/devices/system/cpu/online", "0-13");
    write(root, "sys/devices/system/cpu/isolated", "12-13\n");
    write(root, "proc/self/status", &status("0-15"));
    let budget = CpuBudget::probe(root, &laptop());
    assert_eq!(budget.usable, (0..=13).collect::<Vec<_>>());
    assert_eq!(budget.isolated, vec![12, 13]);
    let line = budget.to_string();
    assert!(line.contains("online 0-13"), "{line}");
    assert!(line.contains("isolated 12-13"), "{line}");
}

#[test]
fn live_machine_budget_is_consistent() {
    let topo = Topology::load(&TopologySource::Live).unwrap();
    let budget = CpuBudget::live(&topo);
    assert!(!budget.usable.is_empty());
    assert!(budget.usable_cores >= 1 && budget.usable_cores <= budget.usable.len());
    #[allow(clippy::cast_precision_loss)]
    let max = budget.usable.len() as f64;
    assert!(budget.budget > 0.0 && budget.budget <= max);
}
