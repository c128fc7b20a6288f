//! Where the files coretune puts into other programs' runs are: the pinning library
//! (`libcoretune_pin.so`) and the helper that starts a measured program (`coretune-exec`), both
//! built from `crates/pin`. Each is found the same way: its variable, beside the executable,
//! where `make install` puts it, or the copy the binary carries written to the user's cache.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::sys;

/// The environment variable naming the library file, overriding the search.
pub const LIB_VAR: &str = "CORETUNE_PIN_LIB";
/// The library's file name.
pub const LIB_FILE: &str = "libcoretune_pin.so";
/// The environment variable naming the helper that starts measured programs, overriding the
/// search.
pub const EXEC_VAR: &str = "CORETUNE_EXEC";
/// The helper's file name.
pub const EXEC_FILE: &str = "coretune-exec";

/// The pinning library's bytes, when the running binary carries a copy ([`embed_library`]).
static EMBEDDED: OnceLock<&'static [u8]> = OnceLock::new();
/// The helper's bytes, when the running binary carries a copy ([`embed_exec_helper`]).
static EMBEDDED_EXEC: OnceLock<&'static [u8]> = OnceLock::new();

/// Hands [`find_library`] the bytes of a pinning library the binary carries (the `coretune`
/// binary embeds the one it was built with), for when none is installed beside it. The first
/// call wins; an empty slice means none.
pub fn embed_library(bytes: &'static [u8]) {
    let _ = EMBEDDED.set(bytes);
}

/// Hands [`find_exec_helper`] the bytes of the `coretune-exec` the binary carries. The first
/// call wins; an empty slice means none.
pub fn embed_exec_helper(bytes: &'static [u8]) {
    let _ = EMBEDDED_EXEC.set(bytes);
}

/// Finds the pinning library: `$CORETUNE_PIN_LIB`, else next to the running executable, else
/// in `../lib/coretune/` from it, else the copy the binary carries ([`embed_library`]), written
/// once to the user's cache folder (`$XDG_CACHE_HOME/coretune/`, else `~/.cache/coretune/`)
/// under a name made from its contents, so that a binary of another version never uses it.
///
/// # Errors
///
/// A one-line reason, naming where it looked, when it is not there or its path cannot go into
/// `LD_PRELOAD` (a space or a colon).
pub fn find_library() -> Result<PathBuf, String> {
    if !sys::PRELOAD {
        return Err(
            "per-thread placement preloads a library into the program, which only Linux does \
             here"
                .to_owned(),
        );
    }
    let path = find(
        LIB_FILE,
        LIB_VAR,
        EMBEDDED.get().copied(),
        "the pinning library",
    )?;
    if path.to_string_lossy().contains([' ', ':']) {
        return Err(format!(
            "the pinning library's path {} has a space or colon, which LD_PRELOAD cannot take",
            path.display()
        ));
    }
    Ok(path)
}

/// Finds `coretune-exec`, the helper that starts a program whose peak memory is measured (see
/// `crates/pin/src/bin/coretune-exec.rs`): searched as [`find_library`] searches.
///
/// # Errors
///
/// A one-line reason, naming where it looked, when it is not there (Linux only).
pub fn find_exec_helper() -> Result<PathBuf, String> {
    if !sys::PRELOAD {
        return Err("coretune-exec is for Linux only".to_owned());
    }
    find(
        EXEC_FILE,
        EXEC_VAR,
        EMBEDDED_EXEC.get().copied(),
        "the helper coretune-exec",
    )
}

/// What `crates/pin/build.rs` stamps into the library and the helper, before 16 hex digits
/// of the hash of the sources they were built from.
const STAMP: &[u8] = b"coretune-pin-source:";

/// The source hash stamped into `bytes` (a library's or helper's file), if any.
fn stamp(bytes: &[u8]) -> Option<&[u8]> {
    let at = memchr::memmem::find(bytes, STAMP)? + STAMP.len();
    bytes.get(at..at + 16)
}

/// Whether the file at `path` was built from the sources `want` names (always, when the binary
/// carries no copy to compare with).
fn same_build(path: &Path, want: Option<&[u8]>) -> bool {
    want.is_none_or(|want| std::fs::read(path).is_ok_and(|bytes| stamp(&bytes) == Some(want)))
}

