//! Where a program's threads ran, checked against the plan: each thread in creation order on
//! its place (a forked process from its own place, as the pinning library's log says), the
//! windows in which a thread may still be elsewhere left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::plan::{Mechanism, PerThread, SkipMask, made_after};
use crate::placement::Placement;
use crate::program::watch::Sample;
use crate::sys::{format_list, set_to_vec};

/// A thread seen outside its planned place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffPlace {
    /// Its process.
    pub pid: i32,
    /// Its thread id.
    pub tid: i32,
    /// Its name, as last seen.
    pub name: String,
    /// Its position in its process's creation order (0 = the main thread).
    pub thread: usize,
    /// The CPUs planned for it (the union of the places for a skipped helper).
    pub planned: String,
    /// The CPUs it was seen on outside them.
    pub seen: Vec<usize>,
}

/// What a run of an external program records about its placement (`pinning` in `runs.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRecord {
    /// How the placement reached the program.
    pub mechanism: Mechanism,
    /// The skip mask the library applied (with `preload` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipMask>,
    /// Threads of the program the run's sampling saw.
    pub threads_seen: usize,
    /// Processes of the program's tree the run's sampling saw (0 in folders of coretune 0.1).
    #[serde(default)]
    pub processes_seen: usize,
    /// Threads seen outside their planned places: the run is flagged when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_place: Vec<OffPlace>,
}

impl PinRecord {
    /// Whether the run is flagged: a thread was seen outside its planned place.
    pub fn is_flagged(&self) -> bool {
        !self.off_place.is_empty()
    }
}

/// What the pinning library's log (`CORETUNE_PIN_LOG`, one per run) says of each process: the
/// place its main thread was given — 0 for an image the library started in
/// (`exec PID NS cpus=LIST [rank=R]`), its fork place for a process forked without `exec`
/// (`fork PARENT PID PLACE NS`) — and when (`CLOCK_MONOTONIC`, nanoseconds); for an image, the
/// CPUs it could run on when it started and its MPI rank. A later line of a pid wins: a forked
/// child that `exec`s starts again from place 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PinLog {
    places: BTreeMap<i32, LogEntry>,
}

/// One process in a [`PinLog`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LogEntry {
    place: usize,
    at: u64,
    cpus: Option<Vec<usize>>,
    rank: Option<usize>,
}

/// A process an MPI launcher started, as the pinning library saw it start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRank {
    /// Its pid.
    pub pid: i32,
    /// Its rank.
    pub rank: usize,
    /// The CPUs it could run on when its image started (what the launcher bound it to).
    pub cpus: Vec<usize>,
}

impl PinLog {
    /// The log's text read; lines it does not know are left out.
    pub fn parse(text: &str) -> Self {
        let mut places = BTreeMap::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_ascii_whitespace().collect();
            let number = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
            let field = |name: &str| {
                words
                    .iter()
                    .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
            };
            let (pid, place, at) = match words.first() {
                Some(&"exec") => (number(1), Some(0), number(2)),
                Some(&"fork") => (number(2), number(3), number(4)),
                _ => continue,
            };
            let (Some(pid), Some(place), Some(at)) = (pid, place, at) else {
                continue;
            };
            let (Ok(pid), Ok(place)) = (i32::try_from(pid), usize::try_from(place)) else {
                continue;
            };
            places.insert(
                pid,
                LogEntry {
                    place,
                    at,
                    cpus: field("cpus").and_then(crate::sys::parse_list),
                    rank: field("rank").and_then(|r| r.parse().ok()),
                },
            );
        }
        Self { places }
    }

    /// The log of file `path` (empty when it cannot be read).
    pub fn read(path: &std::path::Path) -> Self {
        std::fs::read_to_string(path)
            .map(|t| Self::parse(&t))
            .unwrap_or_default()
    }

    /// The place process `pid` was given and when, if the library logged it.
    pub fn place_of(&self, pid: i32) -> Option<(usize, u64)> {
        self.places.get(&pid).map(|e| (e.place, e.at))
    }

    /// How many processes the library placed.
    pub fn processes(&self) -> usize {
        self.places.len()
    }

    /// The MPI ranks the log names, in pid order.
    pub fn ranks(&self) -> Vec<LoggedRank> {
        self.places
            .iter()
            .filter_map(|(&pid, e)| {
                Some(LoggedRank {
                    pid,
                    rank: e.rank?,
                    cpus: e.cpus.clone()?,
                })
            })
            .collect()
    }
}

