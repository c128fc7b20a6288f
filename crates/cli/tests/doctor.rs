//! `coretune doctor`: the build it describes is this one, it checks every feature that can fall
//! back, what it says matches the machine, and `--json` says the same as the text.
// Linux only: it checks against the pinning library built beside the binary, which is Linux's.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::Path;
use std::process::Command as StdCommand;

use util::assert_ok;

const TOPICS: [&str; 7] = [
    "hwloc",
    "pinning library",
    "perf events",
    "cgroups",
    "systemd",
    "process-event connector",
    "Slurm",
];

/// `git rev-parse --short=12 HEAD` in the repository, when it is a git checkout.
fn head() -> Option<String> {
    let out = StdCommand::new("git")
        .arg("-C")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn doctor_names_the_build_and_checks_every_feature_that_falls_back() {
    let lib = util::pin_library();
    let out = util::coretune()
        .arg("doctor")
        .env("CORETUNE_PIN_LIB", &lib)
        .output()
        .unwrap();
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    let commit = head().unwrap_or_else(|| "unknown".to_owned());
    let profile = if cfg!(not(optimized)) {
        "debug"
    } else {
        "release"
    };
    assert!(
        first.starts_with(&format!(
            "coretune {} (commit {commit}), {profile} build for ",
            env!("CARGO_PKG_VERSION")
        )),
        "{first}"
    );
    // `-V` names the same commit; `--version` also points here.
    let version = util::coretune().arg("--version").output().unwrap();
    assert_ok(&version);
    let version = String::from_utf8(version.stdout).unwrap();
    assert!(version.contains(&format!("(commit {commit})")), "{version}");
    assert!(version.contains("coretune doctor"), "{version}");

    let json = util::coretune()
        .args(["doctor", "--json"])
        .env("CORETUNE_PIN_LIB", &lib)
        .output()
        .unwrap();
    assert_ok(&json);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["coretune"]["commit"], commit.as_str());
    let checks = json["checks"].as_array().unwrap();
    let topics: Vec<&str> = checks
        .iter()
        .map(|c| c["topic"].as_str().unwrap())
        .collect();
    assert_eq!(topics, TOPICS);
    let check = |topic: &str| checks.iter().find(|c| c["topic"] == topic).unwrap();
    // The text says the same: one line per check, `ok` or `missing`, then what was found.
    for c in checks {
        let state = if c["ok"].as_bool().unwrap() {
            "ok"
        } else {
            "missing"
        };
        let line = text
            .lines()
            .find(|l| {
                l.split_whitespace().next() == Some(state)
                    && l.contains(c["topic"].as_str().unwrap())
            })
            .unwrap_or_else(|| panic!("no `{state}` line for {}: {text}", c["topic"]));
        assert!(line.ends_with(c["found"].as_str().unwrap()), "{line}");
        assert_eq!(c["instead"].is_string(), !c["ok"].as_bool().unwrap(), "{c}");
    }
    // What it found is the machine's.
    assert_eq!(check("pinning library")["ok"], true);
    assert_eq!(
        check("pinning library")["found"],
        std::path::absolute(&lib)
            .unwrap()
            .to_string_lossy()
            .as_ref()
    );
    assert_eq!(
        check("systemd")["ok"],
        Path::new("/run/systemd/system").is_dir()
    );
    assert_eq!(check("hwloc")["ok"], true);
    if let Ok(info) = StdCommand::new("hwloc-info").arg("--version").output() {
        // `hwloc-info 2.9.0`: the tools and the library are one hwloc.
        let version = String::from_utf8_lossy(&info.stdout);
        let version = version.split_whitespace().last().unwrap_or_default();
        let found = check("hwloc")["found"].as_str().unwrap();
        assert!(found.starts_with(&format!("hwloc {version}")), "{found}");
    }
}

