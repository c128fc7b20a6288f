//! Where the pinning library is: `$CORETUNE_PIN_LIB`, beside the executable, where `make
//! install` puts it, or the copy the binary carries written to the user's cache.

use std::path::{Path, PathBuf};

use crate::sys;

/// The environment variable naming the library file, overriding the search.
pub const LIB_VAR: &str = "CORETUNE_PIN_LIB";
/// The library's file name.
pub const LIB_FILE: &str = "libcoretune_pin.so";

/// The pinning library's bytes, when the running binary carries a copy ([`embed_library`]).
static EMBEDDED: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();

/// Hands [`find_library`] the bytes of a pinning library the binary carries (the `coretune`
/// binary embeds the one it was built with), for when none is installed beside it. The first
/// call wins; an empty slice means none.
pub fn embed_library(bytes: &'static [u8]) {
    let _ = EMBEDDED.set(bytes);
}

/// Finds the pinning library: `$CORETUNE_PIN_LIB`, else next to the running executable, else
/// in `../lib/coretune/` from it, else the copy the binary carries ([`embed_library`]), written
/// once to the user's cache folder (`$XDG_CACHE_HOME/coretune/`, else `~/.cache/coretune/`)
/// under a name made from its contents, so that a binary of another version never uses it.
///
/// # Errors
///
/// A one-line reason, naming where it looked, when it is not there or its path cannot go into
/// `LD_PRELOAD` (which splits at spaces and colons).
pub fn find_library() -> Result<PathBuf, String> {
    if !crate::sys::PRELOAD {
        return Err(
            "per-thread placement preloads a library into the program, which only Linux does \
             here"
                .to_owned(),
        );
    }
    let usable = |p: PathBuf| -> Result<PathBuf, String> {
        let text = p.to_string_lossy();
        if text.contains([' ', ':']) {
            Err(format!(
                "the pinning library's path {} has a space or colon, which LD_PRELOAD cannot take",
                p.display()
            ))
        } else {
            Ok(p)
        }
    };
    if let Some(path) = std::env::var_os(LIB_VAR) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            usable(std::path::absolute(&path).unwrap_or(path))
        } else {
            Err(format!("{LIB_VAR}={} is not a file", path.display()))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find coretune itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [
        dir.join(LIB_FILE),
        dir.join("../lib/coretune").join(LIB_FILE),
    ];
    for c in &candidates {
        if c.is_file() {
            return usable(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
        }
    }
    if let Some(bytes) = EMBEDDED.get().filter(|b| !b.is_empty()) {
        return cached_copy(bytes).and_then(usable);
    }
    Err(format!(
        "the pinning library {LIB_FILE} is not next to {} nor in {} (set {LIB_VAR} to its path)",
        exe.display(),
        dir.join("../lib/coretune").display()
    ))
}

/// The carried library as a file in the user's cache folder: `libcoretune_pin-<hash>.so`, where
/// the hash is of its bytes. An existing file is used only if it holds exactly these bytes;
/// otherwise it is written to a temporary name in the same folder and renamed into place, so
/// that two coretunes starting at once never preload a half-written file.
fn cached_copy(bytes: &[u8]) -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let home = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let dir = home("XDG_CACHE_HOME")
        .or_else(|| home("HOME").map(|h| h.join(".cache")))
        .ok_or_else(|| {
            format!(
                "no pinning library installed beside coretune, and no cache folder to write the \
                 one it carries ($XDG_CACHE_HOME and $HOME are unset; set {LIB_VAR})"
            )
        })?
        .join("coretune");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let path = dir.join(format!("libcoretune_pin-{:016x}.so", hasher.finish()));
    if std::fs::read(&path).is_ok_and(|on_disk| on_disk == bytes) {
        return Ok(path);
    }
    let fail = |what: &str, p: &Path, e: std::io::Error| format!("{what} {}: {e}", p.display());
    sys::create_private_dir(&dir).map_err(|e| fail("cannot create", &dir, e))?;
    let temp = dir.join(format!(".{LIB_FILE}.{}", std::process::id()));
    std::fs::write(&temp, bytes).map_err(|e| fail("cannot write", &temp, e))?;
    std::fs::rename(&temp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail("cannot write", &path, e)
    })?;
    Ok(path)
}
