//! Shared helpers for the CLI's integration tests.
#![allow(dead_code, unused_imports, unreachable_pub, clippy::unwrap_used)]

use std::path::PathBuf;

use assert_cmd::Command;

/// The `coretune` binary under test.
pub fn coretune() -> Command {
    Command::cargo_bin("coretune").unwrap()
}

// The corpus helpers (`topologies_dir`, `expected`, `corpus_files`, `as_usize`) are the core
// crate's, so both crates find and read `tests/data/topologies/` the same way.
#[path = "../../../core/tests/util/mod.rs"]
mod corpus;
pub use corpus::{corpus_files, expected};

/// One corpus file's path, as a string for the command line.
pub fn fixture(name: &str) -> String {
    corpus::fixture(name).to_string_lossy().into_owned()
}

/// A JSON Schema from the repository's `docs/` folder, compiled.
pub fn schema(name: &str) -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Runs `coretune ARGS`, expects success, parses stdout as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = coretune().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "coretune {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts `value` is valid against `validator`, listing every violation.
pub fn assert_valid(validator: &jsonschema::Validator, value: &serde_json::Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: schema violations:\n{}",
        errors.join("\n")
    );
}

/// Asserts a finished command succeeded, showing its standard error when not.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts that a finished `coretune` (or helper) command succeeded, showing its stderr if not.
pub fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
