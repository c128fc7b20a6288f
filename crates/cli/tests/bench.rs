//! `coretune bench` end to end, at the small size.

use crate::util;

#[test]
fn json_has_the_documented_keys_for_every_workload() {
    for (workload, unit) in [
        ("raymesh", "Mrays/s"),
        ("membw", "GB/s"),
        ("mixed", "tasks/s"),
    ] {
        let json = util::json(&[
            "bench",
            workload,
            "--size",
            "small",
            "--threads",
            "2",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--json",
        ]);
        assert_eq!(json["workload"], workload);
        assert_eq!(json["threads"], 2);
        assert_eq!(json["place"], "os");
        assert_eq!(json["verified"], true, "{json}");
        assert!(json["wall_s"].as_f64().unwrap() > 0.0);
        assert_eq!(json["throughput"]["unit"], unit);
        assert!(json["throughput"]["value"].as_f64().unwrap() > 0.0);
        // Windows does not count voluntary and involuntary switches apart: absent, not 0.
        for kind in ["voluntary", "involuntary"] {
            let n = &json["ctx_switches"][kind];
            assert!(
                n.is_number() || (cfg!(windows) && n.is_null()),
                "{kind}: {n}"
            );
        }
        assert!(json.get("migrations").is_some());
        let runs = json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        for run in runs {
            assert_eq!(run["verified"], true);
            assert_eq!(run["threads"].as_array().unwrap().len(), 2, "{run}");
            for key in ["wall_s", "user_s", "sys_s", "peak_rss_bytes"] {
                assert!(run[key].is_number(), "{key} in {run}");
            }
        }
    }
}

#[test]
fn bad_arguments_are_one_line_errors() {
    for (args, message) in [
        (vec!["bench", "nope"], "unknown workload 'nope'"),
        (
            vec!["bench", "raymesh", "--threads", "0"],
            "--threads must be at least 1",
        ),
        (
            vec!["bench", "raymesh", "--rays", "0", "--runs", "1"],
            "--rays must be at least 1",
        ),
        // Another workload's parameter would be ignored: refused, naming both.
        (
            vec!["bench", "sum", "--rays", "100"],
            "--rays is a parameter of raymesh, not of sum (sum takes --count, --repeat)",
        ),
        (
            vec!["bench", "raymesh", "--pool", "rayon"],
            "--pool is a parameter of spawn, not of raymesh",
        ),
    ] {
        let out = util::coretune().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn throttle_is_a_limit_or_adaptive_and_adaptive_runs_log_a_trace() {
    let args = |throttle: &str| {
        util::json(&[
            "bench",
            "mixed",
            "--size",
            "small",
            "--threads",
            "4",
            "--throttle",
            throttle,
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
        ])
    };
    let fixed = args("3");
    assert_eq!(fixed["throttle"], 3);
    assert_eq!(fixed["verified"], true, "{fixed}");
    assert_eq!(fixed["throttle_trace"].as_array().unwrap().len(), 0);
    let adaptive = args("adaptive");
    assert_eq!(adaptive["throttle"], "adaptive");
    assert_eq!(adaptive["verified"], true, "{adaptive}");
    // 400 tasks that each sleep 800 µs on 4 threads last at least 80 ms; a sample closes every
    // 16 completions (and 1 ms), so the trace has several.
    let trace = adaptive["throttle_trace"].as_array().unwrap();
    assert!(!trace.is_empty(), "{adaptive}");
    for s in trace {
        assert_eq!(s["run"], 1);
        assert!(s["t_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!((1..=4).contains(&s["limit"].as_u64().unwrap()), "{s}");
        assert!(s["throughput"].as_f64().unwrap() > 0.0, "{s}");
    }
    let out = util::coretune()
        .args(["bench", "sum", "--throttle", "fast"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("'fast' is not none, a positive number, cores, pus or adaptive"),
        "{stderr}"
    );
}

/// `bench --place` reaches the pool's workers for every pool-based workload: worker `i` is only
/// ever seen on the CPU `coretune place` planned for thread `i` (4 workers, wrapping around the
/// CPUs this process may use).
#[test]
fn placed_workers_run_where_place_planned() {
    let planned = util::planned_bound(4, "round-robin", "pu");
    for workload in ["raymesh", "membw", "mixed", "sum"] {
        let json = util::json(&[
            "bench",
            workload,
            "--size",
            "small",
            "--threads",
            "4",
            "--place",
            "round-robin",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
        ]);
        assert_eq!(json["verified"], true, "{json}");
        let threads = json["runs"][0]["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 4, "{json}");
        for t in threads {
            let worker = usize::try_from(t["worker"].as_u64().unwrap()).unwrap();
            let seen: Vec<usize> = t["cpus_seen"]
                .as_object()
                .unwrap()
                .keys()
                .map(|cpu| cpu.parse().unwrap())
                .collect();
            assert!(!seen.is_empty(), "{workload}: {t}");
            assert!(
                seen.iter().all(|cpu| planned[worker].contains(cpu)),
                "{workload}: worker {worker} planned on {:?}, seen on {seen:?}",
                planned[worker]
            );
        }
    }
}
