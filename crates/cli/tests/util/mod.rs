//! Shared helpers for the CLI's integration tests.
#![allow(clippy::unwrap_used)]
// Root, cgroup, port and process helpers serve the Linux-only modules: unused in a Windows build.
#![cfg_attr(
    not(target_os = "linux"),
    allow(dead_code, unreachable_code, unused_variables)
)]

use std::path::PathBuf;

use assert_cmd::Command;

/// The `coretune` binary under test.
pub(crate) fn coretune() -> Command {
    Command::cargo_bin("coretune").unwrap()
}

/// The probe program (`crates/cli/examples/probe.rs`, built by `cargo test` beside the binary):
/// what tests start where `sh`, `sleep` and `/proc` are not there (Windows).
pub(crate) fn probe() -> PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("coretune");
    let path = bin
        .parent()
        .expect("the binary is in a folder")
        .join("examples")
        .join(format!("probe{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "{} is missing: `cargo test` builds the examples (`cargo build --example probe` alone)",
        path.display()
    );
    path
}

/// A program that does nothing and succeeds, on every system: `true` on Unix, the probe
/// ([`probe`]) on Windows, which has no `true`.
pub(crate) fn nothing() -> String {
    if cfg!(unix) {
        "true".to_owned()
    } else {
        probe().display().to_string()
    }
}

/// The `coretune` binary under test as a plain `std` command (to `spawn` it).
pub(crate) fn coretune_std() -> std::process::Command {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("coretune"))
}

// The corpus helpers (`topologies_dir`, `expected`, `corpus_files`, `as_usize`) are the core
// crate's, so both crates find and read `tests/data/topologies/` the same way.
#[path = "../../../core/tests/util/mod.rs"]
mod corpus;
pub(crate) use corpus::{corpus_files, expected, skip};

/// The corpus files that carry PCI and OS devices (`tests/data/topologies/io/`), as paths for
/// the command line.
pub(crate) fn io_files() -> Vec<String> {
    let dir = corpus::topologies_dir().join("io");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/data/topologies/io is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".xml"))
        .collect();
    files.sort();
    files
}

/// One corpus file's path, as a string for the command line.
pub(crate) fn fixture(name: &str) -> String {
    corpus::fixture(name).to_string_lossy().into_owned()
}

/// A JSON Schema from the repository's `docs/` folder, compiled.
pub(crate) fn schema(name: &str) -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Runs `coretune ARGS`, expects success, parses stdout as JSON.
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    let out = coretune().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "coretune {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What `coretune place` plans: each thread's CPUs, each set as wide as `--bind` says.
pub(crate) fn planned_bound(threads: usize, policy: &str, bind: &str) -> Vec<Vec<usize>> {
    let plan = json(&[
        "place",
        "--threads",
        &threads.to_string(),
        "--policy",
        policy,
        "--bind",
        bind,
        "--json",
    ]);
    thread_pus(&plan)
}

/// Each thread's `pus` in a `coretune place --json` plan.
pub(crate) fn thread_pus(plan: &serde_json::Value) -> Vec<Vec<usize>> {
    plan["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["pus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| usize::try_from(c.as_u64().unwrap()).unwrap())
                .collect()
        })
        .collect()
}

/// Asserts `value` is valid against `validator`, listing every violation.
pub(crate) fn assert_valid(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
    what: &str,
) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: schema violations:\n{}",
        errors.join("\n")
    );
}

/// Asserts that a finished `coretune` (or helper) command succeeded, showing its stderr if not.
pub(crate) fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A JSON file, parsed.
pub(crate) fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A sweep folder's `summary.json`.
pub(crate) fn summary(dir: &std::path::Path) -> serde_json::Value {
    read_json(&dir.join("summary.json"))
}

