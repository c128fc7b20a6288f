//! cgroup limits on this process's CPUs: the cpuset (v2 `cpuset.cpus.effective`, v1
//! `cpuset.effective_cpus` or `cpuset.cpus`) and the CPU quotas on the path from its cgroup to
//! the root (v2 `cpu.max`, v1 `cpu.cfs_quota_us / cpu.cfs_period_us`).
//!
//! `/proc/self/cgroup` is parsed by procfs; the cgroup files by hand (procfs has no parser for
//! them). Every path is read under a root directory (`/` for the live machine) so tests can lay
//! the files out in a temporary folder. cgroup file systems are looked for at their standard mount
//! points (`/sys/fs/cgroup` for v2, `/sys/fs/cgroup/<controller>` for v1), which is where systemd,
//! Docker and Kubernetes put them.

use std::path::{Path, PathBuf};

use procfs::{ProcessCGroup, ProcessCGroups};

use super::files::{read_procfs, read_text};
use crate::sys::cpu_list::parse_list;
use crate::sys::error::SysError;
use crate::sys::types::{CgroupCpus, CgroupLimits, CgroupQuota, Throttling};
use std::time::Duration;

/// The cpuset and every CPU quota of this process's cgroups, read under `root`.
///
/// An error only when `proc/self/cgroup` cannot be read; a limit whose files are missing or
/// malformed is left out.
pub(crate) fn cgroup_limits(root: &Path) -> Result<CgroupLimits, SysError> {
    let ProcessCGroups(lines) = read_procfs(&root.join("proc/self/cgroup"))?;
    Ok(CgroupLimits {
        cpuset: cpuset(root, &lines),
        quotas: quotas(root, &lines),
    })
}

/// The cgroup directory for `line` under `mount`, falling back to the mount itself when the
/// path does not exist there (inside a container's cgroup namespace, `/proc/self/cgroup` may
/// name a path that is the container's root).
fn cgroup_dir(mount: &Path, line: &ProcessCGroup) -> Option<PathBuf> {
    if !mount.is_dir() {
        return None;
    }
    let dir = mount.join(line.pathname.trim_start_matches('/'));
    Some(if dir.is_dir() {
        dir
    } else {
        mount.to_path_buf()
    })
}

/// Directories from `dir` up to and including `mount`.
fn ancestors<'a>(dir: &'a Path, mount: &'a Path) -> impl Iterator<Item = &'a Path> {
    dir.ancestors().take_while(move |d| d.starts_with(mount))
}

fn v2_line(lines: &[ProcessCGroup]) -> Option<&ProcessCGroup> {
    lines.iter().find(|l| l.controllers.is_empty())
}

fn v1_line<'a>(lines: &'a [ProcessCGroup], controller: &str) -> Option<&'a ProcessCGroup> {
    lines
        .iter()
        .find(|l| l.controllers.iter().any(|c| c == controller))
}

/// A non-empty CPU list from `file`.
fn cpu_list(root: &Path, file: &Path) -> Option<CgroupCpus> {
    let cpus = parse_list(&read_text(file).ok()?)?;
    (!cpus.is_empty()).then(|| CgroupCpus {
        cpus,
        file: strip_root(root, file),
    })
}

fn cpuset(root: &Path, lines: &[ProcessCGroup]) -> Option<CgroupCpus> {
    let v2_mount = root.join("sys/fs/cgroup");
    if let Some(line) = v2_line(lines) {
        if let Some(dir) = cgroup_dir(&v2_mount, line) {
            if let Some(cpus) = cpu_list(root, &dir.join("cpuset.cpus.effective")) {
                return Some(cpus);
            }
        }
    }
    let line = v1_line(lines, "cpuset")?;
    let dir = cgroup_dir(&v2_mount.join("cpuset"), line)?;
    ["cpuset.effective_cpus", "cpuset.cpus"]
        .iter()
        .find_map(|name| cpu_list(root, &dir.join(name)))
}

/// Every quota on the path from the process's cgroup up, v2 first, each from the leaf up.
fn quotas(root: &Path, lines: &[ProcessCGroup]) -> Vec<CgroupQuota> {
    let v2_mount = root.join("sys/fs/cgroup");
    let mut found = Vec::new();
    if let Some(line) = v2_line(lines) {
        if let Some(dir) = cgroup_dir(&v2_mount, line) {
            for d in ancestors(&dir, &v2_mount) {
                let file = d.join("cpu.max");
                if let Some((quota_us, period_us)) =
                    read_text(&file).ok().and_then(|s| parse_cpu_max(&s))
                {
                    found.push(CgroupQuota {
                        quota_us,
                        period_us,
                        file: strip_root(root, &file),
                    });
                }
            }
        }
    }
    for controller in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
        let Some(line) = v1_line(lines, "cpu") else {
            break;
        };
        let mount = v2_mount.join(controller);
        let Some(dir) = cgroup_dir(&mount, line) else {
            continue;
        };
        for d in ancestors(&dir, &mount) {
            let file = d.join("cpu.cfs_quota_us");
            let quota = read_text(&file).ok();
            let period = read_text(&d.join("cpu.cfs_period_us")).ok();
            if let (Some(quota), Some(period)) = (quota, period) {
                if let (Ok(quota), Ok(period)) =
                    (quota.trim().parse::<i64>(), period.trim().parse::<u64>())
                {
                    // A quota of -1 means none.
                    if let (Ok(quota_us), true) = (u64::try_from(quota), period > 0) {
                        found.push(CgroupQuota {
                            quota_us,
                            period_us: period,
                            file: strip_root(root, &file),
                        });
                    }
                }
            }
        }
        break;
    }
    found
}

