//! `coretune tune` judging a program by its own figure (`--metric`, `--objective`): read from
//! stdout, stderr, JSON or a file; higher or lower is better; two objectives and their Pareto
//! front; the reports, `report` and `compare` on such folders; and Debian's sysbench, a real
//! benchmark that prints its own events per second.

#![cfg(unix)] // sh scripts as the programs measured
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

/// `coretune tune` of a shell script over threads 1, 2 and 4 (OS placement, every
/// configuration, no warm-up, exactly 3 runs each: no deciding runs), with `extra` options;
/// the output and the folder.
fn sweep(tmp: &Path, name: &str, script: &str, extra: &[&str]) -> (Output, PathBuf) {
    let dir = tmp.join(name);
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1,2,4",
            "--place",
            "os",
            "--exhaustive",
        ])
        .args([
            "--runs",
            "3",
            "--max-runs",
            "3",
            "--warmup",
            "0",
            "--quiet",
            "--shell",
        ])
        .args(extra)
        .arg("--out")
        .arg(&dir)
        .args(["--", script])
        .output()
        .unwrap();
    (out, dir)
}

/// A program whose events/s scale to 2 threads and fall at 4 (its wall time does not change:
/// only its own figure tells the configurations apart).
const EPS: &str = "case {threads} in 1) e=1000;; 2) e=1990;; *) e=1500;; esac; \
                   echo \"events per second: $e.25\"";

fn reason(dir: &Path) -> String {
    util::summary(dir)["recommendation"]["reason"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_program_is_tuned_on_its_own_metric() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, dir) = sweep(
        tmp.path(),
        "eps",
        EPS,
        &[
            "--metric",
            r"eps=events per second:\s+([0-9.]+)",
            "--higher-is-better",
            "eps",
            "--unit",
            "eps=events/s",
            "--objective",
            "eps",
        ],
    );
    util::assert_ok(&out);
    let s = util::summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    assert_eq!(s["recommendation"]["threads"], 2, "{s:#}");
    let why = reason(&dir);
    assert!(
        why.contains(
            "2 threads, place os is best on eps (1990 events/s median, 1.99× the 1-thread eps)"
        ),
        "{why}"
    );
    // Every run keeps its figure; every row its statistics; the speedup is of the figure.
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 9);
    for r in &runs {
        let want = match r["threads"].as_u64().unwrap() {
            1 => 1000.25,
            2 => 1990.25,
            _ => 1500.25,
        };
        assert_eq!(r["record"]["metrics"]["eps"].as_f64(), Some(want), "{r}");
    }
    let four = &s["configs"][2];
    assert_eq!(four["metrics"]["eps"]["median"].as_f64(), Some(1500.25));
    assert_eq!(four["objectives"][0]["median"].as_f64(), Some(1500.25));
    assert!((four["speedup"].as_f64().unwrap() - 1500.25 / 1000.25).abs() < 1e-9);
    // The table shows the figure, the CSV and the plots carry it.
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("eps events/s ↑"), "{stdout}");
    assert!(stdout.contains("← recommended, best eps"), "{stdout}");
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",eps_median,eps_ci_low,eps_ci_high"),
        "{csv}"
    );
    let plot = std::fs::read_to_string(dir.join("objective.svg")).unwrap();
    assert!(plot.contains("eps (events/s)"), "{plot}");
    assert!(
        std::fs::read_to_string(dir.join("report.html"))
            .unwrap()
            .contains("id=\"plot-objective\"")
    );
    assert!(!dir.join("pareto.svg").exists());

    // `report` re-renders the folder; `compare` compares on the figure, a higher rate better.
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    util::assert_ok(&util::coretune().arg("report").arg(&dir).output().unwrap());
    assert_eq!(util::summary(&dir)["recommendation"]["threads"], 2);
    let (_, slower) = sweep(
        tmp.path(),
        "eps-b",
        &EPS.replace("e=1990", "e=1790"),
        &[
            "--metric",
            r"eps=events per second:\s+([0-9.]+)",
            "--higher-is-better",
            "eps",
            "--objective",
            "eps",
        ],
    );
    let out = util::coretune()
        .arg("compare")
        .args([&dir, &slower])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("compared on eps (events/s, higher is better)"),
        "{text}"
    );
    let two = text.lines().find(|l| l.starts_with("2 threads")).unwrap();
    // 1790.25 / 1990.25: 10.0% lower, so worse.
    assert!(two.contains("▲ 10.0% worse"), "{two}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("1 thread") && l.ends_with("unchanged")),
        "{text}"
    );
    // A time sweep and an eps sweep are not compared.
    let (_, timed) = sweep(tmp.path(), "time", EPS, &[]);
    let out = util::coretune()
        .arg("compare")
        .args([&dir, &timed])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("A is judged on eps and B on time"),
        "{out:?}"
    );
}