/// `file`: `$var`, beside the executable, in `../lib/coretune/`, else `embedded` written to the
/// cache; `what` names it in errors. When the binary carries a copy, a file found on disk is
/// used only if it was built from the same sources (its stamp, `crates/pin/build.rs`): a
/// library left beside an upgraded binary, or in a build folder after the sources changed,
/// speaks another protocol (its logs read as "no thread seen").
fn find(file: &str, var: &str, embedded: Option<&[u8]>, what: &str) -> Result<PathBuf, String> {
    let embedded = embedded.filter(|b| !b.is_empty());
    let want = embedded.and_then(stamp);
    if let Some(path) = std::env::var_os(var) {
        let path = PathBuf::from(path);
        return if !path.is_file() {
            Err(format!("{var}={} is not a file", path.display()))
        } else if !same_build(&path, want) {
            Err(format!(
                "{var}={} is {what} of another build of coretune (other sources): build it again \
                 (cargo build -p coretune-pin) or unset {var}",
                path.display()
            ))
        } else {
            Ok(std::path::absolute(&path).unwrap_or(path))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find coretune itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(file), dir.join("../lib/coretune").join(file)];
    for c in &candidates {
        if c.is_file() && same_build(c, want) {
            return Ok(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
        }
    }
    if let Some(bytes) = embedded {
        return cached_copy(bytes, file, var, what);
    }
    Err(format!(
        "{what} {file} is not next to {} nor in {} (set {var} to its path)",
        exe.display(),
        dir.join("../lib/coretune").display()
    ))
}

/// The carried `file` as a file in the user's cache folder: `NAME-<hash>[.EXT]`, where the hash
/// is of its bytes; written (executable) only when it is not already there with those bytes.
fn cached_copy(bytes: &[u8], file: &str, var: &str, what: &str) -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let home = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = home("XDG_CACHE_HOME")
        .or_else(|| home("HOME").map(|h| h.join(".cache")))
        .ok_or_else(|| {
            format!(
                "no {what} installed beside coretune, and no cache folder to write the one it \
                 carries ($XDG_CACHE_HOME and $HOME are unset; set {var})"
            )
        })?
        .join("coretune");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let (stem, ext) = file.split_once('.').unwrap_or((file, ""));
    let name = if ext.is_empty() {
        format!("{stem}-{:016x}", hasher.finish())
    } else {
        format!("{stem}-{:016x}.{ext}", hasher.finish())
    };
    let path = dir.join(name);
    if std::fs::read(&path).is_ok_and(|on_disk| on_disk == bytes) {
        return Ok(path);
    }
    let fail = |action: &str, p: &Path, e: std::io::Error| format!("{action} {}: {e}", p.display());
    sys::create_private_dir(&dir).map_err(|e| fail("cannot create", &dir, e))?;
    let temp = dir.join(format!(".{file}.{}", std::process::id()));
    std::fs::write(&temp, bytes).map_err(|e| fail("cannot write", &temp, e))?;
    sys::make_executable(&temp).map_err(|e| fail("cannot write", &temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail("cannot write", &path, e)
    })?;
    Ok(path)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_file_counts_as_this_build_only_with_the_stamp_of_the_carried_copy() {
        let carried: &[u8] = b"ELF.. coretune-pin-source:0123456789abcdef ..";
        let want = stamp(carried);
        assert_eq!(want, Some(&b"0123456789abcdef"[..]));
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let same = file("same.so", b"x coretune-pin-source:0123456789abcdef");
        let other = file("other.so", b"x coretune-pin-source:fedcba9876543210");
        let unstamped = file("old.so", b"a library from before stamps");
        let cut = file("cut.so", b"x coretune-pin-source:0123");
        assert!(same_build(&same, want));
        assert!(!same_build(&other, want));
        assert!(!same_build(&unstamped, want));
        assert!(!same_build(&cut, want));
        assert!(!same_build(&dir.path().join("missing.so"), want));
        // Nothing carried to compare with (a packager's build without it): any file will do.
        assert!(same_build(&unstamped, None));
    }
}
