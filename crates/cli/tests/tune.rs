//! `coretune tune` and `coretune compare` end to end, on tiny sweeps: the results folder and its
//! schema, external commands with placeholders, failures, kill-and-resume, and hyperfine.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod util;

use std::path::Path;
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn builtin_sweep_writes_every_file_and_a_valid_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "raymesh",
            "--rays",
            "2000",
            "--threads",
            "1,2",
            "--place",
            "os,spread",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--exhaustive",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Recommendation:"), "{stdout}");
    assert!(
        stdout.contains(&format!("Results: {}", dir.display())),
        "{stdout}"
    );
    for file in [
        "sweep.json",
        "runs.jsonl",
        "summary.json",
        "summary.csv",
        "summary.md",
        "hyperfine.json",
        "machine.json",
        "topology.xml",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let s = summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    let configs = s["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 4);
    for c in configs {
        assert_eq!(c["runs"], 2);
        assert_eq!(c["failed"], 0);
        let (lo, med, hi) = (
            c["ci_s"][0].as_f64().unwrap(),
            c["median_s"].as_f64().unwrap(),
            c["ci_s"][1].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi);
    }
    let rec = &s["recommendation"];
    assert!(rec["threads"].as_u64().unwrap() >= 1);
    assert!(!rec["reason"].as_str().unwrap().is_empty());
    assert!(rec["apply"].as_array().unwrap().iter().any(|l| {
        l.as_str()
            .unwrap()
            .starts_with("coretune bench raymesh --threads")
    }));
    // 4 configurations × (1 warm-up + 2 runs), every one verified.
    let runs = lines(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|r| r["status"] == "ok"));
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    assert!(csv.starts_with("threads,place,cpus,throttle,median_s,ci_low_s,ci_high_s,"));
    assert_eq!(csv.lines().count(), 5);
    let hf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("hyperfine.json")).unwrap())
            .unwrap();
    assert_eq!(hf["results"].as_array().unwrap().len(), 4);
    assert_eq!(hf["results"][0]["times"].as_array().unwrap().len(), 2);
    // The same folder cannot be reused by accident.
    let again = util::coretune()
        .args(["tune", "raymesh", "--rays", "2000", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
}

#[test]
fn external_command_gets_placeholders_and_failures_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = tmp.path().join("calls.txt");
    let script = format!(
        "echo {{threads}} {{place}} {{cpus}} $OMP_NUM_THREADS >> '{}'; test {{threads}} -ne 3",
        log.display()
    );
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1-3",
            "--place",
            "os",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--exhaustive",
            "--quiet",
            "--shell",
            "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(&script)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 6);
    for line in calls.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[1], "os");
        // {threads} and OMP_NUM_THREADS agree.
        assert_eq!(words[0], words[3], "{line}");
    }
    let s = summary(&dir);
    let three = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["threads"] == 3)
        .unwrap();
    assert_eq!(
        (three["runs"].as_u64(), three["failed"].as_u64()),
        (Some(0), Some(2))
    );
    assert!(three["median_s"].is_null());
    assert_ne!(s["recommendation"]["threads"], 3);
    let failed = lines(&dir.join("runs.jsonl"))
        .into_iter()
        .filter(|r| r["status"] == "failed")
        .count();
    assert_eq!(failed, 2);
}

/// Starts a sweep of 4 configurations × 3 runs of `sleep 0.15`, lets it finish a few runs,
/// kills it with `signal`, resumes it, and checks that every configuration has exactly 3 runs.
fn kill_and_resume(signal: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("coretune"))
        .args([
            "tune",
            "--threads",
            "1-4",
            "--place",
            "os",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--exhaustive",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .args(["--", "sleep", "0.15"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let log = dir.join("runs.jsonl");
    let start = Instant::now();
    while !(log.exists() && lines(&log).len() >= 4) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "sweep did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = StdCommand::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the sweep was stopped before it finished"
    );
    let before = lines(&log).len();
    assert!((4..12).contains(&before), "{before} runs before resuming");
    let out = util::coretune()
        .args(["tune", "--quiet", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let runs = lines(&log);
    assert_eq!(runs.len(), 12, "no run lost or repeated");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["seq"], i, "sequence numbers are contiguous");
    }
    for c in summary(&dir)["configs"].as_array().unwrap() {
        assert_eq!(c["runs"], 3, "{c}");
    }
}

