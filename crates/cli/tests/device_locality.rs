//! The CPUs near a device: `os=NAME`, `pci=BUSID`, `pci[VENDOR:]:N`, `osdev[gpu]:N` in `coretune
//! calc` (against `hwloc-calc`, byte for byte) and in `coretune cpus` and `place --cpus` (the same
//! set), for every OS and PCI device of the corpus files that carry devices
//! (`tests/data/topologies/io/`) and of this machine. Skipped with a note when hwloc's tools are
//! not installed.

#![allow(clippy::unwrap_used)]

use crate::util;

use std::collections::BTreeSet;
use std::process::Command;

fn hwloc_installed() -> bool {
    let ok = Command::new("hwloc-calc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        util::skip("hwloc-calc (Debian hwloc-nox) not installed");
    }
    ok
}

/// `(stdout, status)` of a command.
fn run(cmd: &mut Command) -> (String, i32) {
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The names of the OS devices and the bus ids of the PCI devices in an hwloc XML document, and
/// the PCI vendors.
fn devices(xml: &str) -> (Vec<String>, Vec<String>, BTreeSet<String>) {
    let mut names = Vec::new();
    let mut busids = Vec::new();
    let mut vendors = BTreeSet::new();
    for tag in xml.split('<').filter(|t| t.starts_with("object ")) {
        let attr = |key: &str| {
            let start = tag.find(&format!(" {key}=\""))? + key.len() + 3;
            Some(tag[start..start + tag[start..].find('"')?].to_owned())
        };
        match attr("type").as_deref() {
            Some("OSDev") => names.extend(attr("name")),
            Some("PCIDev") => {
                busids.extend(attr("pci_busid"));
                // pci_type="CLASS [VENDOR:DEVICE] ..."
                if let Some(t) = attr("pci_type") {
                    if let Some(v) = t.split('[').nth(1).and_then(|s| s.split(':').next()) {
                        vendors.insert(v.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    (names, busids, vendors)
}

/// Compares `coretune calc` with hwloc-calc on `args`, and `coretune cpus` with the set when
/// hwloc-calc finds one; returns how many comparisons were made.
fn check(input: Option<&str>, location: &str, extra: &[&str]) -> usize {
    let mut hw = Command::new("hwloc-calc");
    let mut ours_cmd = Command::new(assert_cmd::cargo::cargo_bin("coretune"));
    ours_cmd.arg("calc");
    if let Some(input) = input {
        hw.args(["-i", input]);
        ours_cmd.args(["-i", input]);
    }
    hw.args(extra).arg(location);
    ours_cmd.args(extra).arg(location);
    let want = run(&mut hw);
    let got = run(&mut ours_cmd);
    assert_eq!(got, want, "calc {extra:?} {location} on {input:?}");
    let mut compared = 1;
    if extra.is_empty() && want.1 == 0 && want.0.trim() != "0x0" {
        let mut cpus = util::coretune();
        cpus.args(["cpus", "--to", "hwloc", location]);
        if let Some(input) = input {
            cpus.args(["--input", input]);
        }
        let out = cpus.output().unwrap();
        util::assert_ok(&out);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want.0,
            "cpus {location} on {input:?}"
        );
        // A placement limited to the device's CPUs stays inside them.
        let mut place = util::coretune();
        place.args(["place", "--threads", "3", "--json", "--cpus", location]);
        if let Some(input) = input {
            place.args(["--input", input]);
        }
        let out = place.output().unwrap();
        util::assert_ok(&out);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut list = util::coretune();
        list.args(["cpus", location]);
        if let Some(input) = input {
            list.args(["--input", input]);
        }
        let allowed: BTreeSet<u64> = json["threads"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| {
                t["pus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
            })
            .collect();
        let out = list.output().unwrap();
        let near = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        for cpu in &allowed {
            assert!(
                cpu_in_list(*cpu, &near),
                "place --cpus {location}: CPU {cpu} not in {near}"
            );
        }
        compared += 2;
    }
    compared
}

fn cpu_in_list(cpu: u64, list: &str) -> bool {
    list.split(',').any(|part| match part.split_once('-') {
        Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).contains(&cpu),
        None => part.parse::<u64>().ok() == Some(cpu),
    })
}

fn check_topology(input: Option<&str>, xml: &str) -> usize {
    let (names, busids, vendors) = devices(xml);
    let mut compared = 0;
    for name in &names {
        compared += check(input, &format!("os={name}"), &[]);
        compared += check(input, &format!("os={name}"), &["-I", "pack"]);
        compared += check(input, &format!("os={name}"), &["--local-memory"]);
    }
    for busid in &busids {
        compared += check(input, &format!("pci={busid}"), &[]);
        // The short form without the domain.
        if let Some(short) = busid.strip_prefix("0000:") {
            compared += check(input, &format!("pci={short}"), &[]);
        }
    }
    for vendor in &vendors {
        compared += check(input, &format!("pci[{vendor}:]:0"), &[]);
        compared += check(input, &format!("pci[{vendor}:]:all"), &[]);
    }
    for location in [
        "osdev[gpu]:0",
        "osdev[net]:1",
        "osdev[block]:all",
        "osdev[coproc]:0-1",
        "pci:odd",
        "os=nonexistent",
        "pci=ff:1f.7",
    ] {
        compared += check(input, location, &[]);
    }
    for level in ["pci", "osdev", "gpu", "net", "bridge"] {
        compared += check(input, "all", &["-N", level]);
        compared += check(input, "all", &["-I", level]);
    }
    // -v names each matched I/O object by the bus id hwloc-calc reads from its attributes (a
    // bridge's upstream side, an OS device's type number as the domain).
    for level in [
        "bridge",
        "pcidev",
        "osdev",
        "osdev[gpu]",
        "osdev[net]",
        "osdev[coproc]",
    ] {
        compared += check(input, &format!("{level}:all"), &["-v"]);
    }
    compared
}

#[test]
fn device_locality_matches_hwloc_calc_on_the_corpus_files_with_devices() {
    if !hwloc_installed() {
        return;
    }
    let files = util::io_files();
    assert!(files.len() >= 2, "{files:?}");
    let mut compared = 0;
    for file in &files {
        let xml = std::fs::read_to_string(file).unwrap();
        let (names, busids, _) = devices(&xml);
        assert!(
            !names.is_empty() && !busids.is_empty(),
            "{file} has no devices"
        );
        compared += check_topology(Some(file), &xml);
    }
    assert!(compared > 100, "only {compared} comparisons");
}

#[test]
fn device_locality_matches_hwloc_calc_on_this_machine() {
    if !hwloc_installed() {
        return;
    }
    let Ok(out) = Command::new("lstopo-no-graphics")
        .args(["--of", "xml"])
        .output()
    else {
        util::skip("lstopo-no-graphics not installed");
        return;
    };
    let xml = String::from_utf8_lossy(&out.stdout);
    let (names, _, _) = devices(&xml);
    if names.is_empty() {
        util::skip("this machine shows no OS device to hwloc");
        return;
    }
    check_topology(None, &xml);
}
