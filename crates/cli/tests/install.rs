//! What an installed coretune ships beside the binary: `coretune completions SHELL` for every shell
//! clap_complete knows, `coretune man` (one page, or one per command with `--out`), and the
//! Makefile's `install-files` and `uninstall`, run against the binary under test.
// Not built for Windows: the Makefile's install and uninstall, and the Unix shells' completions: Linux only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

/// The subcommands `coretune --help` lists (clap's own `help` left out), so that a new command is
/// checked here without being named here.
fn subcommands() -> Vec<String> {
    let names = subcommands_of(&[]);
    for expected in ["topo", "tune", "completions", "man"] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} in {names:?}"
        );
    }
    names
}

/// The subcommands `coretune PATH... --help` lists (`coretune rules --help`: check, apply, ...).
fn subcommands_of(path: &[&str]) -> Vec<String> {
    let out = util::coretune().args(path).arg("--help").output().unwrap();
    util::assert_ok(&out);
    let help = String::from_utf8(out.stdout).unwrap();
    let names: Vec<String> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        // A command's line starts two spaces in; its wrapped description further.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    names
}

/// Runs `coretune ARGS`, expects success, returns stdout.
fn stdout(args: &[&str]) -> String {
    let out = util::coretune().args(args).output().unwrap();
    util::assert_ok(&out);
    String::from_utf8(out.stdout).unwrap()
}

/// The first line of a roff page that is not part of clap_mangen's preamble (the `.ie`/`.el`
/// pair defining the apostrophe string).
fn title_line(page: &str) -> &str {
    page.lines()
        .find(|line| !line.starts_with(".ie ") && !line.starts_with(".el "))
        .unwrap_or_default()
}

fn file_names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The man pages `man --out` writes: `coretune.1`, `coretune-CMD.1` for each subcommand and
/// `coretune-CMD-SUB.1` for each of its own (`coretune-rules-watch.1`), as git names its pages.
fn expected_pages() -> BTreeSet<String> {
    let mut pages = BTreeSet::from(["coretune.1".to_owned()]);
    for name in subcommands() {
        pages.insert(format!("coretune-{name}.1"));
        for sub in subcommands_of(&[&name]) {
            pages.insert(format!("coretune-{name}-{sub}.1"));
        }
    }
    pages
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    let subcommands = subcommands();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = stdout(&["completions", shell]);
        assert!(!script.trim().is_empty(), "{shell}: empty script");
        for name in &subcommands {
            assert!(script.contains(name.as_str()), "{shell}: {name} missing");
        }
    }
    let out = util::coretune()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bash_completion_is_valid_bash_and_completes_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coretune.bash");
    fs::write(&path, stdout(&["completions", "bash"])).unwrap();
    let check = StdCommand::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    util::assert_ok(&check);
    // What bash does on `coretune to<TAB>`: the function the script registers gets the words.
    let complete = StdCommand::new("bash")
        .arg("-c")
        .arg(
            r#"source "$1" && complete -p coretune >/dev/null &&
               COMP_WORDS=(coretune to) COMP_CWORD=1 && _coretune coretune to coretune &&
               printf '%s\n' "${COMPREPLY[@]}""#,
        )
        .arg("bash")
        .arg(&path)
        .output()
        .unwrap();
    util::assert_ok(&complete);
    let words: BTreeSet<String> = String::from_utf8(complete.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        words,
        BTreeSet::from(["topo".to_owned()]),
        "coretune to<TAB>"
    );
}

#[test]
fn man_page_is_coretune_1_and_lists_every_subcommand() {
    let page = stdout(&["man"]);
    assert!(
        title_line(&page).starts_with(".TH coretune 1 "),
        "{}",
        title_line(&page)
    );
    assert!(page.contains("\n.SH SYNOPSIS\n"));
    assert!(page.contains("\n.SH SUBCOMMANDS\n"));
    for name in subcommands() {
        // roff escapes the hyphen.
        assert!(page.contains(&format!("coretune\\-{name}(1)")), "{name}");
    }
    assert!(!page.contains("coretune\\-help"), "no page for clap's help");
    for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES", ".SH \"SEE ALSO\""] {
        assert!(page.contains(section), "{section}");
    }
    assert!(
        page.contains("\\fBhwloc\\-calc\\fR(1)"),
        "SEE ALSO names hwloc-calc"
    );
}

