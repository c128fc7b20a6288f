//! What this machine lets coretune do, in one place (`coretune doctor`): each feature that needs
//! something of the machine — hwloc and its plugins, the pinning library, perf events, cgroups,
//! systemd, the kernel's process-event connector, Slurm's commands — with what was found and, when
//! it is missing, what coretune does instead. Every other command falls back the same way; this
//! is where a user sees why.
//!
//! Each check does what the feature itself does (loads the topology, opens the perf event,
//! subscribes to the connector, looks Slurm's commands up on `PATH` and asks its controller), so
//! the answer is the one the feature would get.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fleet::Slurm;
use crate::program::pin;
use crate::sys::{self, CgroupVersion};
use crate::topology::{Topology, TopologySource};

/// One feature's requirement, checked.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What was checked (`hwloc`, `pinning library`, `perf events`…).
    pub topic: &'static str,
    /// Whether the feature has what it needs.
    pub ok: bool,
    /// What was found, or why not.
    pub found: String,
    /// When not: what coretune does instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instead: Option<&'static str>,
}

impl Check {
    fn new(topic: &'static str, result: Result<String, String>, instead: &'static str) -> Self {
        let ok = result.is_ok();
        Check {
            topic,
            ok,
            found: result.unwrap_or_else(|why| why),
            instead: (!ok).then_some(instead),
        }
    }
}

/// Every check, in the order `coretune doctor` prints them.
pub fn checks() -> Vec<Check> {
    vec![
        Check::new(
            "hwloc",
            hwloc(),
            "nothing works without the topology: `topo`, `place` and `tune` stop with this error",
        ),
        Check::new(
            "pinning library",
            pin::find_library().map(|path| path.display().to_string()),
            "`run --place` and `tune` place a program's threads through OMP_PLACES where it \
             reads them, else bind the whole process to the placement's CPUs (said before it runs)",
        ),
        Check::new(
            "perf events",
            perf_events(),
            "CPU migrations are read from /proc/PID/task/TID/sched (se.nr_migrations) instead",
        ),
        Check::new(
            "cgroups",
            cgroups(Path::new("/")),
            "`reserve --method cgroup` is unavailable; the CPU budget is the affinity mask alone",
        ),
        Check::new(
            "systemd",
            if sys::systemd_booted(Path::new("/")) {
                Ok("the machine runs systemd (PID 1)".to_owned())
            } else {
                Err("the machine does not run systemd as PID 1".to_owned())
            },
            "`reserve` uses the cgroup cpusets (as root) or rules instead of systemd's slices",
        ),
        Check::new(
            "process-event connector",
            proc_connector(),
            "the rules daemon looks for new processes every --interval instead of being told",
        ),
        Check::new(
            "Slurm",
            slurm(),
            "`tune --slurm` is unavailable (`tune --slurm-script` still writes the batch scripts)",
        ),
    ]
}

/// hwloc's version and discovery backends (the root object's `hwlocVersion` and `Backend`
/// infos, as `lstopo -v` shows them), the library loaded and the plugins beside it.
fn hwloc() -> Result<String, String> {
    let topo = Topology::load(&TopologySource::Live).map_err(|e| e.to_string())?;
    let root = topo.hwloc().root_object();
    let info = |key: &str| -> Vec<String> {
        root.infos()
            .iter()
            .filter(|i| i.name().to_str() == Ok(key))
            .filter_map(|i| i.value().to_str().ok().map(str::to_owned))
            .collect()
    };
    let version = info("hwlocVersion")
        .pop()
        .unwrap_or_else(|| "of unknown version".to_owned());
    let mut found = format!("hwloc {version}, backends {}", info("Backend").join(", "));
    if let Some(library) = sys::loaded_libraries()
        .unwrap_or_default()
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libhwloc.so"))
        })
    {
        found += &format!("; library {}", library.display());
        found += &plugins(&library);
    }
    Ok(found)
}

/// The plugins hwloc can load: `hwloc_*.so` in `$HWLOC_PLUGINS_PATH` (colon-separated), else in
/// the `hwloc` folder beside the library (hwloc's default, `$libdir/hwloc`).
fn plugins(library: &Path) -> String {
    let dirs: Vec<PathBuf> = match std::env::var_os("HWLOC_PLUGINS_PATH") {
        Some(path) => std::env::split_paths(&path).collect(),
        None => library
            .parent()
            .map(|dir| vec![dir.join("hwloc")])
            .unwrap_or_default(),
    };
    let mut names = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(plugin) = name
                .strip_prefix("hwloc_")
                .and_then(|n| n.strip_suffix(".so"))
            {
                names.push(plugin.to_owned());
            }
        }
    }
    names.sort();
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if names.is_empty() {
        format!("; no plugins in {}", dirs.join(":"))
    } else {
        format!("; plugins {} in {}", names.join(", "), dirs.join(":"))
    }
}

