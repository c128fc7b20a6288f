//! The README's commands run as written: every `coretune …` line of its code blocks (and the
//! `$ coretune …` lines of its transcripts), in a scratch folder that holds the files they name
//! (`./app`, `./render`, `topo.xml`, `epyc.xml`, the README's own `rules.toml`, `nginx.conf` and
//! `runs.jsonl`, a finished sweep for `--resume`), with the `coretune` under test first on `PATH` and the scratch folder
//! as `HOME`. Each must end as the README says: 0, or the status of the error it shows.
//!
//! Left out, each for a reason stated in [`skipped`]: what needs a Slurm cluster
//! (`tests/slurm.rs` runs those), what changes the whole machine (`reserve` without `--dry-run`:
//! `tests/reserve.rs` runs it on a test cgroup), the rules daemon (it does not end), and the two
//! full sweeps of the quick start (`make tune` runs the first). A PID in an example (`4242`)
//! is a placeholder: the test runs the line with the PID of a process it started.
// Linux only: the lines are shell commands, and several need /proc.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use crate::util;

use std::path::Path;
use std::process::Command;

/// Whether a line is left out, and why.
fn skipped(line: &str) -> Option<&'static str> {
    if line.contains("--slurm") {
        Some("needs a Slurm cluster (tests/slurm.rs)")
    } else if line.starts_with("coretune rules watch") {
        Some("the daemon does not end (tests/rules.rs runs it)")
    } else if line.starts_with("coretune reserve") && !line.contains("--dry-run") {
        Some("changes the whole machine (tests/reserve.rs, on a test cgroup)")
    } else if line == "coretune tune" || line == "coretune tune mixed" {
        Some("a full sweep, minutes long (make tune runs the first)")
    } else {
        None
    }
}

/// Lines that must end with a status other than 0, as the README shows them.
const FAILING: &[(&str, i32)] = &[("coretune topo --input 'pack:2 core:x'", 2)];

/// The shell lines of the README's code blocks that run coretune, backslash continuations
/// joined, trailing `# comments` removed. In a transcript (a block with `$ ` prompts) only the
/// prompted lines are commands; the rest is their output.
fn readme_commands() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in readme.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(Vec::new()),
            }
        } else if let Some(block) = current.as_mut() {
            block.push(line);
        }
    }
    let mut out = Vec::new();
    for block in blocks {
        let transcript = block.iter().any(|l| l.starts_with("$ "));
        let mut pending = String::new();
        for line in block {
            if !pending.is_empty() {
                pending.push(' ');
                pending.push_str(line.trim());
            } else {
                let line = match (transcript, line.strip_prefix("$ ")) {
                    (true, Some(command)) | (false, Some(command)) => command,
                    (true, None) => continue,
                    (false, None) => line,
                };
                let runs_coretune = line.starts_with("coretune ")
                    || line.starts_with("echo ") && line.contains("| coretune ")
                    || line.starts_with("CORETUNE_") && line.contains(" coretune ");
                if !runs_coretune {
                    continue;
                }
                pending = line.to_owned();
            }
            if let Some(head) = pending.strip_suffix('\\') {
                pending = head.trim_end().to_owned();
                continue;
            }
            out.push(strip_comment(&pending));
            pending.clear();
        }
    }
    out
}

/// The line without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return line[..i].trim_end().to_owned(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end().to_owned()
}

