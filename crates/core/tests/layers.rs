//! coretune-core reads bottom-up in layers: each top-level module uses only those below it, and
//! no two files use each other, directly or round a longer loop. This test reads the sources
//! (every `crate::` and `super::` path, in `use` lines and in code) and fails on an import
//! against [`LAYERS`] or on a cycle, naming the file and the path.
//!
//! A child module may use its parent's items and a parent its children's (the way Rust lays a
//! module out); every other edge between two files counts, including one that goes through a
//! parent's re-export (`crate::program::LaunchError` is `program/launch.rs`).
//!
//! coretune-pool's files are held to the same no-loop rule
//! ([`no_files_of_the_pool_use_each_other`]), read the same way from `crates/pool/src`.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns, where clippy.toml does not reach

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first. A module may use its own layer and those before it.
const LAYERS: &[&str] = &[
    "sys",
    "topology",
    "hwloc",
    "cpuset",
    "placement",
    "memory",
    "program",
    "measure",
    "grid",
    "workload",
    "sweep",
    "fleet",
    "enforce",
    "adapt",
    "doctor",
];

/// Files outside the layers: the crate root (it declares and re-exports them all) and the
/// unit tests' fixtures.
const OUTSIDE: &[&str] = &["lib", "test_util"];

/// A source file as a module path (`["program", "pin"]`), with its text.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    /// The text without comments and string literals.
    code: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The sources of the crate whose `src` folder is `src`.
fn read_modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src).unwrap();
                let mut path: Vec<String> = rel
                    .with_extension("")
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if path.last().is_some_and(|l| l == "mod") {
                    path.pop();
                }
                let text = std::fs::read_to_string(&p).unwrap();
                out.push(Module {
                    path,
                    file: rel.to_path_buf(),
                    code: strip(&text),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// `text` without `//` comments and without the contents of string and character literals
/// (so that a message mentioning `crate::x` is not an import). Raw strings (`r"…"`, `r#"…"#`)
/// are blanked too.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                out.push_str("\"\"");
                i = j + close.len();
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal (not a lifetime: `'a'`, `'\n'`, `'"'`).
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

/// Every path a file names that starts with `crate` or `super`, brace groups of `use` lines
/// expanded: `use super::{a::B, C};` gives `super::a::B` and `super::C`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &code[i..];
        let at_word =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        if at_word && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let end = path_end(rest);
            expand(&rest[..end], &mut out);
            i += end.max(1);
        } else {
            i += 1;
        }
    }
    out
}

/// Where a path (with any brace groups) ends.
fn path_end(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            c if depth == 0 && !(c.is_alphanumeric() || c == '_' || c == ':') => return i,
            _ => {}
        }
    }
    s.len()
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (renames dropped).
fn expand(path: &str, out: &mut Vec<String>) {
    let Some(open) = path.find('{') else {
        out.push(path.trim_end_matches(':').to_owned());
        return;
    };
    let prefix = &path[..open];
    let inner = &path[open + 1..path.rfind('}').unwrap_or(path.len())];
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in inner
        .char_indices()
        .chain(std::iter::once((inner.len(), ',')))
    {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = inner[start..i].trim();
                let item = item.split(" as ").next().unwrap_or("").trim();
                if !item.is_empty() {
                    if item == "self" {
                        out.push(prefix.trim_end_matches(':').to_owned());
                    } else {
                        expand(&format!("{prefix}{item}"), out);
                    }
                }
                start = i + 1;
            }
            _ => {}
        }
    }
}