#[test]
fn metrics_come_from_json_stderr_or_a_file_and_a_missing_one_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    // jq's path into JSON, lower is better by default: the 2-thread latency wins.
    let (out, dir) = sweep(
        tmp.path(),
        "json",
        "case {threads} in 2) l=3;; *) l=9;; esac; echo starting; \
         echo '{\"latency\": {\"p99\": '$l'.5, \"runs\": [1, 2]}}'",
        &["--metric", "p99=json:.latency.p99", "--objective", "p99"],
    );
    util::assert_ok(&out);
    assert_eq!(util::summary(&dir)["recommendation"]["threads"], 2);
    assert!(
        reason(&dir).contains("is best on p99 (3.50 median"),
        "{}",
        reason(&dir)
    );

    // From stderr.
    let (out, dir) = sweep(
        tmp.path(),
        "stderr",
        "echo \"took $((10 / {threads})) ms\" >&2",
        &[
            "--metric",
            r"ms=took (\d+) ms",
            "--metric-from",
            "stderr",
            "--objective",
            "ms",
        ],
    );
    util::assert_ok(&out);
    assert_eq!(util::summary(&dir)["recommendation"]["threads"], 4);

    // From a file the program writes, its name with a placeholder; the one a run wrote is
    // removed before the next run, so that a run that writes none fails rather than reads it.
    let file = tmp.path().join("result-{threads}.txt");
    let file = file.to_str().unwrap();
    let marker = tmp.path().join("four-wrote");
    let (out, dir) = sweep(
        tmp.path(),
        "file",
        &format!(
            "[ -e {file} ] && exit 9; [ {{threads}} = 4 ] && [ -e {m} ] && exit 0; \
             [ {{threads}} = 4 ] && touch {m}; echo \"rate $((100 * {{threads}}))\" > {file}",
            m = marker.display()
        ),
        &[
            "--metric",
            r"rate=rate (\d+)",
            "--metric-from",
            file,
            "--higher-is-better",
            "rate",
        ],
    );
    util::assert_ok(&out);
    let s = util::summary(&dir);
    // Every run found no file of the run before (exit 9 otherwise); 4 threads' second run
    // wrote none and failed, which ended its runs. The last runs' files are left.
    assert_eq!(s["recommendation"]["threads"], 2, "{s:#}");
    assert_eq!(
        (
            s["configs"][2]["runs"].as_u64(),
            s["configs"][2]["failed"].as_u64()
        ),
        (Some(1), Some(1)),
        "{s:#}"
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let four = runs
        .iter()
        .find(|r| r["threads"] == 4 && r["status"] == "failed")
        .unwrap();
    assert!(
        four["error"]
            .as_str()
            .unwrap()
            .contains("result-4.txt: No such file"),
        "{four}"
    );
    assert!(std::path::Path::new(&file.replace("{threads}", "2")).is_file());

    // A run whose output lacks the metric fails, saying which and where, with its stderr.
    let (out, dir) = sweep(
        tmp.path(),
        "missing",
        "echo all done; echo 'warning: no timer' >&2",
        &["--metric", r"eps=events per second:\s+([0-9.]+)"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("metric eps not found in stdout: no match for /events per second:")
            && stderr.contains("warning: no timer"),
        "{stderr}"
    );
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["stderr_tail"], "warning: no timer\n");
}