#[test]
fn sigkill_mid_sweep_then_resume_completes_without_loss_or_repeat() {
    kill_and_resume("-KILL");
}

#[test]
fn sigint_mid_sweep_then_resume_completes_without_loss_or_repeat() {
    kill_and_resume("-INT");
}

/// coretune's median for a command is within a few percent of hyperfine's for the same command
/// (both without a shell). Skipped when hyperfine is not installed (`make test` installs it).
#[test]
fn median_agrees_with_hyperfine() {
    if StdCommand::new("hyperfine")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: hyperfine is not installed (apt-get install hyperfine)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let hf_json = tmp.path().join("hf.json");
    let hf = StdCommand::new("hyperfine")
        .args(["-N", "--runs", "10", "--warmup", "1", "--export-json"])
        .arg(&hf_json)
        .arg("sleep 0.05")
        .output()
        .unwrap();
    assert!(
        hf.status.success(),
        "{}",
        String::from_utf8_lossy(&hf.stderr)
    );
    let hf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&hf_json).unwrap()).unwrap();
    let hf_median = hf["results"][0]["median"].as_f64().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1",
            "--place",
            "os",
            "--runs",
            "10",
            "--warmup",
            "1",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .args(["--", "sleep", "0.05"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let ours = summary(&dir)["configs"][0]["median_s"].as_f64().unwrap();
    let ratio = ours / hf_median;
    assert!(
        (0.95..1.05).contains(&ratio),
        "coretune {ours:.4} s vs hyperfine {hf_median:.4} s"
    );
}

#[test]
fn compare_marks_changes_and_gates_on_the_geomean() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, seconds: &str| {
        let dir = tmp.path().join(name);
        let out = util::coretune()
            .args([
                "tune",
                "--threads",
                "1,2",
                "--place",
                "os",
                "--runs",
                "3",
                "--warmup",
                "0",
                "--exhaustive",
                "--quiet",
                "--out",
            ])
            .arg(&dir)
            .args(["--", "sleep", seconds])
            .output()
            .unwrap();
        util::assert_ok(&out);
        dir
    };
    let (fast, slow) = (run("fast", "0.05"), run("slow", "0.10"));
    let out = util::coretune()
        .arg("compare")
        .arg(&fast)
        .arg(slow.join("summary.json"))
        .args(["--fail-above", "20"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("slower"), "{stdout}");
    assert!(stdout.contains("geometric mean B/A"), "{stdout}");
    let json = util::json(&[
        "compare",
        slow.to_str().unwrap(),
        fast.to_str().unwrap(),
        "--json",
    ]);
    let g = json["geomean"].as_f64().unwrap();
    assert!(g < 0.7, "the fast sweep is about twice as fast: {g}");
    assert!(
        json["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["verdict"] == "faster")
    );
}

#[test]
fn bad_tune_arguments_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("x");
    let out_dir = out_dir.to_str().unwrap();
    for (args, message) in [
        (
            vec!["tune", "--threads", "0", "--out", out_dir],
            "--threads",
        ),
        (vec!["tune", "--cpus", "numa:9", "--out", out_dir], "numa:9"),
        (
            vec!["tune", "nope", "--out", out_dir],
            "unknown workload 'nope'",
        ),
        (vec!["tune", "--resume", "/nonexistent/sweep"], "--resume"),
        (
            vec!["tune", "--throttle", "zero", "--out", out_dir],
            "--throttle",
        ),
    ] {
        let out = util::coretune().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