#[test]
fn man_out_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let out = util::coretune()
        .args(["man", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(out.stdout.is_empty());
    assert_eq!(file_names(&out_dir), expected_pages());
    for name in subcommands() {
        let page = fs::read_to_string(out_dir.join(format!("coretune-{name}.1"))).unwrap();
        assert!(
            title_line(&page).starts_with(&format!(".TH coretune-{name} 1 ")),
            "{name}: {}",
            title_line(&page)
        );
        assert!(
            page.contains(&format!("\\fBcoretune {name}\\fR")),
            "{name}: synopsis"
        );
        assert!(page.contains(".SH \"EXIT STATUS\""), "{name}: exit status");
        assert!(page.contains("\\fBcoretune\\fR(1)"), "{name}: see also");
    }
    // Like mkdir without -p: a mistyped path fails and leaves nothing behind.
    let typo = dir.path().join("no/such/man1");
    let out = util::coretune()
        .args(["man", "--out"])
        .arg(&typo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("no").exists());
    // The page printed without --out is the same coretune.1.
    assert_eq!(
        fs::read_to_string(out_dir.join("coretune.1")).unwrap(),
        stdout(&["man"])
    );
}

/// An extra check where man-db is installed: the pages render, and say what they are.
#[test]
fn man_pages_render_with_man_where_it_is_installed() {
    if StdCommand::new("man").arg("--version").output().is_err() {
        util::skip("no `man` program");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    util::assert_ok(
        &util::coretune()
            .args(["man", "--out"])
            .arg(dir.path())
            .output()
            .unwrap(),
    );
    for (page, expected) in [
        ("coretune.1", "coretune - How many threads"),
        ("coretune-tune.1", "coretune tune [--threads <LIST>]"),
    ] {
        let out = StdCommand::new("man")
            .arg("-l")
            .arg(dir.path().join(page))
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        util::assert_ok(&out);
        // Off a terminal, man still prints bold and underline as overstrikes: `c\bc`, `_\bc`.
        let mut text = String::new();
        for c in String::from_utf8_lossy(&out.stdout).chars() {
            if c == '\u{8}' {
                text.pop();
            } else {
                text.push(c);
            }
        }
        // man justifies its lines: compare words, not the spaces between them.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(expected), "{page}: {text}");
        assert!(!text.contains(".TH"), "{page}: rendered, not raw");
    }
}

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `make TARGET DESTDIR=… PREFIX=/usr CORETUNE=<the binary under test>` in the repository root.
fn make(target: &str, destdir: &Path) -> std::process::Output {
    make_with(target, destdir, &[])
}

/// [`make`] with more `VAR=value` arguments.
fn make_with(target: &str, destdir: &Path, vars: &[&str]) -> std::process::Output {
    let coretune = assert_cmd::cargo::cargo_bin("coretune");
    StdCommand::new("make")
        // Not the settings of a `make test` this may run under.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .arg("--no-print-directory")
        .arg("-C")
        .arg(repository_root())
        .arg(target)
        .arg(format!("DESTDIR={}", destdir.display()))
        .arg("PREFIX=/usr")
        .arg(format!("CORETUNE={}", coretune.display()))
        .args(vars)
        .output()
        .unwrap()
}

/// The section names `readelf -S` lists for an ELF file.
fn sections(file: &Path) -> BTreeSet<String> {
    let out = StdCommand::new("readelf")
        .args(["-S", "--wide"])
        .arg(file)
        .output()
        .unwrap();
    util::assert_ok(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // `  [ 1] .interp  PROGBITS …`: the name follows the bracketed index.
            let (_, rest) = line.split_once(']')?;
            let name = rest.split_whitespace().next()?;
            name.starts_with('.').then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn make_install_files_then_uninstall() {
    let destdir = tempfile::tempdir().unwrap();
    let usr = destdir.path().join("usr");
    let mut files = vec![
        ("bin/coretune".to_owned(), 0o755),
        ("lib/coretune/libcoretune_pin.so".to_owned(), 0o755),
        ("lib/coretune/coretune-exec".to_owned(), 0o755),
        (
            "share/bash-completion/completions/coretune".to_owned(),
            0o644,
        ),
        ("share/zsh/site-functions/_coretune".to_owned(), 0o644),
        (
            "share/fish/vendor_completions.d/coretune.fish".to_owned(),
            0o644,
        ),
    ];
    for page in expected_pages() {
        files.push((format!("share/man/man1/{page}"), 0o644));
    }

    util::pin_library();
    util::assert_ok(&make("install-files", destdir.path()));
    for (file, mode) in &files {
        let meta = fs::metadata(usr.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(meta.len() > 0, "{file} is empty");
        assert_eq!(meta.permissions().mode() & 0o777, *mode, "{file}: mode");
    }
    assert_eq!(
        file_names(&usr.join("share/man/man1")),
        expected_pages(),
        "man pages installed"
    );
    // The installed files are what the binary prints.
    let installed = |file: &str| fs::read_to_string(usr.join(file)).unwrap();
    assert_eq!(
        installed("share/bash-completion/completions/coretune"),
        stdout(&["completions", "bash"])
    );
    assert_eq!(
        installed("share/zsh/site-functions/_coretune"),
        stdout(&["completions", "zsh"])
    );
    assert_eq!(
        installed("share/fish/vendor_completions.d/coretune.fish"),
        stdout(&["completions", "fish"])
    );
    assert_eq!(installed("share/man/man1/coretune.1"), stdout(&["man"]));
    // Installed stripped: no debug information, no symbol table (the dynamic symbols stay).
    for program in [
        "bin/coretune",
        "lib/coretune/libcoretune_pin.so",
        "lib/coretune/coretune-exec",
    ] {
        let names = sections(&usr.join(program));
        assert!(names.contains(".text"), "{program}: {names:?}");
        for gone in [".debug_info", ".symtab"] {
            assert!(!names.contains(gone), "{program} keeps {gone}");
        }
    }
    let version = StdCommand::new(usr.join("bin/coretune"))
        .arg("--version")
        .output()
        .unwrap();
    util::assert_ok(&version);
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("coretune "));
    // The installed binary finds the installed pinning library (../lib/coretune from bin/).
    let preload = StdCommand::new(usr.join("bin/coretune"))
        .args([
            "run",
            "--threads",
            "2",
            "--place",
            "compact",
            "--",
            "sh",
            "-c",
        ])
        .arg("echo $LD_PRELOAD")
        .env_remove("LD_PRELOAD")
        .env_remove("CORETUNE_PIN_LIB")
        .output()
        .unwrap();
    util::assert_ok(&preload);
    assert_eq!(
        String::from_utf8_lossy(&preload.stdout).trim(),
        fs::canonicalize(usr.join("lib/coretune/libcoretune_pin.so"))
            .unwrap()
            .to_string_lossy()
    );

    // Something else in the same folders survives the uninstall.
    let other = usr.join("share/man/man1/other.1");
    fs::write(&other, ".TH other 1\n").unwrap();
    util::assert_ok(&make("uninstall", destdir.path()));
    for (file, _) in &files {
        assert!(!usr.join(file).exists(), "{file} left behind");
    }
    assert!(
        other.exists(),
        "uninstall removed a file it did not install"
    );
}

#[test]
fn keep_debug_puts_debug_information_beside_the_stripped_programs() {
    let destdir = tempfile::tempdir().unwrap();
    let usr = destdir.path().join("usr");
    util::pin_library();
    util::assert_ok(&make_with(
        "install-files",
        destdir.path(),
        &["KEEP_DEBUG=1"],
    ));
    for (program, debug) in [
        ("bin/coretune", "bin/.debug/coretune.debug"),
        (
            "lib/coretune/libcoretune_pin.so",
            "lib/coretune/.debug/libcoretune_pin.so.debug",
        ),
    ] {
        let stripped = sections(&usr.join(program));
        assert!(
            !stripped.contains(".debug_info"),
            "{program} keeps .debug_info"
        );
        assert!(stripped.contains(".gnu_debuglink"), "{program}: no link");
        let kept = sections(&usr.join(debug));
        assert!(kept.contains(".debug_info"), "{debug}: {kept:?}");
    }
    util::assert_ok(&make_with("uninstall", destdir.path(), &["KEEP_DEBUG=1"]));
    for debug in [
        "bin/.debug/coretune.debug",
        "lib/coretune/.debug/libcoretune_pin.so.debug",
    ] {
        assert!(!usr.join(debug).exists(), "{debug} left behind");
    }
}

#[test]
fn bash_completion_offers_the_values_of_enum_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coretune.bash");
    fs::write(&path, stdout(&["completions", "bash"])).unwrap();
    let complete = |words: &str, cword: usize| -> BTreeSet<String> {
        let out = StdCommand::new("bash")
            .arg("-c")
            .arg(format!(
                r#"source "$1" && COMP_WORDS=({words}) COMP_CWORD={cword} &&
                   _coretune coretune "${{COMP_WORDS[$COMP_CWORD]}}" "${{COMP_WORDS[$COMP_CWORD-1]}}" &&
                   printf '%s\n' "${{COMPREPLY[@]}}""#
            ))
            .arg("bash")
            .arg(&path)
            .current_dir(dir.path())
            .output()
            .unwrap();
        util::assert_ok(&out);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    // `coretune run --place <TAB>`: the policies, not the file names in the folder.
    let places = complete("coretune run --place ''", 3);
    for policy in ["os", "compact", "spread", "cores", "round-robin"] {
        assert!(places.contains(policy), "--place offers {places:?}");
    }
    assert!(!places.contains("coretune.bash"), "--place offers files");
    let binds = complete("coretune run --bind ''", 3);
    assert!(binds.contains("core"), "--bind offers {binds:?}");
    let sizes = complete("coretune bench sum --size ''", 4);
    assert!(sizes.contains("small"), "--size offers {sizes:?}");
}

/// Finding 32: `coretune bench <TAB>` and `tune <TAB>` offered no workload, `--objective <TAB>`
/// and `--metric-from <TAB>` only file names. They offer the workloads, the objectives (with
/// what each is, and that a metric's name is one too), and `stdout`/`stderr` beside file names.
#[test]
fn completions_offer_workloads_objectives_and_where_metrics_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coretune.bash");
    fs::write(&path, stdout(&["completions", "bash"])).unwrap();
    let complete = |words: &str, cword: usize| -> BTreeSet<String> {
        let out = StdCommand::new("bash")
            .arg("-c")
            .arg(format!(
                r#"source "$1" && COMP_WORDS=({words}) COMP_CWORD={cword} &&
                   _coretune coretune "${{COMP_WORDS[$COMP_CWORD]}}" "${{COMP_WORDS[$COMP_CWORD-1]}}" &&
                   printf '%s\n' "${{COMPREPLY[@]}}""#
            ))
            .arg("bash")
            .arg(&path)
            .current_dir(dir.path())
            .output()
            .unwrap();
        util::assert_ok(&out);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    for words in ["coretune bench ''", "coretune tune ''"] {
        let offered = complete(words, 2);
        for workload in ["raymesh", "membw", "mixed", "sum", "spawn"] {
            assert!(offered.contains(workload), "{words}: {offered:?}");
        }
    }
    let objectives = complete("coretune tune --objective ''", 3);
    assert_eq!(
        objectives,
        ["cpu", "rss", "throughput", "time"]
            .map(String::from)
            .into(),
        "--objective"
    );
    let sources = complete("coretune tune --metric-from ''", 3);
    for word in ["stdout", "stderr", "coretune.bash"] {
        assert!(sources.contains(word), "--metric-from offers {sources:?}");
    }
    let sources = complete("coretune tune --metric-from std", 3);
    assert_eq!(sources, ["stderr", "stdout"].map(String::from).into());

    // The other shells' scripts say the same (no zsh or fish here to run them).
    let zsh = stdout(&["completions", "zsh"]);
    assert!(
        zsh.contains("]:FROM:{_values metric-from stdout stderr; _files}'"),
        "zsh --metric-from"
    );
    assert!(
        zsh.contains(r#"throughput\:"work (or runs) per second"#),
        "zsh --objective"
    );
    assert!(
        zsh.contains("spawn:(raymesh membw mixed sum spawn)'"),
        "zsh workload"
    );
    let fish = stdout(&["completions", "fish"]);
    let line = fish
        .lines()
        .find(|l| l.contains(" -l metric-from "))
        .unwrap();
    assert!(line.contains(" -r -F -a \"stdout\\t"), "{line}");
    // `--help` names the objectives and says a metric is one too.
    let help = stdout(&["tune", "--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains(
            "time, cpu (CPU seconds), rss (peak memory), throughput (work per second) or a --metric's name"
        ),
        "{help}"
    );
}

/// Finding 33: the man pages had no EXAMPLES but coretune(1)'s, their synopses named options
/// without values (`[--threads] [--place]`), and calc's and distrib's pages carried the sweep's
/// EXIT STATUS table. Every page now has examples — command lines the README shows, so they
/// stay true — a synopsis with each option's value, and calc and distrib say what hwloc's tools
/// exit with.
#[test]
fn every_man_page_has_examples_from_the_readme_values_in_its_synopsis_and_its_own_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    util::assert_ok(
        &util::coretune()
            .args(["man", "--out"])
            .arg(dir.path())
            .output()
            .unwrap(),
    );
    let readme = fs::read_to_string(repository_root().join("README.md")).unwrap();
    // roff's escapes, undone: what the reader sees.
    let plain = |roff: &str| {
        roff.replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\fI", "")
            .replace("\\-", "-")
            .replace("\\e", "\\")
    };
    for name in file_names(dir.path()) {
        let page = fs::read_to_string(dir.path().join(&name)).unwrap();
        let section = |heading: &str| -> String {
            let start = page
                .find(&format!("\n{heading}\n"))
                .unwrap_or_else(|| panic!("{name}: no {heading}"));
            let body = &page[start + heading.len() + 2..];
            body[..body.find("\n.SH ").unwrap_or(body.len())].to_owned()
        };
        let examples = section(".SH EXAMPLES");
        let commands: Vec<String> = examples
            .lines()
            .filter(|l| l.starts_with("\\fBcoretune"))
            .map(plain)
            .collect();
        assert!(!commands.is_empty(), "{name}: no example");
        for command in &commands {
            assert!(
                readme.contains(command.as_str()),
                "{name}: '{command}' is not in the README"
            );
        }
        let synopsis = plain(&section(".SH SYNOPSIS"));
        let exit = plain(&section(".SH \"EXIT STATUS\""));
        match name.as_str() {
            "coretune-tune.1" => {
                for option in [
                    "[--threads <LIST>]",
                    "[--runs <N>]",
                    "[--monitor [<MS>]]",
                    "[--exhaustive]",
                ] {
                    assert!(synopsis.contains(option), "{name}: {synopsis}");
                }
                assert!(
                    synopsis.ends_with("[-h|--help] [WORKLOAD] [-- <CMD>...]"),
                    "{name}: {synopsis}"
                );
            }
            "coretune-place.1" => {
                assert!(
                    synopsis.ends_with(" -t|--threads <THREADS>"),
                    "{name}: {synopsis}"
                );
            }
            "coretune-calc.1" | "coretune-distrib.1" => {
                assert!(exit.starts_with("As hwloc-"), "{name}: {exit}");
                assert!(!exit.contains("sweep"), "{name}: {exit}");
            }
            _ => assert!(
                exit.contains("no configuration of a sweep"),
                "{name}: {exit}"
            ),
        }
    }
}
