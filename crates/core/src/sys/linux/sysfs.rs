//! `/sys/devices/system/cpu`: the online and isolated CPU lists, and a CPU's cpufreq governor.

use std::path::Path;

use super::files::{first_line, parse_text};
use crate::sys::SysError;
use crate::sys::parse_list;

/// A CPU-list file under `root`.
fn cpu_list_file(root: &Path, rel: &str) -> Result<Vec<usize>, SysError> {
    parse_text(&root.join(rel), |text| {
        parse_list(text).ok_or_else(|| format!("'{}' is not a CPU list", text.trim()))
    })
}

/// The online CPUs (`sys/devices/system/cpu/online` under `root`, `/` for the live machine).
pub(crate) fn online_cpus(root: &Path) -> Result<Vec<usize>, SysError> {
    cpu_list_file(root, "sys/devices/system/cpu/online")
}

/// The CPUs isolated from the scheduler's load balancing by `isolcpus=`
/// (`sys/devices/system/cpu/isolated` under `root`).
pub(crate) fn isolated_cpus(root: &Path) -> Result<Vec<usize>, SysError> {
    cpu_list_file(root, "sys/devices/system/cpu/isolated")
}

/// The cpufreq governor of `cpu`, when the kernel exposes one (VMs often do not).
pub(crate) fn cpu_governor(cpu: usize) -> Result<String, SysError> {
    first_line(Path::new(&format!(
        "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
    )))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::write;

    #[test]
    fn cpu_lists_under_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "sys/devices/system/cpu/online", "0-3,6\n");
        write(root, "sys/devices/system/cpu/isolated", "\n");
        assert_eq!(online_cpus(root).unwrap(), [0, 1, 2, 3, 6]);
        assert_eq!(isolated_cpus(root).unwrap(), Vec::<usize>::new());
        write(root, "sys/devices/system/cpu/online", "3-1\n");
        let err = online_cpus(root).unwrap_err();
        assert!(
            err.to_string().ends_with("'3-1' is not a CPU list"),
            "{err}"
        );
        assert!(online_cpus(Path::new("/")).unwrap().contains(&0));
    }
}
