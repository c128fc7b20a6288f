//! Saved state (`coretune reserve`): written durably, so a crash leaves the old file or the
//! whole new one, never half of one. Only the standard library: the same on every OS.

use std::io;
use std::path::Path;

use crate::sys::error::SysError;

fn read_error(path: &Path) -> impl FnOnce(io::Error) -> SysError + '_ {
    move |error| SysError::Read {
        path: path.to_path_buf(),
        error,
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or the whole new one:
/// a temporary file beside it, synced, renamed over it, and the folder synced. Folders on the
/// way are created.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), SysError> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(read_error(dir))?;
    let name = path
        .file_name()
        .map_or_else(|| "state".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    };
    write().map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        SysError::Read {
            path: path.to_path_buf(),
            error: source,
        }
    })
}

/// Creates `dir` and the folders on the way, readable by its owner only on Unix (mode 0700, as
/// a cache of files one user runs should be); an existing folder is left as it is.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Lets everyone run the file at `path` (mode 0755 on Unix; nothing elsewhere, where running a
/// file is not a permission).
pub(crate) fn make_executable(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// The bytes of `path`, `None` when there is no such file.
pub(crate) fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, SysError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SysError::Read {
            path: path.to_path_buf(),
            error: source,
        }),
    }
}

/// Removes the file at `path` (and syncs its folder, so the removal survives a crash).
pub(crate) fn remove_durably(path: &Path) -> Result<(), SysError> {
    std::fs::remove_file(path).map_err(read_error(path))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = sync_dir(dir);
    }
    Ok(())
}

/// Makes a rename or removal in `dir` durable: the folder's entry list synced on Unix. Windows
/// cannot open a folder as a file, and NTFS journals its metadata itself: nothing to do there.
fn sync_dir(dir: &Path) -> io::Result<()> {
    if cfg!(unix) {
        std::fs::File::open(dir)?.sync_all()
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn durable_writes_replace_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/reserve.json");
        write_durably(&file, b"one").unwrap();
        write_durably(&file, b"two").unwrap();
        assert_eq!(read_if_exists(&file).unwrap().unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("state"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1);
        remove_durably(&file).unwrap();
        assert_eq!(read_if_exists(&file).unwrap(), None);
        assert!(remove_durably(&file).is_err());
    }
}
