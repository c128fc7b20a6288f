// Linux's /proc files, for the tests that lay a tree out (Linux only).
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

use super::*;
use crate::test_util::{INTERRUPTS, SOFTIRQS, sched, task_stat, write};
use crate::topology::TopologySource;

const STAT_0: &str = "cpu  200 0 100 1000 0 0 0 0 0 0
cpu0 100 0 50 500 0 0 0 0 0 0
cpu1 100 0 50 500 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
";
// CPU 0: +10 busy of +100; CPU 1: +90 busy (user 80, softirq 10) of +100.
const STAT_1: &str = "cpu  300 0 100 1100 0 0 10 0 0 0
cpu0 110 0 50 590 0 0 0 0 0 0
cpu1 180 0 50 510 0 0 10 0 0 0
intr 12400 0 0
";
const INTERRUPTS_1: &str = "           CPU0       CPU1       
  1:          9          0   IO-APIC   1-edge      i8042
 24:        160         10   PCI-MSI 49152-edge      virtio0-config
LOC:       1100        520   Local timer interrupts
ERR:          0
";
// Linux's /proc/stat in a folder.
#[cfg(target_os = "linux")]
#[test]
fn cpu_times_are_busy_and_total() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "stat", STAT_1);
    let stat = sys::cpu_stat(tmp.path()).unwrap();
    assert_eq!(
        CpuTimes::of(&stat.per_cpu[&1]),
        CpuTimes {
            busy: 240,
            total: 750
        }
    );
}

// A Linux /proc tree in a folder.
#[cfg(target_os = "linux")]
#[test]
fn sampler_reads_a_proc_tree_with_descendants() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, "stat", STAT_0);
    write(root, "interrupts", INTERRUPTS);
    write(root, "softirqs", SOFTIRQS);
    // Process 10 with two threads; its child 20 with one; 30 is unrelated.
    write(root, "10/stat", &task_stat(10, "app", 1, 0));
    write(root, "10/task/10/stat", &task_stat(10, "app", 1, 0));
    write(root, "10/task/10/sched", &sched(1));
    write(root, "10/task/11/stat", &task_stat(11, "worker 1", 1, 1));
    write(root, "10/task/11/sched", &sched(5));
    write(root, "20/stat", &task_stat(20, "sh", 10, 1));
    write(root, "20/task/20/stat", &task_stat(20, "sh", 10, 1));
    write(root, "30/stat", &task_stat(30, "other", 1, 0));
    write(root, "30/task/30/stat", &task_stat(30, "other", 1, 0));

    let mut sampler = Sampler::new(root, Some(10), true).unwrap();
    write(root, "stat", STAT_1);
    write(root, "interrupts", INTERRUPTS_1);
    let a = sampler.sample().unwrap();
    assert_eq!(a.cpus.len(), 2);
    assert!((a.cpus[0].busy_pct - 10.0).abs() < 1e-9);
    assert!((a.cpus[1].busy_pct - 90.0).abs() < 1e-9);
    assert_eq!(a.irqs[&0], 160);
    assert_eq!(a.irqs[&1], 20);
    assert_eq!(a.softirqs[&0], 0);
    let tids: Vec<i32> = a.threads.iter().map(|t| t.tid).collect();
    assert_eq!(tids, [10, 11, 20]);
    assert_eq!(a.threads[2].migrations, None);

    // Thread 11 moves to CPU 0 and migrates twice more; nothing else changes.
    write(root, "10/task/11/stat", &task_stat(11, "worker 1", 1, 0));
    write(root, "10/task/11/sched", &sched(7));
    let b = sampler.sample().unwrap();
    assert!(b.cpus.iter().all(|c| c.busy_pct == 0.0));

    let sum = summarize(&[a, b]);
    assert_eq!(sum.samples, 2);
    assert_eq!(sum.cpus.len(), 2);
    assert!((sum.cpus[1].busy_pct - 45.0).abs() < 1e-9);
    let worker = sum.threads.iter().find(|t| t.tid == 11).unwrap();
    assert_eq!(worker.name, "worker 1");
    assert_eq!(worker.cpus_seen.get(&0), Some(&1));
    assert_eq!(worker.cpus_seen.get(&1), Some(&1));
    assert_eq!(worker.migrations, Some(2));
    assert_eq!(sum.interrupts.per_cpu[&0], 160);
    assert!((sum.interrupts.cpu0_share.unwrap() - 160.0 / 180.0).abs() < 1e-9);
    assert_eq!(sum.softirqs.cpu0_share, None);
    // Map keys are strings in JSON, as scripts expect.
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["threads"][0]["cpus_seen"]["0"], 2);

    // Without descendants only process 10's threads; an unknown pid is an error.
    let mut own = Sampler::new(root, Some(10), false).unwrap();
    assert_eq!(own.sample().unwrap().threads.len(), 2);
    assert!(matches!(
        Sampler::new(root, Some(99), false),
        Err(WatchError::Sys(SysError::NoProcess { pid: 99 }))
    ));
    assert!(own.is_alive());
    write(
        root,
        "10/stat",
        &task_stat(10, "app", 1, 0).replace(" R ", " Z "),
    );
    assert!(!own.is_alive());
}

