//! Results folders written by coretune 0.1.0 (`tests/data/results-0.1.0/`, see its README) still
//! report and resume: the sweep engine reads their `sweep.json` and `runs.jsonl` as written
//! then, and reports the same table and recommendation that release did.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/results-0.1.0")
        .join(name)
}

#[test]
fn old_folders_report_the_same_table_and_recommendation() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["builtin", "external"] {
        let dir = tmp.path().join(name);
        util::copy_dir(&fixture(name), &dir);
        let old = util::read_json(&dir.join("summary.json"));
        let mut new = util::json(&["report", "--json", dir.to_str().unwrap()]);
        // Figures added since, reported for old runs too: everything else is as it was.
        for c in new["configs"].as_array_mut().unwrap() {
            let c = c.as_object_mut().unwrap();
            for added in ["cpu_s", "peak_rss_bytes"] {
                assert!(c.remove(added).is_some(), "{name}: {added}");
            }
        }
        assert_eq!(new["configs"], old["configs"], "{name}");
        assert_eq!(new["usl"], old["usl"], "{name}");
        // One wording fixed since: "At 1 thread pinning", where 0.1.0 wrote "At 1 threads".
        let mut old_rec = old["recommendation"].clone();
        if let Some(reason) = old_rec["reason"].as_str() {
            old_rec["reason"] = reason.replace("At 1 threads ", "At 1 thread ").into();
        }
        // Changed on purpose since (issue 37): a tie must be shown by the runs' 95% bound, and
        // "beyond noise" is claimed only when that bound supports it, which two runs a
        // configuration (these sweeps) never do. The builtin sweep's choice, fastest, apply
        // lines and warnings are as they were; the external one's 0.1.0 choice, 1 thread, was
        // a tie "within noise" 4.4% slower than the fastest by median, which is no tie now: the
        // fastest is recommended.
        let mut new_rec = new["recommendation"].clone();
        for rec in [&mut old_rec, &mut new_rec] {
            for field in ["beyond_noise", "reason"] {
                rec.as_object_mut().unwrap().remove(field);
            }
        }
        if name == "external" {
            assert_eq!(new_rec["fastest"], old_rec["fastest"], "{name}");
            assert_eq!(new_rec["threads"], 2, "{name}");
            let reason = new["recommendation"]["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("2 threads, place os is fastest"),
                "{reason}"
            );
        } else {
            assert_eq!(new_rec, old_rec, "{name}");
        }
        // Added since: whether the sweep is complete, and its planned runs (all made).
        assert_eq!(new["complete"], true, "{name}");
        let planned = new["runs"].as_object_mut().unwrap().remove("planned");
        assert_eq!(planned, Some(old["runs"]["measured"].clone()), "{name}");
        assert_eq!(new["runs"], old["runs"], "{name}");
        for file in ["summary.csv", "summary.md", "report.html", "time.svg"] {
            assert!(dir.join(file).is_file(), "{name}: {file}");
        }
    }
    // The monitored one draws its per-CPU plot from the old monitor files.
    assert!(tmp.path().join("builtin/utilisation.svg").is_file());
}

#[test]
fn old_folders_resume_where_they_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    // The external sweep ran `sh -c`, which Windows has not: resumed on Unix only.
    let folders = [("builtin", 30), ("external", 5)]
        .into_iter()
        .filter(|&(name, _)| cfg!(unix) || name != "external");
    for (name, keep) in folders {
        let dir = tmp.path().join(name);
        util::copy_dir(&fixture(name), &dir);
        let all = util::read_jsonl(&dir.join("runs.jsonl"));
        // Cut the log as a crash would have: `keep` whole runs and half of the next line.
        let text = std::fs::read_to_string(dir.join("runs.jsonl")).unwrap();
        let mut cut: String = text.lines().take(keep).map(|l| format!("{l}\n")).collect();
        let next = text.lines().nth(keep).unwrap();
        cut.push_str(&next[..next.len() / 2]);
        std::fs::write(dir.join("runs.jsonl"), cut).unwrap();
        util::resume(&dir);
        let now = util::read_jsonl(&dir.join("runs.jsonl"));
        assert_eq!(
            now.len(),
            all.len(),
            "{name}: as many runs as the finished sweep"
        );
        assert_eq!(
            now[..keep],
            all[..keep],
            "{name}: the old runs are kept as they were"
        );
        let count = |lines: &[serde_json::Value]| {
            let mut m = std::collections::BTreeMap::<String, usize>::new();
            for l in lines {
                let key = format!(
                    "{}|{}|{}|{}",
                    l["threads"], l["place"], l["cpus"], l["throttle"]
                );
                *m.entry(key).or_default() += 1;
            }
            m
        };
        assert_eq!(
            count(&now),
            count(&all),
            "{name}: the same runs per configuration"
        );
        let s = util::read_json(&dir.join("summary.json"));
        assert_eq!(s["runs"]["failed"], 0, "{name}");
    }
}
