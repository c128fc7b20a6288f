//! CPU sets as the system writes and takes them: Linux CPU lists (`0-3,8,10-11`), as the
//! kernel writes them in `/sys`, `/proc` and cgroup files and as `taskset -c`, `numactl` and
//! systemd read them, and hwloc bitmaps to and from lists of OS indexes, as the affinity calls
//! take them. Standard library and hwlocality only, every OS.

use hwlocality::bitmap::BitmapIndex;
use hwlocality::cpu::cpuset::CpuSet;

/// The CPUs of a set, as OS indexes in ascending order.
pub fn set_to_vec(set: &CpuSet) -> Vec<usize> {
    set.iter_set().map(usize::from).collect()
}

/// A CPU set from OS indexes (an index hwloc cannot hold is left out).
pub fn set_from_indexes(indexes: impl IntoIterator<Item = usize>) -> CpuSet {
    let mut set = CpuSet::new();
    for i in indexes {
        if let Ok(i) = BitmapIndex::try_from(i) {
            set.set(i);
        }
    }
    set
}

/// Parses a Linux CPU list (`0-3,8,10-11`; empty = no CPUs) into sorted, distinct CPU numbers.
/// `None` when malformed: decimal numbers and ranges only, as the kernel writes them (hwloc's
/// more lenient list syntax, C number prefixes and infinite tails, is `crate::hwloc`'s).
pub fn parse_list(text: &str) -> Option<Vec<usize>> {
    let text = text.trim();
    let mut out = Vec::new();
    if text.is_empty() {
        return Some(out);
    }
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// CPU numbers with their noun, for messages: `CPU 3`, `CPUs 0-3,8`.
pub fn cpus_named(cpus: &[usize]) -> String {
    let noun = if cpus.len() == 1 { "CPU" } else { "CPUs" };
    format!("{noun} {}", format_list(cpus))
}

/// A count with its noun, plural when it is not 1: `1 run`, `3 runs`, `2 processes`.
pub fn counted(n: usize, noun: &str) -> String {
    let plural = if n == 1 {
        ""
    } else if noun.ends_with('s') {
        "es"
    } else {
        "s"
    };
    format!("{n} {noun}{plural}")
}

/// Formats sorted CPU numbers as a Linux CPU list (`0-3,8`).
pub fn format_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counts_and_cpus_in_words() {
        assert_eq!(counted(1, "run"), "1 run");
        assert_eq!(counted(0, "run"), "0 runs");
        assert_eq!(counted(3, "thread"), "3 threads");
        assert_eq!(cpus_named(&[0]), "CPU 0");
        assert_eq!(cpus_named(&[0, 1, 2, 8]), "CPUs 0-2,8");
    }

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_list(""), Some(vec![]));
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("a"), None);
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[]), "");
        assert_eq!(format_list(&[5]), "5");
    }
}
