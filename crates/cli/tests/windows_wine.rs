//! The Windows build, run under Wine from Linux: what the issue that brought Windows asks to be
//! seen working, with `coretune.exe` as `make test-windows` builds it (debug), from its target
//! folder (`target/windows/x86_64-pc-windows-gnu/debug/`, where the Wine stand-in DLL sits beside it).
//!
//! `make test-windows` builds it and runs these (`cargo test -p coretune --test cli windows_wine:: --
//! --ignored`, with `scripts/windows.sh`'s environment); a plain `cargo test` leaves them out, as
//! it has no Windows build to run.
// Wine runs on Linux here.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WHY: &str = "needs the Windows build and Wine: make test-windows runs it";

/// The Windows tests' build, `target/windows/x86_64-pc-windows-gnu/debug/` (scripts/windows.sh).
fn build_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/windows/x86_64-pc-windows-gnu/debug")
}

/// A program of the Windows build, checked to be there.
fn windows_program(name: &str) -> PathBuf {
    let path = build_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: make test-windows builds it",
        path.display()
    );
    path
}

/// `wine64 PROGRAM ARGS` in the Wine prefix `prefix` (or the one the environment names).
fn wine(prefix: Option<&Path>, program: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("/usr/lib/wine/wine64");
    cmd.arg(program).args(args).env("WINEDEBUG", "-all");
    if let Some(prefix) = prefix {
        cmd.env("WINEPREFIX", prefix);
    }
    cmd.output().unwrap()
}

fn coretune_exe(args: &[&str]) -> Output {
    wine(None, &windows_program("coretune.exe"), args)
}

