//! `coretune topo` end to end: counts against hwloc's own tools for every corpus file, the JSON
//! schema, the text form's size, every kind of `--input`, and one-line errors.

use crate::util;

use std::process::Command as StdCommand;

use predicates::prelude::*;

#[test]
fn json_counts_match_hwloc_for_every_corpus_file_and_validate() {
    let expected = util::expected();
    let schema = util::schema("topo.schema.json");
    for file in util::corpus_files() {
        let json = util::json(&["topo", "--json", "--input", &util::fixture(&file)]);
        util::assert_valid(&schema, &json, &file);
        let want = &expected[&file]["counts"];
        for key in ["packages", "numa_nodes", "l3", "cores", "pus"] {
            assert_eq!(json["counts"][key], want[key], "{file}: counts.{key}");
        }
        assert_eq!(
            json["smt"]["max"], expected[&file]["smt"]["max"],
            "{file}: SMT"
        );
        assert_eq!(
            json["budget"],
            serde_json::Value::Null,
            "{file}: no budget for a file"
        );
        assert_eq!(json["this_system"], false);
    }
}

#[test]
fn live_machine_json_validates_and_has_a_budget() {
    let json = util::json(&["topo", "--json"]);
    util::assert_valid(&util::schema("topo.schema.json"), &json, "live machine");
    assert_eq!(json["this_system"], true);
    let pus = json["counts"]["pus"].as_u64().unwrap();
    assert!(pus >= 1);
    let budget = &json["budget"];
    assert!(budget["budget"].as_f64().unwrap() > 0.0);
    let usable = budget["usable"].as_array().unwrap().len() as u64;
    assert!(usable >= 1 && usable <= pus);
    assert!(
        budget["explanation"]
            .as_str()
            .unwrap()
            .starts_with("usable: "),
        "{budget}"
    );
}

#[test]
fn text_summary_line_and_big_machines_fit_a_screen() {
    let out = util::coretune()
        .args(["topo", "--input"])
        .arg(util::fixture(
            "amd-epyc-7451-zen1-2p-8numa-16l3-96pu-cpuid.xml",
        ))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(
        first.ends_with(": 2 packages, 8 NUMA nodes, 16 L3, 48 cores, 96 PUs, SMT 2"),
        "{first}"
    );
    for file in util::corpus_files() {
        let out = util::coretune()
            .args(["topo", "--input", &util::fixture(&file)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}");
        let text = String::from_utf8(out.stdout).unwrap();
        // Distance matrices of 64 nodes are as big as they are; the tree itself must be compact.
        let tree_lines = text
            .lines()
            .take_while(|l| !l.starts_with("NUMA distances"))
            .count();
        assert!(tree_lines <= 60, "{file}: {tree_lines} lines\n{text}");
        let full = util::coretune()
            .args(["topo", "--full", "--input", &util::fixture(&file)])
            .output()
            .unwrap();
        let full = String::from_utf8(full.stdout).unwrap();
        let pus = util::expected()[&file]["counts"]["pus"].as_u64().unwrap() as usize;
        assert_eq!(
            full.matches("PU L#").count(),
            pus,
            "{file}: --full shows every PU"
        );
    }
}

#[test]
fn marks_offline_and_disallowed_pus() {
    util::coretune()
        .args(["topo", "--input"])
        .arg(util::fixture(
            "amd-opteron-865-8p-8numa-cpuset-disallowed-10of16pu.xml",
        ))
        .assert()
        .success()
        .stdout(predicate::str::contains("Offline PUs: 4\n"))
        .stdout(predicate::str::contains("Disallowed PUs: 7-11 "));
}

#[test]
fn hybrid_machines_list_cpu_kinds() {
    util::coretune()
        .args(["topo", "--input"])
        .arg(util::fixture(
            "intel-core-i7-1370p-raptorlake-hybrid-1p-14c-20pu.xml",
        ))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "cpukind:0 IntelAtom: PUs 12-19 (8)",
        ))
        .stdout(predicate::str::contains(
            "cpukind:1 IntelCore: PUs 0-11 (12)",
        ));
}

#[test]
fn a_synthetic_machine_of_4096_pus_is_counted_right() {
    let json = util::json(&[
        "topo",
        "--json",
        "--input",
        "pack:4 numa:4 l3:4 core:16 pu:4",
    ]);
    let c = &json["counts"];
    assert_eq!(
        (
            c["packages"].as_u64(),
            c["numa_nodes"].as_u64(),
            c["cores"].as_u64(),
            c["pus"].as_u64()
        ),
        (Some(4), Some(16), Some(1024), Some(4096))
    );
}

#[test]
fn xml_export_loads_back_with_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let file = util::fixture("intel-xeon-gold-6230-cascadelake-2lm-snc2-2p-4numa-80pu.xml");
    let xml = util::coretune()
        .args(["topo", "--xml", "--input", &file])
        .output()
        .unwrap();
    assert!(xml.status.success());
    let saved = dir.path().join("saved.xml");
    std::fs::write(&saved, &xml.stdout).unwrap();
    let a = util::json(&["topo", "--json", "--input", &file]);
    let b = util::json(&["topo", "--json", "--input", saved.to_str().unwrap()]);
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["distances"], b["distances"]);
}