/// Whether the perf software event `cpu-migrations` opens on this thread, as each measured
/// worker opens it.
fn perf_events() -> Result<String, String> {
    let mut counter = sys::MigrationCounter::open().map_err(|e| e.to_string())?;
    counter.read().map_err(|e| e.to_string())?;
    Ok("the software event cpu-migrations opens and reads".to_owned())
}

/// The mounted cgroup hierarchies and the controllers coretune uses (`cpu` for quotas,
/// `cpuset` for `reserve` and the budget).
fn cgroups(root: &Path) -> Result<String, String> {
    let mounts = sys::cgroup_mounts(root).map_err(|e| e.to_string())?;
    let v1 = mounts.iter().any(|m| m.version == CgroupVersion::V1);
    let v2 = mounts.iter().any(|m| m.version == CgroupVersion::V2);
    let kind = match (v1, v2) {
        (true, true) => "v1 and v2 (hybrid)",
        (true, false) => "v1",
        (false, true) => "v2 (unified)",
        (false, false) => return Err("no cgroup file system is mounted".to_owned()),
    };
    let with = |controller: &str| {
        mounts
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == controller))
            .map_or_else(
                || format!("{controller}: none"),
                |m| format!("{controller} at {}", m.mount.display()),
            )
    };
    Ok(format!("{kind}; {}, {}", with("cpuset"), with("cpu")))
}

/// Whether this process can subscribe to the kernel's process events, as the rules daemon does
/// (it takes root: `CAP_NET_ADMIN`).
fn proc_connector() -> Result<String, String> {
    match sys::ProcEvents::open() {
        Ok(_) => Ok("subscribed (exec, fork and exit events arrive as they happen)".to_owned()),
        Err(e) if sys::effective_uid() != 0 => Err(format!("{e} (it needs root)")),
        Err(e) => Err(e.to_string()),
    }
}

/// How long `doctor` waits for Slurm's controller to answer (`scontrol ping`): a controller that
/// answers does so in milliseconds; Slurm's own `MessageTimeout` (10 s by default) is longer
/// than a check should hang.
const SLURM_PING: std::time::Duration = std::time::Duration::from_secs(5);

/// Slurm's commands on `PATH`, as `tune --slurm` finds them, and whether its controller answers
/// (`scontrol ping`): commands that cannot reach a controller submit nothing.
fn slurm() -> Result<String, String> {
    let slurm = Slurm::find().map_err(|e| e.to_string())?;
    match slurm.ping(SLURM_PING) {
        Ok(answer) => Ok(format!("{}; {answer}", slurm.describe())),
        Err(why) => Err(format!("not usable: {why} ({})", slurm.describe())),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    // Linux's mount table: elsewhere there are no cgroups to read.
    #[cfg(target_os = "linux")]
    #[test]
    fn cgroups_read_a_saved_hybrid_mount_table() {
        let root = tempfile::tempdir().unwrap();
        let mountinfo = "\
30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
33 30 0:29 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset
34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
";
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::write(root.path().join("proc/self/mountinfo"), mountinfo).unwrap();
        let found = cgroups(root.path()).unwrap();
        let at = |dir: &str| root.path().join(dir).display().to_string();
        assert_eq!(
            found,
            format!(
                "v1 and v2 (hybrid); cpuset at {}, cpu at {}",
                at("sys/fs/cgroup/cpuset"),
                at("sys/fs/cgroup/cpu,cpuacct")
            )
        );
    }

    #[test]
    fn no_cgroup_mount_is_said() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/self")).unwrap();
        std::fs::write(
            root.path().join("proc/self/mountinfo"),
            "22 1 0:21 / /proc rw - proc proc rw\n",
        )
        .unwrap();
        assert_eq!(
            cgroups(root.path()),
            Err("no cgroup file system is mounted".to_owned())
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_live_machine_has_hwloc_and_each_check_says_what_it_found() {
        let checks = checks();
        let hwloc = &checks[0];
        assert!(hwloc.ok, "{}", hwloc.found);
        assert!(hwloc.found.starts_with("hwloc 2."), "{}", hwloc.found);
        assert!(hwloc.found.contains("libhwloc.so"), "{}", hwloc.found);
        for check in &checks {
            assert!(!check.found.is_empty(), "{}", check.topic);
            assert_eq!(check.instead.is_some(), !check.ok, "{}", check.topic);
        }
    }
}
