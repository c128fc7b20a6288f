//! `coretune tune --instances`: P copies of a program or of a built-in workload at once, each
//! on its own part of the CPUs (hwloc-distrib's split), judged on their throughput together;
//! `{instance}` and `{instances}`; each copy's CPUs as seen from inside it; the apply lines run
//! as a user would paste them; bad input.

#![cfg(target_os = "linux")] // /proc/self/status tells a copy its CPUs
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::Path;

/// A sweep of 2 copies of one thread each, left to the OS within their parts.
const TWO_COPIES: [&str; 7] = [
    "tune",
    "--instances",
    "2",
    "--threads",
    "1",
    "--place",
    "os",
];

/// The CPUs this test may use, as the kernel lists them (`0-1`).
fn own_cpus() -> String {
    allowed(&std::fs::read_to_string("/proc/self/status").unwrap())
}

/// The first and the last CPU of a list (`0-1`: `0`, `1`).
fn first_last(list: &str) -> (String, String) {
    (
        list.split(['-', ',']).next().unwrap().to_owned(),
        list.rsplit(['-', ',']).next().unwrap().to_owned(),
    )
}

/// `Cpus_allowed_list` of a `/proc/PID/status` text.
fn allowed(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned()
}

/// What the copies wrote to `log`: `FILE sees CPUS` for each file, sorted.
fn seen_in(log: &Path) -> Vec<String> {
    let mut seen: Vec<String> = std::fs::read_dir(log)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let inside = allowed(&std::fs::read_to_string(e.path()).unwrap());
            format!("{} sees {inside}", e.file_name().to_string_lossy())
        })
        .collect();
    seen.sort();
    seen
}

