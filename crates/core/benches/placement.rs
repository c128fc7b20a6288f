//! Planning at scale (issue 12): `plan` and hwloc-distrib's split for 4096 threads on a
//! 4096-PU synthetic machine (`pack:16 numa:4 l3:2 core:16 pu:2`), target under 100 ms each.
//! The topology is loaded once, outside the timings (hwloc's synthetic load is not ours).
//!
//! `cargo bench -p coretune-core --bench placement` times each row 11 times and prints the
//! median, the fastest and the target verdict. Without `--bench` (as under `cargo test
//! --benches`) it is a smoke test: a 64-PU machine, 64 threads, one repetition.

#![allow(clippy::unwrap_used)] // a bench: a failed plan is a bug to see at once

use std::hint::black_box;
use std::time::{Duration, Instant};

use coretune_core::hwloc::{DistribOptions, hwloc_distrib};
use coretune_core::placement::distribute;
use coretune_core::{Binding, Policy, Topology, TopologySource, plan};

/// The machine of the target, and the smoke test's.
const FULL: (&str, usize) = ("pack:16 numa:4 l3:2 core:16 pu:2", 4096);
const SMOKE: (&str, usize) = ("pack:2 numa:2 l3:2 core:4 pu:2", 64);

/// Issue 12: planning 4096 threads takes less than this.
const TARGET: Duration = Duration::from_millis(100);

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let ((description, threads), reps) = if full { (FULL, 11) } else { (SMOKE, 1) };
    let topo = Topology::load(&TopologySource::Synthetic(description.to_owned()))
        .expect("the synthetic machine loads");
    assert_eq!(topo.counts().pus, threads, "{description}");
    println!("machine '{description}' ({threads} PUs), {threads} threads, {reps} repetitions");
    println!(
        "{:<28} {:>12} {:>12}  target < {} ms",
        "row",
        "median",
        "fastest",
        TARGET.as_millis()
    );
    type Row<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let topo = &topo;
    let rows: Vec<Row<'_>> = vec![
        (
            "plan spread/pu",
            Box::new(move || {
                black_box(plan(topo, threads, Policy::Spread, None, Binding::Pu).unwrap());
            }),
        ),
        (
            "plan spread/share",
            Box::new(move || {
                black_box(plan(topo, threads, Policy::Spread, None, Binding::Share).unwrap());
            }),
        ),
        (
            "plan spread/pu 2x threads",
            Box::new(move || {
                black_box(plan(topo, 2 * threads, Policy::Spread, None, Binding::Pu).unwrap());
            }),
        ),
        (
            "plan compact/core",
            Box::new(move || {
                black_box(plan(topo, threads, Policy::Compact, None, Binding::Core).unwrap());
            }),
        ),
        (
            "plan cores/shared",
            Box::new(move || {
                black_box(plan(topo, threads, Policy::Cores, None, Binding::Shared).unwrap());
            }),
        ),
        (
            "distribute",
            Box::new(move || {
                black_box(distribute(topo, threads, None).unwrap());
            }),
        ),
        (
            "hwloc_distrib --reverse",
            Box::new(move || {
                let options = DistribOptions {
                    reverse: true,
                    ..DistribOptions::default()
                };
                black_box(hwloc_distrib(topo, threads, &options).unwrap());
            }),
        ),
        (
            "steal_near (place --json)",
            Box::new(move || {
                let p = plan(topo, threads, Policy::Spread, None, Binding::Pu).unwrap();
                black_box(p.steal_near());
            }),
        ),
    ];
    let mut slow = Vec::new();
    for (name, run) in &rows {
        let mut times: Vec<Duration> = (0..reps)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed()
            })
            .collect();
        times.sort();
        let median = times[times.len() / 2];
        let verdict = if median < TARGET { "ok" } else { "SLOW" };
        if median >= TARGET {
            slow.push(*name);
        }
        println!(
            "{name:<28} {:>9.2} ms {:>9.2} ms  {verdict}",
            median.as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3
        );
    }
    if full && !slow.is_empty() {
        println!("over the target: {}", slow.join(", "));
    }
}
