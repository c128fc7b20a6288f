//! A command started through `launch::run` starts with the CPU set applied, and
//! `launch::rebind_process` moves every thread of a running process (Linux only; uses the live
//! machine's CPU 0, which every machine has, and changes no state of the test process).
#![cfg(target_os = "linux")]

use std::process::Command;

use coretune_core::{affinity_of, rebind_process, run_program as run};
use coretune_core::{set_from_indexes, set_to_vec};

#[test]
fn child_starts_bound_and_running_process_is_rebound() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("status");
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!(
        "grep Cpus_allowed_list /proc/self/status > {}",
        out.display()
    ));
    let status = run(cmd, Some(&set_from_indexes([0]))).unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.split_whitespace().nth(1), Some("0"), "{text}");

    let mut sleeper = Command::new("sleep").arg("5").spawn().unwrap();
    let pid = sleeper.id();
    let tids = rebind_process(pid, &set_from_indexes([0])).unwrap();
    assert_eq!(tids, vec![i32::try_from(pid).unwrap()]);
    assert_eq!(set_to_vec(&affinity_of(tids[0]).unwrap()), vec![0]);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}
