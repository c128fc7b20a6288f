//! `adapt`'s cgroup knobs: a cgroup attached to (`--cgroup`), whose processes are the target,
//! whose `cpuset.cpus` is the CPU set and whose CPU quota (v1 `cpu.cfs_quota_us` over
//! `cpu.cfs_period_us`, v2 `cpu.max`) is the quota; or a cgroup of `adapt`'s own in the `cpu`
//! controller's hierarchy, made for the quota of a `--pid` or a started program, the process
//! tree moved into it. Every file is read as bytes before its first write and written back so
//! at the end; adapt's own cgroup is emptied (each process back where it came from) and removed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::error::AdaptError;
use crate::sys::{self, CgroupVersion, format_list, parse_list};

/// How long a removed cgroup may take to be empty of processes ended just before (the kernel
/// frees a dead process's cgroup membership when it is reaped).
const EMPTY_WAIT: Duration = Duration::from_secs(3);

/// A cgroup's CPU quota files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QuotaFiles {
    version: CgroupVersion,
    dir: PathBuf,
}

impl QuotaFiles {
    /// The file that holds the quota (`cpu.max`, `cpu.cfs_quota_us`).
    pub(crate) fn file(&self) -> PathBuf {
        self.dir.join(match self.version {
            CgroupVersion::V2 => "cpu.max",
            CgroupVersion::V1 => "cpu.cfs_quota_us",
        })
    }

    /// The quota in CPUs; `None`: no limit.
    fn read(&self) -> Result<Option<f64>, AdaptError> {
        let text = read_text(&self.file())?;
        let bad = || cgroup_error(&self.file(), format!("'{}' is not a quota", text.trim()));
        let (quota, period) = match self.version {
            CgroupVersion::V2 => {
                let mut parts = text.split_whitespace();
                let quota = parts.next().ok_or_else(bad)?;
                let period: u64 = match parts.next() {
                    Some(p) => p.parse().map_err(|_| bad())?,
                    None => 100_000,
                };
                if quota == "max" {
                    return Ok(None);
                }
                (quota.parse::<i64>().map_err(|_| bad())?, period)
            }
            CgroupVersion::V1 => (
                text.trim().parse::<i64>().map_err(|_| bad())?,
                self.period()?,
            ),
        };
        if quota < 0 {
            return Ok(None);
        }
        #[allow(clippy::cast_precision_loss)] // microseconds
        Ok(Some(quota as f64 / period.max(1) as f64))
    }

    /// The period in microseconds, as found.
    fn period(&self) -> Result<u64, AdaptError> {
        let period = match self.version {
            CgroupVersion::V2 => {
                let text = read_text(&self.file())?;
                return Ok(text
                    .split_whitespace()
                    .nth(1)
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(100_000));
            }
            CgroupVersion::V1 => self.dir.join("cpu.cfs_period_us"),
        };
        let text = read_text(&period)?;
        text.trim()
            .parse()
            .map_err(|_| cgroup_error(&period, format!("'{}' is not a period", text.trim())))
    }

    /// The bytes that set `cpus` (`None`: no limit) with the period found.
    fn bytes(&self, cpus: Option<f64>) -> Result<Vec<u8>, AdaptError> {
        let period = self.period()?;
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        let quota = cpus.map(|c| ((c * period as f64).round() as i64).max(1000));
        Ok(match (self.version, quota) {
            (CgroupVersion::V2, Some(q)) => format!("{q} {period}\n"),
            (CgroupVersion::V2, None) => format!("max {period}\n"),
            (CgroupVersion::V1, Some(q)) => format!("{q}\n"),
            (CgroupVersion::V1, None) => "-1\n".to_owned(),
        }
        .into_bytes())
    }
}

/// adapt's own cgroup: where it is, and where each process moved into it came from.
#[derive(Debug)]
struct Own {
    dir: PathBuf,
    /// Each process moved in, and the cgroup it was in (in the same hierarchy).
    from: Vec<(u32, PathBuf)>,
}

/// The cgroup knobs of one target, and what their files held when `adapt` began.
#[derive(Debug, Default)]
pub(crate) struct Cgroups {
    /// The quota's files, when the quota is a knob.
    quota: Option<QuotaFiles>,
    /// The `cpuset.cpus` file, when the CPU set is the cgroup's.
    cpuset: Option<PathBuf>,
    /// The cgroup whose processes are the target (`--cgroup`), in one hierarchy.
    members: Option<PathBuf>,
    /// Where the cgroup's CPU usage is counted (v1 `cpuacct.usage` in ns, v2 `cpu.stat`).
    usage: Option<PathBuf>,
    /// adapt's own cgroup for the quota.
    own: Option<Own>,
    /// Each file written, with its bytes as found, in the order of their first writes.
    saved: Vec<(PathBuf, Vec<u8>)>,
    /// [`Cgroups::restore`] ran: dropping changes nothing more.
    released: bool,
}