#[test]
fn two_objectives_give_a_pareto_front_and_the_first_decides() {
    let tmp = tempfile::tempdir().unwrap();
    // 1 thread: 1000/s at 5 ms; 2: 2000/s at 3 ms; 4: 2500/s at 4 ms. 1 thread is beaten on
    // both by 2; 2 and 4 trade one for the other.
    let (out, dir) = sweep(
        tmp.path(),
        "two",
        "case {threads} in 1) r=1000 l=5;; 2) r=2000 l=3;; *) r=2500 l=4;; esac; \
         echo \"rps $r lat $l\"",
        &[
            "--metric",
            r"rps=rps (\d+)",
            "--metric",
            r"lat=lat (\d+)",
            "--higher-is-better",
            "rps",
            "--unit",
            "lat=ms",
            "--objective",
            "rps,lat",
        ],
    );
    util::assert_ok(&out);
    let s = util::summary(&dir);
    let front: Vec<u64> = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pareto"] == true)
        .map(|c| c["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(front, vec![2, 4]);
    assert_eq!(s["recommendation"]["threads"], 4);
    let why = reason(&dir);
    assert!(
        why.contains("Its other objective: lat 4.00 ms (median); it is on the Pareto front of rps and lat with 1 other configuration."),
        "{why}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("Pareto front of rps and lat (no other configuration is better on all of them): 2 threads, place os; 4 threads, place os"),
        "{stdout}"
    );
    let plot = std::fs::read_to_string(dir.join("pareto.svg")).unwrap();
    assert!(plot.contains("Pareto front: rps against lat"), "{plot}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| rps ↑ | lat ms ↓ |"), "{md}");

    // cpu and rss are objectives of every run, built-in workloads included.
    let out = util::coretune()
        .args([
            "tune",
            "sum",
            "--count",
            "20000",
            "--threads",
            "1,2",
            "--place",
            "os",
        ])
        .args([
            "--runs",
            "2",
            "--warmup",
            "0",
            "--quiet",
            "--objective",
            "cpu,rss,time",
        ])
        .arg("--out")
        .arg(tmp.path().join("cpu"))
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&tmp.path().join("cpu"));
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    for c in s["configs"].as_array().unwrap() {
        assert!(c["objectives"][0]["median"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["objectives"][1]["median"].as_f64().unwrap() > 1e6, "{c}");
        assert_eq!(c["objectives"][2]["median"], c["median_s"], "{c}");
    }
    let why = reason(&tmp.path().join("cpu"));
    assert!(
        why.contains(" is best on cpu") && why.contains("Its other objectives: rss "),
        "{why}"
    );
}

#[test]
fn bad_metric_arguments_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("x");
    let out_dir = out_dir.to_str().unwrap();
    for (args, message) in [
        (
            vec!["--metric", "eps"],
            "--metric 'eps': expected NAME=REGEX or NAME=json:.path",
        ),
        (vec!["--metric", "cpu=x"], "--metric name 'cpu'"),
        (
            vec!["--metric", "e=(["],
            "--metric e: the regular expression does not compile",
        ),
        (
            vec!["--metric", "e=json:.a..b"],
            "--metric e: '.a..b' is not a jq path",
        ),
        (
            vec!["--metric", "e=x", "--metric", "e=y"],
            "--metric 'e' is given twice",
        ),
        (
            vec!["--metric", "e=x", "--higher-is-better", "f"],
            "--higher-is-better f: no --metric of that name (metrics: e)",
        ),
        (
            vec!["--metric", "e=x", "--unit", "e"],
            "--unit 'e': expected NAME=UNIT",
        ),
        (
            vec!["--objective", "eps"],
            "--objective eps: not time, cpu, rss or a --metric name",
        ),
        (
            vec!["--objective", "time,wall"],
            "--objective names time twice",
        ),
        (
            vec!["--metric", "e=x", "--show-output"],
            "--show-output passes the program's output through",
        ),
    ] {
        let out = util::coretune()
            .args(["tune", "--out", out_dir])
            .args(&args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let out = util::coretune()
        .args(["tune", "--out", out_dir, "--metric", "e=x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metric reads a program's output"));
}

/// Debian's sysbench prints its own events per second; the sweep recommends on it (the first
/// metric is the objective when --objective names none), as the README's example.
#[test]
fn sysbench_is_tuned_on_its_events_per_second() {
    if !util::installed("sysbench") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sysbench");
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os",
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--quiet", "--metric", r"eps=events per second:\s+([0-9.]+)"])
        .args([
            "--higher-is-better",
            "eps",
            "--unit",
            "eps=events/s",
            "--objective",
            "eps",
        ])
        .arg("--out")
        .arg(&dir)
        .args([
            "--",
            "sysbench",
            "cpu",
            "--threads={threads}",
            "--time=1",
            "run",
        ])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    assert!(
        s["recommendation"]["reason"]
            .as_str()
            .unwrap()
            // Best, or the simplest of those that tie with the best.
            .contains(" is best on eps")
    );
    for c in s["configs"].as_array().unwrap() {
        let eps = c["metrics"]["eps"]["median"].as_f64().unwrap();
        // A second of prime sieving: hundreds to tens of thousands of events per thread.
        assert!(eps > 100.0 && eps < 1e6, "{c}");
    }
}

/// Peak memory is each run's own: a small run after a big one does not inherit its peak (as
/// `getrusage(RUSAGE_CHILDREN)`'s running maximum would have it), so `--objective rss` can
/// choose the configuration that needs less memory.
#[cfg(target_os = "linux")]
#[test]
fn each_run_has_its_own_peak_memory() {
    let tmp = tempfile::tempdir().unwrap();
    // dd holds one block in memory: 1 thread 192 MiB, 2 threads 1 MiB.
    let (out, dir) = sweep(
        tmp.path(),
        "rss",
        "case {threads} in 1) b=192M;; *) b=1M;; esac; \
         dd if=/dev/zero of=/dev/null bs=$b count=1 2>/dev/null",
        &["--objective", "rss"],
    );
    util::assert_ok(&out);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    for r in &runs {
        // The program's own counts, from its wait4 record.
        for count in [
            "user_s",
            "sys_s",
            "voluntary_ctx_switches",
            "involuntary_ctx_switches",
        ] {
            assert!(r["record"][count].is_number(), "{count}: {r}");
        }
        let rss = r["record"]["peak_rss_bytes"].as_f64().unwrap() / f64::from(1u32 << 20);
        match r["threads"].as_u64().unwrap() {
            1 => assert!(rss > 150.0, "{rss} MiB: {r}"),
            _ => assert!(rss < 50.0, "{rss} MiB: {r}"),
        }
    }
    assert_ne!(util::summary(&dir)["recommendation"]["threads"], 1);
}

/// `tune --mem` makes the memory policy a grid dimension: each run starts with its
/// configuration's policy (the program sees it in its own numa_maps), built-in workloads' workers
/// set it before touching their data, the table, summary and apply lines carry it, and on a
/// machine with one node the sweep says the policies should tie.
#[cfg(target_os = "linux")]
#[test]
fn memory_policies_are_a_grid_dimension() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, dir) = sweep(
        tmp.path(),
        "program",
        "true",
        &["--mem", "none,interleave,bind,local"],
    );
    util::assert_ok(&out);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("one NUMA node"), "{stderr}");
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 3 * 4 * 3);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    let s = util::summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    let mems: Vec<&str> = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["mem"].as_str().unwrap_or("none"))
        .collect();
    for m in ["none", "interleave", "bind", "local"] {
        assert_eq!(mems.iter().filter(|x| **x == m).count(), 3, "{mems:?}");
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(" mem ") && stdout.contains("interleave"),
        "{stdout}"
    );

    // Each policy as the program saw it: interleave:0, bind:0, local.
    for (mem, seen) in [
        ("interleave", "interleave:0"),
        ("bind", "bind:0"),
        ("local", "local"),
    ] {
        let (out, _) = sweep(
            tmp.path(),
            &format!("only-{mem}"),
            &format!("grep -q ' {seen}' /proc/self/numa_maps"),
            &["--mem", mem],
        );
        util::assert_ok(&out);
        let s = String::from_utf8(out.stdout).unwrap();
        assert!(s.contains(&format!("--mem {mem} --")), "{s}");
    }

    // A built-in workload: membw's workers first-touch their blocks under the policy.
    let out = util::coretune()
        .args([
            "tune",
            "membw",
            "--mib",
            "4",
            "--threads",
            "1,2",
            "--place",
            "os",
        ])
        .args([
            "--mem",
            "none,interleave",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--quiet",
        ])
        .arg("--out")
        .arg(tmp.path().join("membw"))
        .output()
        .unwrap();
    util::assert_ok(&out);
    let runs = util::read_jsonl(&tmp.path().join("membw/runs.jsonl"));
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");

    // Bad policies: one line, before anything runs.
    for (mem, message) in [
        ("bogus", "--mem: unknown memory policy 'bogus'"),
        ("bind:numa:7", "--mem 'bind:numa:7'"),
    ] {
        let out = util::coretune()
            .args(["tune", "--mem", mem, "--out"])
            .arg(tmp.path().join("bad"))
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{mem}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(message), "{err}");
    }
}