/// The apply lines of the recommendation in sweep folder `dir`.
fn apply_lines(dir: &Path) -> Vec<String> {
    util::summary(dir)["recommendation"]["apply"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

/// Runs `lines` as a user pastes them into a shell (then `wait`), into an emptied `log`.
fn paste(lines: &[&str], log: &Path) {
    for f in std::fs::read_dir(log).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{}\nwait", lines.join("\n")))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{lines:#?}");
}

/// Each copy writes down, from inside, which instance it is, how many there are, its threads,
/// the CPUs coretune said and the CPUs the kernel lets it use; and prints a rate of 10.
fn script(log: &Path) -> String {
    format!(
        "grep Cpus_allowed_list /proc/self/status > {}/copy-{{instance}}-of-{{instances}}-t{{threads}}-on-{{cpus}}; \
         sleep 0.2; echo rate=10",
        log.display()
    )
}

#[test]
fn each_copy_runs_on_its_own_part_and_the_rates_add_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = tmp.path().join("log");
    std::fs::create_dir(&log).unwrap();
    let out = util::coretune()
        .args([
            "tune",
            "--instances",
            "1,2",
            "--threads",
            "1,2",
            "--place",
            "os",
        ])
        .args([
            "--exhaustive",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--quiet",
            "--shell",
        ])
        .args([
            "--metric",
            "rate=rate=([0-9]+)",
            "--higher-is-better",
            "rate",
        ])
        .arg("--out")
        .arg(&dir)
        .args(["--", &script(&log)])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let cpus = own_cpus();
    let (first, last) = first_last(&cpus);
    let seen = seen_in(&log);
    // One instance: every CPU. Two: one part each, as coretune said and as the kernel holds it
    // (on a machine of one CPU, both copies share it).
    let mut expected = vec![
        format!("copy-0-of-1-t1-on-{cpus} sees {cpus}"),
        format!("copy-0-of-1-t2-on-{cpus} sees {cpus}"),
        format!("copy-0-of-2-t1-on-{first} sees {first}"),
        format!("copy-0-of-2-t2-on-{first} sees {first}"),
        format!("copy-1-of-2-t1-on-{last} sees {last}"),
        format!("copy-1-of-2-t2-on-{last} sees {last}"),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    let s = util::summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    for c in s["configs"].as_array().unwrap() {
        let instances = c["instances"].as_u64().unwrap_or(1);
        // The rate is the sum of the copies' (10 each), every run of every copy read.
        assert_eq!(
            c["metrics"]["rate"]["median"],
            10.0 * instances as f64,
            "{c:#}"
        );
        assert_eq!(c["runs"], 2, "{c:#}");
        // The throughput counts the copies: P runs over the slowest one's time.
        let throughput = c["throughput"]["value"].as_f64().unwrap();
        let median = c["median_s"].as_f64().unwrap();
        assert!(
            (throughput * median / instances as f64 - 1.0).abs() < 0.2,
            "{c:#}"
        );
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("inst×thr"), "{table}");
    assert!(table.contains("2×1"), "{table}");
}

#[test]
fn a_built_in_workload_runs_as_copies_and_its_apply_lines_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args(["tune", "sum", "--size", "small", "--instances", "1,2"])
        .args(["--threads", "1", "--place", "compact", "--throttle", "none"])
        // No deciding runs (on a busy machine 2 copies can tie with 1): 2 runs each.
        .args(["--exhaustive", "--runs", "2", "--max-runs", "2"])
        .args(["--warmup", "0", "--quiet"])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    // Judged on throughput (the time of 2 copies is not one copy's), in the workload's unit.
    assert_eq!(s["plan"]["objectives"][0]["quantity"]["kind"], "throughput");
    assert_eq!(s["plan"]["objectives"][0]["unit"], "items/s");
    let two = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["instances"] == 2)
        .unwrap();
    assert_eq!(two["runs"], 2, "{two:#}");
    assert_eq!(two["failed"], 0, "{two:#}");
    // Each copy's worker pinned in its own part: every worker record, both copies'.
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let run = runs.iter().find(|r| r["instances"] == 2).unwrap();
    assert_eq!(
        run["record"]["threads"].as_array().unwrap().len(),
        2,
        "{run:#}"
    );
    assert_eq!(run["record"]["verified"], true);

    // A program's recommendation for 2 instances: the taskset lines, pasted into a shell, run
    // each copy where the sweep did.
    let log = tmp.path().join("log");
    std::fs::create_dir(&log).unwrap();
    let dir = tmp.path().join("program");
    let out = util::coretune()
        .args(TWO_COPIES)
        .args(["--runs", "1", "--warmup", "0", "--quiet", "--shell"])
        .arg("--out")
        .arg(&dir)
        .args(["--", &script(&log)])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let apply = apply_lines(&dir);
    assert!(apply[0].starts_with("note: 2 instances"), "{apply:#?}");
    let pasted: Vec<&str> = apply
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("taskset "))
        .collect();
    assert_eq!(pasted.len(), 2, "{apply:#?}");
    paste(&pasted, &log);
    let cpus = own_cpus();
    let (first, last) = first_last(&cpus);
    let seen = seen_in(&log);
    assert_eq!(
        seen,
        [
            format!("copy-0-of-2-t1-on-{first} sees {first}"),
            format!("copy-1-of-2-t1-on-{last} sees {last}"),
        ]
    );
}

#[test]
fn each_copy_gets_its_memory_policy_and_the_numactl_lines_run() {
    if !util::installed("numactl") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let log = tmp.path().join("log");
    std::fs::create_dir(&log).unwrap();
    // Each copy: its CPUs, then the policy the kernel shows on its own mappings.
    let script = format!(
        "(grep Cpus_allowed_list /proc/self/status; grep -o ' local ' /proc/self/numa_maps | head -1) \
         > {}/copy-{{instance}}-on-{{cpus}}-mem-{{mem}}",
        log.display()
    );
    let out = util::coretune()
        .args(TWO_COPIES)
        .args([
            "--mem", "local", "--cpus", "all", "--runs", "1", "--warmup", "0",
        ])
        .args(["--quiet", "--shell"])
        .arg("--out")
        .arg(&dir)
        .args(["--", &script])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let (first, last) = first_last(&own_cpus());
    let read_log = || {
        let mut v: Vec<String> = std::fs::read_dir(&log)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let text = std::fs::read_to_string(e.path()).unwrap();
                format!(
                    "{} sees {} policy{}",
                    e.file_name().to_string_lossy(),
                    allowed(&text),
                    text.lines().nth(1).unwrap_or(" none")
                )
            })
            .collect();
        v.sort();
        v
    };
    let expected = [
        format!("copy-0-on-{first}-mem-local sees {first} policy local "),
        format!("copy-1-on-{last}-mem-local sees {last} policy local "),
    ];
    assert_eq!(read_log(), expected);
    // The numactl lines of the recommendation, pasted into a shell, do the same.
    let apply = apply_lines(&dir);
    let pasted: Vec<&str> = apply
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("numactl "))
        .collect();
    assert_eq!(pasted.len(), 2, "{apply:#?}");
    assert!(pasted[0].contains(" --localalloc "), "{apply:#?}");
    paste(&pasted, &log);
    assert_eq!(read_log(), expected, "{pasted:#?}");
    // The systemd template unit's instances: systemd takes their settings.
    assert_systemd_takes(&apply);
}

