//! Reading one file into a typed result: every read of `/proc`, `/sys` and the cgroup file
//! systems goes through these, so each error names the file it failed on. Also the file-system
//! calls of rules files: owner and mode, reading without following a link.

use std::io;
use std::path::{Path, PathBuf};

use procfs::{FromRead, ProcError};

use crate::sys::error::SysError;
use crate::sys::types::{FileMeta, ProgramFile};

/// The whole file as text.
pub(super) fn read_text(path: &Path) -> Result<String, SysError> {
    std::fs::read_to_string(path).map_err(|error| SysError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// The file parsed by `parse`, a hand parser whose error says what was wrong.
pub(super) fn parse_text<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, SysError> {
    parse(&read_text(path)?).map_err(|what| SysError::Parse {
        path: path.to_path_buf(),
        what,
    })
}

/// The first line, trimmed; an error when it is empty.
pub(super) fn first_line(path: &Path) -> Result<String, SysError> {
    parse_text(path, |text| {
        let line = text.lines().next().unwrap_or("").trim();
        if line.is_empty() {
            Err("empty".to_owned())
        } else {
            Ok(line.to_owned())
        }
    })
}

/// The file parsed by procfs's parser for its format.
pub(super) fn read_procfs<T: FromRead>(path: &Path) -> Result<T, SysError> {
    let bytes = std::fs::read(path).map_err(|error| SysError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    T::from_read(bytes.as_slice()).map_err(|e| proc_error(e, path))
}

/// A procfs error as a [`SysError`] naming the file: the one procfs names, else `path`.
pub(super) fn proc_error(error: ProcError, path: &Path) -> SysError {
    let at = |p: Option<PathBuf>| p.unwrap_or_else(|| path.to_path_buf());
    match error {
        ProcError::NotFound(p) => SysError::Read {
            path: at(p),
            error: io::ErrorKind::NotFound.into(),
        },
        ProcError::PermissionDenied(p) => SysError::Read {
            path: at(p),
            error: io::ErrorKind::PermissionDenied.into(),
        },
        ProcError::Io(source, p) => SysError::Read {
            path: at(p),
            error: source,
        },
        ProcError::Incomplete(p) => SysError::Parse {
            path: at(p),
            what: "incomplete".to_owned(),
        },
        // procfs's parsers report a malformed file as an "internal error" whose message says
        // which field failed.
        ProcError::InternalError(e) => SysError::Parse {
            path: path.to_path_buf(),
            what: e
                .msg
                .strip_prefix("Internal Unwrap Error: ")
                .unwrap_or(&e.msg)
                .to_owned(),
        },
        ProcError::Other(what) => SysError::Parse {
            path: path.to_path_buf(),
            what,
        },
    }
}

/// Whether `path` is a regular file (after following links) with an execute bit set: what
/// `execvp` would run.
pub(crate) fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Opens the program at `path` for reading its headers, and says whether the kernel will run it
/// in secure-execution mode for this user (set-user-ID to another owner, or set-group-ID to
/// another group: then the dynamic loader ignores `LD_PRELOAD`).
pub(crate) fn open_program(path: &Path) -> Result<ProgramFile, SysError> {
    use std::os::unix::fs::MetadataExt;
    let read_error = |error| SysError::Read {
        path: path.to_path_buf(),
        error,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    // SAFETY: getuid and getgid take no arguments, always succeed and only return ids.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let setuid = meta.mode() & libc::S_ISUID != 0 && meta.uid() != uid;
    let setgid = meta.mode() & libc::S_ISGID != 0 && meta.gid() != gid;
    Ok(ProgramFile {
        file,
        secure: setuid || setgid,
    })
}

fn meta_of(m: &std::fs::Metadata) -> FileMeta {
    use std::os::unix::fs::MetadataExt;
    FileMeta {
        uid: m.uid(),
        gid: m.gid(),
        mode: m.mode() & 0o7777,
        is_dir: m.is_dir(),
        is_symlink: m.file_type().is_symlink(),
    }
}

fn read_error(path: &Path) -> impl FnOnce(io::Error) -> SysError + '_ {
    move |error| SysError::Read {
        path: path.to_path_buf(),
        error,
    }
}

/// Owner, group and mode of `path` itself (a symbolic link is described, not followed).
pub(crate) fn link_meta(path: &Path) -> Result<FileMeta, SysError> {
    std::fs::symlink_metadata(path)
        .map(|m| meta_of(&m))
        .map_err(read_error(path))
}

/// `path` with every link and `..` resolved.
pub(crate) fn canonical_path(path: &Path) -> Result<PathBuf, SysError> {
    std::fs::canonicalize(path).map_err(read_error(path))
}

/// The text of the regular file at `path`, and its owner and mode as of the open descriptor
/// (so the file checked is the file read). A symbolic link as the last component is refused
/// (`O_NOFOLLOW`: ELOOP).
pub(crate) fn read_no_follow(path: &Path) -> Result<(String, FileMeta), SysError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error(path))?;
    let meta = meta_of(&file.metadata().map_err(read_error(path))?);
    if !file.metadata().map_err(read_error(path))?.is_file() {
        return Err(SysError::Read {
            path: path.to_path_buf(),
            error: io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(read_error(path))?;
    Ok((text, meta))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::write;

    #[test]
    fn programs_open_with_their_set_id_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "prog", "#!/bin/sh\n");
        let prog = dir.path().join("prog");
        assert!(!open_program(&prog).unwrap().secure);
        // Set-user-ID to its owner, which is this user: not secure for us.
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o4755)).unwrap();
        assert!(!open_program(&prog).unwrap().secure);
        let err = open_program(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(err, SysError::Read { .. }), "{err}");
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = read_text(&missing).unwrap_err();
        assert!(
            matches!(&err, SysError::Read { path, .. } if *path == missing),
            "{err}"
        );
        write(dir.path(), "empty", "\n");
        let err = first_line(&dir.path().join("empty")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: unexpected format: empty",
                dir.path().join("empty").display()
            )
        );
        write(dir.path(), "loadavg", "0.5 x\n");
        let err = read_procfs::<procfs::LoadAverage>(&dir.path().join("loadavg")).unwrap_err();
        assert!(matches!(err, SysError::Parse { .. }), "{err}");
    }

    #[test]
    fn no_follow_refuses_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rules.toml");
        std::fs::write(&file, "two").unwrap();
        let (text, meta) = read_no_follow(&file).unwrap();
        assert_eq!(text, "two");
        assert!(!meta.is_dir && !meta.is_symlink);
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_no_follow(&link).is_err());
        assert!(link_meta(&link).unwrap().is_symlink);
        assert!(read_no_follow(dir.path()).is_err());
    }
}