/// `topo --xml` writes what `lstopo --of xml` writes on the same machine: instruction caches
/// and I/O devices included, so that `cpus --input saved.xml os=NAME` works on it.
#[test]
fn xml_export_is_lstopos() {
    let Ok(lstopo) = std::process::Command::new("lstopo")
        .args(["--of", "xml", "-"])
        .output()
    else {
        util::skip("lstopo is not installed (Debian package hwloc)");
        return;
    };
    assert!(lstopo.status.success());
    let ours = util::coretune().args(["topo", "--xml"]).output().unwrap();
    util::assert_ok(&ours);
    // The objects by type; the infos that name the writing process or hwloc's build differ.
    let types = |xml: &[u8]| {
        let text = String::from_utf8_lossy(xml).into_owned();
        let mut types: Vec<String> = text
            .split("<object type=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap_or_default().to_owned())
            .collect();
        types.sort();
        (types, text)
    };
    let (theirs, _) = types(&lstopo.stdout);
    let (mine, text) = types(&ours.stdout);
    assert_eq!(mine, theirs);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved.xml");
    std::fs::write(&saved, &ours.stdout).unwrap();
    // An OS device of the saved file resolves, as in lstopo's file.
    if let Some(name) = text
        .split("type=\"OSDev\"")
        .nth(1)
        .and_then(|rest| rest.split("name=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
    {
        let out = util::coretune()
            .args(["cpus", "--input", saved.to_str().unwrap()])
            .arg(format!("os={name}"))
            .output()
            .unwrap();
        util::assert_ok(&out);
    }
}

/// A saved /sys + /proc tree (hwloc's fsroot input), made from this machine with
/// hwloc-gather-topology (Debian package hwloc / hwloc-nox, installed by `make test`).
#[test]
fn fsroot_directory_input() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("live");
    let gathered = StdCommand::new("hwloc-gather-topology").arg(&base).output();
    let Ok(gathered) = gathered else {
        util::skip("hwloc-gather-topology is not installed (apt-get install hwloc-nox)");
        return;
    };
    assert!(gathered.status.success(), "hwloc-gather-topology failed");
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let tar = StdCommand::new("tar")
        .arg("xjf")
        .arg(base.with_extension("tar.bz2"))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(tar.success());
    let tree = unpacked.join("live");
    let from_tree = util::json(&["topo", "--json", "--input", tree.to_str().unwrap()]);
    let live = util::json(&["topo", "--json"]);
    assert_eq!(from_tree["counts"], live["counts"]);
    assert_eq!(from_tree["this_system"], false);
    assert_eq!(from_tree["source"], tree.to_str().unwrap());
}

#[test]
fn bad_inputs_are_one_line_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.xml");
    std::fs::write(&junk, "not xml at all").unwrap();
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let cases: Vec<(String, &str)> = vec![
        (
            "missing/topology.xml".into(),
            // The OS's own words: "No such file or directory", Windows' "Path not found".
            if cfg!(windows) {
                "missing/topology.xml: Path not found"
            } else {
                "missing/topology.xml: No such file"
            },
        ),
        (junk.to_string_lossy().into_owned(), "no <topology> element"),
        ("pack:2 core:0".into(), "'core:0' needs a positive count"),
        (
            "pack:2 banana:4".into(),
            "synthetic topology 'pack:2 banana:4'",
        ),
        (
            empty_dir.to_string_lossy().into_owned(),
            "not a saved /sys + /proc tree",
        ),
    ];
    for (input, message) in cases {
        let out = util::coretune()
            .args(["topo", "--input", &input])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{input}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            stderr.lines().count(),
            1,
            "{input}: one line, got {stderr:?}"
        );
        assert!(stderr.starts_with("coretune: "), "{stderr}");
        assert!(stderr.contains(message), "{input}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn broken_pipe_is_not_an_error() {
    // `coretune topo --full ... | head -c 1` must not print an error or fail; nor must JSON
    // written straight to a closed pipe (`place --json`, as `report --json` writes it). The
    // reader takes one byte and closes its end, as `head` does.
    use std::io::Read as _;
    use std::process::Stdio;
    let itanium = util::fixture("ia64-itanium-64numa-128p-256pu.xml");
    for args in [
        vec!["topo", "--full", "--input", itanium.as_str()],
        // About 2 MB of JSON: far more than a pipe holds.
        vec![
            "place",
            "--json",
            "--threads",
            "512",
            "--input",
            "pack:2 core:128 pu:2",
        ],
    ] {
        let mut child = util::coretune_std()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut byte = [0u8; 1];
        child.stdout.take().unwrap().read_exact(&mut byte).unwrap();
        let out = child.wait_with_output().unwrap();
        util::assert_ok(&out);
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn an_os_error_is_said_once() {
    // A folder that cannot be made: under a file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let out = util::coretune()
        .args(["tune", "--threads", "1", "--runs", "1", "--out"])
        .arg(file.join("x"))
        .arg("--")
        .arg(util::probe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    // Warnings said before the sweep (on Windows: no per-thread placement) aside.
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("coretune: warning:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
}