/// Finding 30: a wrk-style latency (`850.00us`) read without `--unit` was "metric p99 not found
/// in stdout: '850.00us' is not a number", though it was found; it now says to add the unit, in
/// the run's error and in the line that ends the sweep.
#[test]
fn a_duration_read_without_a_unit_says_to_add_one_not_that_it_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, dir) = sweep(
        tmp.path(),
        "wrk",
        "echo '  Latency Distribution'; echo '     99%  850.00us'",
        &["--metric", r"p99=\s99%\s+(\S+)"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let says = "metric p99 in stdout: '850.00us' has a unit: add --unit p99=ms";
    assert!(stderr.contains(says), "{stderr}");
    assert!(!stderr.contains("not found"), "{stderr}");
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert!(
        runs[0]["error"].as_str().unwrap().contains(says),
        "{}",
        runs[0]
    );
    // With the unit it is read.
    let (out, dir) = sweep(
        tmp.path(),
        "wrk-ms",
        "echo '     99%  850.00us'",
        &["--metric", r"p99=\s99%\s+(\S+)", "--unit", "p99=ms"],
    );
    util::assert_ok(&out);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["record"]["metrics"]["p99"], 0.85, "{}", runs[0]);
}

/// Finding 17 (#35): a metric printed several times (interim figures, then the final one) was
/// read at its first match, the warm-up's.
#[test]
fn a_metric_printed_several_times_is_judged_on_its_last_match() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, dir) = sweep(
        tmp.path(),
        "last",
        "echo 'rate: 10 (warming up)'; echo 'rate: 20'; echo 'rate: {threads}99 (final)'",
        &[
            "--metric",
            r"rate=rate: ([0-9.]+)",
            "--higher-is-better",
            "rate",
        ],
    );
    util::assert_ok(&out);
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    for run in &runs {
        let threads = run["threads"].as_u64().unwrap();
        assert_eq!(
            run["record"]["metrics"]["rate"].as_f64(),
            Some(format!("{threads}99").parse().unwrap()),
            "{run:#}"
        );
    }
    assert_eq!(util::summary(&dir)["recommendation"]["threads"], 4);
}