/// How much the CPU quotas on this process's cgroup path have throttled it so far: of every
/// cgroup with a quota (read under `root`), the one with the most throttled time (`cpu.stat`
/// beside its quota file: v2 `nr_throttled` and `throttled_usec`, v1 `nr_throttled` and
/// `throttled_time` in ns). `None` without a quota or where `cpu.stat` cannot be read.
pub(crate) fn cgroup_throttling(root: &Path) -> Option<Throttling> {
    let ProcessCGroups(lines) = read_procfs(&root.join("proc/self/cgroup")).ok()?;
    quotas(root, &lines)
        .iter()
        .filter_map(|q| {
            let dir = root.join(q.file.strip_prefix("/").unwrap_or(&q.file));
            let text = read_text(&dir.with_file_name("cpu.stat")).ok()?;
            parse_cpu_stat(&text)
        })
        .max_by_key(|t| t.time)
}

/// `nr_throttled` and the throttled time of a `cpu.stat` (v2 microseconds, v1 nanoseconds).
fn parse_cpu_stat(text: &str) -> Option<Throttling> {
    let value = |key: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(key)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    let time = match value("throttled_usec") {
        Some(us) => Duration::from_micros(us),
        None => Duration::from_nanos(value("throttled_time")?),
    };
    Some(Throttling {
        periods: value("nr_throttled")?,
        time,
    })
}

/// Parses cgroup v2 `cpu.max`: `"max 100000"` (no limit) or `"250000 100000"` (quota and
/// period in microseconds).
fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut parts = text.split_whitespace();
    let quota = parts.next()?;
    let period: u64 = parts.next().map_or(Some(100_000), |p| p.parse().ok())?;
    if quota == "max" || period == 0 {
        return None;
    }
    Some((quota.parse().ok()?, period))
}

/// `file` as the live machine would name it (`/sys/fs/cgroup/...`), for messages.
fn strip_root(root: &Path, file: &Path) -> PathBuf {
    file.strip_prefix(root)
        .map_or_else(|_| file.to_path_buf(), |rel| Path::new("/").join(rel))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::write;

    #[test]
    fn cpu_max_reads_a_quota_and_its_period_or_none() {
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max("50000 100000\n"), Some((50_000, 100_000)));
        assert_eq!(parse_cpu_max("50000"), Some((50_000, 100_000)));
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(parse_cpu_max("5 0"), None);
    }

    #[test]
    fn v2_limits_along_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/self/cgroup", "0::/a/b\n");
        write(root, "sys/fs/cgroup/cpu.max", "max 100000\n");
        write(root, "sys/fs/cgroup/a/cpu.max", "200000 100000\n");
        write(root, "sys/fs/cgroup/a/b/cpu.max", "300000 100000\n");
        write(root, "sys/fs/cgroup/a/b/cpuset.cpus.effective", "0-3\n");
        let limits = cgroup_limits(root).unwrap();
        let quotas: Vec<(u64, &Path)> = limits
            .quotas
            .iter()
            .map(|q| (q.quota_us, q.file.as_path()))
            .collect();
        assert_eq!(
            quotas,
            [
                (300_000, Path::new("/sys/fs/cgroup/a/b/cpu.max")),
                (200_000, Path::new("/sys/fs/cgroup/a/cpu.max"))
            ]
        );
        let cpuset = limits.cpuset.unwrap();
        assert_eq!(cpuset.cpus, [0, 1, 2, 3]);
        assert_eq!(
            cpuset.file,
            Path::new("/sys/fs/cgroup/a/b/cpuset.cpus.effective")
        );
    }

    #[test]
    fn no_cgroup_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            cgroup_limits(dir.path()),
            Err(SysError::Read { path, .. }) if path.ends_with("proc/self/cgroup")
        ));
        write(dir.path(), "proc/self/cgroup", "0::/\n");
        let limits = cgroup_limits(dir.path()).unwrap();
        assert!(limits.cpuset.is_none() && limits.quotas.is_empty());
    }

    #[test]
    fn throttling_of_the_most_throttled_quota_v2_and_v1() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/self/cgroup", "0::/a/b\n");
        // No quota: nothing throttles.
        assert_eq!(cgroup_throttling(root), None);
        write(root, "sys/fs/cgroup/a/cpu.max", "150000 100000\n");
        write(
            root,
            "sys/fs/cgroup/a/cpu.stat",
            "usage_usec 9\nnr_periods 40\nnr_throttled 12\nthrottled_usec 345678\n",
        );
        write(root, "sys/fs/cgroup/a/b/cpu.max", "300000 100000\n");
        write(
            root,
            "sys/fs/cgroup/a/b/cpu.stat",
            "nr_throttled 1\nthrottled_usec 5\n",
        );
        assert_eq!(
            cgroup_throttling(root),
            Some(Throttling {
                periods: 12,
                time: Duration::from_micros(345_678)
            })
        );
        // v1's cpu controller counts nanoseconds.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/self/cgroup", "4:cpu,cpuacct:/job\n");
        write(
            root,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us",
            "50000\n",
        );
        write(
            root,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us",
            "100000\n",
        );
        write(
            root,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.stat",
            "nr_periods 3\nnr_throttled 2\nthrottled_time 7000000\n",
        );
        assert_eq!(
            cgroup_throttling(root),
            Some(Throttling {
                periods: 2,
                time: Duration::from_millis(7)
            })
        );
    }
}
