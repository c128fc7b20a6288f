//! `coretune watch` end to end on this (2-CPU) machine: a program pinned to CPU 1 stays there,
//! a 2-thread workload keeps both CPUs busy and its workers are seen, the summary follows
//! `docs/watch.schema.json`, bad input exits with status 2.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::Path;

fn exe() -> String {
    assert_cmd::cargo::cargo_bin("coretune")
        .to_string_lossy()
        .into_owned()
}

/// Runs `coretune watch --json --interval 20 --out OUT -- CMD...`, expects success, returns the
/// summary after checking it against the schema and the folder's files.
fn watch_json(out: &Path, cmd: &[&str]) -> serde_json::Value {
    let output = util::coretune()
        .args(["watch", "--json", "--interval", "20", "--out"])
        .arg(out)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    util::assert_ok(&output);
    // Standard output is the summary alone: the program's output went to standard error.
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    util::assert_valid(&util::schema("watch.schema.json"), &summary, "watch --json");
    for f in ["watch.jsonl", "summary.json", "utilisation.svg"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // Where threads show (not on Windows), so does their residency.
    assert_eq!(
        out.join("residency.svg").is_file(),
        summary["threads_visible"] == true,
        "{summary}"
    );
    let lines = std::fs::read_to_string(out.join("watch.jsonl")).unwrap();
    assert_eq!(
        lines.lines().count() as u64,
        summary["samples"].as_u64().unwrap()
    );
    summary
}

/// Whether this process may run on CPU 1 (2 CPUs and no cgroup excluding it).
#[cfg(target_os = "linux")]
fn can_use_cpu1() -> bool {
    util::coretune()
        .args(["run", "--cpus", "1", "--"])
        .arg(util::probe())
        .output()
        .is_ok_and(|o| o.status.success())
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cpus_seen(thread: &serde_json::Value) -> Vec<String> {
    thread["cpus_seen"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

// Where another process's threads run: Windows does not tell (`threads_visible` is false).
#[cfg(target_os = "linux")]
#[test]
fn a_program_pinned_to_cpu_1_is_only_ever_seen_there() {
    if !can_use_cpu1() {
        util::skip("CPU 1 is not available here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A busy loop of a bounded number of iterations (not a time), under `coretune run`, so the
    // loop is a grandchild of watch: descendants are followed.
    let s = watch_json(
        &tmp.path().join("w"),
        &[
            &exe(),
            "run",
            "--cpus",
            "1",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done",
        ],
    );
    let threads = s["threads"].as_array().unwrap();
    let sh: Vec<&serde_json::Value> = threads.iter().filter(|t| t["name"] == "sh").collect();
    assert!(!sh.is_empty(), "the shell was never sampled: {threads:?}");
    for t in sh {
        assert_eq!(cpus_seen(t), ["1"], "{t}");
        assert!(t["cpus_seen"]["1"].as_u64().unwrap() >= 1);
    }
    assert!(s["cpus"].as_array().unwrap().len() >= 2);
}

#[test]
fn a_two_thread_workload_keeps_both_cpus_busy() {
    let tmp = tempfile::tempdir().unwrap();
    let s = watch_json(
        &tmp.path().join("w"),
        &[
            &exe(),
            "bench",
            "raymesh",
            "--threads",
            "2",
            "--size",
            "small",
            "--runs",
            "1",
            "--warmup",
            "0",
        ],
    );
    let workers: Vec<&serde_json::Value> = s["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("raymesh-"))
        .collect();
    if s["threads_visible"] == false {
        // Windows: no thread is sampled, none is made up; the CPUs still show the work.
        assert!(s["threads"].as_array().unwrap().is_empty(), "{s}");
    } else {
        assert!(workers.len() >= 2, "{}", s["threads"]);
    }
    for w in &workers {
        assert!(!cpus_seen(w).is_empty());
    }
    let cpus = s["cpus"].as_array().unwrap();
    if cpus.len() == 2 {
        for c in cpus {
            assert!(c["busy_pct"].as_f64().unwrap() > 10.0, "{c}");
        }
    }
}

#[test]
fn text_summary_and_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let out = util::coretune()
        .args(["watch", "--interval", "10", "--out"])
        .arg(tmp.path().join("t"))
        .arg("--")
        .arg(util::probe())
        .args(["sleep", "100"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The summary is on stderr; stdout is the program's alone.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8(out.stderr).unwrap();
    let threads = if cfg!(windows) {
        "Threads: not shown: this system (Windows) does not tell"
    } else {
        "Threads (most migrations first):"
    };
    for needle in ["Busiest CPUs: CPU", threads, "CPU 0's share of interrupts"] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
    // A program not found ends as env and timeout end: 127.
    for (args, status) in [
        (vec!["watch"], 2),
        (vec!["watch", "--interval", "0", "--", "probe"], 2),
        (vec!["watch", "--pid", "2147483000"], 2),
        (vec!["watch", "--", "/nonexistent/program"], 127),
    ] {
        let out = util::coretune()
            .args(["watch", "--out"])
            .arg(tmp.path().join("bad"))
            .args(&args[1..])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(status), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("coretune: "), "{err}");
    }
}

/// `coretune watch -- prog > file` leaves `file` exactly what the program wrote (as `time` and
/// `perf stat` do): the summary goes to stderr.
#[test]
fn the_programs_standard_output_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = util::coretune()
        .args(["watch", "--interval", "10", "--out"])
        .arg(tmp.path().join("w"))
        .arg("--")
        .arg(util::probe())
        .arg("env")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The probe's one line (three thread-count variables), nothing else.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert_eq!(lines[0].split_whitespace().count(), 3, "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("samples over"));
}

/// Finding 35: in a working directory where `coretune-results` cannot be made, `watch` failed
/// with "writing coretune-results: Permission denied" before starting the program, though its
/// summary is printed anyway. It now says why and how to keep them, and watches; with `--out`
/// that cannot be made it stops, since the folder was asked for. (A file named
/// `coretune-results` stands in for a read-only directory, which root could write to anyway.)
#[cfg(unix)]
#[test]
fn watch_in_a_directory_it_cannot_write_to_still_watches_and_says_how_to_keep_the_samples() {
    let here = tempfile::tempdir().unwrap();
    std::fs::write(here.path().join("coretune-results"), "in the way").unwrap();
    let out = util::coretune()
        .current_dir(here.path())
        .args(["watch", "--interval", "20", "--", "sleep", "0.2"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("coretune: warning: cannot create coretune-results here: ")
            && err.contains("(--out DIR keeps them)"),
        "{err}"
    );
    assert!(err.contains("Busiest CPUs: "), "{err}");
    assert!(
        err.contains("Samples and plots: not kept (--out DIR keeps them)"),
        "{err}"
    );
    // --json still prints the summary on stdout.
    let out = util::coretune()
        .current_dir(here.path())
        .args(["watch", "--json", "--interval", "20", "--", "true"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    util::assert_valid(&util::schema("watch.schema.json"), &summary, "watch --json");
    // A folder asked for and not made is an error, before the program starts.
    let marker = here.path().join("ran");
    let out = util::coretune()
        .current_dir(here.path())
        .args(["watch", "--out", "coretune-results/w", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!marker.exists());
}

/// `watch --out DIR` wrote `watch.jsonl`, the summary and the plots over whatever a folder
/// held (#35's audit of every path coretune writes): a folder with files of someone else's is
/// refused in one line, as `tune --out` refuses it, and left as it was.
#[test]
fn watch_never_writes_into_a_folder_of_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = tmp.path().join("busy");
    std::fs::create_dir(&busy).unwrap();
    std::fs::write(busy.join("watch.jsonl"), "my samples\n").unwrap();
    let out = util::coretune()
        .args(["watch", "--out"])
        .arg(&busy)
        .arg("--")
        .arg(util::probe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is not empty: --out takes a new or empty folder"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(busy.join("watch.jsonl")).unwrap(),
        "my samples\n"
    );
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);
}
