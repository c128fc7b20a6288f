//! The rules file: TOML read with spans (so every error names its line and column), checked
//! rule by rule, then evaluated on this machine (CPU-set expressions, user names, placements).
//!
//! Two kinds of problem, kept apart on purpose: what is wrong with the file anywhere (syntax, an
//! unknown key, a value of the wrong type, a malformed glob, regex or CPU-set expression) is an
//! error and nothing is applied; what only fails on this machine (`numa:1` on a machine with one
//! NUMA node, a user this machine does not have) skips that rule with a warning, so one file
//! can serve every machine.

use std::ops::Range;
use std::path::Path;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use super::matching::Matcher;
use super::rule::{Rule, RuleAction, RuleEffect, RuleWarning, RulesError};
use crate::cpuset::{CpuSetError, CpuSetExpr, ResolveOptions};
use crate::placement::{Binding, Policy, plan};
use crate::sys;
use crate::topology::Topology;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileModel {
    #[serde(default)]
    rule: Vec<Spanned<RuleModel>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleModel {
    name: Option<String>,
    exe: Option<Spanned<toml::Value>>,
    path: Option<Spanned<toml::Value>>,
    cmdline: Option<Spanned<String>>,
    user: Option<Spanned<toml::Value>>,
    parent: Option<Spanned<toml::Value>>,
    cgroup: Option<Spanned<toml::Value>>,
    cpus: Option<Spanned<String>>,
    physical: Option<bool>,
    policy: Option<Spanned<String>>,
    bind: Option<Spanned<String>>,
    nice: Option<Spanned<i64>>,
    exclude: Option<Spanned<bool>>,
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// Parsing state: the text and file name every error needs.
struct Source<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Source<'_> {
    fn error(&self, at: usize, message: impl Into<String>) -> RulesError {
        let (line, column) = line_col(self.text, at);
        RulesError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }

    fn line(&self, span: &Range<usize>) -> usize {
        line_col(self.text, span.start).0
    }
}

/// Strings from a value that is one string or a list of them.
fn strings(
    src: &Source<'_>,
    key: &str,
    value: &Spanned<toml::Value>,
) -> Result<Vec<String>, RulesError> {
    let bad = || {
        src.error(
            value.span().start,
            format!("{key}: expected a string or a list of strings"),
        )
    };
    match value.get_ref() {
        toml::Value::String(s) => Ok(vec![s.clone()]),
        toml::Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
            .collect(),
        _ => Err(bad()),
    }
}

/// A glob set from a string or list; `paths`: `*` stops at `/` and `**` crosses it.
fn globs(
    src: &Source<'_>,
    key: &str,
    value: &Spanned<toml::Value>,
    paths: bool,
) -> Result<(GlobSet, Vec<String>), RulesError> {
    let patterns = strings(src, key, value)?;
    let mut set = GlobSetBuilder::new();
    for p in &patterns {
        let glob: Result<Glob, _> = if paths {
            GlobBuilder::new(p).literal_separator(true).build()
        } else {
            Glob::new(p)
        };
        let glob =
            glob.map_err(|e| src.error(value.span().start, format!("{key}: '{p}': {}", e.kind())))?;
        set.add(glob);
    }
    let set = set
        .build()
        .map_err(|e| src.error(value.span().start, format!("{key}: {e}")))?;
    Ok((set, patterns))
}

/// The last line of a regex error (regex's own message spans several lines with a caret).
fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid")
        .trim()
        .trim_start_matches("error: ")
        .to_owned()
}

/// A user, as written: a name or a uid.
enum UserSpec {
    Name(String),
    Id(u32),
}

fn users(src: &Source<'_>, value: &Spanned<toml::Value>) -> Result<Vec<UserSpec>, RulesError> {
    let bad = || {
        src.error(
            value.span().start,
            "user: expected a user name, a uid, or a list of them",
        )
    };
    let one = |v: &toml::Value| match v {
        toml::Value::String(s) if !s.is_empty() => Ok(UserSpec::Name(s.clone())),
        toml::Value::Integer(i) => u32::try_from(*i).map(UserSpec::Id).map_err(|_| bad()),
        _ => Err(bad()),
    };
    match value.get_ref() {
        toml::Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        v => Ok(vec![one(v)?]),
    }
}