/// Finding 16 (#35): the program's whole output was held in coretune's memory (twice) to read
/// a metric from it: 300 MB of log lines made coretune 600 MB large.
#[test]
fn a_program_logging_300_mb_leaves_coretunes_memory_flat() {
    if !util::installed("/usr/bin/time") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big");
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kb=%M"])
        .arg(assert_cmd::cargo::cargo_bin("coretune"))
        .args(["tune", "--threads", "1", "--place", "os", "--runs", "1"])
        .args([
            "--warmup",
            "0",
            "--quiet",
            "--shell",
            "--metric",
            r"v=val=(\d+)",
        ])
        .arg("--out")
        .arg(&dir)
        .args([
            "--",
            "yes 'log line of a chatty benchmark' | head -c 300000000; echo val=3",
        ])
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["record"]["metrics"]["v"], 3.0, "{:#}", runs[0]);
    let kb: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(kb < 60 * 1024, "coretune's peak memory: {kb} KiB");
}

/// Finding 1: `--metric-from FILE` deleted an existing file of the user's before the first run.
/// A file that exists when a new sweep starts — for any substitution of its placeholders over
/// the grid — is refused before anything runs, with the reason, and left as it was.
#[test]
fn a_metric_file_that_exists_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let precious = tmp.path().join("results.txt");
    std::fs::write(&precious, "precious data: my results from last week\n").unwrap();
    std::fs::write(tmp.path().join("out-4.txt"), "mine too\n").unwrap();
    for from in [
        precious.to_str().unwrap().to_owned(),
        // Only the 4-thread configuration's name exists.
        tmp.path()
            .join("out-{threads}.txt")
            .to_str()
            .unwrap()
            .to_owned(),
    ] {
        let dir = tmp.path().join("sweep");
        let out = util::coretune()
            .args(["tune", "--threads", "1,2,4", "--place", "os", "--runs", "1"])
            .args([
                "--warmup",
                "0",
                "--metric",
                r"v=val=(\d+)",
                "--metric-from",
                &from,
            ])
            .arg("--out")
            .arg(&dir)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{from}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let named = from.replace("{threads}", "4");
        assert!(
            stderr.contains(&format!(
                "--metric-from {named}: the file exists; coretune removes this file between runs"
            )),
            "{stderr}"
        );
        assert!(!dir.exists(), "nothing ran");
    }
    assert_eq!(
        std::fs::read_to_string(&precious).unwrap(),
        "precious data: my results from last week\n"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("out-4.txt")).unwrap(),
        "mine too\n"
    );
}