/// Checks the samples of a run against the plan: in every process but `own_pid` (coretune),
/// threads are numbered in creation order (by start time, then thread id — tids are handed
/// out in order), each planned as [`PerThread::planned_from`] says from the process's own place
/// (a skipped helper, and every thread under `process-set`, on the union of the places), and
/// every sample that found a thread on a CPU outside its plan is reported — except, within the
/// union, a new thread at its first sample (it may not have left its creator's CPU yet), and
/// the main thread while its process has no other thread, until the library's `log` says the
/// process was placed (before, it may be between `fork` and `exec`, or before the constructor).
///
/// With a `log`, each process's own place is the one the log gives it, and a process the
/// log does not name (the library did not load in it: a static program it started) is checked
/// against the union only; without one, every process starts at place 0.
pub fn check_samples(
    samples: &[Sample],
    own_pid: i32,
    per_thread: &PerThread,
    placement: &Placement,
    log: Option<&PinLog>,
) -> PinRecord {
    /// One thread over the samples.
    struct Seen {
        name: String,
        started: u64,
        /// The CPU it was on at each sample that counts, in sample order.
        cpus: Vec<usize>,
    }
    let union = set_to_vec(&placement.union());
    // pid → tid → what was seen of it.
    let mut procs: BTreeMap<i32, BTreeMap<i32, Seen>> = BTreeMap::new();
    for s in samples {
        let mut per_process: BTreeMap<i32, usize> = BTreeMap::new();
        for t in s.threads.iter().filter(|t| t.pid != own_pid) {
            *per_process.entry(t.pid).or_insert(0) += 1;
        }
        for t in s.threads.iter().filter(|t| t.pid != own_pid) {
            let threads = procs.entry(t.pid).or_default();
            let first = !threads.contains_key(&t.tid);
            let seen = threads.entry(t.tid).or_insert_with(|| Seen {
                name: t.name.clone(),
                started: t.started.unwrap_or(0),
                cpus: Vec::new(),
            });
            seen.name.clone_from(&t.name);
            // Two windows in which a thread may be seen elsewhere without anything having gone
            // wrong: the main thread while its process has no other thread (between `fork` and
            // `exec`, and before the library's constructor has run), and, within the union, a
            // new thread at its first sample (it starts on its creator's CPUs, and glibc
            // applies the attributes' CPU set right after `clone`).
            let placed = log
                .and_then(|l| l.place_of(t.pid))
                .is_some_and(|(_, at)| s.at_ns.is_some_and(|now| now > at));
            let window = if t.tid == t.pid {
                per_process.get(&t.pid) == Some(&1) && !placed
            } else {
                first && union.contains(&t.cpu)
            };
            if !window {
                seen.cpus.push(t.cpu);
            }
        }
    }
    let mut record = PinRecord {
        mechanism: per_thread.mechanism,
        skip: (per_thread.mechanism == Mechanism::Preload).then_some(per_thread.skip),
        threads_seen: 0,
        processes_seen: 0,
        off_place: Vec::new(),
    };
    for (pid, threads) in procs {
        let mut order: Vec<(i32, Seen)> = threads.into_iter().collect();
        // The main thread (tid = pid) first, then by start time and order of creation.
        order.sort_by_key(|(tid, seen)| (*tid != pid, seen.started, made_after(pid, *tid)));
        let plan = match log {
            None => per_thread.planned(order.len()),
            Some(log) => match log.place_of(pid) {
                Some((base, _)) => per_thread.planned_from(order.len(), base),
                None => vec![None; order.len()],
            },
        };
        record.threads_seen += order.len();
        record.processes_seen += 1;
        for (i, (tid, seen)) in order.into_iter().enumerate() {
            let planned = plan[i].unwrap_or(&union);
            if let Some(outside) = off_place(&seen.cpus, planned) {
                record.off_place.push(OffPlace {
                    pid,
                    tid,
                    name: seen.name,
                    thread: i,
                    planned: format_list(planned),
                    seen: outside,
                });
            }
        }
    }
    record
}

