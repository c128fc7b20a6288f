//! `coretune reserve`: on a cgroup made by the test (then `--undo` puts its files back byte for
//! byte), and the systemd way through a fake `systemctl` on `PATH` that records its arguments.
// Not built for Windows: cgroup cpusets and systemd: Linux only (README, "Windows": what is not there).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use crate::util;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use util::{coretune, is_root};

fn two_cpus() -> bool {
    std::thread::available_parallelism().map_or(1, usize::from) >= 2
}

fn allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned()
}

/// A cpuset cgroup made by the test (with a child holding a process), removed when dropped.
struct TestCgroup {
    dir: PathBuf,
    v1: bool,
    sleeper: Option<Child>,
}

impl TestCgroup {
    /// Under the v2 hierarchy when it has the cpuset controller enabled for children, else
    /// under v1's cpuset hierarchy; `None` when neither is mounted.
    fn make() -> Option<Self> {
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_ok = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|s| s.split_whitespace().any(|c| c == "cpuset"));
        let v1 = Path::new("/sys/fs/cgroup/cpuset");
        let (parent, is_v1) = if v2_ok {
            (v2, false)
        } else if v1.join("cpuset.cpus").exists() {
            (v1, true)
        } else {
            return None;
        };
        let dir = parent.join(format!("coretune-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let mut cg = Self {
            dir,
            v1: is_v1,
            sleeper: None,
        };
        let sub = cg.dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        if is_v1 {
            // v1 cpusets start empty: a task can only join one with CPUs and memory nodes.
            let cpus = std::fs::read_to_string(parent.join("cpuset.cpus")).unwrap();
            let mems = std::fs::read_to_string(parent.join("cpuset.mems")).unwrap();
            for d in [&cg.dir, &sub] {
                std::fs::write(d.join("cpuset.cpus"), &cpus).unwrap();
                std::fs::write(d.join("cpuset.mems"), &mems).unwrap();
            }
        } else {
            std::fs::write(cg.dir.join("cgroup.subtree_control"), "+cpuset").unwrap();
        }
        let child = Command::new("sleep").arg("120").spawn().unwrap();
        std::fs::write(sub.join("cgroup.procs"), child.id().to_string()).unwrap();
        cg.sleeper = Some(child);
        Some(cg)
    }