/// `coretune doctor`'s output with `CORETUNE_PIN_LIB=lib` (it exits 0 whatever it finds), and
/// its line about the pinning library.
fn doctor_with_library(lib: &Path) -> (String, String) {
    let out = util::coretune()
        .arg("doctor")
        .env("CORETUNE_PIN_LIB", lib)
        .output()
        .unwrap();
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("pinning library"))
        .unwrap()
        .to_owned();
    (text, line)
}

#[test]
fn doctor_says_why_the_pinning_library_is_missing_and_still_exits_0() {
    let (text, line) = doctor_with_library(Path::new("/nonexistent/libcoretune_pin.so"));
    assert!(line.starts_with("missing "), "{line}");
    assert!(
        line.ends_with("CORETUNE_PIN_LIB=/nonexistent/libcoretune_pin.so is not a file"),
        "{line}"
    );
    assert!(text.contains("instead: `run --place`"), "{text}");
}

/// A library of other sources (left beside an upgraded binary, or built before the sources
/// changed) speaks another protocol: its logs read as "no thread seen", and every pinned run
/// failed its audit. Named for what it is instead.
#[test]
fn doctor_refuses_a_pinning_library_of_another_build() {
    let tmp = tempfile::tempdir().unwrap();
    let stale = tmp.path().join("libcoretune_pin.so");
    std::fs::write(
        &stale,
        b"\x7fELF ... coretune-pin-source:0000000000000000 ...",
    )
    .unwrap();
    let (_, line) = doctor_with_library(&stale);
    assert!(line.starts_with("missing "), "{line}");
    assert!(
        line.contains("is the pinning library of another build of coretune (other sources)"),
        "{line}"
    );
}

/// Finding 31: doctor said `ok Slurm sbatch, squeue, scontrol, sacct in /usr/bin` where every
/// Slurm command failed ("Could not establish a configuration source"): it only looked for the
/// commands. It now asks the controller (`scontrol ping`) and says why Slurm is not usable.
/// Slurm's commands are stand-ins here (the real cluster is `slurm.rs`'s), so no controller is
/// needed; the real `scontrol` is asked too where it is installed, about a cluster that is not.
#[test]
fn doctor_asks_slurm_s_controller_and_says_why_it_is_not_usable() {
    let slurm_line = |path: &std::ffi::OsStr, conf: Option<&str>| {
        let mut cmd = util::coretune();
        cmd.args(["doctor", "--json"]).env("PATH", path);
        if let Some(conf) = conf {
            cmd.env("SLURM_CONF", conf);
        }
        let out = cmd.output().unwrap();
        assert_ok(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let check = json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["topic"] == "Slurm")
            .unwrap()
            .clone();
        (
            check["ok"].as_bool().unwrap(),
            check["found"].as_str().unwrap().to_owned(),
        )
    };
    let bin = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("sbatch", "exit 0");
    write("squeue", "exit 0");
    for (scontrol, ok, found) in [
        (
            "echo 'scontrol: error: fetch_config: DNS SRV lookup failed' >&2\n\
             echo 'scontrol: fatal: Could not establish a configuration source' >&2; exit 1",
            false,
            "not usable: scontrol ping: Could not establish a configuration source (sbatch, \
             squeue, scontrol",
        ),
        (
            "echo 'Slurmctld(primary) at head is DOWN'; exit 1",
            false,
            "not usable: scontrol ping: Slurmctld(primary) at head is DOWN (sbatch",
        ),
        (
            "echo 'Slurmctld(primary) at head is UP'",
            true,
            "; Slurmctld(primary) at head is UP",
        ),
    ] {
        write("scontrol", scontrol);
        let (is_ok, text) = slurm_line(bin.path().as_os_str(), None);
        assert_eq!(is_ok, ok, "{text}");
        assert!(text.contains(found), "{text}");
    }
    if util::installed("scontrol") {
        let path = std::env::var_os("PATH").unwrap();
        let (is_ok, text) = slurm_line(&path, Some("/nonexistent/slurm.conf"));
        assert!(!is_ok, "{text}");
        assert!(text.starts_with("not usable: scontrol ping: "), "{text}");
    }
}
