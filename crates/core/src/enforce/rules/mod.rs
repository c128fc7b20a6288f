//! Rules that keep a placement in force as programs start (`coretune rules`): Process Lasso's job
//! on Linux, in coretune's CPU-set language.
//!
//! A rules file is TOML, one `[[rule]]` table per rule, tried in order; the first rule a process
//! matches decides for it:
//!
//! ```toml
//! [[rule]]
//! name = "keep CPU 0 free for the system"
//! exe = "ffmpeg*"        # glob on the executable's file name
//! cpus = "all ~pu:0"     # a coretune CPU-set expression, evaluated on this machine
//! ```
//!
//! | key | meaning |
//! |---|---|
//! | `name` | the rule's name in logs (default `rule N`) |
//! | `exe` | glob (or list of globs) on the executable's file name (`/proc/PID/exe`) |
//! | `path` | glob on the executable's full path; `*` stops at `/`, `**` crosses it |
//! | `cmdline` | regex searched in the command line (arguments joined by spaces) |
//! | `user` | user name or uid (or a list), matched against the effective uid |
//! | `parent` | glob on the parent's executable file name |
//! | `cgroup` | glob on any of the process's cgroup paths (`/user.slice/**`) |
//! | `cpus` | CPU-set expression: every thread gets these CPUs |
//! | `physical` | object indexes in `cpus` are OS indexes |
//! | `policy` | `compact`, `spread`, `cores`, `round-robin`: one CPU of `cpus` per thread, in creation order (wrapping around), for the threads it has and those it creates; `os` = the whole set |
//! | `bind` | with a policy: `pu` (default) or `core` (each thread on its CPU's whole core) |
//! | `nice` | nice value, -20 to 19, for every thread |
//! | `exclude` | `true`: leave matching processes alone (rules after it do not apply) |
//!
//! Every key given must match (a list matches when any item does); a rule needs at least one
//! key to match on and something to apply. [`RuleSet::load`] refuses a file with any error
//! (naming line and column), and skips with a [`RuleWarning`] a rule that only fails on this
//! machine. [`Enforcer`] applies a rule set to processes; [`run_daemon`] is the daemon.

mod daemon;
mod enforcer;
mod file;
mod matching;

use std::path::{Path, PathBuf};

use hwlocality::cpu::cpuset::CpuSet;

pub use daemon::{DaemonEvent, DaemonOptions, EventSource, run_daemon};
pub use enforcer::{Action, Enforcer, Outcome, Trigger};

use crate::placement::Policy;
use crate::sys::{self, FileMeta, SysError};
use crate::topology::Topology;
use matching::{Matcher, ProcessView};

/// Why a rules file was not loaded. Every message is one line naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RulesError {
    /// The file could not be read (the error names it).
    #[error("{error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The reason.
        error: SysError,
    },
    /// Not a valid rules file: TOML syntax, an unknown key, a value of the wrong type, a
    /// malformed glob, regex or CPU-set expression.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// Run as root, coretune refuses a rules file that a user other than root could change.
    #[error("{path}: refused: {reason}")]
    Insecure {
        /// The file.
        path: PathBuf,
        /// Which file or folder, and why.
        reason: String,
    },
    /// The daemon could not wait for events or signals.
    #[error(transparent)]
    Sys(#[from] SysError),
}

/// A rule skipped on this machine (its file is fine): `numa:1` where there is one NUMA node, a
/// user this machine does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleWarning {
    /// The rules file.
    pub path: PathBuf,
    /// The line of the rule's `[[rule]]`.
    pub line: usize,
    /// The rule's name.
    pub rule: String,
    /// Why it was skipped.
    pub message: String,
}

impl std::fmt::Display for RuleWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: rule '{}' skipped on this machine: {}",
            self.path.display(),
            self.line,
            self.rule,
            self.message
        )
    }
}

/// What a rule does to the processes it matches.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RuleAction {
    /// Leave them alone.
    Exclude,
    /// Give them CPUs and/or a nice value.
    Apply(RuleEffect),
}

/// CPUs and nice value a rule gives, evaluated on this machine.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleEffect {
    /// The CPU set (with a policy, the set the threads are placed in).
    pub cpus: Option<CpuSet>,
    /// The expression it came from, as written.
    pub cpus_expr: Option<String>,
    /// The placement policy, when given.
    pub policy: Option<Policy>,
    /// With a pinning policy, each thread slot's CPUs: thread `k` (in creation order) gets
    /// `threads[k % len]`.
    pub threads: Option<Vec<CpuSet>>,
    /// The nice value.
    pub nice: Option<i32>,
}

/// One rule, ready to match.
#[derive(Debug)]
pub struct Rule {
    /// Its name (`rule N` when the file gives none).
    pub name: String,
    /// The line of its `[[rule]]`.
    pub line: usize,
    matcher: Matcher,
    /// What it does.
    pub action: RuleAction,
}

impl Rule {
    /// What it matches on, as the file writes it (`exe = "ffmpeg*", uid in [1000]`).
    pub fn describe_match(&self) -> String {
        self.matcher.describe()
    }
}

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
    fn first_match(&self, process: &ProcessView<'_>) -> Option<usize> {
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
