//! `/sys/devices/system/cpu`: the online and isolated CPU lists, and the CPU settings that change
//! timings (cpufreq governors, boost, SMT control, isolated and `nohz_full` CPUs).

use std::collections::BTreeMap;
use std::path::Path;

use super::files::{first_line, parse_text};
use crate::sys::cpu_list::parse_list;
use crate::sys::error::SysError;
use crate::sys::types::CpuSettings;

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

/// The CPU settings under `root` (`/` for the live machine); what is absent stays `None` (empty
/// for the governors), nothing is guessed.
pub(crate) fn cpu_settings(root: &Path) -> CpuSettings {
    let cpu = root.join("sys/devices/system/cpu");
    let line = |rel: &str| first_line(&cpu.join(rel)).ok();
    let online = online_cpus(root).unwrap_or_default();
    let governors: BTreeMap<usize, String> = online
        .iter()
        .filter_map(|&n| Some((n, line(&format!("cpu{n}/cpufreq/scaling_governor"))?)))
        .collect();
    // acpi-cpufreq and amd-pstate: `cpufreq/boost` 1 = on; intel_pstate: `no_turbo` 1 = off.
    let boost = line("cpufreq/boost")
        .map(|v| v == "1")
        .or_else(|| line("intel_pstate/no_turbo").map(|v| v == "0"));
    // `nohz_full` reads "(null)" on kernels built with it but booted without it.
    let nohz_full = std::fs::read_to_string(cpu.join("nohz_full"))
        .ok()
        .map(|text| parse_list(&text).unwrap_or_default());
    CpuSettings {
        governors,
        boost,
        smt_control: line("smt/control"),
        isolated: isolated_cpus(root).ok(),
        nohz_full,
    }
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

    #[test]
    fn cpu_settings_say_what_is_there_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "sys/devices/system/cpu/online", "0-2\n");
        // A VM: no cpufreq, no SMT control, no isolation files.
        assert_eq!(cpu_settings(root), CpuSettings::default());
        write(
            root,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "powersave\n",
        );
        write(
            root,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        );
        write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
        write(root, "sys/devices/system/cpu/smt/control", "on\n");
        write(root, "sys/devices/system/cpu/isolated", "2\n");
        write(root, "sys/devices/system/cpu/nohz_full", "(null)\n");
        let s = cpu_settings(root);
        assert_eq!(
            s.governors,
            BTreeMap::from([(0, "powersave".to_owned()), (1, "performance".to_owned())])
        );
        assert_eq!(s.boost, Some(true));
        assert_eq!(s.smt_control.as_deref(), Some("on"));
        assert_eq!(s.isolated, Some(vec![2]));
        assert_eq!(s.nohz_full, Some(vec![]));
        // acpi-cpufreq's switch wins over intel_pstate's, and says off.
        write(root, "sys/devices/system/cpu/cpufreq/boost", "0\n");
        write(root, "sys/devices/system/cpu/nohz_full", "1-2\n");
        let s = cpu_settings(root);
        assert_eq!(s.boost, Some(false));
        assert_eq!(s.nohz_full, Some(vec![1, 2]));
    }
}
