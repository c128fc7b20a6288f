//! Stamps what this crate builds (`libcoretune_pin.so`, `coretune-exec`) with the sources it is
//! built from: `CORETUNE_PIN_SOURCE`, a hash of every file under `src/` and of `Cargo.toml`,
//! which `lib.rs` and `coretune-exec` carry as `coretune-pin-source:<hash>`. coretune uses a
//! library or helper found on disk only when its stamp is the one of the copy the binary
//! carries (`coretune_core::program::pin::find_library`): one left beside an upgraded binary,
//! or in a build folder after the sources changed, would be of another protocol.

use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let mut files = vec![manifest.join("Cargo.toml")];
    collect(&manifest.join("src"), &mut files);
    files.sort();
    // SipHash with fixed keys: the same sources give the same stamp in every build of them.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in &files {
        file.strip_prefix(&manifest)
            .unwrap_or(file)
            .hash(&mut hasher);
        std::fs::read(file)
            .expect("the crate's own files are readable")
            .hash(&mut hasher);
    }
    println!(
        "cargo:rustc-env=CORETUNE_PIN_SOURCE={:016x}",
        hasher.finish()
    );
}

/// Every file under `dir`, recursively.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
