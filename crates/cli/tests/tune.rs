//! `coretune tune` and `coretune compare` end to end, on tiny sweeps: the results folder and its
//! schema, external commands with placeholders, failures, kill-and-resume, and hyperfine.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

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
            "--max-runs",
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
    let s = util::summary(&dir);
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
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 12);
    assert!(runs.iter().all(|r| r["status"] == "ok"));
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    assert!(csv.starts_with("threads,place,cpus,throttle,mem,median_s,ci_low_s,ci_high_s,"));
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

/// `sh -c` with placeholders (`--shell`), on the systems that have `sh`.
#[cfg(unix)]
#[test]
fn a_shell_command_gets_placeholders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = tmp.path().join("calls.txt");
    let script = format!(
        "echo {{threads}} {{place}} $OMP_NUM_THREADS >> '{}'",
        log.display()
    );
    let out = util::coretune()
        .args(["tune", "--threads", "1,2", "--place", "os", "--runs", "1"])
        .args([
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
    assert_eq!(calls, "1 os 1\n2 os 2\n");
}

#[test]
fn external_command_gets_placeholders_and_failures_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = tmp.path().join("calls.txt");
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1-3",
            "--place",
            "os",
            "--runs",
            "2",
            "--max-runs",
            "2",
            "--warmup",
            "0",
            "--exhaustive",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .arg("log")
        .arg(&log)
        .args(["{threads} {place} {cpus}", "fail-if", "{threads}", "3"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let calls = std::fs::read_to_string(&log).unwrap();
    // 1 and 2 threads twice each (no deciding runs: the runs are counted); 3 threads once: its
    // failure ends its runs.
    assert_eq!(calls.lines().count(), 5);
    for line in calls.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[1], "os");
        // {threads} and OMP_NUM_THREADS agree.
        assert_eq!(words[0], words[3], "{line}");
    }
    let s = util::summary(&dir);
    let three = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["threads"] == 3)
        .unwrap();
    assert_eq!(
        (three["runs"].as_u64(), three["failed"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(three["median_s"].is_null());
    assert!(
        three["out"]
            .as_str()
            .unwrap()
            .starts_with("1 of 1 run failed: "),
        "{three}"
    );
    assert_ne!(s["recommendation"]["threads"], 3);
    let failed = util::read_jsonl(&dir.join("runs.jsonl"))
        .into_iter()
        .filter(|r| r["status"] == "failed")
        .count();
    assert_eq!(failed, 1);
}

/// Starts a sweep of 4 configurations × 3 runs of a 0.15 s sleep, lets it finish a few runs,
/// kills it with `signal` (`-KILL` as `Child::kill` does it, which is TerminateProcess on
/// Windows), resumes it, and checks that every configuration has exactly 3 runs (no deciding
/// runs: `--max-runs 3`; resuming those is the engine's test's).
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
            "--max-runs",
            "3",
            "--warmup",
            "0",
            "--exhaustive",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .args(["sleep", "150"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let log = dir.join("runs.jsonl");
    let start = Instant::now();
    while !(log.exists() && util::read_jsonl(&log).len() >= 4) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "sweep did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    if signal == "-KILL" {
        child.kill().unwrap();
    } else {
        let killed = StdCommand::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the sweep was stopped before it finished"
    );
    let before = util::read_jsonl(&log).len();
    assert!((4..12).contains(&before), "{before} runs before resuming");
    util::resume(&dir);
    let runs = util::read_jsonl(&log);
    assert_eq!(runs.len(), 12, "no run lost or repeated");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["seq"], i, "sequence numbers are contiguous");
    }
    for c in util::summary(&dir)["configs"].as_array().unwrap() {
        assert_eq!(c["runs"], 3, "{c}");
    }
}

#[test]
fn sigkill_mid_sweep_then_resume_completes_without_loss_or_repeat() {
    kill_and_resume("-KILL");
}

// Signals: Ctrl-C reaches a Windows program another way (a console event to its group).
#[cfg(unix)]
#[test]
fn sigint_mid_sweep_then_resume_completes_without_loss_or_repeat() {
    kill_and_resume("-INT");
}

