//! Boots a payload of `scripts/vm/` in a QEMU guest and reads back its checks.
//!
//! `scripts/vm/vm.sh` does the work (kernel, initramfs, boot); this side prepares once per test
//! binary, boots one guest at a time, and parses the console: the JSON lines between `VM-BEGIN`
//! and `VM-DONE rc=N`, one per `check` of the payload.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use serde_json::Value;

/// One `check NAME CMD...` of a payload.
#[derive(Debug)]
pub(crate) struct Record {
    /// The command's exit status.
    pub(crate) rc: i64,
    /// Guest seconds it took.
    pub(crate) secs: f64,
    /// Its standard output.
    pub(crate) out: String,
    /// Its standard error.
    pub(crate) err: String,
}

/// A finished guest: its checks by name.
#[derive(Debug)]
pub(crate) struct Guest {
    pub(crate) name: String,
    pub(crate) records: BTreeMap<String, Record>,
}

impl Guest {
    /// The check `name`; fails the test, listing the checks there are, when it is missing.
    pub(crate) fn get(&self, name: &str) -> &Record {
        self.records.get(name).unwrap_or_else(|| {
            panic!(
                "{}: no check '{name}' (checks: {:?})",
                self.name,
                self.records.keys().collect::<Vec<_>>()
            )
        })
    }

    /// The standard output of check `name`, which must have succeeded.
    pub(crate) fn ok(&self, name: &str) -> &str {
        let r = self.get(name);
        assert_eq!(
            r.rc, 0,
            "{}: '{name}' exited with {}: {}{}",
            self.name, r.rc, r.out, r.err
        );
        &r.out
    }

    /// The standard output of check `name` (which must have succeeded) as one JSON document.
    pub(crate) fn json(&self, name: &str) -> Value {
        let out = self.ok(name);
        serde_json::from_str(out)
            .unwrap_or_else(|e| panic!("{}: '{name}' is not JSON ({e}): {out}", self.name))
    }

    /// The standard output of check `name` as JSON lines.
    pub(crate) fn json_lines(&self, name: &str) -> Vec<Value> {
        self.ok(name)
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{}: '{name}': not JSON ({e}): {l}", self.name))
            })
            .collect()
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script() -> PathBuf {
    repo().join("scripts/vm/vm.sh")
}

/// `target/vm`: the kernel is cached in its `kernel/`, shared with `make vm-shell`.
fn vm_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("../vm")
}

/// Where the tests' initramfs and console logs go: `target/vm/test`, apart from what a `make
/// vm-run` at the same time builds.
fn work() -> PathBuf {
    vm_dir().join("test")
}

/// Why this machine cannot run the guests, if it cannot. Only a missing QEMU or a host that is not
/// x86-64 Linux counts: everything else the tests need, `scripts/setup.sh --test` installs.
fn unable() -> Option<String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Some("the VM tests boot an x86-64 Debian kernel on Linux".into());
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").is_file()));
    (!found).then(|| {
        "qemu-system-x86_64 is not installed (scripts/setup.sh --test installs qemu-system-x86)"
            .into()
    })
}

fn vm_sh(args: &[&str]) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .args(args)
        .env("WORK", work())
        .env("KERNEL_DIR", vm_dir().join("kernel"))
        .env("CORETUNE", env!("CARGO_BIN_EXE_coretune"));
    cmd
}

