//! One module per subcommand.

pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod cpus;
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
    /// ARCHITECTURE.md: commands do not import each other. What two commands share lives in
    /// core (the engine) or in a shared cli module (`input`, `report`, `exit`, ...).
    #[test]
    fn commands_do_not_import_each_other() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rs") && n != "mod.rs")
            .collect();
        assert!(names.len() >= 9, "{names:?}");
        for name in &names {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            // A command's own tests may use `super::*` (its own module).
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (i, line) in code.lines().enumerate() {
                let uses_other = names.iter().any(|other| {
                    let m = other.trim_end_matches(".rs");
                    line.contains(&format!("super::{m}")) || line.contains(&format!("cmd::{m}"))
                });
                assert!(
                    !uses_other && !line.contains("crate::cmd"),
                    "src/cmd/{name}:{}: a command imports another: {line}",
                    i + 1
                );
                assert!(
                    !line.contains("crate::main") && !line.contains("crate::EXIT"),
                    "src/cmd/{name}:{}: a command reaches into main.rs: {line}",
                    i + 1
                );
            }
        }
    }
}
