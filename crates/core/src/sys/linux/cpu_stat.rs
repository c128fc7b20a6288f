//! `/proc/stat`: cumulative CPU time of the whole machine (the `cpu` line) and of each CPU
//! (`cpuN`), in clock ticks.
//!
//! A hand parser, not procfs's `KernelStats`: that lists the per-CPU lines by position, and the
//! kernel leaves offline CPUs out of the file, so on a machine with an offline CPU its `n`-th entry
//! is not CPU `n`; it also refuses a file without `ctxt`, `btime` or `processes` lines.

use std::path::Path;

use super::files::parse_text;
use crate::sys::error::SysError;
use crate::sys::types::{CpuStat, CpuTicks};

/// Parses the `cpu` and `cpuN` lines: user nice system idle, then (newer kernels) iowait irq
/// softirq steal; guest and guest_nice, already counted in user and nice, are not kept.
fn parse(text: &str) -> Result<CpuStat, String> {
    let mut stat = CpuStat::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(label) = words.next() else { continue };
        let Some(number) = label.strip_prefix("cpu") else {
            continue;
        };
        let cpu = if number.is_empty() {
            None
        } else {
            match number.parse::<usize>() {
                Ok(cpu) => Some(cpu),
                Err(_) => continue,
            }
        };
        let v: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
        if v.len() < 4 {
            return Err(format!("line '{line}' has fewer than 4 counters"));
        }
        let ticks = CpuTicks {
            user: v[0],
            nice: v[1],
            system: v[2],
            idle: v[3],
            iowait: v.get(4).copied(),
            irq: v.get(5).copied(),
            softirq: v.get(6).copied(),
            steal: v.get(7).copied(),
        };
        match cpu {
            Some(cpu) => {
                stat.per_cpu.insert(cpu, ticks);
            }
            None => stat.total = Some(ticks),
        }
    }
    if stat.per_cpu.is_empty() {
        return Err("no cpuN lines".into());
    }
    Ok(stat)
}

/// `/proc/stat` under `proc_dir`.
pub(crate) fn cpu_stat(proc_dir: &Path) -> Result<CpuStat, SysError> {
    parse_text(&proc_dir.join("stat"), parse)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::write;

    #[test]
    fn total_and_per_cpu_lines_by_number() {
        // CPU 1 is offline: the kernel leaves it out.
        let s = parse(
            "cpu  100 5 50 1000 20 1 2 30 0 0\ncpu0 1 2 3 4\ncpu2 10 0 5 100 1 2 3 4 5 6\n\
             intr 1 2 3\nctxt 9\n",
        )
        .unwrap();
        let total = s.total.unwrap();
        assert_eq!((total.user, total.idle, total.steal), (100, 1000, Some(30)));
        assert_eq!(s.per_cpu.keys().copied().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(s.per_cpu[&0].iowait, None);
        assert_eq!(s.per_cpu[&2].softirq, Some(3));
        assert_eq!(s.per_cpu[&2].steal, Some(4));
        assert!(parse("intr 1 2 3\n").is_err());
        assert!(parse("cpu0 1 2\n").is_err());
        // The aggregate line alone is not enough.
        assert!(parse("cpu 1 2 3 4 5 6 7 8\n").is_err());
    }

    #[test]
    fn reads_under_a_root_and_live() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            cpu_stat(dir.path()),
            Err(SysError::Read { path, .. }) if path == dir.path().join("stat")
        ));
        write(dir.path(), "stat", "cpu0 1 2\n");
        let err = cpu_stat(dir.path()).unwrap_err();
        assert!(err.to_string().contains("fewer than 4 counters"), "{err}");
        let live = cpu_stat(Path::new("/proc")).unwrap();
        assert!(live.total.is_some() && !live.per_cpu.is_empty());
    }
}