/// Each `systemd unit instance @K: …` line of `apply`, written as the drop-in of instance K of
/// a template unit, read by systemd's own parser (`systemd-analyze verify`, which needs no
/// systemd running): it must take every directive without a word on stderr. A drop-in with a
/// broken directive first shows the check reads them.
fn assert_systemd_takes(apply: &[String]) {
    if !util::installed("systemd-analyze") {
        return;
    }
    let units = tempfile::tempdir().unwrap();
    std::fs::write(
        units.path().join("app@.service"),
        "[Service]\nExecStart=/bin/true\n",
    )
    .unwrap();
    let verify = |k: &str, directives: &str| {
        let drop_in = units.path().join(format!("app@{k}.service.d"));
        std::fs::create_dir_all(&drop_in).unwrap();
        let settings = directives.split(" NUMA").collect::<Vec<_>>().join("\nNUMA");
        std::fs::write(
            drop_in.join("coretune.conf"),
            format!("[Service]\n{settings}\n"),
        )
        .unwrap();
        let out = std::process::Command::new("systemd-analyze")
            .arg("verify")
            .arg(format!("app@{k}.service"))
            .env("SYSTEMD_UNIT_PATH", format!("{}:", units.path().display()))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let broken = verify("9", "CPUAffinity=0x NUMAPolicy=nearby");
    assert!(broken.contains("CPU affinity"), "{broken}");
    let lines: Vec<(&str, &str)> = apply
        .iter()
        .filter_map(|l| l.strip_prefix("systemd unit instance @")?.split_once(": "))
        .collect();
    assert_eq!(lines.len(), 2, "{apply:#?}");
    for (k, directives) in lines {
        assert_eq!(verify(k, directives), "", "instance {k}: {directives}");
    }
}

#[test]
fn a_copy_that_fails_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args(TWO_COPIES)
        .args(["--runs", "1", "--warmup", "0", "--quiet", "--shell"])
        .arg("--out")
        .arg(&dir)
        .args([
            "--",
            "if [ {instance} = 1 ]; then echo copy one broke >&2; exit 3; fi",
        ])
        .output()
        .unwrap();
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs[0]["status"], "failed", "{:#}", runs[0]);
    let error = runs[0]["error"].as_str().unwrap();
    assert!(error.starts_with("copy 1: "), "{error}");
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(
        runs[0]["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("copy one broke"),
        "{:#}",
        runs[0]
    );
}

