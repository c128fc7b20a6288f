//! One rule: what it matches and what it applies ([`Rule`], [`RuleEffect`]), and what a
//! rules file's errors and warnings say.

use std::path::PathBuf;

use hwlocality::cpu::cpuset::CpuSet;

use super::matching::Matcher;
use crate::placement::Policy;
use crate::sys::SysError;

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
    pub(super) matcher: Matcher,
    /// What it does.
    pub action: RuleAction,
}

impl Rule {
    /// What it matches on, as the file writes it (`exe = "ffmpeg*", uid in [1000]`).
    pub fn describe_match(&self) -> String {
        self.matcher.describe()
    }
}