/// The crate's module tree: which module paths are files, and what each directory module
/// re-exports from which child (`pub use launch::{LaunchError, …}` in `program/mod.rs`).
struct Tree {
    files: BTreeMap<Vec<String>, PathBuf>,
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Tree {
    fn new(modules: &[Module]) -> Self {
        let files = modules
            .iter()
            .map(|m| (m.path.clone(), m.file.clone()))
            .collect();
        let mut reexports = BTreeMap::new();
        for m in modules {
            for line in m.code.split(';') {
                let line = line.trim();
                let Some(body) = line
                    .strip_prefix("pub use ")
                    .or_else(|| line.strip_prefix("pub(crate) use "))
                else {
                    continue;
                };
                let mut names = Vec::new();
                expand(body.trim(), &mut names);
                for n in names {
                    let segs: Vec<&str> = n.split("::").collect();
                    let (Some(first), Some(last)) = (segs.first(), segs.last()) else {
                        continue;
                    };
                    // Only re-exports of a child module's items resolve to that child.
                    if matches!(*first, "crate" | "super" | "self") || segs.len() < 2 {
                        continue;
                    }
                    let mut child = m.path.clone();
                    child.push((*first).to_owned());
                    reexports.insert((m.path.clone(), (*last).to_owned()), child);
                }
            }
        }
        Self { files, reexports }
    }

    /// The file module an absolute path names: the longest prefix that is a file, then through
    /// that module's re-exports when the next segment is one.
    fn resolve(&self, segs: &[String]) -> Option<Vec<String>> {
        let mut module = (0..=segs.len())
            .rev()
            .map(|n| segs[..n].to_vec())
            .find(|p| self.files.contains_key(p))?;
        // Through re-exports of a child's item (`program/mod.rs`: `pub use launch::LaunchError`),
        // as deep as they go.
        if let Some(name) = segs.get(module.len()) {
            while let Some(child) = self.reexports.get(&(module.clone(), name.clone())) {
                if !self.files.contains_key(child) || *child == module {
                    break;
                }
                module = child.clone();
            }
        }
        Some(module)
    }
}

/// `crate::a::b` or `super::super::c` from module `from` as absolute segments.
fn absolute(from: &[String], path: &str, is_dir_module: bool) -> Vec<String> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut out: Vec<String> = Vec::new();
    let mut rest = &segs[..];
    if rest.first() == Some(&"crate") {
        rest = &rest[1..];
    } else {
        // `super` in `a/b.rs` (module a::b) is `a`; in `a/b/mod.rs` too.
        out = from.to_vec();
        let _ = is_dir_module;
        while rest.first() == Some(&"super") {
            out.pop();
            rest = &rest[1..];
        }
    }
    out.extend(rest.iter().map(|s| (*s).to_owned()));
    out
}

fn layer_of(path: &[String]) -> Option<usize> {
    let first = path.first()?;
    LAYERS.iter().position(|l| l == first)
}

/// Every edge between two file modules, with the path that made it.
fn edges(modules: &[Module], tree: &Tree) -> Vec<(Vec<String>, Vec<String>, String)> {
    let mut out = Vec::new();
    for m in modules {
        let is_dir = m.file.ends_with("mod.rs");
        // A file's unit tests may use what they test from anywhere: not an edge between rooms.
        for p in paths(without_unit_tests(&m.code)) {
            let abs = absolute(&m.path, &p, is_dir);
            let Some(to) = tree.resolve(&abs) else {
                continue;
            };
            if to != m.path {
                out.push((m.path.clone(), to, p));
            }
        }
    }
    out
}

