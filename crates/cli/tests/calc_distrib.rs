//! `coretune calc` and `coretune distrib` where hwloc-calc 2.9 cannot be the reference: the
//! options hwloc added later (`--cof`, `--cif`, `--oo`, memory tier filters), and the cases where
//! hwloc's tools crash or abort (coretune exits with the status a shell reports for them,
//! without crashing). Everything else is compared with hwloc's tools in `hwloc_dropins.rs`.

#![allow(clippy::unwrap_used)]

use crate::util;

const MACHINE: &str = "pack:2 core:2 pu:2";

fn calc(args: &[&str], stdin: Option<&str>) -> (String, i32) {
    let mut cmd = util::coretune();
    cmd.arg("calc").args(["-i", MACHINE]).args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn later_hwloc_options_follow_hwloc_documentation() {
    let ok = |s: &str| (format!("{s}\n"), 0);
    assert_eq!(calc(&["--cof", "list", "core:1-2"], None), ok("2-5"));
    assert_eq!(
        calc(&["--cpuset-output-format", "taskset", "core:1-2"], None),
        ok("0x3c")
    );
    assert_eq!(
        calc(&["--cof", "systemd-dbus-api", "core:1-2"], None),
        ok("ay 0x0001 0x3c")
    );
    assert_eq!(
        calc(&["--cof", "systemd-dbus-api", "pu:0", "pu:7"], None),
        ok("ay 0x0001 0x81")
    );
    // The systemd format has no empty set: hwloc-calc says so and exits with 1.
    assert_eq!(calc(&["--cof", "systemd-dbus-api", "~all"], None).1, 1);
    assert_eq!(calc(&["--cof", "hex", "all"], None).1, 1);
    assert_eq!(calc(&["--cif", "list", "0-3,6"], None), ok("0x0000004f"));
    assert_eq!(
        calc(&["--cif", "hwloc", "1,3"], None),
        ok("0x00000001,0x00000003")
    );
    assert_eq!(calc(&["--cif", "taskset", "0x30"], None), ok("0x00000030"));
    assert_eq!(calc(&["--cif", "systemd-dbus-api", "0x3"], None).1, 1);
    assert_eq!(
        calc(&["--oo", "-I", "core", "pu:2-5"], None),
        ok("Core:1,Core:2")
    );
    assert_eq!(
        calc(&["--object-output", "--local-memory", "all"], None),
        ok("NUMANode:0")
    );
    let distrib = util::coretune()
        .args(["distrib", "-i", MACHINE, "--cof", "list", "3"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&distrib.stdout), "0-1\n2-3\n4-7\n");
}

/// `calc` on another topology (a synthetic description or an XML file).
fn calc_on(input: &str, args: &[&str]) -> String {
    let out = util::coretune()
        .arg("calc")
        .args(["-i", input])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn local_memory_takes_hwloc_2_12s_intersect_flag_and_default_nodes() {
    // A node on the machine, one per package, one per die: pu:1-2 spans two dies of package 0.
    let dies = "[numa] pack:2 [numa] die:2 [numa] pu:2";
    // hwloc-calc 2.9's default (larger or smaller locality): the package's and the machine's.
    assert_eq!(
        calc_on(dies, &["--local-memory", "pu:1-2", "--oo"]),
        "NUMANode:2,NUMANode:6\n"
    );
    // INTERSECT_LOCALITY (hwloc 2.12.1): the two dies' nodes too, neither larger nor smaller.
    assert_eq!(
        calc_on(dies, &["--local-memory-flags", "intersect", "pu:1-2"]),
        "0,1,2,6\n"
    );
    assert_eq!(
        calc_on(dies, &["--local-memory-flags", "9", "pu:1-2"]),
        "0,1,2,6\n"
    );
    // One die of package 1: its node, its package's and the machine's; not its sibling die's.
    assert_eq!(
        calc_on(dies, &["--local-memory-flags", "intersect", "pu:4-5"]),
        "3,5,6\n"
    );

    // A Xeon Max in flat mode: DRAM and HBM nodes per package. --default-nodes (hwloc-info
    // 2.12's, taken by calc) keeps the DRAM one; with every node HBM, all stay.
    let flat = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hbm-flat-2p-4numa.xml"
    );
    assert_eq!(calc_on(flat, &["--local-memory", "pack:1"]), "2,3\n");
    assert_eq!(
        calc_on(flat, &["--default-nodes", "pack:1", "--oo"]),
        "NUMANode:2\n"
    );
    assert_eq!(
        calc_on(
            flat,
            &["--default-nodes", "--local-memory-flags", "smaller", "all"]
        ),
        "0,2\n"
    );
    assert_eq!(calc_on(flat, &["-I", "numa[hbm]", "all"]), "1,3\n");
    let all_hbm = std::fs::read_to_string(flat)
        .unwrap()
        .replace("gp_index=\"5\"", "subtype=\"HBM\" gp_index=\"5\"")
        .replace("gp_index=\"10\"", "subtype=\"HBM\" gp_index=\"10\"");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hbm-only.xml");
    std::fs::write(&path, all_hbm).unwrap();
    assert_eq!(
        calc_on(path.to_str().unwrap(), &["--default-nodes", "pack:0"]),
        "0,1\n"
    );
}

#[test]
fn where_hwloc_crashes_coretune_exits_with_the_same_status() {
    // libhwloc 2.9 fails an assertion on a first word left empty: SIGABRT, 134 in a shell, and
    // the stdio buffer with earlier lines is lost.
    assert_eq!(calc(&[",0x1"], None), (String::new(), 134));
    assert_eq!(calc(&[], Some("pu:0\n,0x1\n")), (String::new(), 134));
    assert_eq!(calc(&["core:0:-1"], None), (String::new(), 134));
    let distrib = util::coretune()
        .args(["distrib", "-i", MACHINE, "0"])
        .output()
        .unwrap();
    assert_eq!(distrib.status.code(), Some(134));
    // A malformed XML file: hwloc-calc 2.9 dies with SIGSEGV (139), hwloc-distrib exits with 1.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.xml");
    std::fs::write(&bad, "<topology>").unwrap();
    let out = util::coretune()
        .args(["calc", "-i"])
        .arg(&bad)
        .arg("all")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(139));
    let out = util::coretune()
        .args(["distrib", "-i"])
        .arg(&bad)
        .arg("2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn ranges_hwloc_calc_loops_on_get_its_answer_at_once() {
    // hwloc-calc 2.9 loops 2^32 times on these (an unsigned count that wrapped); the answer is
    // the one it prints when it is done.
    let start = std::time::Instant::now();
    assert_eq!(calc(&["core:6-"], None), ("0x000000ff\n".to_owned(), 0));
    assert_eq!(calc(&["core:3-0"], None).1, 0);
    assert!(start.elapsed().as_secs() < 60);
}

#[test]
fn help_and_version_name_coretune() {
    let out = util::coretune().args(["calc", "--help"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Usage: coretune calc"));
    let out = util::coretune()
        .args(["distrib", "--version"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("hwloc-distrib 2.9.0"));
}

/// Finding 35: `calc --input-format fsroot -i /tmp core:0` (a folder that is no saved /sys tree)
/// ended with Rust's debug text: "hwloc_topology_load failed with errno Some(Errno { code: 22,
/// … })". hwloc-calc 2.9 prints `0x0` there; coretune stops, with hwloc's words on one line.
#[cfg(target_os = "linux")]
#[test]
fn a_folder_that_is_no_saved_tree_is_one_readable_line() {
    let empty = tempfile::tempdir().unwrap();
    let out = util::coretune()
        .args(["calc", "--input-format", "fsroot", "-i"])
        .arg(empty.path())
        .arg("core:0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(": hwloc could not read the tree: ")
            && err.contains("hwloc_topology_load failed: Invalid argument"),
        "{err}"
    );
    assert!(!err.contains("Some(") && !err.contains("Errno {"), "{err}");
}
