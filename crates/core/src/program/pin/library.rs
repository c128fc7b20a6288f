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

/// `file`: `$var`, beside the executable, in `../lib/coretune/`, else `embedded` written to the
/// cache; `what` names it in errors.
fn find(file: &str, var: &str, embedded: Option<&[u8]>, what: &str) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(var) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(std::path::absolute(&path).unwrap_or(path))
        } else {
            Err(format!("{var}={} is not a file", path.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find coretune itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(file), dir.join("../lib/coretune").join(file)];
    for c in &candidates {
        if c.is_file() {
            return Ok(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
        }
    }
    if let Some(bytes) = embedded.filter(|b| !b.is_empty()) {
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
