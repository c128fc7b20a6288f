//! Big synthetic topologies kept as XML, so that hwloc builds each once.
//!
//! hwloc builds a synthetic topology by inserting every object into the tree by its CPU set,
//! comparing it with its future siblings one by one: the time grows with the square of the
//! children of one parent. A flat machine of 2,048 cores in one package takes hwloc 0.5 s
//! (`hwloc-calc --input 'pack:1 core:2048 pu:1' all` as well), while the same topology from XML
//! loads in a few milliseconds. So a synthetic description of [`MIN_PUS`] PUs or more is built by
//! hwloc once, exported to XML in the user's cache folder (`$XDG_CACHE_HOME/coretune/topologies/`,
//! else `~/.cache/coretune/topologies/`), and read from there afterwards. The file's name is a
//! hash of the description, the load options and the versions of hwloc and coretune, so another
//! hwloc or coretune builds its own. The cache is only ever a shortcut: a folder that cannot be
//! written, a file that cannot be read or does not load, and the topology is built from the
//! description as before (and the file rewritten). Smaller descriptions, which hwloc builds in
//! well under 0.1 s, are never cached.

use std::path::{Path, PathBuf};

use super::source::LoadOptions;

/// The PUs from which a synthetic description is cached.
pub(super) const MIN_PUS: u64 = 1024;

/// The cache folder: `$XDG_CACHE_HOME/coretune/topologies`, else
/// `$HOME/.cache/coretune/topologies`; `None` when neither variable is set.
pub(super) fn folder() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("coretune").join("topologies"))
}

/// The PUs a synthetic description makes: the product of its levels' counts (`pack:2 core:4
/// pu:2` or `2 4 2`, attributes in parentheses left out). `None` when a level's count is not a
/// plain number (a description hwloc may read otherwise, never cached).
pub(super) fn pus(description: &str) -> Option<u64> {
    let mut total: u64 = 1;
    let mut levels = 0;
    for level in description.split_whitespace() {
        let level = level.split('(').next().unwrap_or(level);
        let count = level.rsplit(':').next().unwrap_or(level);
        if count.is_empty() {
            // An attribute alone, e.g. hwloc's `{pu_distance...}`: not a level.
            continue;
        }
        total = total.checked_mul(count.parse::<u64>().ok()?)?;
        levels += 1;
    }
    (levels > 0).then_some(total)
}

/// The cache file for a description loaded with `options`, in `folder`.
pub(super) fn file(folder: &Path, description: &str, options: &LoadOptions) -> PathBuf {
    let mut crc = crc32fast::Hasher::new();
    for part in [
        description,
        &format!("{options:?}"),
        &hwlocality::hwloc_api_version().to_string(),
        env!("CARGO_PKG_VERSION"),
    ] {
        crc.update(part.as_bytes());
        crc.update(&[0]);
    }
    folder.join(format!("synthetic-{:08x}.xml", crc.finalize()))
}

/// Writes `xml` to `path` whole or not at all (a temporary file renamed), creating the folder;
/// any failure leaves no file and is ignored: the cache is a shortcut.
pub(super) fn store(path: &Path, xml: &str) {
    let Some(folder) = path.parent() else {
        return;
    };
    if std::fs::create_dir_all(folder).is_err() {
        return;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(folder) else {
        return;
    };
    if std::io::Write::write_all(&mut tmp, xml.as_bytes()).is_ok() {
        let _ = tmp.persist(path);
    }
}
