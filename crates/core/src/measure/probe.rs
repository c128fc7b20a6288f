//! What one run costs, measured the same way for `coretune bench` and every run of a sweep.
//!
//! A [`Probe`] is started on the thread that will start the workload's threads and finished
//! after they are joined. It records:
//!
//! - wall time (monotonic clock);
//! - user and system CPU time and voluntary/involuntary context switches of the whole process
//!   (`getrusage(RUSAGE_SELF)`, which includes threads that have already exited);
//! - CPU migrations of the worker threads: each worker opens the perf software event
//!   `cpu-migrations` on itself as it starts and reads it as it finishes ([`ThreadTracker`]).
//!   (An inherited counter on the starting thread, as `perf stat` uses, was tried and read 0:
//!   a child's counts reach the parent only in the kernel's `perf_event_exit_task`, which runs
//!   after the thread-id futex wakes `pthread_join`, so a read right after joining races with
//!   it.) Where perf events are not allowed (`perf_event_paranoid`, seccomp) the count is the
//!   worker's `se.nr_migrations` from `/proc/thread-self/sched`;
//!   [`Measurement::migrations_source`] says which;
//! - peak resident memory during the run: `/proc/self/clear_refs` is written `5` at the start
//!   (resets the high-water mark, Linux ≥ 4.0) and `VmHWM` read at the end; where that is not
//!   possible, `ru_maxrss` (the process's lifetime peak) is reported and marked as such.
//!
//! Per-thread placement is recorded by the workers themselves through a [`ThreadTracker`]: each
//! samples the CPU it is on (`sched_getcpu`, a vDSO call of a few nanoseconds) at its own work
//! boundaries and reads its migration count when it finishes.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys::{self, MigrationCounter, ResourceUsage, SwitchCounter, UsageOf};

/// Where a migration count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrationSource {
    /// The perf software event `cpu-migrations`, inherited by all threads.
    Perf,
    /// The sum of the worker threads' `se.nr_migrations` (scheduler statistics).
    SchedStat,
    /// Neither was available.
    Unavailable,
}

/// Where the peak RSS figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RssSource {
    /// `VmHWM` after resetting it at the start of the run: the run's own peak.
    Run,
    /// `ru_maxrss`: the process's peak since it started.
    Process,
}

/// One worker thread's view of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// Worker index (0-based, as the placement numbers them).
    pub worker: usize,
    /// Linux thread id.
    pub tid: i32,
    /// CPU number → how many samples found the thread there.
    #[serde(deserialize_with = "cpu_keys::deserialize")]
    pub cpus_seen: BTreeMap<usize, u64>,
    /// Migrations of this thread while it worked, when readable.
    pub migrations: Option<u64>,
    /// Where [`ThreadRecord::migrations`] came from.
    pub migrations_source: Option<MigrationSource>,
    /// This thread's context switches while it worked (voluntary and involuntary together: what
    /// Windows counts per thread), when readable.
    #[serde(default)]
    pub ctx_switches: Option<u64>,
}

/// The measurements of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Wall-clock time.
    #[serde(rename = "wall_s", with = "seconds")]
    pub wall: Duration,
    /// User CPU time of the whole process.
    /// (`None` where the system kept no account of it: a program's process tree under Wine,
    /// whose job objects count nothing; absent, never written as 0.)
    #[serde(rename = "user_s", with = "seconds_opt")]
    pub user: Option<Duration>,
    /// System CPU time of the whole process.
    #[serde(rename = "sys_s", with = "seconds_opt")]
    pub sys: Option<Duration>,
    /// Voluntary context switches (the thread blocked); `None` where the OS does not count
    /// them apart from involuntary ones (Windows), or the count could not be read: absent, never
    /// written as 0.
    pub voluntary_ctx_switches: Option<u64>,
    /// Involuntary context switches (the thread was preempted); `None` likewise.
    pub involuntary_ctx_switches: Option<u64>,
    /// CPU migrations, when known.
    pub migrations: Option<u64>,
    /// Where [`Measurement::migrations`] came from.
    pub migrations_source: MigrationSource,
    /// Peak resident set size in bytes (on Windows the peak working set), `None` when it could not
    /// be read.
    pub peak_rss_bytes: Option<u64>,
    /// Whether the peak is the run's own or the process's lifetime peak.
    pub peak_rss_source: RssSource,
    /// What each worker thread recorded, by worker index.
    pub threads: Vec<ThreadRecord>,
}

/// Serde helpers: a `Duration` as fractional seconds.
pub(crate) mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as `f64` seconds.
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    /// Deserializes from `f64` seconds.
    ///
    /// # Errors
    ///
    /// The deserializer's, or a negative or non-finite value.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
    }
}