#[test]
fn live_sampler_and_monitor_work_on_this_machine() {
    let mut s = Sampler::live(None, false).unwrap();
    let sample = s.sample().unwrap();
    assert!(!sample.cpus.is_empty());
    assert!(sample.threads.is_empty());
    let m = Monitor::start_self(Duration::from_millis(5)).unwrap();
    let own = sys::current_tid().unwrap();
    let samples = m.finish();
    assert!(!samples.is_empty());
    let last = samples.last().unwrap();
    if sys::THREADS_VISIBLE {
        // This thread is there; the sampling thread is not.
        assert!(last.threads.iter().any(|t| t.tid == own));
        assert!(last.threads.iter().all(|t| t.name != "coretune-monito"));
    } else {
        // Windows does not say where another thread runs: no thread is sampled, none made up.
        assert!(last.threads.is_empty(), "{last:?}");
        assert!(!last.cpus.is_empty());
    }
}

#[test]
fn places_group_pus_by_core_l3_and_numa() {
    let topo = Topology::load(&TopologySource::Synthetic(
        "pack:1 numa:2 l3:1 core:2 pu:2".into(),
    ))
    .unwrap();
    let places = cpu_places(&topo);
    assert_eq!(places.len(), 8);
    assert_eq!(places[0].core, places[1].core);
    assert_ne!(places[1].core, places[2].core);
    assert_eq!(places[3].numa, Some(0));
    assert_eq!(places[4].numa, Some(1));
    assert_eq!(places[4].l3, Some(1));
}

#[test]
fn a_thread_that_execs_is_summarised_once_per_name() {
    let sample = |t_s: f64, name: &str, cpu: usize, migrations: u64| Sample {
        t_s,
        cpus: Vec::new(),
        threads: vec![ThreadSample {
            pid: 5,
            tid: 5,
            name: name.into(),
            cpu,
            migrations: Some(migrations),
            started: None,
            cpu_time_s: Some(t_s * 0.5),
            tree: None,
        }],
        irqs: BTreeMap::new(),
        softirqs: BTreeMap::new(),
        policies: Default::default(),
        at_ns: None,
    };
    // A launcher's forked child on CPU 0 before its exec, then `sh` on CPU 1, where the
    // launcher put it.
    let sum = summarize(&[
        sample(0.0, "coretune", 0, 3),
        sample(0.1, "sh", 1, 4),
        sample(0.2, "sh", 1, 4),
    ]);
    let names: Vec<(&str, Vec<usize>)> = sum
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.cpus_seen.keys().copied().collect()))
        .collect();
    assert_eq!(names, [("sh", vec![1]), ("coretune", vec![0])]);
    // Migrations count from each entry's first sample: none while `sh` ran.
    assert_eq!(sum.threads[0].migrations, Some(0));
    // CPU time grew 0.05 s over the 0.1 s between `sh`'s samples: half a CPU.
    let sh = &sum.threads[0];
    assert!((sh.cpu_time_s.unwrap() - 0.05).abs() < 1e-9, "{sh:?}");
    assert!((sh.cpu_pct.unwrap() - 50.0).abs() < 1e-6, "{sh:?}");
    // One sample: CPU time 0, no percentage.
    assert_eq!(
        (sum.threads[1].cpu_time_s, sum.threads[1].cpu_pct),
        (Some(0.0), None)
    );
}