/// Parses and checks a rules file, then evaluates it on `topology`: the rules in order, and a
/// warning for each rule skipped on this machine.
pub(super) fn parse(
    text: &str,
    path: &Path,
    topology: &Topology,
) -> Result<(Vec<Rule>, Vec<RuleWarning>), RulesError> {
    let src = Source { text, path };
    let model: FileModel = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        src.error(at, e.message().trim().replace('\n', " "))
    })?;
    let mut rules = Vec::new();
    let mut warnings = Vec::new();
    for (i, spanned) in model.rule.iter().enumerate() {
        let span = spanned.span();
        let line = src.line(&span);
        let model = spanned.get_ref();
        let name = model
            .name
            .clone()
            .unwrap_or_else(|| format!("rule {}", i + 1));
        let checked = check_rule(&src, model, span.start)?;
        match evaluate(checked, topology) {
            Ok((matcher, action)) => rules.push(Rule {
                name,
                line,
                matcher,
                action,
            }),
            Err(message) => warnings.push(RuleWarning {
                path: path.to_path_buf(),
                line,
                rule: name,
                message,
            }),
        }
    }
    Ok((rules, warnings))
}

/// A rule checked for everything that does not depend on the machine.
struct Checked {
    exe: Option<(GlobSet, Vec<String>)>,
    path: Option<(GlobSet, Vec<String>)>,
    cmdline: Option<Regex>,
    users: Option<Vec<UserSpec>>,
    parent: Option<(GlobSet, Vec<String>)>,
    cgroup: Option<(GlobSet, Vec<String>)>,
    exclude: bool,
    cpus: Option<(CpuSetExpr, String)>,
    physical: bool,
    policy: Option<Policy>,
    bind: Binding,
    nice: Option<i32>,
}

fn check_rule(src: &Source<'_>, m: &RuleModel, at: usize) -> Result<Checked, RulesError> {
    let glob = |key: &str, v: &Option<Spanned<toml::Value>>, paths: bool| {
        v.as_ref().map(|v| globs(src, key, v, paths)).transpose()
    };
    let exe = glob("exe", &m.exe, false)?;
    let path = glob("path", &m.path, true)?;
    let parent = glob("parent", &m.parent, false)?;
    let cgroup = glob("cgroup", &m.cgroup, true)?;
    let cmdline = m
        .cmdline
        .as_ref()
        .map(|r| {
            Regex::new(r.get_ref())
                .map_err(|e| src.error(r.span().start, format!("cmdline: {}", regex_message(&e))))
        })
        .transpose()?;
    let users = m.user.as_ref().map(|u| users(src, u)).transpose()?;
    if exe.is_none()
        && path.is_none()
        && parent.is_none()
        && cgroup.is_none()
        && cmdline.is_none()
        && users.is_none()
    {
        return Err(src.error(
            at,
            "a rule needs at least one of exe, path, cmdline, user, parent, cgroup \
             (exe = \"*\" matches every program)",
        ));
    }
    let cpus = m
        .cpus
        .as_ref()
        .map(|c| {
            let text = c.get_ref();
            text.parse::<CpuSetExpr>()
                .map(|e| (e, text.clone()))
                .map_err(|e| {
                    // The value starts with its quote; point at the failing part inside it.
                    let inner = match &e {
                        CpuSetError::Syntax { offset, .. } => *offset,
                        // Other errors start with the failing part, quoted.
                        _ => e
                            .to_string()
                            .strip_prefix('\'')
                            .and_then(|m| m.split_once("':"))
                            .and_then(|(part, _)| text.find(part))
                            .unwrap_or(0),
                    };
                    src.error(c.span().start + 1 + inner, format!("cpus: {e}"))
                })
        })
        .transpose()?;
    let policy = m
        .policy
        .as_ref()
        .map(|p| {
            p.get_ref().parse::<Policy>().map_err(|_| {
                src.error(
                    p.span().start,
                    format!(
                        "policy: unknown policy '{}' (os, compact, spread, cores, round-robin)",
                        p.get_ref()
                    ),
                )
            })
        })
        .transpose()?;
    let bind = match &m.bind {
        None => Binding::Pu,
        Some(b) => match b.get_ref().as_str() {
            "pu" => Binding::Pu,
            "core" => Binding::Core,
            other => {
                return Err(src.error(
                    b.span().start,
                    format!("bind: '{other}': expected 'pu' (one CPU per thread) or 'core'"),
                ));
            }
        },
    };
    if m.bind.is_some() && policy.is_none() {
        let b = m.bind.as_ref().map_or(at, |b| b.span().start);
        return Err(src.error(b, "bind: only meaningful with a policy"));
    }
    let nice = m
        .nice
        .as_ref()
        .map(|n| {
            i32::try_from(*n.get_ref())
                .ok()
                .filter(|v| (-20..=19).contains(v))
                .ok_or_else(|| src.error(n.span().start, "nice: expected -20 to 19"))
        })
        .transpose()?;
    let exclude = m.exclude.as_ref().is_some_and(|e| *e.get_ref());
    if exclude && (cpus.is_some() || policy.is_some() || nice.is_some()) {
        let e = m.exclude.as_ref().map_or(at, |e| e.span().start);
        return Err(src.error(
            e,
            "exclude: an exclude rule leaves matching processes alone; remove cpus, policy and \
             nice from it",
        ));
    }
    if !exclude && cpus.is_none() && policy.is_none() && nice.is_none() {
        return Err(src.error(
            at,
            "a rule needs something to apply (cpus, policy or nice) or exclude = true",
        ));
    }
    Ok(Checked {
        exe,
        path,
        cmdline,
        users,
        parent,
        cgroup,
        exclude,
        cpus,
        physical: m.physical.unwrap_or(false),
        policy,
        bind,
        nice,
    })
}

