//! The default pool size is the CPU budget (`ThreadPoolBuilder::num_threads`): in a cgroup whose
//! CPU quota is 1.5 CPUs' worth, a default pool has 1 worker; 2.5, 2 (fewer where the affinity
//! allows fewer CPUs). The pool runs in a child process (this test binary again, running
//! `child_prints_the_default_size`) started inside a cgroup made for it, as root on Linux;
//! elsewhere the test says why it was skipped.

mod util;

/// What the child prints: the size of a default pool.
#[test]
fn child_prints_the_default_size() {
    if std::env::var_os("CORETUNE_POOL_PRINT_DEFAULT").is_some() {
        let pool = coretune_pool::ThreadPool::new(0).unwrap();
        println!("default-size={}", pool.num_threads());
    }
}

#[cfg(target_os = "linux")]
#[test]
fn the_default_size_is_the_cpu_quota_rounded_down() {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    // SAFETY: no arguments; returns the effective uid.
    if unsafe { libc::geteuid() } != 0 {
        skip("creating a cgroup with a CPU quota needs root");
        return;
    }
    // A cgroup with the cpu controller: v2 where it is enabled, else v1's cpu hierarchy.
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
    let (dir, v2): (PathBuf, bool) =
        if std::fs::read_to_string(v2).is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu")) {
            let _ = std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+cpu");
            (
                format!("/sys/fs/cgroup/coretune-pool-test-{}", std::process::id()).into(),
                true,
            )
        } else if Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() {
            (
                format!(
                    "/sys/fs/cgroup/cpu/coretune-pool-test-{}",
                    std::process::id()
                )
                .into(),
                false,
            )
        } else {
            skip("no cgroup cpu controller on this machine");
            return;
        };
    /// Removes the cgroup however the test ends (it is empty once the children exited).
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    std::fs::create_dir(&dir).unwrap();
    let _remove = Remove(dir.clone());
    let affinity = std::thread::available_parallelism().unwrap().get();
    let exe = std::env::current_exe().unwrap();
    let mut seen = Vec::new();
    for (quota_us, expected) in [(150_000u64, 1usize), (250_000, 2)] {
        if v2 {
            std::fs::write(dir.join("cpu.max"), format!("{quota_us} 100000")).unwrap();
        } else {
            std::fs::write(dir.join("cpu.cfs_period_us"), "100000").unwrap();
            std::fs::write(dir.join("cpu.cfs_quota_us"), quota_us.to_string()).unwrap();
        }
        let out = Command::new("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$1/cgroup.procs" && shift && exec "$@""#)
            .arg("sh")
            .arg(&dir)
            .arg(&exe)
            .args(["child_prints_the_default_size", "--exact", "--nocapture"])
            .env("CORETUNE_POOL_PRINT_DEFAULT", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // libtest prints the test's output on the line of its name.
        let size: usize = stdout
            .split("default-size=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "no size printed: {stdout} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        seen.push((quota_us, size, expected.min(affinity)));
    }
    for (quota_us, size, expected) in seen {
        assert_eq!(
            size, expected,
            "a quota of {quota_us} us per 100 ms period: {size} workers, not {expected}"
        );
    }
}

/// Says the test is skipped and why — or fails it under `CORETUNE_TEST_STRICT=1` (`make test`,
/// which runs as root on Linux): a skip there would pass having checked nothing.
#[cfg(target_os = "linux")]
#[track_caller]
fn skip(why: &str) {
    assert!(
        std::env::var_os("CORETUNE_TEST_STRICT").is_none_or(|v| v != "1"),
        "skipped under CORETUNE_TEST_STRICT=1 (make test): {why}"
    );
    eprintln!("skipped: {why}");
}