#[test]
fn bad_instance_lists_are_refused_in_one_line() {
    for (args, says) in [
        (
            &["--instances", "0", "--", "true"][..],
            "--instances: instance counts must be at least 1",
        ),
        (
            &["--instances", "two", "--", "true"][..],
            "--instances: 'two': not an instance count, range",
        ),
        (
            &[
                "--instances",
                "2",
                "--server",
                "sleep 60",
                "--ready",
                "tcp:127.0.0.1:1",
                "--client",
                "true",
            ][..],
            "--instances: a server cannot run as several instances",
        ),
    ] {
        let out = util::coretune()
            .args(["tune", "--dry-run", "--threads", "1"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Finding 20: `--instances` takes ranges as `--threads` does, has the same cap (a billion
/// copies was accepted and 2000 forked at once on 2 CPUs), and says before the sweep, in the plan
/// as in the sweep, when copies share PUs (oversubscribed) or the split is uneven.
#[test]
fn instance_counts_take_ranges_are_capped_and_an_uneven_or_oversubscribed_split_is_said() {
    let plan = |input: &str, instances: &str| {
        let out = util::coretune()
            .args([
                "tune",
                "--dry-run",
                "--json",
                "--threads",
                "1",
                "--place",
                "os",
            ])
            .args(["--cpus", "all", "--input", input, "--instances", instances])
            .args(["--", "true"])
            .output()
            .unwrap();
        util::assert_ok(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let counts = json["plan"]["grid"]["instances"].clone();
        (counts, String::from_utf8(out.stderr).unwrap())
    };
    let four = "pack:1 core:4 pu:1";
    let (counts, err) = plan(four, "1-3");
    assert_eq!(counts, serde_json::json!([1, 2, 3]), "{err}");
    assert_eq!(
        err,
        "coretune: warning: 3 instances on 4 PUs: uneven split: CPUs 0 | 1 | 2-3\n"
    );
    let (counts, err) = plan(four, "2-8:2");
    assert_eq!(counts, serde_json::json!([2, 4, 6, 8]), "{err}");
    assert!(
        err.contains("6 instances on 4 PUs: oversubscribed, copies share PUs: CPUs ")
            && err.contains("8 instances on 4 PUs: oversubscribed"),
        "{err}"
    );
    // Even splits say nothing.
    assert_eq!(plan(four, "1,2,4").1, "");
    // Many copies stay one line each.
    let (_, err) = plan("pack:1 core:2 pu:1", "1000");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("1000 instances on 2 PUs: oversubscribed"),
        "{err}"
    );
    assert!(err.contains("… (1000 parts)"), "{err}");

    for (list, says) in [
        (
            "1000000000",
            "'1000000000' is more than coretune plans for (65536 instances)",
        ),
        (
            "1-70000",
            "'70000' is more than coretune plans for (65536 instances)",
        ),
        ("-1", "'-1': instance counts must be at least 1"),
        ("3-1", "'3-1': range ends before it starts"),
    ] {
        let out = util::coretune()
            .args(["tune", "--dry-run", "--threads", "1", "--instances", list])
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{list}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("--instances: {says}")),
            "{list}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{list}: {err}");
    }

    // The sweep itself says it too, before it runs.
    let tmp = tempfile::tempdir().unwrap();
    let pus = own_cpus();
    let n = util::coretune()
        .args(["cpus", "--to", "count", &pus])
        .output()
        .unwrap();
    let more = String::from_utf8(n.stdout)
        .unwrap()
        .trim()
        .parse::<usize>()
        .unwrap()
        + 1;
    let out = util::coretune()
        .args([
            "tune",
            "--instances",
            &more.to_string(),
            "--threads",
            "1",
            "--place",
            "os",
        ])
        .args(["--cpus", "all", "--runs", "1", "--warmup", "0", "--out"])
        .arg(tmp.path().join("s"))
        .args(["--", "true"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "warning: {more} instances on {} PUs: oversubscribed",
            more - 1
        )),
        "{err}"
    );
}

/// Finding 19: with `--instances`, the speedup column and the reason showed 1.00× for two
/// copies doing twice the work, because each instance count was its own baseline. The speedup
/// is now over one copy of one thread of the same placement, and the table and reason say so.
#[test]
fn with_instances_the_speedup_shows_the_gain_from_splitting() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "--instances",
            "1,2",
            "--threads",
            "1",
            "--place",
            "os",
        ])
        // Five runs: with three, one start delayed on a busy machine (0.64 s for a 0.3 s
        // sleep, seen) stretches the interval of the median to the runs' min..max, and the
        // two-copy configuration then "ties" with one copy.
        .args([
            "--exhaustive",
            "--runs",
            "5",
            "--warmup",
            "0",
            "--quiet",
            "--shell",
        ])
        .arg("--out")
        .arg(&dir)
        .args(["--", "sleep 0.3"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    let two = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["instances"] == 2)
        .unwrap();
    // Two copies of a 0.3 s sleep finish two runs in 0.3 s: twice one copy's throughput.
    let speedup = two["speedup"].as_f64().unwrap();
    assert!((1.6..2.4).contains(&speedup), "{two:#}");
    // Per thread of both copies.
    let efficiency = two["efficiency"].as_f64().unwrap();
    assert!((efficiency - speedup / 2.0).abs() < 1e-9, "{two:#}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("Speedup: over one copy of 1 thread of the same placement"),
        "{stdout}"
    );
    // Sleeping copies need no CPU: two are clearly better than one.
    assert_eq!(s["recommendation"]["instances"], 2, "{s:#}");
    let reason = s["recommendation"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("× one copy of 1 thread's throughput"),
        "{reason}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("Speedup: over one copy of 1 thread"), "{md}");
}