/// Finding 18: `--metric-from stdin` (a typo) ran the whole default grid of failing runs, each
/// looking for a file called `stdin`. Only stdout and stderr are keywords; a near miss is one
/// line and status 2 before anything runs.
#[test]
fn a_near_miss_of_stdout_or_stderr_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    for (from, meant) in [
        ("stdin", "stdout"),
        ("STDOUT", "stdout"),
        ("sdtout", "stdout"),
        ("err", "stderr"),
    ] {
        let out = util::coretune()
            .args(["tune", "--metric-from", from, "--metric", "a=b", "--out"])
            .arg(&dir)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{from}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("--metric-from '{from}': did you mean {meant}?")),
            "{stderr}"
        );
        assert!(!dir.exists());
    }
}

/// A resumed sweep takes the metric files its own runs wrote for theirs (removed before the
/// next run of their configuration), and refuses one at the path of a configuration that has
/// not run yet, as a new sweep does.
#[test]
fn resume_takes_the_metric_files_its_runs_wrote_and_refuses_others() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m-{threads}.txt");
    let file = file.to_str().unwrap().to_owned();
    let dir = tmp.path().join("sweep");
    let args = |runs: &str| -> Vec<String> {
        [
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os",
            "--exhaustive",
            "--runs",
            runs,
            "--warmup",
            "0",
            "--quiet",
            "--shell",
            "--metric",
            r"v=v (\d+)",
            "--metric-from",
            &file,
            "--out",
            dir.to_str().unwrap(),
            "--",
            &format!("[ -e {file} ] && exit 9; echo v {{threads}} > {file}"),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    util::assert_ok(&util::coretune().args(args("2")).output().unwrap());
    // As if interrupted: the last run of 2 threads is dropped from the log, its file stays.
    let log = dir.join("runs.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let keep: Vec<&str> = text.lines().collect();
    let cut = keep
        .iter()
        .rposition(|l| l.contains("\"threads\":2"))
        .unwrap();
    let rest: String = keep
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != cut)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&log, rest).unwrap();
    util::resume(&dir);
    assert_eq!(util::read_jsonl(&log).len(), 4);
    assert!(util::read_jsonl(&log).iter().all(|r| r["status"] == "ok"));
    // A folder whose 2-thread runs are all gone: its file is no run's, and is refused.
    let text = std::fs::read_to_string(&log).unwrap();
    let ones: String = text
        .lines()
        .filter(|l| l.contains("\"threads\":1"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&log, ones).unwrap();
    let out = util::coretune()
        .args(["tune", "--quiet", "--resume"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("m-2.txt: the file exists")
            && stderr.contains("a file left by an interrupted run too"),
        "{stderr}"
    );
}

/// Finding 11: on two events/s sweeps `compare` printed "20.2% worse" (geometric mean) but
/// `--fail-above 22` failed, saying 25.3% (the cost ratio's); and `--json` called events/s
/// values `a_median_s`. The gate is on the printed figure; the JSON names the objective.
#[test]
fn compare_fail_above_gates_on_the_figure_it_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let eps = |name: &str, [one, two, four]: [u32; 3]| {
        let (out, dir) = sweep(
            tmp.path(),
            name,
            &format!(
                "case {{threads}} in 1) e={one};; 2) e={two};; *) e={four};; esac; echo \"eps $e\""
            ),
            &[
                "--metric",
                r"eps=eps (\d+)",
                "--higher-is-better",
                "eps",
                "--unit",
                "eps=events/s",
            ],
        );
        util::assert_ok(&out);
        dir
    };
    // B's rates are 75%, 85% and 80% of A's.
    let (a, b) = (eps("a", [1000, 2000, 1500]), eps("b", [750, 1700, 1200]));
    let compare = |extra: &[&str]| {
        util::coretune()
            .arg("compare")
            .args([&a, &b])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = compare(&[]);
    util::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    // (0.75 × 0.85 × 0.8)^(1/3) = 0.799 of A's rate: 20.1% worse (the costs' ratio: 1.252).
    assert!(
        text.contains("(20.1% worse over 3 configurations)"),
        "{text}"
    );
    // A gate just above the printed figure passes; just below, it fails saying that figure.
    util::assert_ok(&compare(&["--fail-above", "20.5"]));
    let out = compare(&["--fail-above", "20"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("B is 20.1% worse than A (geometric mean), above --fail-above 20%"),
        "{stderr}"
    );
    let json = util::json(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        (&json["objective"], &json["unit"], &json["higher_is_better"]),
        (&"eps".into(), &"events/s".into(), &true.into())
    );
    assert!(
        (json["change_pct"].as_f64().unwrap() + 20.105).abs() < 0.01,
        "{json}"
    );
    let one = &json["cases"][0];
    assert_eq!(
        (one["a_median"].as_f64(), one["b_median"].as_f64()),
        (Some(1000.0), Some(750.0))
    );
    assert!(one.get("a_median_s").is_none(), "{one}");
}