#[test]
fn every_module_is_in_a_layer() {
    let modules = read_modules(&src());
    let tops: BTreeSet<&str> = modules
        .iter()
        .filter_map(|m| m.path.first().map(String::as_str))
        .collect();
    for top in tops {
        assert!(
            LAYERS.contains(&top) || OUTSIDE.contains(&top),
            "src/{top}: a top-level module in no layer: add it to LAYERS in tests/layers.rs \
             (and to ARCHITECTURE.md)"
        );
    }
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
                .and_then(|r| r.strip_suffix(';'))
        })
        .filter(|m| LAYERS.contains(m))
        .collect();
    assert_eq!(
        declared, LAYERS,
        "lib.rs declares the layers in the order they are built up"
    );
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let modules = read_modules(&src());
    let tree = Tree::new(&modules);
    let mut wrong = Vec::new();
    for (from, to, path) in edges(&modules, &tree) {
        let (Some(a), Some(b)) = (layer_of(&from), layer_of(&to)) else {
            // Into the crate root: only its re-exports of outside types, which no module needs.
            if layer_of(&from).is_some() && to.first().is_some_and(|t| t == "lib") {
                wrong.push(format!(
                    "{}: `{path}` goes through the crate root",
                    from.join("/")
                ));
            }
            continue;
        };
        if b > a {
            wrong.push(format!(
                "{} (layer {}) uses `{path}` of layer {} above it",
                tree.files[&from].display(),
                LAYERS[a],
                LAYERS[b]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_files_use_each_other() {
    if let Some(cycle) = first_cycle(&read_modules(&src())) {
        panic!("a module cycle:\n{cycle}");
    }
}

/// coretune-pool has no layers of concepts to name, but its files form no loop either: a
/// worker thread's state lives with the registry it works for (as in rayon-core), and
/// `build_global` with the global pool it sets.
#[test]
fn no_files_of_the_pool_use_each_other() {
    let pool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pool/src");
    if let Some(cycle) = first_cycle(&read_modules(&pool)) {
        panic!("a module cycle in coretune-pool:\n{cycle}");
    }
}

#[test]
fn a_loop_through_three_files_is_found() {
    let module = |name: &str, code: &str| Module {
        path: vec![name.to_owned()],
        file: PathBuf::from(format!("{name}.rs")),
        code: strip(code),
    };
    let modules = [
        module("registry", "use crate::worker::WorkerThread;"),
        module("worker", "use crate::submitter::Cache;"),
        module("submitter", "fn f(r: &crate::registry::Registry) {}"),
        module("job", "use crate::registry::Registry;"),
    ];
    assert_eq!(
        first_cycle(&modules).as_deref(),
        Some(
            "registry → worker (`crate::worker::WorkerThread`)\n\
             worker → submitter (`crate::submitter::Cache`)\n\
             submitter → registry (`crate::registry::Registry`)"
        )
    );
    assert_eq!(first_cycle(&modules[1..]), None);
}

/// The first loop of imports between files of `modules` (a module and its ancestors aside),
/// one line per step with the path that makes it.
fn first_cycle(modules: &[Module]) -> Option<String> {
    let tree = Tree::new(modules);
    let mut graph: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
    for (from, to, path) in edges(modules, &tree) {
        // A module and its ancestors: Rust's own layout, not a dependency between concepts.
        if from.starts_with(&to) || to.starts_with(&from) {
            continue;
        }
        graph.entry(from).or_default().entry(to).or_insert(path);
    }
    // Depth-first search for a back edge; report the loop it closes.
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
        found: &mut Option<Vec<String>>,
    ) {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for (next, _) in graph.get(node).into_iter().flatten() {
            if found.is_some() {
                return;
            }
            match state.get(next).copied().unwrap_or(0) {
                0 => visit(next, graph, state, stack, found),
                1 => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[start..].iter().map(|n| n.join("/")).collect();
                    cycle.push(next.join("/"));
                    *found = Some(cycle);
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut found = None;
    for node in graph.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            visit(node, &graph, &mut state, &mut Vec::new(), &mut found);
        }
        if let Some(cycle) = &found {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let from: Vec<String> = w[0].split('/').map(str::to_owned).collect();
                    let to: Vec<String> = w[1].split('/').map(str::to_owned).collect();
                    format!("{} → {} (`{}`)", w[0], w[1], graph[&from][&to])
                })
                .collect();
            return Some(steps.join("\n"));
        }
    }
    None
}

/// The code of a file up to its unit tests (`#[cfg(test)] mod tests { … }` at the end): a test
/// module's `super::` is the file itself.
fn without_unit_tests(code: &str) -> &str {
    let mut end = code.len();
    for marker in ["#[cfg(test)]\nmod tests", "#[cfg(test)]\nmod test "] {
        if let Some(at) = code.find(marker) {
            end = end.min(at);
        }
    }
    &code[..end]
}

/// A folder's `mod.rs` is its table of contents: docs, `mod` and `pub use` (rayon-core's
/// `lib.rs`). A file under it that uses an item the `mod.rs` defines (or imports for itself)
/// makes the folder a hub its own rooms lean on; that counts as an upward edge here, though
/// [`no_files_use_each_other`] lets a child use its parent.
#[test]
fn no_file_uses_its_folders_own_items() {
    let modules = read_modules(&src());
    let tree = Tree::new(&modules);
    let dirs: BTreeSet<Vec<String>> = modules
        .iter()
        .filter(|m| m.file.ends_with("mod.rs"))
        .map(|m| m.path.clone())
        .collect();
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in &modules {
        let name = m.path.last().map_or("", String::as_str);
        if m.file.ends_with("mod.rs") || matches!(name, "test" | "tests") {
            continue;
        }
        for p in paths(without_unit_tests(&m.code)) {
            let abs = absolute(&m.path, &p, false);
            let Some(to) = tree.resolve(&abs) else {
                continue;
            };
            let names_an_item = abs.len() > to.len() && abs[to.len()] != "*";
            if to != m.path && m.path.starts_with(&to) && dirs.contains(&to) && names_an_item {
                found
                    .entry(to.join("/"))
                    .or_default()
                    .push(format!("{}: `{p}`", m.file.display()));
            }
        }
    }
    let errors: Vec<String> = found
        .iter()
        .map(|(dir, uses)| {
            format!(
                "{dir}/mod.rs defines items its own files use: move them into a file of their \
                 own and `pub use` it\n  {}",
                uses.join("\n  ")
            )
        })
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The test's own reading of paths, on the shapes it meets.
#[test]
fn paths_are_read_as_rust_reads_them() {
    let code = strip(
        "use super::{a::B, c::{D, E as F}, self};\nlet s = \"crate::not::this\"; // crate::nor\n\
         x = crate::sys::set_to_vec(&y); r#\"crate::raw\"#;",
    );
    assert_eq!(
        paths(&code),
        [
            "super::a::B",
            "super::c::D",
            "super::c::E",
            "super",
            "crate::sys::set_to_vec"
        ]
    );
    let from = vec!["program".to_owned(), "pin".to_owned()];
    assert_eq!(
        absolute(&from, "super::launch::X", false),
        ["program", "launch", "X"]
    );
    assert_eq!(absolute(&from, "crate::sys::Y", false), ["sys", "Y"]);
}

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs`; nested groups too.
fn braces(name: &str) -> Vec<String> {
    let Some(close) = name.find('}') else {
        return vec![name.to_owned()];
    };
    let open = name[..close].rfind('{').unwrap();
    name[open + 1..close]
        .split(',')
        .flat_map(|part| braces(&format!("{}{part}{}", &name[..open], &name[close + 1..])))
        .collect()
}

/// Every file under `dir` (the repository root), as a path relative to it, build output and
/// version control left out.
fn repository_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if matches!(name.as_str(), "target" | ".git" | "corpus" | "artifacts") {
            continue;
        }
        if p.is_dir() {
            repository_files(root, &p, out);
        } else {
            let rel = p.strip_prefix(root).unwrap();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Whether `file` (a path from the repository root) is what ARCHITECTURE.md's `name` says: the
/// file itself (`name` is relative to some folder), a file in the folder `name/`, or a file
/// `dir/*.rs` names.
fn names(name: &str, file: &str) -> bool {
    if let Some(dir) = name.strip_suffix('/') {
        return file.starts_with(&format!("{dir}/")) || file.contains(&format!("/{dir}/"));
    }
    if let Some((dir, ext)) = name.split_once('*') {
        let Some((parent, base)) = file.rsplit_once('/') else {
            return false;
        };
        return base.ends_with(ext) && at_end_of(parent, dir.trim_end_matches('/'));
    }
    at_end_of(file, name)
}

/// Whether `path` is `suffix` or ends with `/suffix`.
fn at_end_of(path: &str, suffix: &str) -> bool {
    path == suffix || path.ends_with(&format!("/{suffix}"))
}

/// ARCHITECTURE.md names the repository's files by path, relative to the crate or folder its
/// sentence is about (`sweep/engine.rs`, `program/pin/{plan,elf}.rs`, `sys/linux/`,
/// `sweep/*.rs`). Each name must be a file or folder that exists, and every source file of the
/// crates must be named (itself, or a `*.rs` of its folder; a folder's name alone does not name
/// its files); unit-test files (`test.rs`, `test_util.rs`) aside. So a file added, moved or
/// removed shows here until the map says so.
#[test]
fn architecture_names_every_source_file_and_no_file_that_is_gone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    // Code blocks draw pictures; the names are in the prose and tables.
    let prose: String = text.split("```").step_by(2).collect::<Vec<_>>().join(" ");
    let named: Vec<String> = prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| !t.contains(char::is_whitespace))
        .filter(|t| t.ends_with(".rs") || t.ends_with(".sh") || t.ends_with('/'))
        .flat_map(braces)
        .collect();
    let mut files = Vec::new();
    repository_files(&root, &root, &mut files);
    let gone: BTreeSet<&String> = named
        .iter()
        .filter(|n| !files.iter().any(|f| names(n, f)))
        .collect();
    let unnamed: Vec<&String> = files
        .iter()
        .filter(|f| f.starts_with("crates/") && f.contains("/src/") && f.ends_with(".rs"))
        .filter(|f| !f.ends_with("/test.rs") && !f.ends_with("/test_util.rs"))
        // A folder's name says where its files are, not what each is: it names none of them.
        .filter(|f| !named.iter().any(|n| !n.ends_with('/') && names(n, f)))
        .collect();
    assert!(
        gone.is_empty() && unnamed.is_empty(),
        "ARCHITECTURE.md names files that are not there: {gone:?}; and does not name these \
         source files (name each, or FOLDER/*.rs): {unnamed:?}"
    );
}
