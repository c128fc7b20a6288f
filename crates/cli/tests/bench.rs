//! `coretune bench` end to end, at the small size.

mod util;

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
        assert!(json["ctx_switches"]["voluntary"].is_number());
        assert!(json["ctx_switches"]["involuntary"].is_number());
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
    ] {
        let out = util::coretune().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
