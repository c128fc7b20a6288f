//! A rule set: the rules of a file in order, loaded and checked ([`RuleSet::load`]: a rules
//! file others may write is refused, a rule that fails only on this machine is skipped with a
//! [`RuleWarning`]), and which rule a process falls under.

use std::path::{Path, PathBuf};

use super::file;
use super::matching::ProcessView;
use super::rule::{Rule, RuleWarning, RulesError};
use crate::sys::{self, FileMeta, SysError};
use crate::topology::Topology;

/// A loaded rules file: its rules in order, and those skipped on this machine.
#[derive(Debug)]
pub struct RuleSet {
    /// The file.
    pub path: PathBuf,
    /// The rules in force, in file order.
    pub rules: Vec<Rule>,
    /// Rules skipped on this machine.
    pub warnings: Vec<RuleWarning>,
}

impl RuleSet {
    /// Parses rules from `text` (named `path` in messages) and evaluates them on `topology`.
    ///
    /// # Errors
    ///
    /// [`RulesError::Invalid`] naming line and column.
    pub fn parse(text: &str, path: &Path, topology: &Topology) -> Result<Self, RulesError> {
        let (rules, warnings) = file::parse(text, path, topology)?;
        Ok(Self {
            path: path.to_path_buf(),
            rules,
            warnings,
        })
    }

    /// Reads and parses the rules file at `path`. Run as root (effective uid 0), the file must
    /// not be a symbolic link, and neither it nor any folder on its real path may be writable by
    /// anyone but root (a world-writable folder is accepted only with the sticky bit, as `/tmp`
    /// has, where nobody else can replace the file).
    ///
    /// # Errors
    ///
    /// [`RulesError::Read`], [`RulesError::Insecure`], [`RulesError::Invalid`].
    pub fn load(path: &Path, topology: &Topology) -> Result<Self, RulesError> {
        let text = read_rules_file(path, sys::effective_uid() == 0)?;
        Self::parse(&text, path, topology)
    }

    /// The index of the first rule `process` matches.
    pub(super) fn first_match(&self, process: &ProcessView<'_>) -> Option<usize> {
        self.rules.iter().position(|r| r.matcher.matches(process))
    }
}

/// Why `meta` lets a user other than root change what it describes, if it does.
fn writable_by_others(meta: &FileMeta) -> Option<String> {
    if meta.uid != 0 {
        return Some(format!("owned by uid {}, not root", meta.uid));
    }
    if meta.mode & 0o020 != 0 && meta.gid != 0 {
        return Some(format!("writable by group {}", meta.gid));
    }
    // A sticky folder (/tmp) lets others add entries but not replace root's.
    if meta.mode & 0o002 != 0 && !(meta.is_dir && meta.mode & 0o1000 != 0) {
        return Some("writable by every user".to_owned());
    }
    None
}

/// The text of a rules file; as root, only when nobody else can change it (see
/// [`RuleSet::load`]).
fn read_rules_file(path: &Path, as_root: bool) -> Result<String, RulesError> {
    let read_error = |error| RulesError::Read {
        path: path.to_path_buf(),
        error,
    };
    if !as_root {
        return std::fs::read_to_string(path).map_err(|source| {
            read_error(SysError::Read {
                path: path.to_path_buf(),
                error: source,
            })
        });
    }
    let insecure = |reason: String| RulesError::Insecure {
        path: path.to_path_buf(),
        reason,
    };
    if sys::link_meta(path).is_ok_and(|m| m.is_symlink) {
        return Err(insecure(
            "a symbolic link; run as root, coretune reads the file itself, not a link to it".into(),
        ));
    }
    let (text, meta) = sys::read_no_follow(path).map_err(read_error)?;
    if let Some(why) = writable_by_others(&meta) {
        return Err(insecure(format!("the file is {why}")));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let real = sys::canonical_path(parent).map_err(read_error)?;
    for dir in real.ancestors() {
        let meta = sys::link_meta(dir).map_err(read_error)?;
        if let Some(why) = writable_by_others(&meta) {
            return Err(insecure(format!("folder {} is {why}", dir.display())));
        }
    }
    Ok(text)
}

/// Whether rules and reserving CPUs work on this system: they read `/proc`, watch process starts
/// through Linux's process-event connector and write cgroup cpusets, so Linux only. Elsewhere
/// the commands say so rather than run without effect.
pub fn keeping_in_force_is_supported() -> bool {
    sys::PROC_FS
}

#[cfg(test)]
mod test {
    use super::*;

    fn meta(uid: u32, gid: u32, mode: u32, is_dir: bool) -> FileMeta {
        FileMeta {
            uid,
            gid,
            mode,
            is_dir,
            is_symlink: false,
        }
    }

    #[test]
    fn a_file_others_may_write_is_named_with_who() {
        assert_eq!(writable_by_others(&meta(0, 0, 0o644, false)), None);
        assert_eq!(writable_by_others(&meta(0, 0, 0o664, false)), None);
        assert_eq!(writable_by_others(&meta(0, 0, 0o755, true)), None);
        assert_eq!(writable_by_others(&meta(0, 0, 0o1777, true)), None);
        assert_eq!(
            writable_by_others(&meta(1000, 0, 0o600, false)).as_deref(),
            Some("owned by uid 1000, not root")
        );
        assert_eq!(
            writable_by_others(&meta(0, 100, 0o664, false)).as_deref(),
            Some("writable by group 100")
        );
        assert_eq!(
            writable_by_others(&meta(0, 0, 0o666, false)).as_deref(),
            Some("writable by every user")
        );
        assert_eq!(
            writable_by_others(&meta(0, 0, 0o777, true)).as_deref(),
            Some("writable by every user")
        );
        // The sticky bit protects entries of a folder, not a file itself.
        assert_eq!(
            writable_by_others(&meta(0, 0, 0o1666, false)).as_deref(),
            Some("writable by every user")
        );
    }

    // Unix modes and symbolic links: rules files are Linux-only.
    #[cfg(target_os = "linux")]
    #[test]
    fn as_root_a_world_writable_file_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        if sys::effective_uid() != 0 {
            crate::test_util::skip("as_root_a_world_writable_file_or_a_link_is_refused needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rules.toml");
        std::fs::write(&file, "").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_rules_file(&file, true).unwrap(), "");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o646)).unwrap();
        let err = read_rules_file(&file, true).unwrap_err().to_string();
        assert!(
            err.ends_with("refused: the file is writable by every user"),
            "{err}"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let err = read_rules_file(&link, true).unwrap_err().to_string();
        assert!(err.contains("refused: a symbolic link"), "{err}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = read_rules_file(&file, true).unwrap_err().to_string();
        assert!(err.contains("is writable by every user"), "{err}");
        // Not as root: the user's own file, read as it is.
        assert_eq!(read_rules_file(&link, false).unwrap(), "");
    }
}