/// What only this machine can say: the CPU set, the placement, the uids. `Err` is the warning.
fn evaluate(c: Checked, topology: &Topology) -> Result<(Matcher, RuleAction), String> {
    let uids = c
        .users
        .map(|users| {
            users
                .into_iter()
                .map(|u| match u {
                    UserSpec::Id(id) => Ok(id),
                    UserSpec::Name(name) => match sys::user_id(&name) {
                        Ok(Some(id)) => Ok(id),
                        Ok(None) => Err(format!("user '{name}': no such user here")),
                        Err(e) => Err(format!("user '{name}': {e}")),
                    },
                })
                .collect::<Result<Vec<u32>, String>>()
        })
        .transpose()?;
    let matcher = Matcher {
        exe: c.exe,
        path: c.path,
        cmdline: c.cmdline,
        uids,
        parent: c.parent,
        cgroup: c.cgroup,
    };
    if c.exclude {
        return Ok((matcher, RuleAction::Exclude));
    }
    let options = ResolveOptions {
        physical: c.physical,
    };
    let cpus = match &c.cpus {
        Some((expr, text)) => {
            let resolved = expr
                .resolve(topology, &options)
                // The reason names the expression already.
                .map_err(|e| format!("cpus {e}"))?;
            let usable = resolved.usable(topology);
            if usable.weight() == Some(0) {
                return Err(format!("cpus '{text}': no usable CPU here"));
            }
            Some(usable)
        }
        None if c.policy.is_some() => Some(topology.cpuset()),
        None => None,
    };
    let threads = match (c.policy, &cpus) {
        (Some(policy), Some(set)) if policy.is_pinned() => {
            let n = set.weight().unwrap_or(1).max(1);
            let placement = plan(topology, n, policy, Some(set), c.bind)
                .map_err(|e| format!("policy {policy}: {e}"))?;
            Some(placement.cpusets())
        }
        _ => None,
    };
    Ok((
        matcher,
        RuleAction::Apply(RuleEffect {
            cpus,
            cpus_expr: c.cpus.map(|(_, text)| text),
            policy: c.policy,
            threads,
            nice: c.nice,
        }),
    ))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::topology::TopologySource;

    fn topo() -> Topology {
        Topology::load(&TopologySource::Synthetic("pack:1 core:4 pu:1".into())).unwrap()
    }

    fn load(text: &str) -> Result<(Vec<Rule>, Vec<RuleWarning>), RulesError> {
        parse(text, Path::new("rules.toml"), &topo())
    }

    fn error(text: &str) -> String {
        load(text).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn the_minimal_form_of_the_issue() {
        let (rules, warnings) = load(
            r#"
[[rule]]
name = "keep CPU 0 free for the system"
exe = "ffmpeg*"        # glob on the executable's file name
cpus = "all ~pu:0"     # a coretune CPU-set expression, evaluated on this machine
"#,
        )
        .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].name, "keep CPU 0 free for the system");
        assert_eq!(rules[0].line, 2);
        let RuleAction::Apply(effect) = &rules[0].action else {
            panic!("not an apply rule")
        };
        assert_eq!(
            crate::sys::set_to_vec(effect.cpus.as_ref().unwrap()),
            [1, 2, 3]
        );
        assert!(effect.threads.is_none() && effect.nice.is_none());
    }

    // User names and uids: rules files are Linux-only.
    #[cfg(target_os = "linux")]
    #[test]
    fn every_key_and_defaults() {
        let (rules, _) = load(
            r#"
[[rule]]
exe = ["a*", "b"]
path = "/opt/**"
cmdline = "--render\\b"
user = ["root", 1000]
parent = "bash"
cgroup = "/user.slice/**"
cpus = "core:2-3"
policy = "spread"
bind = "core"
nice = 5

[[rule]]
exe = "*"
exclude = true

[[rule]]
user = 0
nice = -3
"#,
        )
        .unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0].name, "rule 1");
        assert_eq!(rules[0].matcher.uids.as_deref(), Some(&[0, 1000][..]));
        let RuleAction::Apply(effect) = &rules[0].action else {
            panic!()
        };
        assert_eq!(effect.policy, Some(Policy::Spread));
        assert_eq!(effect.threads.as_ref().map(Vec::len), Some(2));
        assert_eq!(effect.nice, Some(5));
        assert!(matches!(rules[1].action, RuleAction::Exclude));
        let RuleAction::Apply(effect) = &rules[2].action else {
            panic!()
        };
        assert!(effect.cpus.is_none());
        assert_eq!(effect.nice, Some(-3));
    }

    #[test]
    fn errors_name_file_line_and_column() {
        assert_eq!(
            error("[[rule]]\nexe = \"x\"\ncpus = \"all\"\ncpu = 1\n"),
            "rules.toml:4:1: unknown field `cpu`, expected one of `name`, `exe`, `path`, \
             `cmdline`, `user`, `parent`, `cgroup`, `cpus`, `physical`, `policy`, `bind`, \
             `nice`, `exclude`"
        );
        let syntax = error("[[rule]\nexe = 1\n");
        assert!(syntax.starts_with("rules.toml:1:"), "{syntax}");
        assert!(!syntax.contains('\n'), "{syntax}");
        assert_eq!(
            error("[[rule]]\nexe = \"x\"\ncpus = \"all ~pu:\"\n"),
            "rules.toml:3:13: cpus: '~pu:': '' is not an index"
        );
        assert_eq!(
            error("[[rule]]\nexe = 3\ncpus = \"all\"\n"),
            "rules.toml:2:7: exe: expected a string or a list of strings"
        );
        assert_eq!(
            error("[[rule]]\nexe = \"a[\"\ncpus = \"all\"\n"),
            "rules.toml:2:7: exe: 'a[': unclosed character class; missing ']'"
        );
        let regex = error("[[rule]]\ncmdline = \"(\"\ncpus = \"all\"\n");
        assert!(regex.starts_with("rules.toml:2:11: cmdline: "), "{regex}");
        assert!(!regex.contains('\n'), "{regex}");
        assert_eq!(
            error("[[rule]]\nname = \"x\"\ncpus = \"all\"\n"),
            "rules.toml:1:1: a rule needs at least one of exe, path, cmdline, user, parent, \
             cgroup (exe = \"*\" matches every program)"
        );
        assert_eq!(
            error("[[rule]]\nexe = \"x\"\n"),
            "rules.toml:1:1: a rule needs something to apply (cpus, policy or nice) or \
             exclude = true"
        );
        assert!(
            error("[[rule]]\nexe = \"x\"\nexclude = true\nnice = 1\n")
                .starts_with("rules.toml:3:11: exclude: ")
        );
        assert_eq!(
            error("[[rule]]\nexe = \"x\"\nnice = 40\n"),
            "rules.toml:3:8: nice: expected -20 to 19"
        );
        assert!(
            error("[[rule]]\nexe = \"x\"\npolicy = \"zigzag\"\n")
                .starts_with("rules.toml:3:10: policy: unknown policy 'zigzag'")
        );
        assert!(
            error("[[rule]]\nexe = \"x\"\nuser = -1\nnice = 1\n")
                .starts_with("rules.toml:3:8: user: ")
        );
        assert!(error("rules = 1\n").starts_with("rules.toml:1:1: unknown field `rules`"));
    }

    // User names and uids: rules files are Linux-only.
    #[cfg(target_os = "linux")]
    #[test]
    fn what_fails_only_here_skips_the_rule_with_a_warning() {
        let (rules, warnings) = load(
            "[[rule]]\nexe = \"a\"\ncpus = \"numa:1\"\n\n[[rule]]\nexe = \"b\"\ncpus = \"pu:9\"\n\n\
             [[rule]]\nexe = \"c\"\nuser = \"no-such-user-coretune\"\nnice = 1\n\n\
             [[rule]]\nexe = \"d\"\ncpus = \"pu:1\"\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].line, 14);
        let lines: Vec<String> = warnings.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "rules.toml:1: rule 'rule 1' skipped on this machine: cpus 'numa:1': "
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with("rules.toml:5: "), "{}", lines[1]);
        assert!(lines[2].contains("no such user"), "{}", lines[2]);
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("", 5), (1, 1));
    }
}
