//! Shared helpers for the core crate's integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::PathBuf;

use coretune_core::{Topology, TopologySource};

/// The real-machine topology corpus the repository carries: `tests/data/topologies/` at its
/// root (copied from the project's shared corpus; `INDEX.md` there gives each file's provenance).
pub fn topologies_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/topologies");
    assert!(
        dir.join("expected.json").is_file(),
        "the topology corpus is missing: expected {} with expected.json",
        dir.display()
    );
    dir
}

/// One corpus file, by name.
pub fn fixture(name: &str) -> PathBuf {
    topologies_dir().join(name)
}

/// Loads one corpus file with hwloc's default flags.
pub fn load(name: &str) -> Topology {
    Topology::load(&TopologySource::XmlFile(fixture(name)))
        .unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

/// `expected.json`'s `topologies` object: file name → facts computed by hwloc's own tools.
pub fn expected() -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(topologies_dir().join("expected.json"))
        .expect("expected.json is readable");
    let json: serde_json::Value = serde_json::from_str(&text).expect("expected.json is JSON");
    json["topologies"]
        .as_object()
        .expect("expected.json has a topologies object")
        .clone()
}

/// Every `.xml` file in the corpus, sorted by name.
pub fn corpus_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(topologies_dir())
        .expect("corpus folder is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    files.sort();
    files
}

/// A JSON number as usize.
pub fn as_usize(v: &serde_json::Value) -> usize {
    usize::try_from(v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))).unwrap()
}

/// Whether the tests must check everything: `CORETUNE_TEST_STRICT=1`, which `make test` (and
/// so CI) sets, since its set-up installs every tool and runs as root.
pub fn strict() -> bool {
    std::env::var_os("CORETUNE_TEST_STRICT").is_some_and(|v| v == "1")
}

/// Says that the calling test is skipped and why — or, under [`strict`], fails it: a skip there
/// would pass having checked nothing. The caller returns after it.
#[track_caller]
pub fn skip(why: impl std::fmt::Display) {
    assert!(
        !strict(),
        "skipped under CORETUNE_TEST_STRICT=1 (make test), which must check everything: {why}"
    );
    eprintln!("skipped: {why}");
}