/// coretune times a command as hyperfine does (both without a shell). The machine is shared, so
/// the two tools take turns (3 rounds of 10 runs each) and the comparison is of their fastest
/// runs, which load disturbs least: within 5%. Medians, which follow the load of the moment, must
/// agree within 15%. Skipped when hyperfine is not installed (`make test` installs it).
/// In a cgroup allowed half a CPU, `tune` says so (a warning line and `machine.json`), records
/// how long the quota held each run off the CPUs, and names the throttled configurations under
/// the table and in `summary.json`.
#[cfg(target_os = "linux")]
#[test]
fn a_cpu_quota_is_recorded_and_its_throttling_shown() {
    let Some(quota) = util::CpuQuota::new(50_000) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = quota
        .command(&assert_cmd::cargo::cargo_bin("coretune"))
        .args(["tune", "--threads", "1", "--place", "os", "--runs", "2"])
        .args([
            "--warmup",
            "0",
            "--exhaustive",
            "--quiet",
            "--shell",
            "--out",
        ])
        .arg(&dir)
        .args(["--", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a cgroup CPU quota allows 0.5 CPUs' worth of time on"),
        "{stderr}"
    );
    let machine = util::read_json(&dir.join("machine.json"));
    assert_eq!(machine["settings"]["cpu_quota"].as_f64(), Some(0.5));
    let row = &util::summary(&dir)["configs"][0];
    let throttled = row["throttled_s"].as_f64().unwrap_or(0.0);
    assert!(throttled > 0.0, "{row}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("The cgroup CPU quota throttled 1 thread, place os ("),
        "{stdout}"
    );
    let runs = std::fs::read_to_string(dir.join("runs.jsonl")).unwrap();
    assert!(runs.contains("\"throttled_s\""), "{runs}");
}

#[test]
fn timing_agrees_with_hyperfine() {
    if StdCommand::new("hyperfine")
        .arg("--version")
        .output()
        .is_err()
    {
        util::skip("hyperfine is not installed (apt-get install hyperfine)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mut hf_min, mut hf_medians, mut ct_min, mut ct_medians) =
        (f64::MAX, Vec::new(), f64::MAX, Vec::new());
    for round in 0..3 {
        let hf_json = tmp.path().join(format!("hf{round}.json"));
        let hf = StdCommand::new("hyperfine")
            .args(["-N", "--runs", "10", "--warmup", "1", "--export-json"])
            .arg(&hf_json)
            .arg("sleep 0.05")
            .output()
            .unwrap();
        util::assert_ok(&hf);
        let hf = &util::read_json(&hf_json)["results"][0];
        hf_min = hf_min.min(hf["min"].as_f64().unwrap());
        hf_medians.push(hf["median"].as_f64().unwrap());
        let dir = tmp.path().join(format!("sweep{round}"));
        let out = util::coretune()
            .args(["tune", "--threads", "1", "--place", "os", "--runs", "10"])
            .args(["--warmup", "1", "--quiet", "--out"])
            .arg(&dir)
            .args(["--", "sleep", "0.05"])
            .output()
            .unwrap();
        util::assert_ok(&out);
        let ours = &util::summary(&dir)["configs"][0];
        ct_min = ct_min.min(ours["min_s"].as_f64().unwrap());
        ct_medians.push(ours["median_s"].as_f64().unwrap());
    }
    let ratio = ct_min / hf_min;
    assert!(
        (0.95..1.05).contains(&ratio),
        "fastest runs: coretune {ct_min:.4} s vs hyperfine {hf_min:.4} s"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ct, hf) = (median(&mut ct_medians), median(&mut hf_medians));
    assert!(
        (0.85..1.15).contains(&(ct / hf)),
        "medians: coretune {ct:.4} s vs hyperfine {hf:.4} s"
    );
}

#[test]
fn compare_marks_changes_and_gates_on_the_geomean() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, ms: &str| {
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
            .arg("--")
            .arg(util::probe())
            .args(["sleep", ms])
            .output()
            .unwrap();
        util::assert_ok(&out);
        dir
    };
    // Three times apart, so that a loaded machine (spawn costs of tens of ms) cannot blur them.
    let (fast, slow) = (run("fast", "100"), run("slow", "300"));
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
    // Two different commands: compared, with a word said.
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("coretune: warning: A and B measured different things (A '"),
        "{stderr}"
    );
    // Nothing in common: a gate that compared nothing fails.
    let other = tmp.path().join("other");
    let out = util::coretune()
        .args(["tune", "--threads", "3", "--place", "os", "--runs", "1"])
        .args(["--warmup", "0", "--quiet", "--out"])
        .arg(&other)
        .arg("--")
        .arg(util::probe())
        .args(["sleep", "100"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let out = util::coretune()
        .arg("compare")
        .arg(&fast)
        .arg(&other)
        .args(["--fail-above", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no configuration in common"), "{stderr}");
    assert!(
        !stderr.contains("different things"),
        "same command: {stderr}"
    );
    let json = util::json(&[
        "compare",
        slow.to_str().unwrap(),
        fast.to_str().unwrap(),
        "--json",
    ]);
    let g = json["geomean"].as_f64().unwrap();
    assert!(g < 0.7, "the fast sweep is about three times as fast: {g}");
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
        // What does nothing for a program is refused rather than measured.
        (
            vec!["tune", "--throttle", "1,2", "--out", out_dir, "--", "sort"],
            "--throttle 1,2: the throttle limits coretune's own pool",
        ),
        (
            vec!["tune", "--size", "small", "--out", out_dir, "--", "sort"],
            "--size: the workload options apply to the built-in workloads",
        ),
        (
            vec!["tune", "sum", "--items", "5", "--out", out_dir],
            "--items is a parameter of spawn, not of sum",
        ),
        // Checked before anything runs: a misspelt placeholder, a whole command line in one
        // word, a program whose name holds a placeholder and does not exist.
        (
            vec!["tune", "--out", out_dir, "--", "xz", "-T{thread}"],
            "'-T{thread}': {thread} is not a placeholder; did you mean {threads}?",
        ),
        (
            vec!["tune", "--out", out_dir, "--", "sort -n f | wc -l"],
            "that is a whole command line in one word; run it through sh -c with --shell",
        ),
        (
            vec![
                "tune",
                "--threads",
                "1,2",
                "--out",
                out_dir,
                "--",
                "./no-bench-{threads}",
            ],
            "'./no-bench-1': command not found",
        ),
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

#[test]
fn a_missing_program_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let script = tmp.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    // `run` and `watch` end as env, taskset and timeout do: 127 not found, 126 not executable;
    // `tune` with its bad-input status.
    for (program, message, status) in [
        (
            "/nonexistent/program",
            "'/nonexistent/program': command not found",
            127,
        ),
        ("coretune-no-such-program", "command not found", 127),
        (script.to_str().unwrap(), "is not an executable file", 126),
    ] {
        for (command, status) in [
            (
                vec!["tune", "--out", dir.to_str().unwrap(), "--", program],
                2,
            ),
            (vec!["run", "--", program], status),
            (vec!["run", "--cpus", "1", program], status),
            (
                vec!["watch", "--out", dir.to_str().unwrap(), "--", program],
                status,
            ),
        ] {
            let out = util::coretune().args(&command).output().unwrap();
            assert_eq!(out.status.code(), Some(status), "{command:?}");
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
            assert!(stderr.contains(message), "{command:?}: {stderr}");
            assert!(!dir.exists(), "{command:?} made its folder");
        }
    }
}

#[test]
fn a_sweep_with_no_successful_run_keeps_its_folder_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args(["tune", "--threads", "1,2", "--place", "os", "--runs", "2"])
        .args(["--warmup", "0", "--quiet", "--out"])
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .args(["exit", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    // Each failure at once (one per configuration: it ends its runs), then the verdict.
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    for threads in ["1 thread", "2 threads"] {
        assert!(
            lines[..2].iter().any(|l| l
                .starts_with(&format!("coretune: {threads}, place os: run 1 failed: "))
                && l.ends_with("exited with status 1; no more runs of it (-i keeps going)")),
            "{stderr}"
        );
    }
    assert!(
        lines[2].contains("no configuration completed a verified run (2 of 2 runs failed"),
        "{stderr}"
    );
    assert!(lines[2].contains("exited with status 1"), "{stderr}");
    let s = util::summary(&dir);
    assert!(s["recommendation"].is_null());
    assert_eq!(s["runs"]["failed"], 2);
    assert_eq!(util::read_jsonl(&dir.join("runs.jsonl")).len(), 2);
}

#[test]
fn adaptive_throttle_is_a_grid_value_with_its_trace_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "mixed",
            "--size",
            "small",
            "--threads",
            "4",
            "--place",
            "os",
        ])
        .args([
            "--throttle",
            "none,2,adaptive",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--exhaustive", "--quiet", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    let throttles: Vec<&serde_json::Value> = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["throttle"])
        .collect();
    assert_eq!(
        throttles,
        [
            &serde_json::Value::Null,
            &serde_json::json!(2),
            &serde_json::json!("adaptive")
        ]
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let adaptive = runs.iter().find(|r| r["throttle"] == "adaptive").unwrap();
    assert_eq!(adaptive["status"], "ok");
    let trace = adaptive["record"]["throttle_trace"].as_array().unwrap();
    assert!(!trace.is_empty(), "{adaptive}");
    assert!(
        trace
            .iter()
            .all(|t| (1..=4).contains(&t["limit"].as_u64().unwrap()))
    );
    assert!(
        runs.iter()
            .filter(|r| r["throttle"] != "adaptive")
            .all(|r| r["record"].get("throttle_trace").is_none())
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("adaptive"), "{table}");

    // The trace is drawn in the report, and `coretune report` redraws it from the folder.
    let plot = std::fs::read_to_string(dir.join("throttle.svg")).unwrap();
    assert!(
        plot.contains("throttle adaptive"),
        "the run's label in the legend"
    );
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("<figure id=\"plot-throttle\">"));
    std::fs::remove_file(dir.join("throttle.svg")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    util::assert_ok(&util::coretune().arg("report").arg(&dir).output().unwrap());
    assert_eq!(
        std::fs::read_to_string(dir.join("throttle.svg")).unwrap(),
        plot
    );
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("<figure id=\"plot-throttle\">"));
}

#[test]
fn a_configuration_that_times_out_gets_no_more_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    // 2 threads sleep 5 s and time out at 0.5 s; 1 thread is quick.
    let out = util::coretune()
        .args(["tune", "--threads", "1,2", "--place", "os", "--runs", "3"])
        .args([
            "--warmup",
            "1",
            "--timeout",
            "0.5",
            "--exhaustive",
            "--quiet",
        ])
        .arg("--out")
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .args(["sleep-unless", "{threads}", "1", "5000"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let two: Vec<&serde_json::Value> = runs.iter().filter(|r| r["threads"] == 2).collect();
    assert_eq!(two.len(), 1, "{two:?}");
    assert_eq!(two[0]["status"], "timeout");
    assert_eq!(runs.iter().filter(|r| r["threads"] == 1).count(), 4);
}

/// Timeouts are named as timeouts everywhere (finding 21): at once on stderr, in the table's
/// median cell and note, in summary.json; not as "failed".
#[test]
fn a_timed_out_configuration_is_named_as_timed_out_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args(["tune", "--threads", "1,2", "--place", "os", "--runs", "2"])
        .args([
            "--warmup",
            "0",
            "--timeout",
            "0.5",
            "--exhaustive",
            "--quiet",
        ])
        .arg("--out")
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .args(["sleep-unless", "{threads}", "1", "5000"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "coretune: 2 threads, place os: run 1 timed out after 0.5 s; no more runs of it\n"
        ),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("2  os"))
        .unwrap();
    assert!(
        row.contains("timed out") && !row.contains("failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  2 threads, place os: 1 of 1 run timed out after 0.5 s\n"),
        "{stdout}"
    );
    let two = &util::summary(&dir)["configs"][1];
    assert_eq!(
        (two["failed"].as_u64(), two["timed_out"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(two["out"], "1 of 1 run timed out after 0.5 s");
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let timed_out = runs.iter().find(|r| r["status"] == "timeout").unwrap();
    assert_eq!(timed_out["error"], "timed out after 0.5 s");
}

/// Finding 6: a thread count whose runs mostly crash (a race) was recommended with an
/// "efficiency" of 182% because its few passing runs were fast. Its first failure now ends its
/// runs, it is shown at once and in the table with the reason, and the configuration that
/// passed every run is recommended; `-i` (hyperfine's flag, recorded in sweep.json so that
/// `report` agrees) keeps it in the running without its failed runs.
#[cfg(unix)] // sh
#[test]
fn a_configuration_whose_runs_mostly_crash_is_never_recommended() {
    let tmp = tempfile::tempdir().unwrap();
    // 2 threads: fast, but every run after its first "detects a race" and aborts.
    let script = tmp.path().join("flaky.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nf=\"$(dirname \"$0\")/count-$1\"; n=$(cat \"$f\" 2>/dev/null || echo 0)\n\
         echo $((n+1)) > \"$f\"\n\
         if [ \"$1\" = 2 ]; then if [ $n -ge 1 ]; then echo 'race detected, aborting' >&2; \
         exit 134; fi; sleep 0.05; else sleep 0.2; fi\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let sweep = |name: &str, extra: &[&str]| {
        for f in ["count-1", "count-2"] {
            let _ = std::fs::remove_file(tmp.path().join(f));
        }
        let dir = tmp.path().join(name);
        let out = util::coretune()
            .args(["tune", "--threads", "1,2", "--place", "os", "--runs", "4"])
            .args(["--warmup", "0", "--exhaustive", "--quiet"])
            .args(extra)
            .arg("--out")
            .arg(&dir)
            .current_dir(tmp.path())
            .args(["--", "./flaky.sh", "{threads}"])
            .output()
            .unwrap();
        util::assert_ok(&out);
        (out, dir)
    };
    let (out, dir) = sweep("strict", &[]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "coretune: 2 threads, place os: run 2 failed: ./flaky.sh exited with status 134 (race \
             detected, aborting); no more runs of it (-i keeps going)"
        ),
        "{stderr}"
    );
    let s = util::summary(&dir);
    assert_eq!(s["recommendation"]["threads"], 1, "{s:#}");
    assert_eq!(s["recommendation"]["fastest"]["threads"], 1, "{s:#}");
    let two = &s["configs"][1];
    assert_eq!(
        two["out"],
        "1 of 2 runs failed: ./flaky.sh exited with status 134 (race detected, aborting)"
    );
    // No speedup or efficiency is shown for it.
    assert!(two["efficiency"].is_null(), "{two}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(
            "Out of the running, never recommended (a run failed; tune -i keeps such \
             configurations):\n  2 threads, place os: 1 of 2 runs failed: ./flaky.sh exited with \
             status 134 (race detected, aborting)"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("176%") && !stdout.contains("% efficiency"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- 2 threads, place os: 1 of 2 runs failed: ./flaky.sh exited"),
        "{md}"
    );
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("<li>2 threads, place os: 1 of 2 runs failed: ./flaky.sh exited"));

    // With -i: every run made, the failures left out, 2 threads recommended; the folder
    // remembers it, so `report` says the same.
    let (out, dir) = sweep("ignore", &["-i"]);
    let s = util::summary(&dir);
    assert_eq!(s["recommendation"]["threads"], 2, "{s:#}");
    assert_eq!(s["plan"]["ignore_failure"], true);
    assert_eq!(
        util::read_json(&dir.join("sweep.json"))["plan"]["ignore_failure"],
        true
    );
    assert!(s["configs"][1].get("out").is_none());
    let warnings = s["recommendation"]["warnings"].to_string();
    assert!(
        warnings.contains(
            "2 threads, place os: 3 of 4 runs failed (left out of its statistics); the first: \
             ./flaky.sh exited with status 134 (race detected, aborting)."
        ),
        "{warnings}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("run ").count(), 3, "{stderr}");
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    util::assert_ok(&util::coretune().arg("report").arg(&dir).output().unwrap());
    assert_eq!(util::summary(&dir)["recommendation"]["threads"], 2);
}

#[test]
fn a_builtin_run_past_its_timeout_stops_the_sweep_and_resume_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let tune = |args: &[&str]| util::coretune().args(args).output().unwrap();
    let dir_s = dir.to_str().unwrap();
    // Every mixed run takes far more than a millisecond.
    let out = tune(&[
        "tune",
        "mixed",
        "--size",
        "small",
        "--threads",
        "1,2",
        "--place",
        "os",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "0.001",
        "--exhaustive",
        "--quiet",
        "--out",
        dir_s,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("exceeded the timeout"), "{stderr}");
    assert!(
        stderr.contains(&format!("coretune tune --resume {dir_s}")),
        "{stderr}"
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "timeout");
    // The resumed sweep skips the configuration that timed out and stops at the next one.
    let out = tune(&["tune", "--quiet", "--resume", dir_s]);
    assert_eq!(out.status.code(), Some(2));
    let again = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(again.len(), 2);
    assert_ne!(again[1]["threads"], again[0]["threads"]);
    // Nothing is left to run: the sweep ends, with no successful configuration.
    let out = tune(&["tune", "--quiet", "--resume", dir_s]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(util::read_jsonl(&dir.join("runs.jsonl")).len(), 2);
}

#[test]
fn dry_run_plans_another_machine_without_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("never");
    // 2 packages × 4 cores × 2 PUs: 16 PUs, so no thread count below runs out of CPUs.
    let args = [
        "tune",
        "sum",
        "--throttle",
        "none",
        "--input",
        "pack:2 core:4 pu:2",
        "--dry-run",
        "--estimate-one",
        "2",
        "--threads",
        "1,2,4",
        "--place",
        "os,cores",
        "--cpus",
        "all",
        "--exhaustive",
        "--out",
        dir.to_str().unwrap(),
    ];
    let plan = util::json(&[&args[..], &["--json"]].concat());
    assert!(!dir.exists(), "a dry run made a folder");
    assert_eq!(
        plan["plan"]["grid"]["threads"],
        serde_json::json!([1, 2, 4])
    );
    let grid = &plan["estimate"]["grid"];
    // 3 thread counts × 2 placements, 1 warm-up + 3 runs each.
    assert_eq!(
        (grid["configs"].as_u64(), grid["runs"].as_u64()),
        (Some(6), Some(24))
    );
    assert!(plan["estimate"]["first_stage"].is_null());
    // An exhaustive sweep is expected to cost its grid.
    assert_eq!(plan["estimate"]["expected"], *grid);
    let (fast, slow) = (
        grid["seconds"][0].as_f64().unwrap(),
        grid["seconds"][1].as_f64().unwrap(),
    );
    // No speedup: 24 runs of 2 s. Perfect scaling: 4 runs of 2/1 + 2/2 + 2/4 s per placement.
    assert!((slow - 48.0).abs() < 1e-9, "{slow}");
    assert!((fast - 28.0).abs() < 1e-9, "{fast}");
    let out = util::coretune().args(args).output().unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("16 PUs"), "{text}");
    assert!(
        text.contains(
            "exhaustive 6 configurations, 24 runs, 28 s (perfect scaling) to 48 s (no speedup)"
        ),
        "{text}"
    );
    // Without --dry-run, --input is refused: tune measures this machine.
    let out = util::coretune()
        .args(["tune", "--input", "pack:2 core:4 pu:2", "--threads", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dry-run"));
}

/// A sweep gets a folder of its own: `--out` on a folder holding other files is refused (one
/// line, nothing written there), and sweeps started in the same second in the same folder get
/// default folders of their own (`<date>T<time>`, `-2`, …).
#[test]
fn a_sweep_never_shares_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = tmp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine\n").unwrap();
    let quick = [
        "tune",
        "sum",
        "--size",
        "small",
        "--threads",
        "1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--quiet",
    ];
    let out = util::coretune()
        .args(quick)
        .arg("--out")
        .arg(&busy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is not empty: --out takes a new or empty folder"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&busy).unwrap().count(),
        1,
        "wrote into {busy:?}"
    );
    // An empty folder is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = util::coretune()
        .args(quick)
        .arg("--out")
        .arg(&empty)
        .output()
        .unwrap();
    util::assert_ok(&out);
    // Three at once with the default folder.
    let children: Vec<_> = (0..3)
        .map(|_| {
            util::coretune_std()
                .args(quick)
                .current_dir(tmp.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let folders = std::fs::read_dir(tmp.path().join("coretune-results"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("runs.jsonl").is_file())
        .count();
    assert_eq!(folders, 3);
}

/// `--resume` reads every setting from the folder: giving one again is refused, not ignored.
#[test]
fn resume_refuses_settings_it_would_ignore() {
    for extra in [
        &["--runs", "5"][..],
        &["--warmup", "2"],
        &["--size", "small"],
        &["--timeout", "3"],
        &["--bind", "core"],
        &["--tolerance", "5"],
        &["--monitor"],
        &["--threads", "4"],
    ] {
        let out = util::coretune()
            .args(["tune", "--resume", "/nonexistent/sweep"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("'--resume <DIR>' cannot be used with"),
            "{extra:?}: {err}"
        );
    }
}

/// A failed run keeps the end of the program's stderr in runs.jsonl and the failure quotes its
/// last line; `--show-output` lets the program write to the terminal instead.
#[cfg(unix)] // sh's redirections
#[test]
fn a_failed_run_keeps_the_end_of_its_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |name: &str, script: &str, extra: &[&str]| {
        let dir = tmp.path().join(name);
        let out = util::coretune()
            .args(["tune", "--threads", "1", "--place", "os", "--runs", "1"])
            .args(["--warmup", "0", "--quiet", "--shell"])
            .args(extra)
            .arg("--out")
            .arg(&dir)
            .args(["--", script])
            .output()
            .unwrap();
        (out, dir)
    };
    let (out, dir) = sweep(
        "short",
        "echo reading input >&2; echo 'sort: cannot read: x: No such file or directory' >&2; exit 3",
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("exited with status 3: sort: cannot read: x: No such file or directory"),
        "{stderr}"
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(
        runs[0]["stderr_tail"],
        "reading input\nsort: cannot read: x: No such file or directory\n"
    );

    // A long stderr: its last 4 KiB, from the first whole line.
    let (_, dir) = sweep(
        "long",
        "i=0; while [ $i -lt 2000 ]; do echo line $i >&2; i=$((i+1)); done; exit 1",
        &[],
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let tail = runs[0]["stderr_tail"].as_str().unwrap();
    assert!(tail.len() <= 4096 && tail.len() > 4000, "{}", tail.len());
    assert!(
        tail.starts_with("line ") && tail.ends_with("line 1999\n"),
        "{tail}"
    );

    // A successful run keeps nothing; --show-output passes the output through.
    let (out, dir) = sweep(
        "shown",
        "echo to the terminal >&2; exit 2",
        &["--show-output"],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("to the terminal"));
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert!(runs[0].get("stderr_tail").is_none(), "{:?}", runs[0]);
    let (_, dir) = sweep("fine", "echo fine >&2", &[]);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["status"], "ok");
    assert!(runs[0].get("stderr_tail").is_none(), "{:?}", runs[0]);

    // Built-in workloads print nothing: the option is refused for them.
    let out = util::coretune()
        .args(["tune", "--show-output", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--show-output shows a program's output")
    );
}

/// Every way of being told to stop — Ctrl-C once, twice, SIGTERM, SIGHUP — at random moments of
/// sweeps of a program, of a program that leaves a daemon behind, of a server under its client
/// and of a program under `mpirun`: nothing coretune started is left running, no cgroup leaf is
/// left, and `--resume` makes the sweep complete. Bounded in time (`CORETUNE_KILL_SECONDS`,
/// default 50); the seed is printed, and `CORETUNE_KILL_SEED` replays it.
#[cfg(target_os = "linux")]
#[test]
fn coretune_killed_at_random_moments_leaves_nothing_running_and_resumes_to_a_full_sweep() {
    use std::process::Stdio;

    let seed: u64 = std::env::var("CORETUNE_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let budget = Duration::from_secs(
        std::env::var("CORETUNE_KILL_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(50),
    );
    eprintln!("random kills: CORETUNE_KILL_SEED={seed}");
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let tmp = tempfile::tempdir().unwrap();
    // A word no other process on the machine has in its command line.
    let needle = format!("ctkill{}", seed % 1_000_000_007);
    let port = util::free_port();
    std::fs::write(
        tmp.path().join("nginx.conf"),
        format!(
            "daemon off;\npid nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n\
             access_log off;\nclient_body_temp_path body;\nproxy_temp_path proxy;\n\
             fastcgi_temp_path fastcgi;\nuwsgi_temp_path uwsgi;\nscgi_temp_path scgi;\n\
             server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"hi\\n\"; }} }}\n}}\n"
        ),
    )
    .unwrap();
    let rank = tmp.path().join(format!("{needle}-rank.sh"));
    std::fs::write(&rank, "#!/bin/sh\nsleep 0.2\n").unwrap();
    std::fs::set_permissions(&rank, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let common = ["--runs", "2", "--warmup", "1", "--exhaustive", "--quiet"];
    let program = format!("sleep 0.15; : {needle}");
    let daemon = format!("setsid sh -c 'sleep 30; : {needle}-daemon' & sleep 0.1; : {needle}");
    let server = format!(
        "nginx -p {} -c nginx.conf -g 'worker_processes {{threads}};' # {needle}",
        tmp.path().display()
    );
    let client = format!("wrk -t1 -c2 -d1s http://127.0.0.1:{port}/ # {needle}");
    let ready = format!("tcp:127.0.0.1:{port}");
    let scenarios: Vec<(&str, Vec<String>)> = vec![
        (
            "program",
            ["--threads", "1,2", "--place", "os,compact", "--shell", "--"]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([program])
                .collect(),
        ),
        (
            "daemon",
            ["--threads", "1", "--place", "os,compact", "--shell", "--"]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([daemon])
                .collect(),
        ),
        (
            "server",
            vec![
                "--threads".into(),
                "1,2".into(),
                "--place".into(),
                "os".into(),
                "--server".into(),
                server,
                "--ready".into(),
                ready,
                "--client".into(),
                client,
                "--metric".into(),
                r"rps=Requests/sec:\s+([0-9.]+)".into(),
                "--higher-is-better".into(),
                "rps".into(),
            ],
        ),
        (
            "launcher",
            vec![
                "--launcher".into(),
                "mpirun".into(),
                "--instances".into(),
                "1".into(),
                "--threads".into(),
                "1".into(),
                "--place".into(),
                "os".into(),
                "--".into(),
                rank.display().to_string(),
            ],
        ),
    ];
    for tool in ["nginx", "wrk", "mpirun"] {
        assert!(
            util::installed(tool),
            "{tool} is needed (make test installs it)"
        );
    }
    let leftovers = |what: &str| {
        let start = Instant::now();
        loop {
            let left = util::processes_with(&needle);
            if left.is_empty() {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "{what}: left running: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < budget {
        let (name, args) = &scenarios[round % scenarios.len()];
        round += 1;
        let dir = tmp.path().join(format!("sweep{round}"));
        let delay = Duration::from_millis(50 + next() % 1500);
        let pattern = next() % 4;
        let what = format!("round {round}, {name}, pattern {pattern} after {delay:?}");
        let mut child = util::coretune_std()
            .arg("tune")
            .args(common)
            .arg("--out")
            .arg(&dir)
            .args(args)
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let pid = child.id().to_string();
        let signal = |sig: &str| {
            StdCommand::new("kill").args([sig, &pid]).status().unwrap();
        };
        match pattern {
            0 => signal("-INT"),
            1 => {
                signal("-INT");
                std::thread::sleep(Duration::from_millis(next() % 400));
                signal("-INT");
            }
            2 => signal("-TERM"),
            _ => signal("-HUP"),
        }
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("{what}: coretune still ran 20 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Ended by the signal (130, 143, 129), done before it came (0, 1), or, when it came
        // before coretune had its handlers (it had started nothing yet), ended by it.
        use std::os::unix::process::ExitStatusExt as _;
        assert!(
            matches!(status.code(), Some(0 | 1 | 130 | 143 | 129))
                || matches!(status.signal(), Some(1 | 2 | 15)),
            "{what}: {status}"
        );
        leftovers(&what);
        let leaf = std::path::Path::new("/sys/fs/cgroup/unified").join(format!("coretune-{pid}"));
        assert!(!leaf.exists(), "{what}: {} is left", leaf.display());
        if !dir.join("sweep.json").exists() {
            continue;
        }
        // Continued with nothing in its way, the sweep completes: a second resume measures
        // nothing more.
        for pass in 0..2 {
            let out = util::coretune()
                .args(["tune", "--resume"])
                .arg(&dir)
                .current_dir(tmp.path())
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{what}: resume {pass}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if pass == 1 {
                assert!(
                    stdout.contains("(0 runs this time"),
                    "{what}: the first resume left runs to make: {stdout}"
                );
            }
            leftovers(&what);
        }
    }
    eprintln!("random kills: {round} rounds in {:?}", started.elapsed());
    assert!(round >= 4, "every scenario at least once");
}

/// A one-run sweep of a shell command with `extra` arguments; its output and `runs.jsonl`.
#[cfg(target_os = "linux")]
fn one_run(
    dir: &std::path::Path,
    extra: &[&str],
    script: &str,
) -> (std::process::Output, Vec<serde_json::Value>) {
    let out = util::coretune()
        .args(["tune", "--runs", "1", "--warmup", "0", "--threads", "1"])
        .args(extra)
        .arg("--out")
        .arg(dir)
        .args(["--shell", "--", script])
        .output()
        .unwrap();
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    (out, runs)
}

/// A program that leaves a process running after it ended — in the background, or as a daemon
/// in a session of its own — has that process ended, and its run fails as a mismatch naming it:
/// nothing a sweep starts outlives its run.
#[cfg(target_os = "linux")]
#[test]
fn a_program_that_leaves_a_process_running_fails_its_run_and_the_process_is_ended() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, script) in [
        ("background", "sleep 28.25 & exit 0"),
        ("daemon", "setsid sleep 28.5 & exit 0"),
    ] {
        let (out, runs) = one_run(&tmp.path().join(name), &["--place", "os"], script);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(runs[0]["status"], "mismatch", "{name}: {}", runs[0]);
        let error = runs[0]["error"].as_str().unwrap();
        assert!(
            error.contains("left 1 process running after it ended") && error.contains("sleep 28."),
            "{name}: {error}"
        );
        assert_eq!(
            util::processes_with("sleep 28."),
            Vec::<String>::new(),
            "{name}"
        );
    }
    // A program that ends with everything it started is checked and clean.
    let (out, runs) = one_run(
        &tmp.path().join("clean"),
        &["--place", "os"],
        "sleep 0.1 & wait",
    );
    util::assert_ok(&out);
    let checked = runs[0]["record"]["audit"]["checked"].to_string();
    assert!(checked.contains("nothing left running"), "{}", runs[0]);
}

/// A program that moves itself off the configuration's CPUs, or sets itself another memory
/// policy, did not run as its row says: the run is a mismatch with the reason, not a
/// measurement.
#[cfg(target_os = "linux")]
#[test]
fn a_program_off_its_cpus_or_with_another_memory_policy_fails_its_run_as_a_mismatch() {
    let pus = String::from_utf8(
        util::coretune()
            .args(["cpus", "all", "--to", "count"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    if pus.trim() != "1" {
        // Limited to CPU 1, it moves to CPU 0 and works there.
        let (out, runs) = one_run(
            &tmp.path().join("cpus"),
            &["--place", "os", "--cpus", "1"],
            "taskset -c 0 sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'",
        );
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(runs[0]["status"], "mismatch", "{}", runs[0]);
        let error = runs[0]["error"].as_str().unwrap();
        assert!(
            error.contains("ran on CPU 0, outside its CPUs 1"),
            "{error}"
        );
    }
    // Started with `--mem bind`, it makes itself `local` (numactl, then the program).
    let (out, runs) = one_run(
        &tmp.path().join("mem"),
        &["--place", "os", "--mem", "bind"],
        "numactl --localalloc sleep 0.3",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs[0]["status"], "mismatch", "{}", runs[0]);
    let error = runs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("has memory policy local, not bind:0"),
        "{error}"
    );
    // Left alone, the same program has the policy it was started with.
    let (out, runs) = one_run(
        &tmp.path().join("mem-kept"),
        &["--place", "os", "--mem", "bind"],
        "sleep 0.3",
    );
    util::assert_ok(&out);
    let checked = runs[0]["record"]["audit"]["checked"].to_string();
    assert!(checked.contains("memory policy bind:0"), "{}", runs[0]);
}

/// Finding 15: `tune --` with nothing after it (a script's empty `$CMD`) swept the built-in
/// workload for minutes; it is a usage error before anything runs, `--dry-run` included.
#[test]
fn nothing_after_the_double_dash_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    for args in [
        vec![
            "tune",
            "--threads",
            "1",
            "--place",
            "os",
            "--runs",
            "1",
            "--dry-run",
            "--",
        ],
        vec!["tune", "--out", dir.to_str().unwrap(), "--"],
        vec!["tune", "--"],
    ] {
        let started = Instant::now();
        let out = util::coretune().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            "coretune: nothing after --: give the command to measure \
             (coretune tune [OPTIONS] -- CMD ARGS...)\n",
            "{args:?}"
        );
        assert!(!dir.exists(), "{args:?} made its folder");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
    }
}

/// Finding 29: `--runs -1` got clap's tip "to pass '-1' as a value, use '-- -1'", wrong for
/// `tune`, where `--` starts the command; each numeric option now says what it takes.
#[test]
fn a_negative_number_says_what_the_option_takes_not_to_use_double_dash() {
    for (option, value, says) in [
        (
            "--runs",
            "-1",
            "coretune: --runs -1: give a whole number ≥ 1",
        ),
        (
            "--warmup",
            "-2",
            "coretune: --warmup -2: give a whole number ≥ 0",
        ),
        (
            "--tolerance",
            "-1",
            "coretune: --tolerance -1: give a percentage from 0 to 100",
        ),
        (
            "--timeout",
            "-1",
            "coretune: --timeout -1: give a positive number of seconds",
        ),
        (
            "--min-time",
            "-1",
            "coretune: --min-time -1: give a number of seconds, 0 or more",
        ),
        (
            "--threads",
            "-1",
            "coretune: --threads: '-1': thread counts must be at least 1",
        ),
        (
            "--instances",
            "-1",
            "coretune: --instances: '-1': instance counts must be at least 1",
        ),
        ("--runs", "0", "coretune: --runs 0: give a whole number ≥ 1"),
    ] {
        let out = util::coretune()
            .args(["tune", option, value, "--dry-run", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{option} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err, format!("{says}\n"), "{option} {value}");
    }
}

/// Finding 24: `--place os,os` doubled the runs and `--cpus all --cpus 0-1` on a 2-CPU machine
/// was reported as "restricting to '0-1' gains 47%"; duplicates are measured once, under their
/// first spelling, and a note says so once.
#[test]
fn duplicate_grid_values_are_measured_once_under_their_first_spelling() {
    let every = String::from_utf8(
        util::coretune()
            .args(["cpus", "all"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("dup");
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1",
            "--place",
            "os,os",
            "--cpus",
            "all",
            "--cpus",
        ])
        .arg(&every)
        .args([
            "--cpus",
            "all",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--exhaustive",
            "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(util::nothing())
        .output()
        .unwrap();
    util::assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    for note in [
        "coretune: note: --place os is given twice: measured once\n".to_owned(),
        format!(
            "coretune: note: --cpus '{every}' is the same CPUs as 'all' on this machine \
             ({every}): measured once, as 'all'\n"
        ),
        "coretune: note: --cpus 'all' is given twice: measured once\n".to_owned(),
    ] {
        assert_eq!(err.matches(&note).count(), 1, "{note}: {err}");
    }
    let s = util::summary(&dir);
    let configs = s["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{s}");
    assert_eq!(configs[0]["cpus"], "all");
    assert_eq!(configs[0]["runs"], 1);
    assert_eq!(util::read_jsonl(&dir.join("runs.jsonl")).len(), 1);
    // The plan says the same.
    let out = util::coretune()
        .args([
            "tune",
            "--dry-run",
            "--threads",
            "1",
            "--place",
            "os,os,compact",
            "--cpus",
        ])
        .arg(&every)
        .args(["--cpus", "all", "--", "true"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("placements os, compact\n"), "{plan}");
    assert!(plan.contains(&format!("cpus       {every}\n")), "{plan}");
}

/// Finding 28: `--dry-run` printed a plan for `--mem preferred:numa:0-1`, which the sweep (and
/// `place`) refuse; both now check memory policies the same way.
#[test]
fn dry_run_refuses_a_memory_policy_the_sweep_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let machine = "pack:2 numa:2 core:4 pu:2";
    for args in [
        vec![
            "tune",
            "--input",
            machine,
            "--dry-run",
            "--threads",
            "1",
            "--place",
            "os",
        ],
        vec![
            "tune",
            "--input",
            machine,
            "--dry-run",
            "--json",
            "--threads",
            "1",
        ],
        vec![
            "tune",
            "--threads",
            "1",
            "--place",
            "os",
            "--out",
            dir.to_str().unwrap(),
        ],
    ] {
        let out = util::coretune()
            .args(&args)
            .args(["--mem", "none,preferred:numa:0-1", "--"])
            .arg(util::nothing())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--mem 'preferred:numa:0-1'"),
            "{args:?}: {err}"
        );
        assert!(!dir.exists());
    }
}

/// `coretune ARGS` on a terminal (util-linux `script` gives it one) with `TERM=term`: what the
/// terminal got, stdout and stderr together.
#[cfg(target_os = "linux")]
fn on_a_terminal(args: &[&str], term: &str) -> String {
    let quote = |w: &str| format!("'{}'", w.replace('\'', r"'\''"));
    let line = std::iter::once(
        assert_cmd::cargo::cargo_bin("coretune")
            .to_string_lossy()
            .into_owned(),
    )
    .chain(args.iter().map(|w| (*w).to_owned()))
    .map(|w| quote(&w))
    .collect::<Vec<_>>()
    .join(" ");
    let out = StdCommand::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("TERM", term)
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    util::assert_ok(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Finding 35: `TERM=dumb` (Emacs' shell, some CI logs) got the table's colour codes, which such
/// a terminal shows as text; and the progress bar's first frame was a full bar at "0/0 runs".
#[cfg(target_os = "linux")]
#[test]
fn a_dumb_terminal_gets_no_colour_and_the_first_progress_frame_is_no_full_bar() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |name: &str, term: &str| {
        let dir = tmp.path().join(name);
        on_a_terminal(
            &[
                "tune",
                "--threads",
                "1,2",
                "--place",
                "os",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--exhaustive",
                "--out",
                dir.to_str().unwrap(),
                "--",
                "sleep",
                "0.2",
            ],
            term,
        )
    };
    // An SGR sequence (colour or bold): ESC [ digits and semicolons, then m.
    let has_sgr = |text: &str| {
        text.split("\u{1b}[").skip(1).any(|rest| {
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';'));
            end.is_some_and(|e| rest[e..].starts_with('m'))
        })
    };
    let colour = sweep("xterm", "xterm-256color");
    assert!(
        has_sgr(&colour),
        "a colour terminal gets colour: {colour:?}"
    );
    let dumb = sweep("dumb", "dumb");
    assert!(!has_sgr(&dumb), "TERM=dumb: {dumb:?}");
    assert!(dumb.contains("Recommendation:"), "{dumb:?}");
    let report = on_a_terminal(
        &["report", tmp.path().join("dumb").to_str().unwrap()],
        "dumb",
    );
    assert!(!has_sgr(&report), "report, TERM=dumb: {report:?}");

    // (indicatif draws no bar on a dumb terminal at all.)
    assert!(!dumb.contains("0/0 runs"), "{dumb:?}");
    assert!(!colour.contains("0/0 runs"), "{colour:?}");
    let first = colour
        .split(['\r', '\n'])
        .find(|f| f.contains("stage 1"))
        .unwrap();
    assert!(
        first.contains("stage 1: first run"),
        "first frame: {first:?}"
    );
}

/// Finding 35: `--resume DIR --metric-from stderr` was accepted and silently ignored (the folder's
/// own source is used); it is refused as every other sweep option is.
#[test]
fn resume_refuses_metric_from_as_it_refuses_the_other_sweep_options() {
    for value in ["stderr", "stdout", "out.txt"] {
        let out = util::coretune()
            .args([
                "tune",
                "--resume",
                "/nonexistent/sweep",
                "--metric-from",
                value,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("'--resume <DIR>' cannot be used with '--metric-from <FROM>'"),
            "{value}: {err}"
        );
    }
}

/// Finding 35: a sweep in a working directory where `coretune-results` cannot be made said
/// "writing coretune-results: Permission denied" with no way out; it says where and to use
/// `--out DIR`, before anything runs. (A file named `coretune-results` stands in for a read-only
/// directory, which root could write to anyway.)
#[cfg(unix)]
#[test]
fn a_sweep_that_cannot_make_its_folder_here_says_to_use_out() {
    let here = tempfile::tempdir().unwrap();
    std::fs::write(here.path().join("coretune-results"), "in the way").unwrap();
    let marker = here.path().join("ran");
    let out = util::coretune()
        .current_dir(here.path())
        .args([
            "tune",
            "--threads",
            "1",
            "--place",
            "os",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("coretune: cannot create coretune-results here: ")
            && err.trim_end().ends_with("; use --out DIR"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!marker.exists());
}

/// Starts `coretune ARGS` with its outputs kept, waits until `ready` holds (polling), sends it
/// SIGINT, and returns its output.
#[cfg(unix)]
fn interrupt_when(args: &[&str], ready: &dyn Fn() -> bool) -> std::process::Output {
    let child = util::coretune_std()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait_with_output().unwrap()
}

/// Finding 14: an interrupted sweep printed a full recommendation, and `--json` a document with
/// no sign that 5 of 12 runs were made. Every output now says it is incomplete, with the
/// counts, until `--resume` completes it.
#[cfg(unix)] // SIGINT
#[test]
fn an_interrupted_sweep_says_it_is_incomplete_on_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = dir.join("runs.jsonl");
    let probe = util::probe();
    let out = interrupt_when(
        &[
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os,compact",
            "--exhaustive",
            "--runs",
            "3",
            // No deciding runs (the 4 configurations of `sleep` tie, or nearly, and how many
            // runs showing it takes depends on the machine's noise): 12 runs in all.
            "--max-runs",
            "3",
            "--warmup",
            "0",
            "--json",
            "--out",
            dir.to_str().unwrap(),
            "--",
            probe.to_str().unwrap(),
            "sleep",
            "300",
        ],
        &|| log.exists() && util::read_jsonl(&log).len() >= 2,
    );
    assert_eq!(out.status.code(), Some(130));
    let made = util::read_jsonl(&log).len();
    assert!((2..12).contains(&made), "{made}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    util::assert_valid(&util::schema("summary.schema.json"), &json, "--json");
    assert_eq!(json["complete"], false);
    assert_eq!(
        (
            json["runs"]["measured"].as_u64(),
            json["runs"]["planned"].as_u64()
        ),
        (Some(made as u64), Some(12))
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "coretune: interrupted after {made} of 12 measured runs; the sweep is incomplete: \
             continue with: coretune tune --resume {}",
            dir.display()
        )),
        "{stderr}"
    );
    let banner = format!("Incomplete sweep ({made} of 12 measured runs)");
    assert_eq!(util::summary(&dir)["complete"], false);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains(&banner), "{md}");
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        page.contains(&format!("<p class=\"warn banner\">{banner}")),
        "{page}"
    );
    let report = util::coretune().arg("report").arg(&dir).output().unwrap();
    let table = String::from_utf8(report.stdout).unwrap();
    assert!(table.contains(&banner), "{table}");
    assert!(
        table.contains("Recommendation so far (incomplete sweep):"),
        "{table}"
    );
    // Resumed to the end: complete, and said nowhere.
    util::resume(&dir);
    let s = util::summary(&dir);
    assert_eq!(s["complete"], true);
    assert_eq!(
        (
            s["runs"]["measured"].as_u64(),
            s["runs"]["planned"].as_u64()
        ),
        (Some(12), Some(12))
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(!md.contains("Incomplete"), "{md}");
}

/// Finding 14: interrupted during warm-up, a sweep said "No configuration completed a verified
/// run", which reads as if every run failed; and one interrupted on its last run must still
/// print its table and say what became of it.
#[cfg(unix)] // SIGINT
#[test]
fn a_sweep_interrupted_during_warm_up_or_on_its_last_run_says_what_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    let started = tmp.path().join("started");
    let probe = util::probe();
    let sweep = |name: &str, warmup: &str| {
        let _ = std::fs::remove_file(&started);
        let dir = tmp.path().join(name);
        interrupt_when(
            &[
                "tune",
                "--threads",
                "1",
                "--place",
                "os",
                "--runs",
                "1",
                "--warmup",
                warmup,
                "--quiet",
                "--out",
                dir.to_str().unwrap(),
                "--",
                probe.to_str().unwrap(),
                "write",
                started.to_str().unwrap(),
                "sleep",
                "1000",
            ],
            &|| started.exists(),
        )
    };
    // During the warm-up run.
    let out = sweep("warm", "1");
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stdout.contains(
            "The sweep stopped before any configuration completed a measured run: nothing to \
             recommend yet."
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("No configuration"), "{stdout}");
    assert!(
        stderr.contains("coretune: interrupted before any configuration completed a measured run;"),
        "{stderr}"
    );
    // During the last (and only) measured run: it finishes, and the sweep is complete.
    let out = sweep("last", "0");
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stdout.contains("Recommendation: 1 thread, place os"),
        "{stdout}"
    );
    assert!(!stdout.contains("Incomplete"), "{stdout}");
    assert!(
        stderr.contains("coretune: interrupted after the sweep's last run: the sweep is complete"),
        "{stderr}"
    );
}

/// Finding 23: on a full disk the sweep printed nothing, said the error twice about the wrong
/// file, and left a torn line in runs.jsonl and an empty summary.json. It now stops at the
/// first failed append, says so once, prints the table it holds, leaves every file whole (or
/// absent), and `--resume` after freeing space makes exactly the missing runs.
#[cfg(target_os = "linux")] // a tmpfs of 20 KiB
#[test]
fn a_full_disk_stops_the_sweep_at_the_first_failed_append_and_leaves_no_torn_or_empty_file() {
    if !util::is_root() {
        util::skip("mounting a small tmpfs needs root");
        return;
    }
    struct Mounted(std::path::PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = StdCommand::new("umount").arg(&self.0).status();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let mount = |options: &str| {
        let status = StdCommand::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(&full)
            .status()
            .unwrap();
        assert!(status.success(), "mount {options}");
    };
    // 32 KiB: the folder's first files take 4 to 5 of its 8 pages (machine.json grows on a busy
    // machine), and runs.jsonl the rest, room for a few of the sweep's 40 run lines (about 800
    // bytes each). With 20 KiB, machine.json crossing a page left runs.jsonl no room at all.
    mount("size=32k");
    let _mounted = Mounted(full.clone());
    let dir = full.join("s3");
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os,compact",
            "--exhaustive",
        ])
        // --max-runs as --runs: no deciding runs, so that the sweep has exactly 40 runs.
        .args([
            "--runs",
            "10",
            "--max-runs",
            "10",
            "--warmup",
            "0",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(util::probe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let told: Vec<&str> = stderr.lines().filter(|l| l.contains("No space")).collect();
    assert_eq!(told.len(), 1, "{stderr}");
    assert!(
        told[0].starts_with(&format!(
            "coretune: writing {}: No space left on device",
            dir.join("runs.jsonl").display()
        )) && told[0].contains("the sweep stopped there")
            && told[0].ends_with(&format!(
                "continue with: coretune tune --resume {}",
                dir.display()
            )),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("threads  place"), "the table: {stdout}");
    assert!(stdout.contains("Incomplete sweep ("), "{stdout}");
    // No torn line, no empty or cut file, no temporary file left.
    let text = std::fs::read_to_string(dir.join("runs.jsonl")).unwrap();
    assert!(text.ends_with('\n'), "{text}");
    let before = util::read_jsonl(&dir.join("runs.jsonl")).len();
    assert!((1..40).contains(&before), "{before}");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "left behind: {name}");
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 0, "{name} is empty");
        if name.ends_with(".json") {
            util::read_json(&path);
        }
    }
    // Space freed: the resumed sweep makes exactly the missing runs.
    mount("remount,size=4m");
    util::resume(&dir);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 40);
    for c in util::summary(&dir)["configs"].as_array().unwrap() {
        assert_eq!(c["runs"], 10, "{c}");
    }
}

/// Writes an executable shell script.
#[cfg(unix)]
fn script(path: &std::path::Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    let status = StdCommand::new("chmod")
        .arg("+x")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Finding 8: `--resume` from another directory ran another `./slow.sh` and pooled its runs
/// with the old ones. The sweep now records its directory, its program's identity and the
/// variables it sets; `--resume` runs from that directory whatever the caller's, and refuses
/// (in one line, `--force` overriding) a program that is not the file it measured.
#[cfg(unix)] // sh scripts, SIGINT
#[test]
fn resume_runs_from_the_sweeps_directory_and_refuses_another_program() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, other) = (tmp.path().join("home"), tmp.path().join("other"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let log = tmp.path().join("ran.log");
    script(&home.join("slow.sh"), "echo measured >> \"$1\"; sleep 0.3");
    script(
        &other.join("slow.sh"),
        "echo impostor >> \"$1\"; sleep 0.05",
    );
    let dir = tmp.path().join("sweep");
    let runs = dir.join("runs.jsonl");
    let args = [
        "tune",
        "--threads",
        "1,2",
        "--place",
        "os",
        "--runs",
        "3",
        // No deciding runs (the default makes them when 1 and 2 threads tie): 6 runs in all.
        "--max-runs",
        "3",
        "--warmup",
        "0",
        "--exhaustive",
        "--quiet",
        "--out",
        "../sweep",
        "--",
        "./slow.sh",
    ];
    let mut args: Vec<&str> = args.to_vec();
    args.push(log.to_str().unwrap());
    let child = util::coretune_std()
        .args(&args)
        .current_dir(&home)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !(runs.exists() && util::read_jsonl(&runs).len() >= 2) {
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(130));

    // What it measured, recorded.
    let spec = util::read_json(&dir.join("sweep.json"));
    assert_eq!(spec["cwd"], home.canonicalize().unwrap().to_str().unwrap());
    let program = &spec["program"];
    assert_eq!(program["name"], "./slow.sh");
    assert_eq!(
        program["path"],
        home.join("slow.sh")
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(
        program["size"],
        std::fs::metadata(home.join("slow.sh")).unwrap().len()
    );
    assert!(
        program["hash"].as_str().unwrap().starts_with("crc32:"),
        "{program}"
    );
    // Set for every run: the same value, or null where it varies with the configuration.
    assert_eq!(spec["env"]["OMP_PROC_BIND"], "false");
    assert!(spec["env"]["OMP_NUM_THREADS"].is_null(), "{spec}");

    // Resumed from elsewhere (a relative folder name): its own ./slow.sh runs, not this one.
    let out = util::coretune()
        .args(["tune", "--quiet", "--resume", "../sweep"])
        .current_dir(&other)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let ran = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ran.lines().count(), 6, "{ran}");
    assert!(ran.lines().all(|l| l == "measured"), "{ran}");

    // The program changed in place: refused in one line, before anything runs.
    std::fs::remove_file(&runs).unwrap();
    script(&home.join("slow.sh"), "echo rebuilt >> \"$1\"; sleep 0.01");
    let out = util::coretune()
        .args(["tune", "--quiet", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("'./slow.sh' is not the file this sweep measured (")
            && stderr.contains("mtime and hash differ): put that one back, or give --force"),
        "{stderr}"
    );
    assert!(!runs.exists() || util::read_jsonl(&runs).is_empty());
    // --force goes on, and says so.
    let out = util::coretune()
        .args(["tune", "--quiet", "--force", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force: going on with './slow.sh'"));
    assert!(std::fs::read_to_string(&log).unwrap().contains("rebuilt"));

    // The sweep's directory gone: refused, unless --force (which runs from here).
    std::fs::remove_dir_all(&home).unwrap();
    std::fs::remove_file(&runs).unwrap();
    let out = util::coretune()
        .args(["tune", "--quiet", "--resume"])
        .arg(&dir)
        .current_dir(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(", which is gone: recreate it, or give --force"),
        "{stderr}"
    );
    let out = util::coretune()
        .args(["tune", "--quiet", "--force", "--resume"])
        .arg(&dir)
        .current_dir(&other)
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(std::fs::read_to_string(&log).unwrap().contains("impostor"));
}

/// Finding 10 of the first afternoon: every run's peak memory carried coretune's own image from
/// before `exec` (13 MiB for `true`), so `--objective rss` could not tell small programs apart.
/// A program's peak is now its own: what the kernel says of its memory (`VmHWM`, read by the
/// program itself at its end) within a little, both for a tiny program and for one that
/// touches 24 MiB.
#[cfg(target_os = "linux")]
#[test]
fn peak_memory_is_the_programs_own_not_coretunes() {
    let tmp = tempfile::tempdir().unwrap();
    // Programs that start no other (the run's peak is its largest process's): each reads its
    // own VmHWM at its end.
    for (name, program) in [
        ("tiny", &["awk", "/VmHWM/", "/proc/self/status"][..]),
        (
            "big",
            &[
                "python3",
                "-c",
                "b = bytearray(24 << 20); print(open('/proc/self/status').read())",
            ][..],
        ),
    ] {
        let dir = tmp.path().join(name);
        let out = util::coretune()
            .args(["tune", "--threads", "1", "--place", "os", "--runs", "3"])
            .args([
                "--warmup",
                "0",
                "--quiet",
                "--metric",
                r"hwm=VmHWM:\s+(\d+)",
            ])
            .args(["--objective", "rss", "--out"])
            .arg(&dir)
            .arg("--")
            .args(program)
            .output()
            .unwrap();
        util::assert_ok(&out);
        for run in util::read_jsonl(&dir.join("runs.jsonl")) {
            let peak = run["record"]["peak_rss_bytes"].as_f64().unwrap() / 1024.0;
            let own = run["record"]["metrics"]["hwm"].as_f64().unwrap();
            // Within 512 KiB of what the program read (it may grow a little after reading).
            assert!(
                peak >= own * 0.9 && peak <= own + 512.0,
                "{name}: peak {peak} KiB, the program's own {own} KiB: {run}"
            );
        }
    }
}

/// Finding 35 (two of its rough edges): a `--prepare` that fails said "--prepare exited with
/// exit status: 5", and a server that fails was named "server 'sh'" (the shell that runs its
/// line). They say "--prepare 'exit 5' failed with status 5" and name the server's program.
#[cfg(target_os = "linux")]
#[test]
fn a_failing_prepare_and_a_failing_server_are_said_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = util::coretune()
        .args(["tune", "--threads", "1", "--place", "os", "--runs", "1"])
        .args(["--warmup", "0", "--quiet", "--prepare", "exit 5", "--out"])
        .arg(tmp.path().join("prepare"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--prepare 'exit 5' failed with status 5"),
        "{stderr}"
    );
    let out = util::coretune()
        .args(["tune", "--threads", "1", "--place", "os", "--runs", "1"])
        .args(["--warmup", "0", "--quiet", "--objective", "time"])
        .args([
            "--server",
            "nginxx -c none",
            "--ready",
            "false",
            "--client",
            "true",
        ])
        .arg("--out")
        .arg(tmp.path().join("server"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("server 'nginxx' (pid") && !stderr.contains("server 'sh'"),
        "{stderr}"
    );
}

#[test]
fn dry_run_expects_the_search_to_cost_its_share_of_the_grid_on_the_replay_corpus() {
    let plan = util::json(&[
        "tune",
        "--input",
        &util::fixture("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml"),
        "--dry-run",
        "--estimate-one",
        "10",
        "--json",
        "--",
        "./prog",
    ]);
    let e = &plan["estimate"];
    let runs = |k: &str| e[k]["runs"].as_u64().unwrap();
    // At least the first stage (measured whole), at most the grid.
    assert!(runs("first_stage") <= runs("expected"), "{e}");
    assert!(runs("expected") <= runs("grid"), "{e}");
    let (fast, slow) = (
        e["expected"]["seconds"][0].as_f64().unwrap(),
        e["expected"]["seconds"][1].as_f64().unwrap(),
    );
    assert!(fast > 0.0 && fast <= slow, "{e}");
    assert!(slow <= e["grid"]["seconds"][1].as_f64().unwrap(), "{e}");
}
