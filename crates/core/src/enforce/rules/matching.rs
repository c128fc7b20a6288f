//! Matching a process against a rule: every key the rule has must match (a list matches when any
//! of its items does). What a process is gets read lazily: the command line, the cgroups and the
//! parent's executable are read only when a rule asks for them, and at most once.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use globset::GlobSet;
use regex::Regex;

use crate::sys::{self, ProcessFacts};

/// What a rule matches on; `None` keys match everything.
#[derive(Debug)]
pub(crate) struct Matcher {
    /// Globs on the executable's file name, and as written.
    pub(crate) exe: Option<(GlobSet, Vec<String>)>,
    /// Globs on the executable's path.
    pub(crate) path: Option<(GlobSet, Vec<String>)>,
    /// A regex searched in the command line (arguments joined by spaces).
    pub(crate) cmdline: Option<Regex>,
    /// Effective uids.
    pub(crate) uids: Option<Vec<u32>>,
    /// Globs on the parent's executable file name.
    pub(crate) parent: Option<(GlobSet, Vec<String>)>,
    /// Globs on any of the process's cgroup paths.
    pub(crate) cgroup: Option<(GlobSet, Vec<String>)>,
}

/// A process as the rules see it.
#[derive(Debug)]
pub(crate) struct ProcessView<'a> {
    proc_dir: &'a Path,
    /// What is always read.
    pub(crate) facts: ProcessFacts,
    cmdline: OnceCell<Option<String>>,
    cgroups: OnceCell<Vec<String>>,
    parent_exe: OnceCell<Option<PathBuf>>,
}

/// The file name of an executable path.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.to_string_lossy(), |n| n.to_string_lossy())
        .into_owned()
}

impl<'a> ProcessView<'a> {
    pub(crate) fn new(proc_dir: &'a Path, facts: ProcessFacts) -> Self {
        Self {
            proc_dir,
            facts,
            cmdline: OnceCell::new(),
            cgroups: OnceCell::new(),
            parent_exe: OnceCell::new(),
        }
    }

    /// The executable's path, or `[comm]` where it has none (kernel threads) or it cannot be
    /// read: what logs name a process by.
    pub(crate) fn exe_label(&self) -> String {
        self.facts.exe.as_ref().map_or_else(
            || format!("[{}]", self.facts.comm),
            |p| p.to_string_lossy().into_owned(),
        )
    }

    fn cmdline(&self) -> Option<&str> {
        self.cmdline
            .get_or_init(|| sys::process_cmdline(self.proc_dir, self.facts.pid).ok())
            .as_deref()
    }

    fn cgroups(&self) -> &[String] {
        self.cgroups
            .get_or_init(|| sys::process_cgroups(self.proc_dir, self.facts.pid).unwrap_or_default())
    }

    fn parent_exe(&self) -> Option<&Path> {
        self.parent_exe
            .get_or_init(|| sys::process_exe(self.proc_dir, self.facts.ppid))
            .as_deref()
    }
}

impl Matcher {
    /// Whether every key of the rule matches `p`.
    pub(crate) fn matches(&self, p: &ProcessView<'_>) -> bool {
        if let Some(uids) = &self.uids {
            if !uids.contains(&p.facts.uid) {
                return false;
            }
        }
        if self.exe.is_some() || self.path.is_some() {
            let Some(exe) = &p.facts.exe else {
                return false;
            };
            if let Some((set, _)) = &self.exe {
                if !set.is_match(file_name(exe)) {
                    return false;
                }
            }
            if let Some((set, _)) = &self.path {
                if !set.is_match(exe) {
                    return false;
                }
            }
        }
        if let Some(re) = &self.cmdline {
            if !p.cmdline().is_some_and(|c| re.is_match(c)) {
                return false;
            }
        }
        if let Some((set, _)) = &self.parent {
            if !p.parent_exe().is_some_and(|e| set.is_match(file_name(e))) {
                return false;
            }
        }
        if let Some((set, _)) = &self.cgroup {
            if !p.cgroups().iter().any(|c| set.is_match(c)) {
                return false;
            }
        }
        true
    }

