//! Builds the pinning library (`crates/pin`, `libcoretune_pin.so`) and the helper that starts a
//! measured program (`coretune-exec`, from the same crate) and hands them to the binary, which
//! carries them: however coretune is installed (`cargo install --path crates/cli`, a copied
//! binary, `make install`), per-thread placement finds a library — the one installed beside it
//! if there is one, else this copy, written to a cache folder on first use
//! (`coretune_core::program::pin::find_library`).
//!
//! Cargo cannot depend on a `cdylib` (artifact dependencies are unstable), so this runs cargo
//! once more for that one crate, into a target folder of its own under `OUT_DIR`, with the
//! profile of this build and without debug information (the library is preloaded into every
//! program coretune pins). Only for a Linux target: elsewhere nothing preloads a library, and
//! the binary carries an empty slice. Also records the commit this binary was built from, for
//! `coretune --version` and `coretune doctor`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let pin = manifest.join("../pin");
    println!("cargo:rerun-if-changed={}", pin.join("src").display());
    println!(
        "cargo:rerun-if-changed={}",
        pin.join("Cargo.toml").display()
    );
    println!("cargo:rerun-if-env-changed=CORETUNE_EMBED_PIN");
    commit(&manifest);
    let target = env::var("TARGET").expect("set by cargo");
    println!("cargo:rustc-env=CORETUNE_TARGET={target}");
    optimized();

    let embedded = out.join("libcoretune_pin.so");
    let embedded_exec = out.join("coretune-exec");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    // `CORETUNE_EMBED_PIN=0` leaves the library out (a packager that installs it beside the
    // binary, and wants the binary smaller).
    let wanted = env::var("CORETUNE_EMBED_PIN").map_or(true, |v| v != "0");
    if !(linux && wanted && pin.join("Cargo.toml").is_file()) {
        std::fs::write(&embedded, b"").expect("OUT_DIR is writable");
        std::fs::write(&embedded_exec, b"").expect("OUT_DIR is writable");
        return;
    }
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = out.join("pin-target");
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(pin.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--target")
        .arg(&target)
        .arg("--lib")
        .arg("--bin")
        .arg("coretune-exec");
    if release {
        cmd.arg("--release");
    }
    // The outer build's settings are not this build's: its own target folder, no debug
    // information, symbols stripped (the exported `pthread_create` stays: it is dynamic).
    for var in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let profile = if release { "RELEASE" } else { "DEV" };
    cmd.env(format!("CARGO_PROFILE_{profile}_DEBUG"), "false")
        .env(format!("CARGO_PROFILE_{profile}_STRIP"), "symbols");
    let status = cmd.status().expect("cargo runs");
    assert!(status.success(), "building crates/pin failed: {status}");
    let dir = target_dir
        .join(&target)
        .join(if release { "release" } else { "debug" });
    for (file, to) in [
        ("libcoretune_pin.so", &embedded),
        ("coretune-exec", &embedded_exec),
    ] {
        let built = dir.join(file);
        std::fs::copy(&built, to).unwrap_or_else(|e| panic!("{}: {e}", built.display()));
    }
}

/// `cfg(optimized)` and `CORETUNE_PROFILE` (`release` or `debug`): whether this build is
/// optimised, whatever its profile is called and whether it keeps debug assertions. `make test`
/// runs its one test pass optimised *with* debug assertions and overflow checks, so
/// `cfg(debug_assertions)` cannot tell the tests that need an optimised binary (the VM guests)
/// from the debug ones, nor tell `coretune doctor` how the binary was built.
fn optimized() {
    println!("cargo:rustc-check-cfg=cfg(optimized)");
    let optimized = env::var("OPT_LEVEL").is_ok_and(|level| level != "0");
    if optimized {
        println!("cargo:rustc-cfg=optimized");
    }
    let profile = if optimized { "release" } else { "debug" };
    println!("cargo:rustc-env=CORETUNE_PROFILE={profile}");
}

/// `CORETUNE_COMMIT`: the commit this binary is built from, when built from a git checkout;
/// `unknown` otherwise (a source package).
fn commit(manifest: &Path) {
    let root = manifest.join("../..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CORETUNE_COMMIT={commit}");
    // Built again when HEAD moves: `.git/HEAD`, and the branch it names.
    for name in ["HEAD"]
        .into_iter()
        .map(str::to_owned)
        .chain(git(&["symbolic-ref", "-q", "HEAD"]))
    {
        // A packed ref has no file of its own: HEAD's file still moves with a commit.
        if let Some(path) = git(&["rev-parse", "--git-path", &name]).map(|p| root.join(p)) {
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}
