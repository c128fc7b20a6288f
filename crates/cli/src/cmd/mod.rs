//! One module per subcommand: a file, or a folder when a command has several parts (`tune/`:
//! its arguments, running and printing, Slurm; `hwloc/`: the hwloc drop-ins `calc` and
//! `distrib` and what they share).

pub(crate) mod adapt;
pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod cpus;
pub(crate) mod doctor;
pub(crate) mod hwloc;
pub(crate) mod man;
pub(crate) mod place;
pub(crate) mod report;
pub(crate) mod reserve;
pub(crate) mod rules;
pub(crate) mod run;
pub(crate) mod topo;
pub(crate) mod tune;
pub(crate) mod watch;

#[cfg(test)]
mod test {
    use std::path::{Path, PathBuf};

    /// A command: a file `src/cmd/NAME.rs` or a folder `src/cmd/NAME/`.
    #[derive(Debug)]
    struct Command {
        name: String,
        /// Its files.
        files: Vec<PathBuf>,
        /// The modules in its folder (none for a file).
        modules: Vec<String>,
    }

    /// ARCHITECTURE.md: commands do not import each other. The files of one command's folder
    /// may use each other (`super::common`), but no command uses another (`super::tune`,
    /// `cmd::calc`, `crate::cmd::...`) or main.rs. What two commands share lives in core (the
    /// engine) or in a shared cli module (`input`, `report`, `exit`, ...).
    #[test]
    fn commands_do_not_import_each_other() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
        let commands = commands(&root);
        let main_items = main_items(&root.with_file_name("main.rs"));
        assert!(main_items.iter().any(|i| i == "Cli"), "{main_items:?}");
        assert!(commands.len() >= 9, "{commands:?}");
        let names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        // What a path can reach through `cmd::`: a command, or a module in a command's folder.
        let below_cmd: Vec<&str> = commands
            .iter()
            .flat_map(|c| std::iter::once(&c.name).chain(&c.modules))
            .map(String::as_str)
            .collect();
        for file in commands.iter().flat_map(|c| &c.files) {
            let shown = file.strip_prefix(&root).unwrap();
            // How many `super::` reach src/cmd: one from NAME.rs or NAME/mod.rs, one more from
            // each folder further down.
            let depth = shown.components().count() - usize::from(file.ends_with("mod.rs"));
            let text = std::fs::read_to_string(file).unwrap();
            // A command's own tests may use `super::*` (its own module).
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (at, path) in paths(code) {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                let supers = path.iter().take_while(|s| **s == "super").count();
                let into_cmd =
                    |name: Option<&&str>| name.is_some_and(|n| *n == "*" || names.contains(n));
                let other = matches!(path[..], ["crate", "cmd", ..])
                    || (supers == depth && into_cmd(path.get(supers)))
                    || path
                        .windows(2)
                        .any(|w| w[0] == "cmd" && (w[1] == "*" || below_cmd.contains(&w[1])));
                let main = matches!(path[..], ["crate", "main", ..])
                    || matches!(path[..], ["crate", item, ..] if main_items.iter().any(|m| m == item));
                let n = code[..at].matches('\n').count() + 1;
                let line = code.lines().nth(n - 1).unwrap_or_default();
                let shown = shown.display();
                assert!(
                    !other,
                    "src/cmd/{shown}:{n}: a command imports another: {line}"
                );
                assert!(
                    !main,
                    "src/cmd/{shown}:{n}: a command reaches into main.rs: {line}"
                );
            }
        }
    }

    /// The items main.rs defines itself (not the modules it declares): what no command may use.
    fn main_items(main: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(main).unwrap();
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start_matches("pub(crate) ");
                ["struct ", "enum ", "fn ", "const ", "static ", "type "]
                    .iter()
                    .find_map(|k| l.strip_prefix(k))
            })
            .map(|rest| {
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    }

    /// The commands in `root` (src/cmd), with their files.
    fn commands(root: &Path) -> Vec<Command> {
        let mut commands = Vec::new();
        for entry in std::fs::read_dir(root).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut files = Vec::new();
                rust_files(&path, &mut files);
                let modules = files
                    .iter()
                    .filter(|f| !f.ends_with("mod.rs"))
                    .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
                    .collect();
                commands.push(Command {
                    name,
                    files,
                    modules,
                });
            } else if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
                commands.push(Command {
                    name,
                    files: vec![path],
                    modules: Vec::new(),
                });
            }
        }
        commands
    }

    fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }

    /// Every path in `code` (`a::b::c`, a lone word too) with where it starts; a `{...}` group
    /// is spread out (`a::{b, c::d}` is `a::b` and `a::c::d`, at `a`), a glob is the word `*`.
    fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
        let bytes = code.as_bytes();
        let mut found = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let after_word = i > 0 && (is_word(bytes[i - 1]) || bytes[i - 1] == b':');
            if is_word(bytes[i]) && !bytes[i].is_ascii_digit() && !after_word {
                let (start, mut here) = (i, Vec::new());
                i = path(bytes, i, Vec::new(), &mut here).max(i + 1);
                found.extend(here.into_iter().map(|p| (start, p)));
            } else {
                i += 1;
            }
        }
        found
    }

    /// Reads the path at `i` below `prefix` into `found`; returns where it ends.
    fn path(
        code: &[u8],
        mut i: usize,
        mut prefix: Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) -> usize {
        loop {
            if code.get(i) == Some(&b'{') {
                i += 1;
                while let Some(&c) = code.get(i) {
                    if c == b'}' {
                        return i + 1;
                    } else if c == b',' || c.is_ascii_whitespace() {
                        i += 1;
                    } else {
                        i = path(code, i, prefix.clone(), found).max(i + 1);
                        // `as NAME` and the like, up to the next item.
                        while code.get(i).is_some_and(|c| !matches!(c, b',' | b'}')) {
                            i += 1;
                        }
                    }
                }
                return i;
            }
            let start = i;
            while code.get(i).is_some_and(|&c| is_word(c) || c == b'*') {
                i += 1;
            }
            if i == start {
                break;
            }
            prefix.push(String::from_utf8_lossy(&code[start..i]).into_owned());
            if !code[i..].starts_with(b"::") {
                break;
            }
            i += 2;
        }
        if !prefix.is_empty() {
            found.push(prefix);
        }
        i
    }

    fn is_word(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_'
    }
}