    /// The cpuset files of both cgroups, as bytes.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for d in [self.dir.clone(), self.dir.join("sub")] {
            for name in [
                "cpuset.cpus",
                "cpuset.mems",
                "cpuset.cpus.effective",
                "cpuset.effective_cpus",
            ] {
                let p = d.join(name);
                if let Ok(bytes) = std::fs::read(&p) {
                    out.push((p, bytes));
                }
            }
        }
        out
    }

    fn pid(&self) -> u32 {
        self.sleeper.as_ref().unwrap().id()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        if let Some(mut c) = self.sleeper.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A cgroup can be removed once its tasks are gone; they leave asynchronously.
        for _ in 0..100 {
            let _ = std::fs::remove_dir(self.dir.join("sub"));
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn reserve_on_a_test_cgroup_and_undo_byte_for_byte() {
    if !is_root() || !two_cpus() {
        util::skip("reserve on a cgroup needs root and 2 CPUs");
        return;
    }
    let Some(cg) = TestCgroup::make() else {
        util::skip("no cpuset cgroup hierarchy is mounted");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state/reserve.json");
    let state_arg = state.to_str().unwrap();
    let dir = cg.dir.to_str().unwrap();
    let before = cg.files();
    let allowed_before = allowed(cg.pid());

    // --dry-run prints the plan and changes nothing, saves nothing.
    let out = coretune()
        .args([
            "reserve",
            "--cgroup",
            dir,
            "--state",
            state_arg,
            "--dry-run",
        ])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("would keep CPUs 0 free (everything else on 1) through cgroup"),
        "{text}"
    );
    assert_eq!(cg.files(), before);
    assert!(!state.exists());

    let out = coretune()
        .args(["reserve", "pu:0", "--cgroup", dir, "--state", state_arg])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("undo with: coretune reserve --undo --state"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(cg.dir.join("cpuset.cpus")).unwrap(),
        "1\n"
    );
    if cg.v1 {
        assert_eq!(
            std::fs::read_to_string(cg.dir.join("sub/cpuset.cpus")).unwrap(),
            "1\n"
        );
    }
    assert_eq!(allowed(cg.pid()), "1");
    // The saved state holds the old bytes.
    let saved: serde_json::Value = util::read_json(&state);
    assert_eq!(saved["schema"], "coretune-reserve/1");
    assert_eq!(saved["method"], "cgroup");

    // A second reserve would lose what was there: refused, nothing changed.
    let out = coretune()
        .args(["reserve", "pu:1", "--cgroup", dir, "--state", state_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reserved already"));
    assert_eq!(
        std::fs::read_to_string(cg.dir.join("cpuset.cpus")).unwrap(),
        "1\n"
    );

    let out = coretune()
        .args(["reserve", "--undo", "--state", state_arg])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert_eq!(
        cg.files(),
        before,
        "the cpuset files are not what they were"
    );
    assert_eq!(allowed(cg.pid()), allowed_before);
    assert!(!state.exists());
    let out = coretune()
        .args(["reserve", "--undo", "--state", state_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to undo"));
}

/// A fake `systemctl`: appends its arguments to `calls`, answers `show` with the unit's value
/// from `values/UNIT` (empty when absent), and fails `set-property` on the unit named in
/// `fail-on`, if any.
fn fake_systemctl(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nd='{}'\necho \"$*\" >> \"$d/calls\"\n\
         if [ \"$1\" = show ]; then\n  for u; do :; done\n  cat \"$d/values/$u\" 2>/dev/null || echo\n  exit 0\nfi\n\
         if [ \"$1\" = set-property ] && [ -f \"$d/fail-on\" ] && [ \"$3\" = \"$(cat \"$d/fail-on\")\" ]; then\n\
           echo \"Failed to set unit properties on $3: Access denied\" >&2\n\
           echo \"See system logs for details.\" >&2\n  exit 1\nfi\n",
        dir.display()
    );
    let path = bin.join("systemctl");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(dir.join("values")).unwrap();
    bin
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn systemd_way_through_a_fake_systemctl() {
    if !two_cpus() {
        util::skip("systemd_way_through_a_fake_systemctl needs 2 CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_systemctl(tmp.path());
    std::fs::write(tmp.path().join("values/user.slice"), "0-1\n").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let state = tmp.path().join("reserve.json");
    let state_arg = state.to_str().unwrap();
    let run = |args: &[&str]| coretune().env("PATH", &path).args(args).output().unwrap();

    let out = run(&["reserve", "--via", "systemd", "--state", state_arg]);
    util::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("through systemd"), "{text}");
    assert_eq!(
        calls(tmp.path()),
        [
            "show --property=AllowedCPUs --value user.slice",
            "show --property=AllowedCPUs --value system.slice",
            "show --property=AllowedCPUs --value init.scope",
            "set-property --runtime user.slice AllowedCPUs=1",
            "set-property --runtime system.slice AllowedCPUs=1",
            "set-property --runtime init.scope AllowedCPUs=1",
        ]
    );
    // Reserved already: the way out names the state file it was saved in.
    let again = run(&["reserve", "--via", "systemd", "--state", state_arg]);
    assert_eq!(again.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains(&format!(
            "run 'coretune reserve --undo --state {state_arg}' first"
        )),
        "{stderr}"
    );
    std::fs::remove_file(tmp.path().join("calls")).unwrap();
    let out = run(&["reserve", "--undo", "--state", state_arg]);
    util::assert_ok(&out);
    assert_eq!(
        calls(tmp.path()),
        [
            "set-property --runtime init.scope AllowedCPUs=",
            "set-property --runtime system.slice AllowedCPUs=",
            "set-property --runtime user.slice AllowedCPUs=0-1",
        ]
    );
    assert!(!state.exists());

    // A unit that cannot be changed: the ones changed before it are put back, nothing is left
    // saved, exit status 2.
    std::fs::remove_file(tmp.path().join("calls")).unwrap();
    std::fs::write(tmp.path().join("fail-on"), "system.slice").unwrap();
    let out = run(&["reserve", "--via", "systemd", "--state", state_arg]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // systemctl's two lines of stderr, in one line.
    assert!(
        stderr.contains("Access denied; See system logs for details."),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(
        calls(tmp.path())[3..],
        [
            "set-property --runtime user.slice AllowedCPUs=1",
            "set-property --runtime system.slice AllowedCPUs=1",
            "set-property --runtime user.slice AllowedCPUs=0-1",
        ]
    );
    assert!(!state.exists());
}

#[test]
fn reserve_dry_run_says_how_and_saves_nothing() {
    if !two_cpus() {
        util::skip("reserve_dry_run needs 2 CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("reserve.json");
    let out = coretune()
        .args(["reserve", "--dry-run", "--state", state.to_str().unwrap()])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "coretune reserve: would keep CPUs 0 free (everything else on 1) through "
        ),
        "{text}"
    );
    assert!(!state.exists());
    // Reserving every CPU leaves nothing to run on.
    let out = coretune()
        .args([
            "reserve",
            "all",
            "--dry-run",
            "--state",
            state.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("leaves no CPU to run on"));
}
