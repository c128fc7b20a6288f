//! Writing a results folder's files: whole or not at all ([`write_file`]), and each run's
//! monitor samples (`monitor/SEQ.jsonl`) as the engine logs the run.

use std::path::Path;

use super::error::SweepError;
use crate::program::watch::Sample;

/// Where a run's monitor samples are kept, relative to the folder.
pub(crate) fn monitor_file(seq: usize) -> String {
    format!("monitor/{seq}.jsonl")
}

pub(super) fn save_monitor(dir: &Path, seq: usize, samples: &[Sample]) -> Result<(), SweepError> {
    let path = dir.join(monitor_file(seq));
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |error| SweepError::Write { path, error }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_error(parent))?;
    }
    let mut text = String::new();
    for s in samples {
        text.push_str(&serde_json::to_string(s).map_err(|e| SweepError::Write {
            path: path.clone(),
            error: std::io::Error::other(e),
        })?);
        text.push('\n');
    }
    write_file(&path, text.as_bytes())
}

/// Writes a file of a results folder whole or not at all: into a new temporary file beside it
/// (`.NAME.XXXXXX`), renamed over `path` once every byte is written. On a full disk the
/// temporary file is removed and `path` is left as it was — never empty, never cut short.
///
/// # Errors
///
/// [`SweepError::Write`] naming `path`.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    use std::io::Write as _;
    // The temporary file's errors name its own path: the error is said of `path`.
    let error = |error: std::io::Error| SweepError::Write {
        path: path.to_path_buf(),
        error: error
            .raw_os_error()
            .map_or(error, std::io::Error::from_raw_os_error),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    // As `fs::write` would create it (0666 less the umask), not a temporary file's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    // Dropped (and so removed) on every error below.
    let mut tmp = builder.tempfile_in(dir).map_err(error)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.flush())
        .map_err(error)?;
    tmp.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}
