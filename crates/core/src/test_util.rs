//! Helpers shared by the unit tests.
// Fake /proc and /sys files, read by Linux's platform layer: unused elsewhere.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::path::Path;

/// Writes `text` to `root/rel`, creating the folders on the way: a fake `/proc` or `/sys` file.
pub(crate) fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file under root")).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A `/proc/PID/task/TID/stat` line of a thread named `name` (with a space and a parenthesis, as
/// real names may have) on `cpu`, child of `ppid`.
pub(crate) fn task_stat(pid: i32, name: &str, ppid: i32, cpu: usize) -> String {
    let mut fields: Vec<String> = (3..=52).map(|_| "0".to_owned()).collect();
    fields[0] = "R".into();
    fields[1] = ppid.to_string();
    fields[39 - 3] = cpu.to_string();
    format!("{pid} ({name}) {}\n", fields.join(" "))
}

/// A `/proc/PID/task/TID/sched` file of a thread that migrated `migrations` times.
pub(crate) fn sched(migrations: u64) -> String {
    format!(
        "worker (42, #threads: 2)\n-------------------\nse.exec_start : 1.0\nse.nr_migrations   :   {migrations}\nnr_switches : 3\n"
    )
}

/// A `/proc/PID/status` file as Linux 6.x writes it, with this `Cpus_allowed_list`, real uid
/// and `VmHWM` (in kB).
pub(crate) fn status(cpus_allowed_list: &str, uid: u32, vm_hwm_kb: u64) -> String {
    format!(
        "Name:\tcoretune\nUmask:\t0022\nState:\tR (running)\nTgid:\t42\nNgid:\t0\nPid:\t42\n\
         PPid:\t1\nTracerPid:\t0\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t0\t0\t0\t0\n\
         FDSize:\t256\nGroups:\t \nNStgid:\t42\nNSpid:\t42\nNSpgid:\t42\nNSsid:\t1\n\
         Kthread:\t0\nVmPeak:\t    3060 kB\nVmSize:\t    3060 kB\nVmLck:\t       0 kB\n\
         VmPin:\t       0 kB\nVmHWM:\t    {vm_hwm_kb} kB\nVmRSS:\t    1636 kB\n\
         RssAnon:\t     112 kB\nRssFile:\t    1524 kB\nRssShmem:\t       0 kB\n\
         VmData:\t     360 kB\nVmStk:\t     132 kB\nVmExe:\t      20 kB\nVmLib:\t    1528 kB\n\
         VmPTE:\t      48 kB\nVmSwap:\t       0 kB\nHugetlbPages:\t       0 kB\n\
         CoreDumping:\t0\nTHP_enabled:\t1\nThreads:\t1\nSigQ:\t0/96365\n\
         SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n\
         SigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\nCapInh:\t0000000000000000\n\
         CapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n\
         CapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n\
         Speculation_Store_Bypass:\tvulnerable\nCpus_allowed:\tffff\n\
         Cpus_allowed_list:\t{cpus_allowed_list}\nMems_allowed:\t00000001\n\
         Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n"
    )
}

/// A `/proc/interrupts`: 1109 on CPU 0 and 510 on CPU 1, less the single-column `ERR:` row.
pub(crate) const INTERRUPTS: &str = "           CPU0       CPU1       
  1:          9          0   IO-APIC   1-edge      i8042
 24:        100         10   PCI-MSI 49152-edge      virtio0-config
LOC:       1000        500   Local timer interrupts
ERR:          0
";

/// A `/proc/softirqs`: 101 on CPU 0, 50 on CPU 1.
pub(crate) const SOFTIRQS: &str = "                    CPU0       CPU1
          HI:          1          0
       TIMER:        100         50
";

/// Says that the calling test is skipped and why — or, under `CORETUNE_TEST_STRICT=1` (what
/// `make test` sets: its set-up installs every tool, and it runs as root), fails it: a skip there
/// would pass having checked nothing. The caller returns after it.
#[track_caller]
pub(crate) fn skip(why: impl std::fmt::Display) {
    assert!(
        std::env::var_os("CORETUNE_TEST_STRICT").is_none_or(|v| v != "1"),
        "skipped under CORETUNE_TEST_STRICT=1 (make test), which must check everything: {why}"
    );
    eprintln!("skipped: {why}");
}
