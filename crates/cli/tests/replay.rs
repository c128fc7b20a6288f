//! `coretune tune --replay`: the search on recorded runs, from a hand-made JSON-lines file and
//! from a real results folder made here by a short exhaustive sweep of a built-in workload.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns, where clippy.toml does not reach

use std::io::Write as _;

use crate::util;

/// `tests/data/replay/hand-made.jsonl`: 1, 2, 4, 8 threads × os, compact, 3 runs each (±1%);
/// compact at 4 threads is the fastest by 20%.
fn hand_made() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/replay/hand-made.jsonl")
        .to_string_lossy()
        .into_owned()
}

fn replay(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["tune", "--replay"];
    all.extend_from_slice(args);
    all.push("--json");
    util::json(&all)
}

#[test]
fn json_has_the_keys_scripts_rely_on_with_the_known_answer() {
    let path = hand_made();
    let path = path.as_str();
    for strategy in [&[][..], &["--exhaustive"][..]] {
        let mut args = vec![path, "--seed", "4"];
        args.extend_from_slice(strategy);
        let json = replay(&args);
        for key in ["recommendation", "exhaustive"] {
            let config = &json[key]["config"];
            assert_eq!(config["threads"], 4, "{key}: {json}");
            assert_eq!(config["place"], "compact", "{key}: {json}");
            assert_eq!(config["cpus"], "all", "{key}: {json}");
        }
        assert_eq!(json["gap_pct"].as_f64(), Some(0.0), "{json}");
        for cost in ["search", "exhaustive"] {
            let c = &json["cost"][cost];
            assert!(c["runs"].as_u64().unwrap() > 0, "{json}");
            assert!(c["configs"].as_u64().unwrap() <= 8, "{json}");
            assert!(c["summed_time_s"].as_f64().unwrap() > 0.0, "{json}");
        }
        assert_eq!(json["cost"]["exhaustive"]["runs"], 24);
        assert_eq!(json["cost"]["exhaustive"]["configs"], 8);
        assert_eq!(json["seed"], 4);
    }
}

#[test]
fn a_bad_source_is_a_one_line_error_naming_file_and_line() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, r#"{{"threads": 1, "time_s": 1.0}}"#).unwrap();
    writeln!(f, r#"{{"threads": 2, "place": "os"}}"#).unwrap();
    f.flush().unwrap();
    let path = f.path().display().to_string();
    let missing = "/nonexistent/replay.jsonl".to_owned();
    for (source, says) in [
        (&path, format!("{path}:2: no \"time_s\"")),
        (&missing, format!("{missing}: ")),
    ] {
        let out = util::coretune()
            .args(["tune", "--replay", source])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&says), "{stderr}");
    }
}

#[test]
fn a_real_results_folder_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let made = util::coretune()
        .args(
            "tune sum --size small --exhaustive --threads 1,2 --place os --throttle none \
             --runs 2 --max-runs 2 --warmup 0 --quiet --out"
                .split_whitespace(),
        )
        .arg(&out)
        .output()
        .unwrap();
    util::assert_ok(&made);
    let summary = util::summary(&out);
    let recommended = &summary["recommendation"];
    let source = out.to_str().unwrap();
    // The folder and its runs.jsonl alone, the exhaustive replay with the sweep's own runs
    // (no deciding runs in either: --max-runs 2): the same runs, so the same recommendation as
    // the sweep's.
    for source in [source.to_owned(), format!("{source}/runs.jsonl")] {
        let json = replay(&[&source, "--exhaustive", "--runs", "2", "--max-runs", "2"]);
        let config = &json["exhaustive"]["config"];
        assert_eq!(config["threads"], recommended["threads"], "{json}");
        assert_eq!(config["place"], recommended["place"], "{json}");
        assert_eq!(json["recommendation"]["config"], *config, "{json}");
        assert_eq!(json["cost"]["exhaustive"]["runs"], 4, "{json}");
        assert_eq!(json["cost"]["exhaustive"]["configs"], 2, "{json}");
        let recorded: f64 = util::read_jsonl(&out.join("runs.jsonl"))
            .iter()
            .filter_map(|l| l["record"]["wall_s"].as_f64())
            .sum();
        let summed = json["cost"]["exhaustive"]["summed_time_s"]
            .as_f64()
            .unwrap();
        assert!((summed - recorded).abs() < 1e-6, "{summed} vs {recorded}");
    }
    let text = util::coretune()
        .args(["tune", "--replay", source])
        .output()
        .unwrap();
    util::assert_ok(&text);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("picks:"), "{text}");
    assert!(text.contains("cost:"), "{text}");
}

#[test]
fn input_checks_the_recorded_cpu_sets_on_that_machine() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    writeln!(f, r#"{{"threads": 1, "cpus": "numa:1", "time_s": 1.0}}"#).unwrap();
    writeln!(f, r#"{{"threads": 2, "cpus": "numa:1", "time_s": 0.6}}"#).unwrap();
    f.flush().unwrap();
    let path = f.path().to_str().unwrap();
    // Two NUMA nodes: numa:1 is there, and the replay answers.
    let json = replay(&[path, "--input", "pack:2 numa:1 core:2 pu:1"]);
    assert_eq!(json["recommendation"]["config"]["threads"], 2, "{json}");
    assert_eq!(json["recommendation"]["config"]["cpus"], "numa:1", "{json}");
    // One NUMA node: refused in one line, before anything is replayed.
    let out = util::coretune()
        .args(["tune", "--replay", path, "--input", "core:2 pu:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("numa:1"), "{stderr}");
    assert!(out.stdout.is_empty());
}