/// Builds the pinning library beside the binary, fetches the kernel and builds the initramfs,
/// once per test binary.
fn prepare() -> Result<(), String> {
    static PREPARED: OnceLock<Result<(), String>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let started = Instant::now();
            // The guest gets the library found next to the binary: this build's, not a stale one.
            super::util::pin_library();
            for step in ["kernel", "initrd"] {
                let out = vm_sh(&[step])
                    .output()
                    .map_err(|e| format!("vm.sh {step}: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "scripts/vm/vm.sh {step} failed ({}):\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
            eprintln!(
                "vm: kernel and initramfs ready in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            Ok(())
        })
        .clone()
}

/// Boots payload `name` (`scripts/vm/payloads/NAME.sh`) and returns its checks, or `None` with a
/// visible `SKIPPED:` line when QEMU cannot run here. One guest runs at a time: they share 2 host
/// CPUs with everything else.
///
/// A guest that does not boot (no `VM-BEGIN` within vm.sh's boot timeout: the payload never
/// started) is booted once more, saying so; one that hangs in its payload fails the test with the
/// tail of its console.
pub(crate) fn boot(name: &str) -> Option<Guest> {
    if let Some(why) = unable() {
        super::util::skip(format!("VM test '{name}': {why}"));
        return None;
    }
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(e) = prepare() {
        panic!("{e}");
    }
    let started = Instant::now();
    let mut console = run_guest(name);
    if !console.contains("VM-BEGIN") {
        eprintln!(
            "vm: guest '{name}' did not boot; booting it again (once). Its console ended with:\n{}",
            tail(&console, 15)
        );
        console = run_guest(name);
    }
    let guest = parse(name, &console);
    let mut slow: Vec<(&String, f64)> = guest.records.iter().map(|(k, r)| (k, r.secs)).collect();
    slow.sort_by(|a, b| b.1.total_cmp(&a.1));
    slow.truncate(5);
    eprintln!(
        "vm: guest '{name}': {} checks in {:.1} s of host time; slowest (guest s): {slow:?}",
        guest.records.len(),
        started.elapsed().as_secs_f64()
    );
    Some(guest)
}

fn run_guest(name: &str) -> String {
    let out = vm_sh(&["boot", name])
        .output()
        .unwrap_or_else(|e| panic!("running scripts/vm/vm.sh boot {name}: {e}"));
    let mut console = String::from_utf8_lossy(&out.stdout).into_owned();
    console.push_str(&String::from_utf8_lossy(&out.stderr));
    console
}

fn tail(console: &str, n: usize) -> String {
    let lines: Vec<&str> = console.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The checks of a console log; fails the test when the payload did not finish.
fn parse(name: &str, console: &str) -> Guest {
    let log = work().join(format!("{name}.log"));
    let fail = |why: &str| -> ! {
        panic!(
            "guest '{name}': {why}; whole console in {}; it ended with:\n{}",
            log.display(),
            tail(console, 40)
        )
    };
    let mut records = BTreeMap::new();
    let mut begun = false;
    let mut done = None;
    for line in console.lines() {
        // Each console line starts with the host time, `[  12.34] `.
        let line = match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
            Some((_, rest)) => rest,
            None => line,
        };
        if line.contains("VM-BEGIN") {
            begun = true;
        } else if let Some(rc) = line.strip_prefix("VM-DONE rc=") {
            done = rc.split_whitespace().next().map(str::to_owned);
        } else if begun && done.is_none() && line.starts_with("{\"check\":") {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| fail(&format!("a check line is not JSON ({e}): {line}")));
            let check = v["check"].as_str().unwrap_or_default().to_owned();
            let record = Record {
                rc: v["rc"].as_i64().unwrap_or(-1),
                secs: v["s"].as_f64().unwrap_or(0.0),
                out: v["out"].as_str().unwrap_or_default().to_owned(),
                err: v["err"].as_str().unwrap_or_default().to_owned(),
            };
            if records.insert(check.clone(), record).is_some() {
                fail(&format!("two checks are named '{check}'"));
            }
        }
    }
    if !begun {
        fail("the guest did not boot (no VM-BEGIN)");
    }
    match done.as_deref() {
        None => fail("the payload did not finish (no VM-DONE): killed at its timeout?"),
        Some("0") => {}
        Some(rc) => fail(&format!("the payload exited with status {rc}")),
    }
    Guest {
        name: name.to_owned(),
        records,
    }
}