/// A JSON-lines file (`runs.jsonl`), one value a line.
pub(crate) fn read_jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Copies a folder tree (a results folder) to `to`.
pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `coretune tune --quiet --resume DIR`, expected to succeed.
pub(crate) fn resume(dir: &std::path::Path) {
    let out = coretune()
        .args(["tune", "--quiet", "--resume"])
        .arg(dir)
        .output()
        .unwrap();
    assert_ok(&out);
}

/// Whether `program` is on `PATH`; when it is not, the test is skipped for it ([`skip`]: under
/// `make test` it fails instead).
#[track_caller]
pub(crate) fn installed(program: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(format!(
            "{program} is not installed (scripts/setup.sh --test installs it)"
        ));
    }
    found
}

/// Whether the tests run as root (`id -u` is 0).
pub(crate) fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The pinning library next to the `coretune` binary under test, built now (with the same
/// profile) so that it is the fresh one: `cargo test` builds the binaries it tests but not a
/// `cdylib` of another package. Cargo does not hold its build lock while tests run, so the
/// nested `cargo build` is safe; it runs once per test binary.
pub(crate) fn pin_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = assert_cmd::cargo::cargo_bin("coretune");
            let dir = exe.parent().unwrap();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = std::process::Command::new(cargo);
            build.args(["build", "--quiet", "-p", "coretune-pin"]);
            if dir.ends_with("release") {
                build.arg("--release");
            }
            let out = build
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert_ok(&out);
            let lib = dir.join("libcoretune_pin.so");
            assert!(lib.is_file(), "{} was not built", lib.display());
            lib
        })
        .clone()
}

/// A cgroup allowed `quota_us` of CPU time per 100 ms period, removed when dropped; `None` (with
/// the reason on stderr) when this is not root on Linux or no cgroup cpu controller is mounted.
/// Commands started through [`CpuQuota::command`] run inside it.
pub(crate) struct CpuQuota {
    dir: PathBuf,
}

impl CpuQuota {
    pub(crate) fn new(quota_us: u64) -> Option<Self> {
        // The effective uid: the second field of `Uid:` in this process's status.
        #[cfg(target_os = "linux")]
        if std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_owned();
                line.split_whitespace().nth(2).map(str::to_owned)
            })
            .as_deref()
            != Some("0")
        {
            skip("creating a cgroup with a CPU quota needs root");
            return None;
        }
        #[cfg(not(target_os = "linux"))]
        {
            skip("cgroup CPU quotas are Linux's");
            return None;
        }
        let name = format!("coretune-test-{}-{quota_us}", std::process::id());
        let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers");
        let dir = if std::fs::read_to_string(v2)
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
        {
            let _ = std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+cpu");
            let dir = PathBuf::from("/sys/fs/cgroup").join(name);
            std::fs::create_dir(&dir).ok()?;
            std::fs::write(dir.join("cpu.max"), format!("{quota_us} 100000")).ok()?;
            dir
        } else if std::path::Path::new("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() {
            let dir = PathBuf::from("/sys/fs/cgroup/cpu").join(name);
            std::fs::create_dir(&dir).ok()?;
            std::fs::write(dir.join("cpu.cfs_period_us"), "100000").ok()?;
            std::fs::write(dir.join("cpu.cfs_quota_us"), quota_us.to_string()).ok()?;
            dir
        } else {
            skip("no cgroup cpu controller on this machine");
            return None;
        };
        Some(Self { dir })
    }

    /// `program args...` started inside the cgroup (through `sh`, which moves itself in and
    /// then execs it).
    pub(crate) fn command(&self, program: &std::path::Path) -> std::process::Command {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg(r#"echo $$ > "$1/cgroup.procs" && shift && exec "$@""#)
            .arg("sh")
            .arg(&self.dir)
            .arg(program);
        cmd
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A TCP port nothing listens on now (bound to port 0, then let go).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The live processes whose command line mentions `needle` (a test's own folder, port or
/// marker word), coretune itself left out, each as `PID: COMMAND LINE`.
pub(crate) fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Zombies have no command line left: only live processes count.
        if cmdline.contains(needle) && !cmdline.contains("coretune") {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}
