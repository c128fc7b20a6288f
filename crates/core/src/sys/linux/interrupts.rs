//! `/proc/interrupts` and `/proc/softirqs`: interrupt counts per CPU. procfs parses neither, so
//! one hand parser reads both: they share the layout.

use std::collections::BTreeMap;
use std::path::Path;

use super::files::parse_text;
use crate::sys::error::SysError;

/// Sums a table per CPU: a header of `CPUn` columns, then rows `NAME: count count ...
/// [description]`. Rows with a single total (`ERR:`, `MIS:`) are skipped.
fn parse_table(text: &str) -> Result<BTreeMap<usize, u64>, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty")?;
    let cpus: Vec<usize> = header
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("CPU")?.parse().ok())
        .collect();
    if cpus.is_empty() {
        return Err("no CPUn header".into());
    }
    let mut out: BTreeMap<usize, u64> = cpus.iter().map(|&c| (c, 0)).collect();
    for line in lines {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let counts: Vec<u64> = rest
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        if counts.len() < cpus.len() {
            continue;
        }
        for (cpu, n) in cpus.iter().zip(counts) {
            *out.entry(*cpu).or_insert(0) += n;
        }
    }
    Ok(out)
}

/// Hardware interrupts per CPU since boot (`/proc/interrupts` under `proc_dir`).
pub(crate) fn interrupts(proc_dir: &Path) -> Result<BTreeMap<usize, u64>, SysError> {
    parse_text(&proc_dir.join("interrupts"), parse_table)
}

/// Soft interrupts per CPU since boot (`/proc/softirqs` under `proc_dir`).
pub(crate) fn softirqs(proc_dir: &Path) -> Result<BTreeMap<usize, u64>, SysError> {
    parse_text(&proc_dir.join("softirqs"), parse_table)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{INTERRUPTS, SOFTIRQS, write};

    #[test]
    fn tables_sum_per_cpu() {
        let t = parse_table(INTERRUPTS).unwrap();
        assert_eq!((t[&0], t[&1]), (1109, 510));
        let s = parse_table(SOFTIRQS).unwrap();
        assert_eq!((s[&0], s[&1]), (101, 50));
        assert!(parse_table("nothing here\n").is_err());
        assert!(parse_table("").is_err());
    }

    #[test]
    fn reads_under_a_root() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "interrupts", INTERRUPTS);
        assert_eq!(interrupts(dir.path()).unwrap()[&0], 1109);
        assert!(matches!(
            softirqs(dir.path()),
            Err(SysError::Read { path, .. }) if path == dir.path().join("softirqs")
        ));
    }
}