/// Serde helpers: an optional `Duration` as fractional seconds or `null`.
pub(crate) mod seconds_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as `f64` seconds, `None` as `null`.
    ///
    /// # Errors
    ///
    /// The serializer's.
    #[allow(clippy::ref_option)] // serde's `with` passes `&Option<T>`
    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    /// Deserializes from `f64` seconds or `null`.
    ///
    /// # Errors
    ///
    /// The deserializer's, or a negative or non-finite value.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Serde helper: a map keyed by CPU number whose keys may arrive as JSON strings (as
/// `serde_json` writes integer keys) even where serde buffers the input — inside a
/// `#[serde(flatten)]`ed parent such as a `runs.jsonl` line, where plain `usize` keys fail
/// with "invalid type: string, expected usize".
mod cpu_keys {
    use std::collections::BTreeMap;
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, Visitor};

    struct Key(usize);

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a CPU number")
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                    usize::try_from(v).map(Key).map_err(E::custom)
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                    v.parse().map(Key).map_err(E::custom)
                }
            }
            d.deserialize_any(V)
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<usize, u64>, D::Error> {
        let m: BTreeMap<Key, u64> = BTreeMap::deserialize(d)?;
        Ok(m.into_iter().map(|(k, v)| (k.0, v)).collect())
    }

    impl PartialEq for Key {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }
    impl Eq for Key {}
    impl PartialOrd for Key {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Key {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0.cmp(&other.0)
        }
    }
}

/// Collects [`ThreadRecord`]s from worker threads.
#[derive(Debug, Default)]
pub struct ThreadTracker {
    records: Mutex<Vec<ThreadRecord>>,
}

/// A worker's handle for recording where it runs; hand the record back with
/// [`ThreadTracker::finish`].
#[derive(Debug)]
pub struct ThreadProbe {
    record: ThreadRecord,
    migrations: Option<MigrationCounter>,
    switches: Option<SwitchCounter>,
}

impl ThreadProbe {
    /// Notes the CPU this thread is on now.
    pub fn sample(&mut self) {
        if let Ok(cpu) = sys::current_cpu() {
            *self.record.cpus_seen.entry(cpu).or_insert(0) += 1;
        }
    }
}

impl ThreadTracker {
    /// A tracker with no records.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called on a worker thread as it starts: takes a first CPU sample.
    pub fn start(&self, worker: usize) -> ThreadProbe {
        // Where perf refuses the counter, `finish` falls back to the scheduler's statistics.
        let migrations = MigrationCounter::open().ok();
        let mut probe = ThreadProbe {
            record: ThreadRecord {
                worker,
                tid: sys::current_tid().unwrap_or(0),
                ..ThreadRecord::default()
            },
            migrations,
            switches: SwitchCounter::open().ok(),
        };
        probe.sample();
        probe
    }

    /// Called on the worker thread as it ends: a last sample and its migration count.
    pub fn finish(&self, mut probe: ThreadProbe) {
        probe.sample();
        probe.record.ctx_switches = probe.switches.as_mut().and_then(|c| c.read().ok());
        let perf = probe.migrations.as_mut().and_then(|c| c.read().ok());
        (probe.record.migrations, probe.record.migrations_source) = match perf {
            Some(n) => (Some(n), Some(MigrationSource::Perf)),
            None => match sys::thread_migrations() {
                Ok(n) => (Some(n), Some(MigrationSource::SchedStat)),
                Err(_) => (None, None),
            },
        };
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(probe.record);
    }

    /// Adds a record made by someone other than the worker (a pool's threads, read from
    /// `/proc` by the workload).
    pub fn push(&self, record: ThreadRecord) {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record);
    }

    /// The records, by worker index.
    pub fn into_records(self) -> Vec<ThreadRecord> {
        let mut records = self
            .records
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        records.sort_by_key(|r| r.worker);
        records
    }
}

/// A run being measured.
#[derive(Debug)]
pub struct Probe {
    start: Instant,
    usage: Option<ResourceUsage>,
    run_peak: bool,
}

impl Probe {
    /// Starts measuring. Call it on the thread that will create the workload's threads.
    pub fn start() -> Self {
        let run_peak = sys::reset_peak_rss().is_ok();
        let usage = sys::resource_usage(UsageOf::ThisProcess).ok();
        Self {
            start: Instant::now(),
            usage,
            run_peak,
        }
    }