/// Whatever path ends a session (an error while starting included), what was changed is put
/// back and adapt's own cgroup removed.
impl Drop for Cgroups {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.restore(false);
        }
    }
}

/// `cgroup` relative to its hierarchy: an absolute folder under a cgroup mount loses the mount's
/// path (`/sys/fs/cgroup/cpu/web` → `web`); anything else is a cgroup path as
/// `/proc/PID/cgroup` writes it (`/system.slice/nginx.service`).
fn relative(cgroup: &Path, mounts: &[PathBuf]) -> PathBuf {
    mounts
        .iter()
        .filter(|m| cgroup.starts_with(m))
        .max_by_key(|m| m.components().count())
        .and_then(|m| cgroup.strip_prefix(m).ok())
        .unwrap_or_else(|| cgroup.strip_prefix("/").unwrap_or(cgroup))
        .to_path_buf()
}

impl Cgroups {
    /// The knobs of cgroup `path` (`--cgroup`): its folder in each mounted hierarchy where it
    /// exists — the quota where the `cpu` controller has it, the CPU set where `cpuset` has it,
    /// its usage where `cpuacct` (v1) or `cpu.stat` (v2) counts it.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Cgroup`] when no mounted hierarchy has the cgroup.
    pub(crate) fn attach(path: &Path) -> Result<Self, AdaptError> {
        let mounts = sys::cgroup_mounts(Path::new("/"))?;
        let points: Vec<PathBuf> = mounts.iter().map(|m| m.mount.clone()).collect();
        let rel = relative(path, &points);
        let mut out = Self::default();
        let mut first = None;
        for m in &mounts {
            let dir = m.mount.join(&rel);
            if !dir.join("cgroup.procs").is_file() {
                continue;
            }
            let has = |c: &str| m.controllers.iter().any(|x| x == c);
            let v2 = m.version == CgroupVersion::V2;
            if has("cpu") && out.quota.is_none() {
                let files = QuotaFiles {
                    version: m.version,
                    dir: dir.clone(),
                };
                if files.file().is_file() {
                    out.quota = Some(files);
                }
            }
            if has("cpuset") && out.cpuset.is_none() && dir.join("cpuset.cpus").is_file() {
                out.cpuset = Some(dir.join("cpuset.cpus"));
            }
            if out.usage.is_none() {
                if v2 && dir.join("cpu.stat").is_file() {
                    out.usage = Some(dir.join("cpu.stat"));
                } else if has("cpuacct") && dir.join("cpuacct.usage").is_file() {
                    out.usage = Some(dir.join("cpuacct.usage"));
                }
            }
            // The folder named, else the first where the cgroup is, lists its processes.
            if dir == path || first.is_none() {
                first = Some(dir);
            }
        }
        out.members = first;
        if out.members.is_none() {
            return Err(cgroup_error(
                path,
                format!(
                    "no such cgroup in the mounted hierarchies ({})",
                    points
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(out)
    }

    /// A cgroup of adapt's own in the hierarchy of the `cpu` controller (v2 where its root
    /// hands `cpu` down, else v1), `pids` moved into it, each from where it was.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Cgroup`] when no hierarchy has the controller, the cgroup cannot be made
    /// or a process cannot be moved (what was done is undone first).
    pub(crate) fn own(pids: &[u32]) -> Result<Self, AdaptError> {
        let mounts = sys::cgroup_mounts(Path::new("/"))?;
        let hierarchy = mounts
            .iter()
            .filter(|m| m.controllers.iter().any(|c| c == "cpu"))
            .find(|m| match m.version {
                CgroupVersion::V2 => read_text(&m.mount.join("cgroup.subtree_control"))
                    .is_ok_and(|t| t.split_whitespace().any(|c| c == "cpu")),
                CgroupVersion::V1 => m.mount.join("cpu.cfs_quota_us").is_file(),
            })
            .ok_or_else(|| {
                cgroup_error(
                    Path::new("/sys/fs/cgroup"),
                    "no hierarchy with the cpu controller to make a quota cgroup in (--quota \
                     needs one)",
                )
            })?;
        let dir = hierarchy
            .mount
            .join(format!("coretune-adapt-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| cgroup_error(&dir, e.to_string()))?;
        let mut out = Self {
            quota: Some(QuotaFiles {
                version: hierarchy.version,
                dir: dir.clone(),
            }),
            own: Some(Own {
                dir: dir.clone(),
                from: Vec::new(),
            }),
            cpuset: None,
            members: None,
            usage: None,
            saved: Vec::new(),
            released: false,
        };
        let v1 = hierarchy.version == CgroupVersion::V1;
        for &pid in pids {
            let Some(from) = process_cgroup(pid, v1, &hierarchy.mount) else {
                continue;
            };
            match move_process(pid, &dir) {
                Ok(()) => {
                    if let Some(own) = &mut out.own {
                        own.from.push((pid, from));
                    }
                }
                // A process of the tree that ended meanwhile.
                Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => {}
                // Dropping `out` moves back those moved and removes the cgroup.
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Whether the quota is a knob here.
    pub(crate) fn has_quota(&self) -> bool {
        self.quota.is_some()
    }

    /// Whether the CPU set is the cgroup's `cpuset.cpus`.
    pub(crate) fn has_cpuset(&self) -> bool {
        self.cpuset.is_some()
    }

    /// The quota's file, for messages.
    pub(crate) fn quota_file(&self) -> Option<PathBuf> {
        self.quota.as_ref().map(QuotaFiles::file)
    }

    /// The cpuset file, for messages.
    pub(crate) fn cpuset_file(&self) -> Option<&Path> {
        self.cpuset.as_deref()
    }

    /// The file the cgroup's CPU usage is read from.
    pub(crate) fn usage_file(&self) -> Option<&Path> {
        self.usage.as_deref()
    }

    /// The cgroup's folder whose processes are the target.
    pub(crate) fn members_dir(&self) -> Option<&Path> {
        self.members.as_deref()
    }

    /// The quota found (`None`: no limit); `None` too where it is no knob.
    pub(crate) fn quota_now(&self) -> Result<Option<f64>, AdaptError> {
        match &self.quota {
            Some(q) => q.read(),
            None => Ok(None),
        }
    }

    /// The CPUs of the cgroup's `cpuset.cpus` (v2: `cpuset.cpus.effective` when it is empty).
    pub(crate) fn cpus_now(&self) -> Result<Option<Vec<usize>>, AdaptError> {
        let Some(file) = &self.cpuset else {
            return Ok(None);
        };
        let mut text = read_text(file)?;
        if text.trim().is_empty() {
            text = read_text(&file.with_file_name("cpuset.cpus.effective"))?;
        }
        parse_list(&text)
            .map(Some)
            .ok_or_else(|| cgroup_error(file, format!("'{}' is not a CPU list", text.trim())))
    }

    /// Sets the quota (`None`: no limit).
    pub(crate) fn set_quota(&mut self, cpus: Option<f64>) -> Result<(), AdaptError> {
        let Some(files) = self.quota.clone() else {
            return Ok(());
        };
        let bytes = files.bytes(cpus)?;
        self.write(&files.file(), &bytes)
    }

    /// Sets the cgroup's CPUs.
    pub(crate) fn set_cpus(&mut self, cpus: &[usize]) -> Result<(), AdaptError> {
        let Some(file) = self.cpuset.clone() else {
            return Ok(());
        };
        self.write(&file, format!("{}\n", format_list(cpus)).as_bytes())
    }

    fn write(&mut self, file: &Path, bytes: &[u8]) -> Result<(), AdaptError> {
        if !self.saved.iter().any(|(f, _)| f == file) {
            let old = sys::read_cgroup_file(file)?;
            self.saved.push((file.to_path_buf(), old));
        }
        sys::write_cgroup_file(file, bytes)?;
        Ok(())
    }

    /// Every process in the target cgroup and the cgroups under it.
    pub(crate) fn members(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut dirs: Vec<PathBuf> = self.members.iter().cloned().collect();
        while let Some(dir) = dirs.pop() {
            out.extend(
                sys::cgroup_pids(&dir)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|p| u32::try_from(p).ok()),
            );
            dirs.extend(sys::child_cgroups(&dir).unwrap_or_default());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Puts back every file as found (unless `keep`), then empties adapt's own cgroup (each
    /// process back where it came from; one started since, where the first came from) and
    /// removes it. Each failure is said, the rest still done; whether everything went.
    pub(crate) fn restore(&mut self, keep: bool) -> Vec<String> {
        self.released = true;
        let mut failed = Vec::new();
        if !keep || self.own.is_some() {
            for (file, bytes) in self.saved.drain(..).rev() {
                if let Err(e) = sys::write_cgroup_file(&file, &bytes) {
                    failed.push(e.to_string());
                }
            }
        }
        if let Some(own) = self.own.take() {
            let home = own.from.first().map(|(_, d)| d.clone());
            let until = Instant::now() + EMPTY_WAIT;
            loop {
                for pid in sys::cgroup_pids(&own.dir).unwrap_or_default() {
                    let Ok(pid) = u32::try_from(pid) else {
                        continue;
                    };
                    let to = own
                        .from
                        .iter()
                        .find(|(p, _)| *p == pid)
                        .map(|(_, d)| d.clone())
                        .or_else(|| home.clone());
                    if let Some(to) = to {
                        let _ = move_process(pid, &to);
                    }
                }
                match std::fs::remove_dir(&own.dir) {
                    Ok(()) => break,
                    Err(e) if Instant::now() >= until => {
                        failed.push(format!("removing {}: {e}", own.dir.display()));
                        break;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
        failed
    }
}

/// The cgroup folder of `pid` in the hierarchy mounted at `mount` (v1: the line of the `cpu`
/// controller; v2: `0::`).
fn process_cgroup(pid: u32, v1: bool, mount: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if v1 {
            controllers.split(',').any(|c| c == "cpu")
        } else {
            controllers.is_empty()
        };
        wanted.then(|| mount.join(path.trim_start_matches('/')))
    })
}

fn move_process(pid: u32, dir: &Path) -> Result<(), AdaptError> {
    sys::write_cgroup_file(&dir.join("cgroup.procs"), pid.to_string().as_bytes())?;
    Ok(())
}

fn read_text(file: &Path) -> Result<String, AdaptError> {
    let bytes = sys::read_cgroup_file(file)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn cgroup_error(path: &Path, reason: impl Into<String>) -> AdaptError {
    AdaptError::Cgroup {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The CPU seconds the cgroup has used so far, from `file` (`cpuacct.usage` in ns, or
/// `cpu.stat`'s `usage_usec`).
pub(crate) fn usage_seconds(file: &Path) -> Result<f64, String> {
    let text = read_text(file).map_err(|e| e.to_string())?;
    #[allow(clippy::cast_precision_loss)] // nanoseconds and microseconds of CPU time
    if file.ends_with("cpu.stat") {
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|us| us as f64 / 1e6)
            .ok_or_else(|| format!("{}: no usage_usec", file.display()))
    } else {
        text.trim()
            .parse::<u64>()
            .map(|ns| ns as f64 / 1e9)
            .map_err(|_| format!("{}: '{}' is not a usage", file.display(), text.trim()))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_cgroup_is_named_by_its_folder_or_its_path_in_the_hierarchy() {
        let mounts = [
            PathBuf::from("/sys/fs/cgroup/cpu"),
            PathBuf::from("/sys/fs/cgroup/unified"),
        ];
        assert_eq!(
            relative(Path::new("/sys/fs/cgroup/cpu/web/a"), &mounts),
            Path::new("web/a")
        );
        assert_eq!(
            relative(Path::new("/system.slice/nginx.service"), &mounts),
            Path::new("system.slice/nginx.service")
        );
        let v2 = [PathBuf::from("/sys/fs/cgroup")];
        assert_eq!(
            relative(Path::new("/sys/fs/cgroup/system.slice"), &v2),
            Path::new("system.slice")
        );
    }

    // Cgroups are Linux's: elsewhere their readers say "not supported".
    #[cfg(target_os = "linux")]
    #[test]
    fn quotas_are_read_and_written_in_cpus_v1_and_v2() {
        let dir = tempfile::tempdir().unwrap();
        let v2 = QuotaFiles {
            version: CgroupVersion::V2,
            dir: dir.path().to_path_buf(),
        };
        std::fs::write(dir.path().join("cpu.max"), "150000 100000\n").unwrap();
        assert_eq!(v2.read().unwrap(), Some(1.5));
        assert_eq!(v2.bytes(Some(2.0)).unwrap(), b"200000 100000\n");
        assert_eq!(v2.bytes(None).unwrap(), b"max 100000\n");
        std::fs::write(dir.path().join("cpu.max"), "max 100000\n").unwrap();
        assert_eq!(v2.read().unwrap(), None);
        let v1 = QuotaFiles {
            version: CgroupVersion::V1,
            ..v2
        };
        std::fs::write(dir.path().join("cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(dir.path().join("cpu.cfs_period_us"), "50000\n").unwrap();
        assert_eq!(v1.read().unwrap(), None);
        assert_eq!(v1.bytes(Some(1.0)).unwrap(), b"50000\n");
        assert_eq!(v1.bytes(None).unwrap(), b"-1\n");
        std::fs::write(dir.path().join("cpu.cfs_quota_us"), "25000\n").unwrap();
        assert_eq!(v1.read().unwrap(), Some(0.5));
    }

    // Cgroups are Linux's: elsewhere their readers say "not supported".
    #[cfg(target_os = "linux")]
    #[test]
    fn usage_is_read_from_cpuacct_or_cpu_stat() {
        let dir = tempfile::tempdir().unwrap();
        let acct = dir.path().join("cpuacct.usage");
        std::fs::write(&acct, "2500000000\n").unwrap();
        assert_eq!(usage_seconds(&acct).unwrap(), 2.5);
        let stat = dir.path().join("cpu.stat");
        std::fs::write(&stat, "usage_usec 1500000\nuser_usec 1\n").unwrap();
        assert_eq!(usage_seconds(&stat).unwrap(), 1.5);
    }
}
