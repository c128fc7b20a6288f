//! Changing cgroup cpusets (`coretune reserve`): where the cpuset controller is mounted (v2 with
//! `cpuset` enabled, or v1's `cpuset` hierarchy, from `/proc/self/mountinfo` through procfs),
//! the cgroups under a folder, which processes a cgroup holds, and its files read and written
//! as bytes, so that what was there can be put back exactly.

use std::io::Write;
use std::path::{Path, PathBuf};

use procfs::process::MountInfos;

use super::files::{read_procfs, read_text};
use crate::sys::error::SysError;
use crate::sys::types::{CgroupMount, CgroupVersion, CpusetHierarchy};

/// Every mounted cgroup hierarchy with its controllers (v2: those `cgroup.controllers` lists;
/// v1: the controllers named in the mount options), read from `root/proc/self/mountinfo`, mount
/// points given under `root` (`/` for the live machine), in mount order.
pub(crate) fn cgroup_mounts(root: &Path) -> Result<Vec<CgroupMount>, SysError> {
    let MountInfos(mounts) = read_procfs(&root.join("proc/self/mountinfo"))?;
    let mut found = Vec::new();
    for m in mounts {
        let mount = root.join(m.mount_point.strip_prefix("/").unwrap_or(&m.mount_point));
        match m.fs_type.as_str() {
            "cgroup2" => {
                let controllers = read_text(&mount.join("cgroup.controllers")).unwrap_or_default();
                found.push(CgroupMount {
                    version: CgroupVersion::V2,
                    controllers: controllers.split_whitespace().map(str::to_owned).collect(),
                    mount,
                });
            }
            "cgroup" => found.push(CgroupMount {
                version: CgroupVersion::V1,
                // The super options are the controllers and a few flags (`rw`, `name=`…).
                controllers: m
                    .super_options
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "rw" | "ro" | "name"))
                    .filter(|k| !k.contains('='))
                    .cloned()
                    .collect(),
                mount,
            }),
            _ => {}
        }
    }
    Ok(found)
}

/// Every mounted hierarchy that has the cpuset controller, v2 first ([`cgroup_mounts`]).
pub(crate) fn cpuset_hierarchies(root: &Path) -> Result<Vec<CpusetHierarchy>, SysError> {
    let mut found: Vec<CpusetHierarchy> = cgroup_mounts(root)?
        .into_iter()
        .filter(|m| m.controllers.iter().any(|c| c == "cpuset"))
        .map(|m| CpusetHierarchy {
            version: m.version,
            mount: m.mount,
        })
        .collect();
    found.sort_by_key(|h| h.version != CgroupVersion::V2);
    Ok(found)
}

/// The cgroups directly under `dir`, sorted.
pub(crate) fn child_cgroups(dir: &Path) -> Result<Vec<PathBuf>, SysError> {
    let entries = std::fs::read_dir(dir).map_err(|error| SysError::Read {
        path: dir.to_path_buf(),
        error,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// The processes in cgroup `dir` itself (`cgroup.procs`), not those of its children.
pub(crate) fn cgroup_pids(dir: &Path) -> Result<Vec<i32>, SysError> {
    let path = dir.join("cgroup.procs");
    Ok(read_text(&path)?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// The bytes of a cgroup file.
pub(crate) fn read_cgroup_file(path: &Path) -> Result<Vec<u8>, SysError> {
    std::fs::read(path).map_err(|error| SysError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// Writes `bytes` to a cgroup file in one `write`, as the kernel expects (it parses each write
/// whole). The error is the kernel's (EINVAL for a set outside the parent's, EBUSY for one a
/// child still uses, EACCES without permission).
pub(crate) fn write_cgroup_file(path: &Path, bytes: &[u8]) -> Result<(), SysError> {
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)?;
        file.write_all(bytes)
    };
    write().map_err(|error| SysError::Read {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::write;

    #[test]
    fn hierarchies_from_mountinfo() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "proc/self/mountinfo",
            "30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n\
             33 30 0:29 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
             34 30 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
             40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
        );
        write(
            root,
            "sys/fs/cgroup/unified/cgroup.controllers",
            "hugetlb\n",
        );
        let found = cpuset_hierarchies(root).unwrap();
        assert_eq!(
            found,
            [CpusetHierarchy {
                version: CgroupVersion::V1,
                mount: root.join("sys/fs/cgroup/cpuset")
            }]
        );
        write(
            root,
            "sys/fs/cgroup/unified/cgroup.controllers",
            "cpuset cpu\n",
        );
        let found = cpuset_hierarchies(root).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].version, CgroupVersion::V2);
        write(root, "sys/fs/cgroup/unified/a/cgroup.procs", "12\n34\n");
        write(root, "sys/fs/cgroup/unified/b/cpuset.cpus", "0-1\n");
        let unified = root.join("sys/fs/cgroup/unified");
        assert_eq!(
            child_cgroups(&unified).unwrap(),
            [unified.join("a"), unified.join("b")]
        );
        assert_eq!(cgroup_pids(&unified.join("a")).unwrap(), [12, 34]);
        let file = unified.join("b/cpuset.cpus");
        write_cgroup_file(&file, b"1\n").unwrap();
        assert_eq!(read_cgroup_file(&file).unwrap(), b"1\n");
    }
}