/// The scratch folder with every file the lines name.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Programs the examples start: they accept any arguments and end at once.
    for name in ["app", "render", "omp-app"] {
        let path = d.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Two NUMA nodes for `numa:1`, and an EPYC for the dry run.
    std::fs::copy(
        util::fixture("intel-xeon-gold-6230-cascadelake-2lm-snc2-2p-4numa-80pu.xml"),
        d.join("topo.xml"),
    )
    .unwrap();
    std::fs::copy(
        util::fixture("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml"),
        d.join("epyc.xml"),
    )
    .unwrap();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    // The README's own files, as it shows them: the rules file, the server example's
    // configuration and the replay example's runs.
    for (opening, file) in [
        ("```toml\n# /etc/coretune/rules.toml\n", "rules.toml"),
        ("```nginx\n", "nginx.conf"),
        ("```jsonl\n", "runs.jsonl"),
    ] {
        let text = readme
            .split(opening)
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap();
        std::fs::write(d.join(file), text).unwrap();
    }
    // A finished sweep where `--resume` looks for it.
    util::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results-0.1.0/external"),
        &d.join("coretune-results/2026-11-21T21-58-15"),
    );
    // Where the completion examples write.
    std::fs::create_dir_all(d.join(".local/share/bash-completion/completions")).unwrap();
    std::fs::create_dir_all(d.join(".zfunc")).unwrap();
    dir
}

#[test]
fn every_readme_command_runs_as_written() {
    let lines = readme_commands();
    assert!(
        lines.len() >= 25,
        "the README's commands were not found: {lines:?}"
    );
    let dir = scratch();
    let bin = assert_cmd::cargo::cargo_bin("coretune");
    util::pin_library();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The process a PID in an example stands for.
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let mut ran = 0;
    for line in &lines {
        if let Some(why) = skipped(line) {
            eprintln!("not run ({why}): {line}");
            continue;
        }
        if line.contains("os=eth0") && !Path::new("/sys/class/net/eth0").exists() {
            eprintln!("not run (this machine has no eth0): {line}");
            continue;
        }
        // The examples of real programs and servers need them installed (make test does).
        if let Some(tool) = [
            "sysbench",
            "nginx",
            "wrk",
            "redis-server",
            "redis-benchmark",
            "mpirun",
        ]
        .into_iter()
        .find(|t| line.contains(&format!("{t} ")) && !util::installed(t))
        {
            eprintln!("not run (no {tool}): {line}");
            continue;
        }
        if line.contains("man -l") && Command::new("man").arg("--version").output().is_err() {
            eprintln!("not run (no man here): {line}");
            continue;
        }
        let command = line.replace("4242", &pid);
        let out = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("HOME", dir.path())
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CORETUNE_PIN_LIB")
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap();
        let want = FAILING
            .iter()
            .find(|(prefix, _)| line.starts_with(prefix))
            .map_or(0, |(_, status)| *status);
        assert_eq!(
            out.status.code(),
            Some(want),
            "{command}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(ran >= 20, "only {ran} of {} lines ran", lines.len());
}

/// The extraction itself: continuations joined, prompts and comments gone, quotes kept.
#[test]
fn commands_are_read_from_the_readme_as_a_shell_would() {
    assert_eq!(
        strip_comment("coretune cpus 'a # b'   # note"),
        "coretune cpus 'a # b'"
    );
    assert_eq!(strip_comment("coretune tune"), "coretune tune");
    let lines = readme_commands();
    assert!(lines.iter().any(|l| l == "coretune doctor"), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "coretune tune --slurm --partition skylake --partition epyc --nodes 2 --account proj42"
        )),
        "continuations: {lines:?}"
    );
    assert!(
        lines.iter().all(|l| !l.contains('#') || l.contains('\'')),
        "{lines:?}"
    );
}

/// Finding 33: the README's `--dry-run` transcript said "Plan for …" where coretune printed
/// "Design for …". The transcript is what the command prints, line for line (the estimate comes
/// from `--estimate-one`, so nothing in it depends on this machine).
#[test]
fn the_dry_run_transcript_is_what_coretune_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let prompt = "$ coretune tune --input 'pack:2 core:8 pu:2' --dry-run --estimate-one 10\n";
    let shown = readme
        .split(prompt)
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    assert!(shown.starts_with("Plan for "), "{shown}");
    let out = util::coretune()
        .args([
            "tune",
            "--input",
            "pack:2 core:8 pu:2",
            "--dry-run",
            "--estimate-one",
            "10",
        ])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), shown);
}