/// The CPUs outside `planned` that a thread seen on `seen` (one CPU per sample, in order) was
/// on, when it is out of its place: when it was outside at its last sample, where it stayed.
/// An excursion before is forgiven: a program may move its own threads for a while and put
/// them back — hwloc's x86 discovery, which an Open MPI rank runs in `MPI_Init`, binds the
/// main thread to each allowed PU in turn to read its CPUID (here for 200 ms of a 300 ms rank)
/// and then restores its binding — while a thread moved for good is caught.
pub(crate) fn off_place(seen: &[usize], planned: &[usize]) -> Option<Vec<usize>> {
    if seen.last().is_none_or(|c| planned.contains(c)) {
        return None;
    }
    let mut cpus: Vec<usize> = seen
        .iter()
        .copied()
        .filter(|c| !planned.contains(c))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::placement::{Binding, Policy, plan};
    use crate::program::pin::{ProgramInfo, per_thread};
    use crate::program::watch::ThreadSample;
    use crate::topology::{Topology, TopologySource};
    use std::path::Path;

    fn placement(n: usize, binding: Binding) -> Placement {
        let topo = Topology::load(&TopologySource::Synthetic("core:2 pu:2".into())).unwrap();
        plan(&topo, n, Policy::Cores, None, binding).unwrap()
    }

    #[test]
    fn threads_made_after_a_pid_wrap_sort_after_the_main_thread() {
        // pid_max 32768: the main thread 32613, then 32614, then (wrapped) 334 and 335.
        let mut tids = vec![335, 32614, 334, 32613];
        tids.sort_by_key(|&t| made_after(32613, t));
        assert_eq!(tids, [32613, 32614, 334, 335]);
    }

    fn seen(pid: i32, tid: i32, cpu: usize) -> ThreadSample {
        ThreadSample {
            pid,
            tid,
            name: format!("t{tid}"),
            cpu,
            migrations: None,
            started: Some(100),
            cpu_time_s: None,
            tree: None,
        }
    }

    #[test]
    fn samples_are_checked_against_each_threads_place() {
        let p = placement(2, Binding::Pu); // places {0}, {2}
        let fine = ProgramInfo {
            path: "/bin/x".into(),
            obstacle: None,
            openmp: None,
            pool: false,
        };
        let pt = per_thread(&fine, Ok(Path::new("/l.so")), &p, Some(SkipMask(0b10)));
        let sample = |threads| Sample {
            t_s: 0.0,
            cpus: Vec::new(),
            threads,
            irqs: Default::default(),
            softirqs: Default::default(),
            policies: Default::default(),
            at_ns: None,
        };
        let good = [
            sample(vec![seen(1, 99, 3), seen(50, 50, 0), seen(50, 51, 2)]),
            // Thread 52 is the skipped helper: anywhere in the union; 53 is back on place 0.
            sample(vec![seen(50, 50, 0), seen(50, 52, 2), seen(50, 53, 0)]),
        ];
        let record = check_samples(&good, 1, &pt, &p, None);
        assert_eq!(
            (record.threads_seen, record.is_flagged()),
            (4, false),
            "{record:?}"
        );
        assert_eq!(record.skip, Some(SkipMask(2)));
        // Before the constructor: main alone, anywhere in the union; a new thread's first
        // sample on its creator's CPU.
        let windows = [
            sample(vec![seen(50, 50, 2)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 0)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 2)]),
        ];
        assert!(!check_samples(&windows, 1, &pt, &p, None).is_flagged());
        // Outside the union even at the first sample, and back on the wrong CPU later.
        let bad = [
            sample(vec![seen(50, 50, 0), seen(50, 51, 2), seen(50, 52, 1)]),
            sample(vec![seen(50, 50, 0), seen(50, 51, 0)]),
        ];
        let record = check_samples(&bad, 1, &pt, &p, None);
        let off: Vec<(i32, usize, &str, &[usize])> = record
            .off_place
            .iter()
            .map(|o| (o.tid, o.thread, o.planned.as_str(), o.seen.as_slice()))
            .collect();
        assert_eq!(off, [(51, 1, "2", &[0][..]), (52, 2, "0,2", &[1][..])]);
    }
}
