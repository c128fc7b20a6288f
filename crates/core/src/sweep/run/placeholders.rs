//! The placeholders of a command's words (`{threads}`, `{cpus}`, `{place}`, `{mem}`,
//! `{instance}`, `{instances}`), their substitution, and the misspellings caught before a sweep.

use crate::grid::Config;
use crate::sweep::objective::edits;

/// The placeholders a command's arguments may hold.
pub(crate) const PLACEHOLDERS: [&str; 6] =
    ["threads", "cpus", "place", "mem", "instance", "instances"];

/// Every placeholder as a user writes it: `{threads}, {cpus}, …` (for error messages).
pub(crate) fn placeholder_list() -> String {
    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
}

/// The first `{name}` in `argv` that looks like a misspelt placeholder (`{thread}`, `{CPUS}`,
/// `{places}`: within two edits of one, case aside), with the argument and the placeholder
/// meant. Other braces are left alone: `${HOME}`, awk's `{print}`, find's `{}`.
pub(super) fn misspelt_placeholder(argv: &[String]) -> Option<(String, String, &'static str)> {
    for arg in argv {
        let mut at = 0;
        while let Some(open) = arg[at..].find('{').map(|i| at + i) {
            let Some(close) = arg[open..].find('}').map(|i| open + i) else {
                break;
            };
            let name = &arg[open + 1..close];
            at = close;
            let word =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !word || arg[..open].ends_with('$') || PLACEHOLDERS.contains(&name) {
                continue;
            }
            let lower = name.to_ascii_lowercase();
            if let Some(known) = PLACEHOLDERS.iter().find(|p| edits(&lower, p) <= 2) {
                return Some((arg.clone(), name.to_owned(), known));
            }
        }
    }
    None
}

/// Substitutes `{threads}` (per instance), `{cpus}` (the CPU list), `{place}`, `{mem}` (the
/// memory policy, `none` without one), `{instance}` (0) and `{instances}` in one argument.
pub fn substitute(arg: &str, c: &Config, cpus: &str) -> String {
    substitute_copy(arg, c, cpus, 0)
}

/// [`substitute`] for instance `instance` of the configuration, `cpus` being that instance's.
pub(crate) fn substitute_copy(arg: &str, c: &Config, cpus: &str, instance: usize) -> String {
    arg.replace("{threads}", &c.threads.to_string())
        .replace("{cpus}", cpus)
        .replace("{place}", c.family.place.as_str())
        .replace("{mem}", &c.family.mem.to_string())
        .replace("{instances}", &c.family.instances.to_string())
        .replace("{instance}", &instance.to_string())
}

/// [`substitute`] in every argument.
pub(crate) fn substitute_all(argv: &[String], c: &Config, cpus: &str) -> Vec<String> {
    argv.iter().map(|a| substitute(a, c, cpus)).collect()
}

#[cfg(test)]
mod test {
    use super::*;

    use crate::placement::Policy;

    #[test]
    fn misspelt_placeholders_are_caught_and_other_braces_left_alone() {
        let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        for (words, name, known) in [
            (&["xz", "-T{thread}"][..], "thread", "threads"),
            (&["app", "--on={CPUS}"], "CPUS", "cpus"),
            (&["app", "{threads}", "{places}"], "places", "place"),
        ] {
            let (_, got, meant) = misspelt_placeholder(&argv(words)).unwrap();
            assert_eq!((got.as_str(), meant), (name, known), "{words:?}");
        }
        for words in [
            &["awk", "{print}"][..],
            &["sh", "-c", "echo ${HOME} {}"],
            &["app", "-T{threads}", "{cpus}", "{place}"],
            &["app", "{", "}"],
        ] {
            assert_eq!(misspelt_placeholder(&argv(words)), None, "{words:?}");
        }
    }

    #[test]
    fn placeholders_are_replaced_by_the_configurations_values() {
        let c = Config::new(4, Policy::Spread);
        assert_eq!(
            substitute(
                "--threads={threads} --on {cpus} ({place}, {mem})",
                &c,
                "0-3"
            ),
            "--threads=4 --on 0-3 (spread, none)"
        );
        let c = c
            .family
            .with_mem("interleave:numa:0-1".parse().unwrap())
            .at(4);
        assert_eq!(
            substitute("maps-{mem}", &c, "0-3"),
            "maps-interleave:numa:0-1"
        );
    }
}