    /// The keys as a rules file writes them, for `rules check`.
    pub(crate) fn describe(&self) -> String {
        let list = |v: &[String]| {
            if v.len() == 1 {
                format!("{:?}", v[0])
            } else {
                format!("{v:?}")
            }
        };
        let mut parts = Vec::new();
        if let Some((_, v)) = &self.exe {
            parts.push(format!("exe = {}", list(v)));
        }
        if let Some((_, v)) = &self.path {
            parts.push(format!("path = {}", list(v)));
        }
        if let Some(re) = &self.cmdline {
            parts.push(format!("cmdline = {:?}", re.as_str()));
        }
        if let Some(uids) = &self.uids {
            parts.push(format!("uid in {uids:?}"));
        }
        if let Some((_, v)) = &self.parent {
            parts.push(format!("parent = {}", list(v)));
        }
        if let Some((_, v)) = &self.cgroup {
            parts.push(format!("cgroup = {}", list(v)));
        }
        parts.join(", ")
    }
}

// A fake /proc read by the Linux platform layer.
#[cfg(test)]
#[cfg(target_os = "linux")]
mod test {
    use super::*;
    use crate::test_util::{status, task_stat, write};

    fn facts(pid: i32, ppid: i32, exe: &str, uid: u32) -> ProcessFacts {
        ProcessFacts {
            pid,
            ppid,
            comm: file_name(Path::new(exe)),
            exe: Some(PathBuf::from(exe)),
            kernel_thread: false,
            uid,
            ruid: uid,
            start_ticks: 1,
        }
    }

    fn glob(p: &str, paths: bool) -> Option<(GlobSet, Vec<String>)> {
        let g = if paths {
            globset::GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .unwrap()
        } else {
            globset::Glob::new(p).unwrap()
        };
        let set = globset::GlobSetBuilder::new().add(g).build().unwrap();
        Some((set, vec![p.to_owned()]))
    }

    fn none() -> Matcher {
        Matcher {
            exe: None,
            path: None,
            cmdline: None,
            uids: None,
            parent: None,
            cgroup: None,
        }
    }

    #[test]
    fn every_key_on_a_fake_proc() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "10/stat", &task_stat(10, "bash", 1, 0));
        write(root, "10/status", &status("0-1", 1000, 100));
        std::os::unix::fs::symlink("/usr/bin/bash", root.join("10/exe")).unwrap();
        write(root, "20/cmdline", "ffmpeg\0-i\0in.mkv\0--render\0");
        write(
            root,
            "20/cgroup",
            "0::/user.slice/user-1000.slice/session-2.scope\n",
        );
        let view = ProcessView::new(root, facts(20, 10, "/usr/local/bin/ffmpeg-7", 1000));

        let m = |f: &dyn Fn(&mut Matcher)| {
            let mut m = none();
            f(&mut m);
            m.matches(&view)
        };
        assert!(m(&|_| {}));
        assert!(m(&|m| m.exe = glob("ffmpeg*", false)));
        assert!(!m(&|m| m.exe = glob("x264", false)));
        assert!(m(&|m| m.path = glob("/usr/local/**", true)));
        assert!(!m(&|m| m.path = glob("/usr/*", true)));
        assert!(m(&|m| m.cmdline = Some(Regex::new(r"-i in\.mkv").unwrap())));
        assert!(!m(&|m| m.cmdline = Some(Regex::new("^x").unwrap())));
        assert!(m(&|m| m.uids = Some(vec![0, 1000])));
        assert!(!m(&|m| m.uids = Some(vec![0])));
        assert!(m(&|m| m.parent = glob("ba*", false)));
        assert!(!m(&|m| m.parent = glob("zsh", false)));
        assert!(m(&|m| m.cgroup = glob("/user.slice/**", true)));
        assert!(!m(&|m| m.cgroup = glob("/system.slice/**", true)));
        // All keys must match.
        assert!(!m(&|m| {
            m.exe = glob("ffmpeg*", false);
            m.uids = Some(vec![0]);
        }));
        // A process whose executable cannot be read matches no exe rule.
        let mut hidden = facts(30, 1, "/x", 0);
        hidden.exe = None;
        let view = ProcessView::new(root, hidden);
        let mut m = none();
        m.exe = glob("*", false);
        assert!(!m.matches(&view));
        assert_eq!(view.exe_label(), "[x]");
    }
}