fn ok_stdout(out: &Output) -> String {
    util::assert_ok(out);
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// `coretune.exe topo --json` in a brand-new Wine prefix gives the Linux build's answer for
/// the same host: the same counts, SMT, NUMA nodes, caches and CPU sets, one processor group
/// read from Windows (not modelled), and the same usable CPUs.
#[test]
#[ignore = "needs the Windows build and Wine: make test-windows runs it"]
fn topo_in_a_fresh_prefix_equals_the_linux_answer() {
    let prefix = tempfile::tempdir().unwrap();
    let win: serde_json::Value = serde_json::from_str(&ok_stdout(&wine(
        Some(prefix.path()),
        &windows_program("coretune.exe"),
        &["topo", "--json"],
    )))
    .unwrap();
    let linux = util::json(&["topo", "--json"]);
    for key in ["counts", "smt", "offline_pus", "disallowed_pus"] {
        assert_eq!(win[key], linux[key], "{key}: {WHY}");
    }
    // Linux gives a uniform machine one CPU kind (from its capacity files), Windows none: both
    // say the CPUs are all alike.
    let kinds = |v: &serde_json::Value| v["cpu_kinds"].as_array().unwrap().len().max(1);
    assert_eq!(kinds(&win), kinds(&linux));
    let nodes = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        // Wine reports no NUMA memory size; the rest must agree.
        v["numa_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| serde_json::json!([n["logical_index"], n["os_index"], n["pus"]]))
            .collect()
    };
    assert_eq!(nodes(&win), nodes(&linux));
    assert_eq!(win["processor_groups"]["source"], "windows");
    assert_eq!(linux["processor_groups"]["source"], "modelled");
    assert_eq!(
        win["processor_groups"]["groups"],
        linux["processor_groups"]["groups"]
    );
    for key in ["usable", "usable_cores", "topology_pus"] {
        assert_eq!(win["budget"][key], linux["budget"][key], "budget {key}");
    }
    let explanation = win["budget"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("job CPU rate cap"), "{explanation}");
}

/// `run --cpus 1` starts a Windows program on CPU 1: its main thread and a thread it creates
/// say so from inside; and `run --pid` moves a running one, which then says so too.
#[test]
#[ignore = "needs the Windows build and Wine: make test-windows runs it"]
fn run_places_a_program_and_rebinds_a_running_one() {
    let probe = windows_program("examples/probe.exe");
    let out = coretune_exe(&[
        "run",
        "--cpus",
        "1",
        "--threads",
        "2",
        "--",
        &probe.to_string_lossy(),
        "env",
        "affinity",
    ]);
    assert_eq!(ok_stdout(&out), "2 2 2\nmain 1\nthread 1\n");

    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let pid_arg = pid_file.to_string_lossy().into_owned();
    let running = Command::new("/usr/lib/wine/wine64")
        .arg(&probe)
        .args(["pid", &pid_arg, "sleep", "4000", "affinity"])
        .env("WINEDEBUG", "-all")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !pid_file.exists() {
        assert!(start.elapsed().as_secs() < 60, "the probe did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let out = coretune_exe(&["run", "--pid", pid.trim(), "--cpus", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("bound to CPUs 0"), "{err}");
    let out = running.wait_with_output().unwrap();
    assert_eq!(ok_stdout(&out), "main 0\nthread 0\n");
}

/// `bench raymesh --threads 2` verifies its result, records where each worker ran and the
/// counters Windows has, and leaves the ones it has not absent (null), never 0.
#[test]
#[ignore = "needs the Windows build and Wine: make test-windows runs it"]
fn bench_verifies_and_keeps_absent_counters_absent() {
    let json: serde_json::Value = serde_json::from_str(&ok_stdout(&coretune_exe(&[
        "bench",
        "raymesh",
        "--threads",
        "2",
        "--place",
        "cores",
        "--size",
        "small",
        "--runs",
        "2",
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["verified"], true);
    assert!(json["ctx_switches"]["voluntary"].is_null());
    assert!(json["migrations"].is_null());
    for run in json["runs"].as_array().unwrap() {
        assert!(run["peak_rss_bytes"].as_u64().unwrap() > 0, "{run}");
        assert!(run["user_s"].as_f64().unwrap() > 0.0, "{run}");
        assert_eq!(run["migrations_source"], "unavailable");
        let threads = run["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2);
        // --place cores: each worker on its own CPU, as the workers saw it themselves.
        for (i, t) in threads.iter().enumerate() {
            let seen: Vec<&String> = t["cpus_seen"].as_object().unwrap().keys().collect();
            assert_eq!(seen, [&i.to_string()], "{t}");
        }
    }
    let spawn: serde_json::Value = serde_json::from_str(&ok_stdout(&coretune_exe(&[
        "bench", "spawn", "--items", "200000", "--runs", "1", "--json",
    ])))
    .unwrap();
    assert_eq!(spawn["verified"], true);
}

/// The articles' experiment as written on Windows: the mask `start /affinity` takes for
/// "every CPU but 0", and a sweep that compares keeping CPU 0 free or not, which completes and
/// writes its folder and report.
#[test]
#[ignore = "needs the Windows build and Wine: make test-windows runs it"]
fn cpu0_kept_free_or_not_as_the_articles_do_it() {
    assert_eq!(
        ok_stdout(&coretune_exe(&["cpus", "all ~pu:0", "--to", "windows"])),
        "2\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("sweep");
    let out = coretune_exe(&[
        "tune",
        "sum",
        "--size",
        "small",
        "--threads",
        "1,2",
        "--place",
        "os",
        "--cpus",
        "all",
        "--cpus",
        "all ~pu:0",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--exhaustive",
        "--quiet",
        "--out",
        &out_dir.to_string_lossy(),
    ]);
    util::assert_ok(&out);
    for file in [
        "summary.json",
        "runs.jsonl",
        "report.html",
        "sweep.json",
        "summary.csv",
    ] {
        assert!(out_dir.join(file).is_file(), "{file} missing");
    }
    let summary = util::summary(&out_dir);
    let cpus: std::collections::BTreeSet<String> = summary["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cpus"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(cpus.len(), 2, "{cpus:?}");
    assert!(!summary["recommendation"].is_null(), "{summary}");
    let apply = summary["recommendation"]["apply"].to_string();
    assert!(
        apply.contains("PowerShell: $env:OMP_NUM_THREADS"),
        "{apply}"
    );
    assert!(!apply.contains("taskset"), "{apply}");
}

/// `watch` shows per-CPU utilisation and says it cannot show where threads run.
#[test]
#[ignore = "needs the Windows build and Wine: make test-windows runs it"]
fn watch_shows_cpus_and_says_threads_are_not_visible() {
    let probe = windows_program("examples/probe.exe");
    let dir = tempfile::tempdir().unwrap();
    let out = coretune_exe(&[
        "watch",
        "--interval",
        "50",
        "--out",
        &dir.path().join("w").to_string_lossy(),
        "--",
        &probe.to_string_lossy(),
        "spin",
        "500",
    ]);
    util::assert_ok(&out);
    // The summary is on stderr (stdout is the program's); Wine may add its own lines there.
    let text = String::from_utf8_lossy(&out.stderr).replace('\r', "");
    assert!(text.contains("Busiest CPUs: CPU"), "{text}");
    assert!(text.contains("Threads: not shown"), "{text}");
    let summary = util::read_json(&dir.path().join("w/summary.json"));
    assert_eq!(summary["threads_visible"], false);
    assert!(summary["cpus"].as_array().unwrap().len() >= 2, "{summary}");
}