    /// Stops measuring, after the workload's threads are joined.
    pub fn finish(self, threads: Vec<ThreadRecord>) -> Measurement {
        let wall = self.start.elapsed();
        let end = sys::resource_usage(UsageOf::ThisProcess).ok();
        let ((user, sys), vcs, ivcs, maxrss) = usage_delta(self.usage.as_ref(), end.as_ref());
        let sources: Vec<_> = threads.iter().map(|t| t.migrations_source).collect();
        let migrations_source = match sources.first() {
            Some(Some(first)) if sources.iter().all(|s| s == &Some(*first)) => *first,
            _ => MigrationSource::Unavailable,
        };
        let migrations = (migrations_source != MigrationSource::Unavailable)
            .then(|| threads.iter().filter_map(|t| t.migrations).sum());
        let hwm = self.run_peak.then(|| sys::peak_rss_bytes().ok()).flatten();
        let (peak_rss_bytes, peak_rss_source) = match hwm {
            Some(bytes) => (Some(bytes), RssSource::Run),
            None => (maxrss, RssSource::Process),
        };
        Measurement {
            wall,
            user,
            sys,
            voluntary_ctx_switches: vcs,
            involuntary_ctx_switches: ivcs,
            migrations,
            migrations_source,
            peak_rss_bytes,
            peak_rss_source,
            threads,
        }
    }
}

/// Measures a child process run by the caller: wall time, and the CPU time, context switches and
/// peak RSS of the program — its own, with the children it waited for, where the OS gives them
/// for the one program (Linux: `wait4` when it is reaped; Windows: its job object, the whole
/// tree) — or else of waited-for children (`getrusage(RUSAGE_CHILDREN)` before and after, so the
/// caller must wait for the child before [`ChildProbe::finish`] and run one child at a time; its
/// peak RSS is the largest child's so far, not this run's).
/// Migrations of another process are not counted.
#[derive(Debug)]
pub struct ChildProbe {
    start: Instant,
    usage: Option<ResourceUsage>,
}

impl ChildProbe {
    /// Starts measuring, just before the child is started.
    pub fn start() -> Self {
        Self {
            usage: sys::resource_usage(UsageOf::Children).ok(),
            start: Instant::now(),
        }
    }

    /// The wall time so far.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Stops measuring, after the child was waited for.
    pub fn finish(self) -> Measurement {
        self.finish_with(None)
    }

    /// A measurement of `wall` with another program's resource use: a server's, while its
    /// client's run is what was timed (no figures without it).
    pub(crate) fn with_usage(wall: Duration, usage: Option<ResourceUsage>) -> Measurement {
        measurement(wall, usage.as_ref().map_or_else(no_usage, own_usage))
    }

    /// [`ChildProbe::finish`] with the tree's own accounting when the OS keeps one.
    pub(crate) fn finish_with(self, tree: Option<ResourceUsage>) -> Measurement {
        self.finish_from(None, tree)
    }

    /// [`ChildProbe::finish_with`], timed from `exec_ns` when the program said when it was about
    /// to `exec` (`CLOCK_MONOTONIC`, nanoseconds: what coretune did to start it — its cgroup
    /// among other things — is not the program's time), else from the probe's start.
    pub(crate) fn finish_from(
        self,
        exec_ns: Option<u64>,
        tree: Option<ResourceUsage>,
    ) -> Measurement {
        let wall = match exec_ns {
            Some(ns) => Duration::from_nanos(sys::monotonic_ns().saturating_sub(ns)),
            None => self.start.elapsed(),
        };
        let usage = match tree {
            Some(tree) => own_usage(&tree),
            None => {
                let end = sys::resource_usage(UsageOf::Children).ok();
                usage_delta(self.usage.as_ref(), end.as_ref())
            }
        };
        measurement(wall, usage)
    }
}

/// What [`usage_delta`] gives: CPU times, voluntary and involuntary switches, peak RSS.
type Usage = (Times, Option<u64>, Option<u64>, Option<u64>);

/// No resource figures.
fn no_usage() -> Usage {
    ((None, None), None, None, None)
}

/// One program's own figures, counted from zero (a count the OS does not keep stays absent).
fn own_usage(usage: &ResourceUsage) -> Usage {
    let zero = ResourceUsage {
        voluntary_ctx_switches: Some(0),
        involuntary_ctx_switches: Some(0),
        ..ResourceUsage::default()
    };
    usage_delta(Some(&zero), Some(usage))
}

/// A child's measurement: its wall time and resource figures.
fn measurement(wall: Duration, ((user, sys), vcs, ivcs, maxrss): Usage) -> Measurement {
    Measurement {
        wall,
        user,
        sys,
        voluntary_ctx_switches: vcs,
        involuntary_ctx_switches: ivcs,
        migrations: None,
        migrations_source: MigrationSource::Unavailable,
        peak_rss_bytes: maxrss,
        peak_rss_source: RssSource::Process,
        threads: Vec::new(),
    }
}

/// The CPU time of a run: user and system.
type Times = (Option<Duration>, Option<Duration>);

/// user, sys, voluntary and involuntary switches between two `getrusage` readings, and the
/// later reading's peak RSS in bytes; all absent when either reading failed (the wall time
/// still stands).
fn usage_delta(a: Option<&ResourceUsage>, b: Option<&ResourceUsage>) -> Usage {
    let count = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
    match (a, b) {
        (Some(a), Some(b)) => (
            (
                Some(b.user.saturating_sub(a.user)),
                Some(b.system.saturating_sub(a.system)),
            ),
            count(a.voluntary_ctx_switches, b.voluntary_ctx_switches),
            count(a.involuntary_ctx_switches, b.involuntary_ctx_switches),
            (b.max_rss_bytes > 0).then_some(b.max_rss_bytes),
        ),
        _ => no_usage(),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn thread_records_read_back_inside_a_flattened_parent() {
        // As a `runs.jsonl` line holds them: the parent flattens another struct, so serde
        // buffers the input and CPU keys arrive as strings.
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Inner {
            x: u8,
        }
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Line {
            #[serde(flatten)]
            inner: Inner,
            threads: Vec<ThreadRecord>,
        }
        let line = Line {
            inner: Inner { x: 1 },
            threads: vec![ThreadRecord {
                worker: 0,
                tid: 7,
                cpus_seen: BTreeMap::from([(1, 3), (12, 1)]),
                migrations: Some(2),
                migrations_source: Some(MigrationSource::Perf),
                ctx_switches: Some(5),
            }],
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.contains(r#""cpus_seen":{"1":3,"12":1}"#), "{text}");
        assert_eq!(serde_json::from_str::<Line>(&text).unwrap(), line);
        assert!(serde_json::from_str::<ThreadRecord>(
            r#"{"worker":0,"tid":1,"cpus_seen":{"x":1},"migrations":null,"migrations_source":null}"#
        )
        .is_err());
    }

    /// Spins until this thread has used `d` of CPU time (not wall time: the machine is shared).
    fn spin(d: Duration) -> u64 {
        let cpu = || sys::thread_cpu_time().unwrap();
        let start = cpu();
        let mut x = 0u64;
        while cpu() - start < d {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        x
    }

    #[test]
    fn measures_cpu_time_switches_and_threads() {
        let tracker = ThreadTracker::new();
        let probe = Probe::start();
        std::thread::scope(|s| {
            for worker in 0..2 {
                let tracker = &tracker;
                s.spawn(move || {
                    let mut p = tracker.start(worker);
                    std::hint::black_box(spin(Duration::from_millis(60)));
                    // Sleeping is a voluntary context switch.
                    std::thread::sleep(Duration::from_millis(5));
                    p.sample();
                    tracker.finish(p);
                });
            }
        });
        let m = probe.finish(tracker.into_records());
        assert!(m.wall >= Duration::from_millis(65), "{m:?}");
        // Two threads used 60 ms of CPU each; getrusage may be tick-sampled (4 ms at HZ=250).
        assert!(
            m.user.unwrap() + m.sys.unwrap() >= Duration::from_millis(100),
            "{m:?}"
        );
        match m.voluntary_ctx_switches {
            Some(n) => assert!(n >= 2, "{m:?}"),
            // Windows does not count voluntary switches apart: absent, not 0.
            None => assert!(m.involuntary_ctx_switches.is_none() && !cfg!(target_os = "linux")),
        }
        assert_eq!(m.threads.len(), 2);
        for (i, t) in m.threads.iter().enumerate() {
            assert_eq!(t.worker, i);
            assert!(t.tid > 0);
            assert!(t.cpus_seen.values().sum::<u64>() >= 3, "{t:?}");
        }
        assert!(m.peak_rss_bytes.unwrap() > 0);
        if cfg!(target_os = "linux") {
            assert_ne!(m.migrations_source, MigrationSource::Unavailable, "{m:?}");
            assert!(m.threads.iter().all(|t| t.ctx_switches.is_some()), "{m:?}");
        } else {
            // Windows counts no migrations: unavailable, and no count.
            assert_eq!(m.migrations, None, "{m:?}");
        }
    }

    #[test]
    fn serializes_durations_as_seconds() {
        let m = Measurement {
            wall: Duration::from_millis(1500),
            user: Some(Duration::from_millis(250)),
            sys: Some(Duration::ZERO),
            voluntary_ctx_switches: Some(3),
            involuntary_ctx_switches: Some(4),
            migrations: Some(1),
            migrations_source: MigrationSource::Perf,
            peak_rss_bytes: Some(4096),
            peak_rss_source: RssSource::Run,
            threads: vec![],
        };
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["wall_s"], 1.5);
        assert_eq!(json["user_s"], 0.25);
        assert_eq!(json["migrations_source"], "perf");
        let back: Measurement = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
    }
}
