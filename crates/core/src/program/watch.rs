//! Watching a program run: per-CPU utilisation, where each of its threads is, how often they
//! migrate, and which CPUs take the interrupts — read from Linux's `/proc`.
//!
//! A [`Sampler`] reads, at each [`Sampler::sample`]:
//!
//! - `/proc/stat`'s `cpuN` lines: busy = user + nice + system + irq + softirq + steal, total adds
//!   idle and iowait; a CPU's utilisation over an interval is Δbusy / Δtotal;
//! - for the watched process and (optionally) every descendant process, each thread's
//!   `/proc/PID/task/TID/stat` (field 39, `processor`: the CPU it last ran on; field 2, its
//!   name) and `/proc/PID/task/TID/sched` (`se.nr_migrations`, the kernel's count of the
//!   thread's moves between CPUs; absent without `CONFIG_SCHED_DEBUG`);
//! - `/proc/interrupts` and `/proc/softirqs`, summed per CPU column (the "CPU 0 does the
//!   housekeeping" effect shows as CPU 0's share).
//!
//! Utilisation and interrupt counts are differences from the previous read, so the sampler reads
//! a baseline when it is made. Every file is read under a `/proc` directory (`/proc` itself
//! normally, a directory of sample files in tests). [`Monitor`] runs a sampler on a background thread; [`summarize`]
//! turns samples into what `coretune watch --json` prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hwlocality::object::types::ObjectType;
use serde::{Deserialize, Serialize};

use crate::sys::set_to_vec;
use crate::sys::{self, SysError};
use crate::topology::Topology;

/// Why watching failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// A `/proc` file could not be read or had an unexpected layout, or the process to watch
    /// does not exist (or is not visible).
    #[error(transparent)]
    Sys(#[from] SysError),
    /// The background sampling thread could not be started.
    #[error("cannot start the sampling thread: {0}")]
    Thread(std::io::Error),
}

/// Cumulative CPU time counters of one CPU, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    /// busy + idle + iowait.
    pub total: u64,
}

impl CpuTimes {
    /// Busy and total time of one `/proc/stat` line (guest time is already in user).
    fn of(t: &sys::CpuTicks) -> Self {
        let busy = t.user
            + t.nice
            + t.system
            + t.irq.unwrap_or(0)
            + t.softirq.unwrap_or(0)
            + t.steal.unwrap_or(0);
        Self {
            busy,
            total: busy + t.idle + t.iowait.unwrap_or(0),
        }
    }
}

/// One CPU's utilisation over a sampling interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuBusy {
    /// CPU number (OS index).
    pub cpu: usize,
    /// Busy share of the interval, 0–100.
    pub busy_pct: f64,
}

/// Where one thread was at a sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadSample {
    /// Its process.
    pub pid: i32,
    /// Its thread id.
    pub tid: i32,
    /// Its name.
    pub name: String,
    /// The CPU it last ran on.
    pub cpu: usize,
    /// `se.nr_migrations` so far (since the thread started), when the kernel shows it.
    pub migrations: Option<u64>,
    /// When the thread started, in clock ticks since boot (absent in samples of coretune 0.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
    /// CPU time it has used so far, user and system, in seconds (absent in samples of coretune
    /// 0.1.0, and where the system does not show it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_s: Option<f64>,
    /// The program coretune started whose process tree the thread's process is in (its pid:
    /// the child of the watched process it descends from), telling apart a run's copies, a
    /// server and its client. Not kept in files.
    #[serde(skip)]
    pub tree: Option<i32>,
}

/// One sample: a line of `watch.jsonl` and of `monitor/<seq>.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the sampler started.
    pub t_s: f64,
    /// Per-CPU utilisation since the previous sample.
    pub cpus: Vec<CpuBusy>,
    /// The watched threads.
    pub threads: Vec<ThreadSample>,
    /// Hardware interrupts per CPU since the previous sample.
    pub irqs: BTreeMap<usize, u64>,
    /// Soft interrupts per CPU since the previous sample.
    pub softirqs: BTreeMap<usize, u64>,
    /// The memory policy of each process seen for the first time in this sample, as the first
    /// line of its `/proc/PID/numa_maps` gives it (`default`, `local`, `interleave:0-1`,
    /// `bind:1`, `prefer:0`), when the sampler reads them. Not kept in files.
    #[serde(skip)]
    pub policies: BTreeMap<i32, String>,
    /// When it was taken, on `CLOCK_MONOTONIC` (nanoseconds; the clock of the pinning
    /// library's log), for telling which samples came after a process was placed. Not kept in
    /// files.
    #[serde(skip)]
    pub at_ns: Option<u64>,
}

#[derive(Debug, Default)]
struct Raw {
    stat: BTreeMap<usize, CpuTimes>,
    irqs: BTreeMap<usize, u64>,
    softirqs: BTreeMap<usize, u64>,
}

/// Reads samples from a `/proc` tree.
#[derive(Debug)]
pub struct Sampler {
    proc_dir: PathBuf,
    pid: Option<i32>,
    descendants: bool,
    exclude: BTreeSet<i32>,
    /// Only the threads: no per-CPU times or interrupts.
    threads_only: bool,
    /// Read each new process's memory policy ([`Sample::policies`]).
    policies: bool,
    /// The processes whose memory policy was read, with the name their main thread had then:
    /// a process that `exec`s another program (`numactl … prog`) is read again.
    policy_read: BTreeSet<(i32, String)>,
    prev: Raw,
    start: Instant,
}

impl Sampler {
    /// A sampler over `proc_dir` (normally `/proc`) that follows process `pid` (and its
    /// descendants when `descendants`), or only the CPUs when `pid` is `None`. Reads the
    /// baseline now.
    ///
    /// # Errors
    ///
    /// `/proc/stat` unreadable or malformed, or no process `pid` ([`SysError::NoProcess`]).
    pub fn new(proc_dir: &Path, pid: Option<i32>, descendants: bool) -> Result<Self, WatchError> {
        if let Some(pid) = pid {
            sys::thread_ids(proc_dir, pid)?;
        }
        let mut sampler = Self {
            proc_dir: proc_dir.to_path_buf(),
            pid,
            descendants,
            exclude: BTreeSet::new(),
            threads_only: false,
            policies: false,
            policy_read: BTreeSet::new(),
            prev: Raw::default(),
            start: Instant::now(),
        };
        sampler.prev = sampler.read_raw()?;
        Ok(sampler)
    }

    /// A sampler over this machine's `/proc`: [`Sampler::new`] on the live machine.
    ///
    /// # Errors
    ///
    /// As [`Sampler::new`].
    pub fn live(pid: Option<i32>, descendants: bool) -> Result<Self, WatchError> {
        Self::new(Path::new(sys::PROC_DIR), pid, descendants)
    }

    /// Leaves this thread out of the samples (the sampling thread itself, when it watches its
    /// own process).
    pub fn exclude_tid(&mut self, tid: i32) {
        self.exclude.insert(tid);
    }

    fn read_raw(&self) -> Result<Raw, WatchError> {
        if self.threads_only {
            return Ok(Raw::default());
        }
        let stat = sys::cpu_stat(&self.proc_dir)?
            .per_cpu
            .iter()
            .map(|(&cpu, ticks)| (cpu, CpuTimes::of(ticks)))
            .collect();
        // Interrupt tables are optional (containers may hide them).
        Ok(Raw {
            stat,
            irqs: sys::interrupts(&self.proc_dir).unwrap_or_default(),
            softirqs: sys::softirqs(&self.proc_dir).unwrap_or_default(),
        })
    }

    /// The processes watched, each with the tree it is in: the pid (its own tree), and its
    /// descendants found through each process's parent pid, each in the tree of the watched
    /// process's child it descends from.
    fn processes(&self) -> Vec<(i32, i32)> {
        let Some(root) = self.pid else {
            return Vec::new();
        };
        let mut out = vec![(root, root)];
        if !self.descendants {
            return out;
        }
        let Ok(parents) = sys::processes(&self.proc_dir) else {
            return out;
        };
        let mut i = 0;
        while i < out.len() {
            let (parent, tree) = out[i];
            for p in &parents {
                if p.ppid == parent && !out.iter().any(|&(pid, _)| pid == p.pid) {
                    out.push((p.pid, if parent == root { p.pid } else { tree }));
                }
            }
            i += 1;
        }
        // A child of the watched process between `fork` and `exec` is still its image (and not
        // yet on the CPUs or policy set before `exec`): it is not one of the watched programs
        // yet. What it starts later is found once it has `exec`ed.
        out.retain(|&(pid, _)| {
            pid == root
                || !parents
                    .iter()
                    .any(|p| p.pid == pid && p.ppid == root && p.forked_only)
        });
        out
    }

    fn threads(&self) -> Vec<ThreadSample> {
        #[allow(clippy::cast_precision_loss)] // 100 or so
        let ticks_per_second = sys::ticks_per_second().max(1) as f64;
        let mut out = Vec::new();
        for (pid, tree) in self.processes() {
            // A process may end between listing and reading: skip what vanished.
            let Ok(threads) = sys::threads(&self.proc_dir, pid) else {
                continue;
            };
            for t in threads {
                if self.exclude.contains(&t.tid) {
                    continue;
                }
                let (Some(name), Some(cpu)) = (t.name, t.cpu) else {
                    continue;
                };
                out.push(ThreadSample {
                    pid,
                    tid: t.tid,
                    name,
                    cpu,
                    migrations: t.migrations,
                    started: t.started,
                    #[allow(clippy::cast_precision_loss)] // ticks far below 2^52
                    cpu_time_s: t.cpu_ticks.map(|ticks| ticks as f64 / ticks_per_second),
                    tree: Some(tree),
                });
            }
        }
        out
    }

    /// Whether the watched process still exists (and is not a zombie waiting to be reaped).
    pub fn is_alive(&self) -> bool {
        let Some(pid) = self.pid else { return true };
        sys::process_state(&self.proc_dir, pid).is_ok_and(|state| state != 'Z' && state != 'X')
    }

    /// Takes a sample: utilisation and interrupts since the previous one, threads now.
    ///
    /// # Errors
    ///
    /// `/proc/stat` unreadable or malformed.
    pub fn sample(&mut self) -> Result<Sample, WatchError> {
        // Before the threads are read: a thread seen in this sample was seen after this time.
        let at_ns = sys::monotonic_ns();
        let threads = self.threads();
        let mut policies = BTreeMap::new();
        if self.policies {
            let own = sys::process_exe(&self.proc_dir, self.pid.unwrap_or(0));
            for t in threads.iter().filter(|t| t.tid == t.pid) {
                let key = (t.pid, t.name.clone());
                if t.pid == self.pid.unwrap_or(0) || self.policy_read.contains(&key) {
                    continue;
                }
                // No image: the process is ending (or a kernel thread), nothing to judge.
                let Some(exe) = sys::process_exe(&self.proc_dir, t.pid) else {
                    continue;
                };
                // Still coretune's image between `fork` and `exec`: its policy is not set yet.
                if own.as_ref() == Some(&exe) {
                    continue;
                }
                // A process that ends while it is read shows the policy of an exiting task,
                // `default` (seen: a copy's `sh` as it exited, about once in 150 runs on a busy
                // machine): the reading counts only if the process still runs that image after it.
                if let Some(policy) = sys::memory_policy(&self.proc_dir, t.pid)
                    && sys::process_exe(&self.proc_dir, t.pid).as_ref() == Some(&exe)
                {
                    self.policy_read.insert(key);
                    policies.insert(t.pid, policy);
                }
            }
        }
        let raw = self.read_raw()?;
        #[allow(clippy::cast_precision_loss)]
        let cpus = raw
            .stat
            .iter()
            .map(|(&cpu, now)| {
                let before = self.prev.stat.get(&cpu).copied().unwrap_or_default();
                let busy = now.busy.saturating_sub(before.busy) as f64;
                let total = now.total.saturating_sub(before.total) as f64;
                CpuBusy {
                    cpu,
                    busy_pct: if total > 0.0 {
                        (100.0 * busy / total).clamp(0.0, 100.0)
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        let delta = |now: &BTreeMap<usize, u64>, before: &BTreeMap<usize, u64>| {
            now.iter()
                .map(|(&c, &n)| (c, n.saturating_sub(before.get(&c).copied().unwrap_or(n))))
                .collect()
        };
        let sample = Sample {
            t_s: self.start.elapsed().as_secs_f64(),
            cpus,
            threads,
            irqs: delta(&raw.irqs, &self.prev.irqs),
            softirqs: delta(&raw.softirqs, &self.prev.softirqs),
            policies,
            at_ns: Some(at_ns),
        };
        self.prev = raw;
        Ok(sample)
    }
}

/// Once sampling is at its interval, the wait after a sample is at least this many times what
/// the sample took, so that a sampler beside a run takes at most 1% of one CPU's time in the
/// long run, whatever the threads it reads (a sample reads two `/proc` files per thread of the
/// program). The kernel lowers perf's sample rate the same way when sampling takes more than
/// `perf_cpu_time_max_percent` of the CPU. The cost is measured in wall time, which a sampler
/// preempted by the program it samples only lengthens. The first samples of a placement check
/// (after 2, 4, 8, … ms) are not stretched: they are what sees a short run's threads.
const COST_RATIO: u32 = 99;

/// A sampler running on a background thread until [`Monitor::finish`]: every `interval`, or less
/// often when a sample costs more than 1% of that (at most 1% of one CPU in the long run).
#[derive(Debug)]
pub struct Monitor {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(Vec<Sample>, Option<Duration>)>,
}

/// What a sampler beside a run cost: recorded with the run (`sampler` in `runs.jsonl`), so that
/// its overhead is stated where it was paid.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerCost {
    /// Samples taken.
    pub samples: usize,
    /// The sampling thread's own CPU time, user and system, in seconds.
    pub cpu_s: f64,
}

impl Monitor {
    /// Starts sampling this process and its descendants every `interval` (the sampling thread
    /// leaves itself out).
    ///
    /// # Errors
    ///
    /// `/proc` unreadable, or the thread could not be started.
    pub fn start_self(interval: Duration) -> Result<Self, WatchError> {
        Self::start(interval, false)
    }

    /// Starts sampling only where this process's and its descendants' threads run (no per-CPU
    /// times or interrupts): what checking a pinned run needs, at a fraction of the cost.
    ///
    /// # Errors
    ///
    /// As [`Monitor::start_self`].
    pub fn start_self_threads(interval: Duration) -> Result<Self, WatchError> {
        Self::start(interval, true)
    }

    /// Starts sampling what a run's audit needs: where this process's descendants' threads
    /// run, and with `policies` the memory policy of each of their processes.
    ///
    /// # Errors
    ///
    /// As [`Monitor::start_self`].
    pub fn start_audit(interval: Duration, policies: bool) -> Result<Self, WatchError> {
        Self::start_with(interval, true, policies)
    }

    fn start(interval: Duration, threads_only: bool) -> Result<Self, WatchError> {
        Self::start_with(interval, threads_only, false)
    }

    /// Starts sampling this process's descendants every `interval`: only their threads when
    /// `threads_only`, and each new process's memory policy with `policies`.
    pub(crate) fn start_with(
        interval: Duration,
        threads_only: bool,
        policies: bool,
    ) -> Result<Self, WatchError> {
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let mut sampler = Sampler::live(Some(pid), true)?;
        sampler.threads_only = threads_only;
        sampler.policies = policies;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("coretune-monitor".into())
            .spawn(move || {
                if let Ok(tid) = sys::current_tid() {
                    sampler.exclude_tid(tid);
                }
                let mut samples = Vec::new();
                // Threads only (checking a run's placement): the first samples come after 2,
                // 4, 8, … ms, so that a short run is seen while its threads live.
                let mut wait = if threads_only {
                    interval.min(Duration::from_millis(2))
                } else {
                    interval
                };
                // At least one sample, however short the run: the last one is taken after the
                // stop request.
                loop {
                    std::thread::park_timeout(wait);
                    let began = Instant::now();
                    match sampler.sample() {
                        Ok(s) => samples.push(s),
                        Err(_) => break,
                    }
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    // The first samples, which let a short run be seen, come on time; then
                    // the cost bound holds.
                    let next = (wait * 2).min(interval);
                    wait = if next < interval {
                        next
                    } else {
                        next.max(began.elapsed() * COST_RATIO)
                    };
                }
                (samples, sys::thread_cpu_time().ok())
            })
            .map_err(WatchError::Thread)?;
        Ok(Self { stop, handle })
    }

    /// Stops sampling (with one last sample) and returns the samples.
    pub fn finish(self) -> Vec<Sample> {
        self.finish_with_cost().0
    }

    /// Stops sampling (with one last sample) and returns the samples and what taking them cost
    /// (`None` where the system does not give a thread's CPU time).
    pub fn finish_with_cost(self) -> (Vec<Sample>, Option<SamplerCost>) {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.thread().unpark();
        let (samples, cpu) = self.handle.join().unwrap_or_default();
        let cost = cpu.map(|cpu| SamplerCost {
            samples: samples.len(),
            cpu_s: cpu.as_secs_f64(),
        });
        (samples, cost)
    }
}

/// One CPU over the whole watch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// CPU number.
    pub cpu: usize,
    /// Mean utilisation over the samples, 0–100.
    pub busy_pct: f64,
}

/// One thread over the whole watch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// Its process.
    pub pid: i32,
    /// Its thread id.
    pub tid: i32,
    /// Its name. A thread that execs another program has one summary per name.
    pub name: String,
    /// CPU number → samples that found the thread there.
    pub cpus_seen: BTreeMap<usize, u64>,
    /// Migrations while watched: the growth of `se.nr_migrations` from the first sample for
    /// threads that existed then, its last value for threads that started later; `null` where
    /// the kernel does not show it.
    pub migrations: Option<u64>,
    /// CPU time used while watched (user and system, seconds; as `pidstat -t` counts it): the
    /// growth from its first sample to its last; `null` where the system does not show it.
    #[serde(default)]
    pub cpu_time_s: Option<f64>,
    /// That CPU time as a share of the time between its first and last samples, in percent of
    /// one CPU (`top -H`'s %CPU); `null` with fewer than two samples.
    #[serde(default)]
    pub cpu_pct: Option<f64>,
}

/// Interrupts over the whole watch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterruptSummary {
    /// CPU number → interrupts counted there.
    pub per_cpu: BTreeMap<usize, u64>,
    /// CPU 0's share of them, 0–1 (null when there were none).
    pub cpu0_share: Option<f64>,
}

/// What `coretune watch --json` prints: see `docs/watch.schema.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchSummary {
    /// Schema name and version.
    pub schema: String,
    /// Samples taken.
    pub samples: usize,
    /// Seconds from the first to the last sample's time stamp.
    pub duration_s: f64,
    /// Every CPU's mean utilisation, by CPU number.
    pub cpus: Vec<CpuSummary>,
    /// Every thread seen, most samples first.
    pub threads: Vec<ThreadSummary>,
    /// Whether this system shows where another process's threads run: false on Windows, where
    /// `threads` stays empty rather than made up (absent in summaries of coretune 0.1.0).
    #[serde(default = "visible")]
    pub threads_visible: bool,
    /// Hardware interrupts.
    pub interrupts: InterruptSummary,
    /// Soft interrupts.
    pub softirqs: InterruptSummary,
}

/// Summaries written before `threads_visible` existed came from Linux.
fn visible() -> bool {
    true
}

/// A sample's time and a thread's CPU time then (seconds).
type TimePoint = (f64, Option<f64>);

/// Summarises samples.
pub fn summarize(samples: &[Sample]) -> WatchSummary {
    let mut busy: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for s in samples {
        for c in &s.cpus {
            let e = busy.entry(c.cpu).or_insert((0.0, 0));
            e.0 += c.busy_pct;
            e.1 += 1;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let cpus = busy
        .into_iter()
        .map(|(cpu, (sum, n))| CpuSummary {
            cpu,
            busy_pct: sum / n.max(1) as f64,
        })
        .collect();
    let first_tids: BTreeSet<i32> = samples
        .first()
        .map(|s| s.threads.iter().map(|t| t.tid).collect())
        .unwrap_or_default();
    // One entry per thread and name: a thread that execs another program (a forked child
    // becoming `sh`) is two entries, so that the samples taken before the exec — before a
    // launcher applied the CPU set, say — are not reported under the new program's name.
    let mut threads: BTreeMap<(i32, String), (ThreadSummary, Option<u64>)> = BTreeMap::new();
    // Per entry: the first sample's time and CPU time, and the last's.
    let mut spans: BTreeMap<(i32, String), (TimePoint, TimePoint)> = BTreeMap::new();
    let mut known: BTreeSet<i32> = first_tids.clone();
    for s in samples {
        for t in &s.threads {
            let (sum, first) = threads.entry((t.tid, t.name.clone())).or_insert_with(|| {
                // Counted from here for a thread seen before (or in the first sample);
                // from its start for a thread that started during the watch.
                let base = if known.insert(t.tid) {
                    Some(0)
                } else {
                    t.migrations
                };
                (
                    ThreadSummary {
                        pid: t.pid,
                        tid: t.tid,
                        name: t.name.clone(),
                        cpus_seen: BTreeMap::new(),
                        migrations: None,
                        cpu_time_s: None,
                        cpu_pct: None,
                    },
                    base,
                )
            });
            *sum.cpus_seen.entry(t.cpu).or_insert(0) += 1;
            let span = spans
                .entry((t.tid, t.name.clone()))
                .or_insert(((s.t_s, t.cpu_time_s), (s.t_s, t.cpu_time_s)));
            span.1 = (s.t_s, t.cpu_time_s);
            sum.migrations = t.migrations.map(|m| m.saturating_sub(first.unwrap_or(0)));
        }
    }
    let mut threads: Vec<ThreadSummary> = threads
        .into_iter()
        .map(|(key, (mut t, _))| {
            if let Some(((t0, Some(c0)), (t1, Some(c1)))) = spans.get(&key).copied() {
                t.cpu_time_s = Some((c1 - c0).max(0.0));
                t.cpu_pct = (t1 > t0).then(|| (c1 - c0).max(0.0) / (t1 - t0) * 100.0);
            }
            t
        })
        .collect();
    threads.sort_by_key(|t| (std::cmp::Reverse(t.cpus_seen.values().sum::<u64>()), t.tid));
    let interrupts = |f: &dyn Fn(&Sample) -> &BTreeMap<usize, u64>| {
        let mut per_cpu: BTreeMap<usize, u64> = BTreeMap::new();
        for s in samples {
            for (&c, &n) in f(s) {
                *per_cpu.entry(c).or_insert(0) += n;
            }
        }
        let total: u64 = per_cpu.values().sum();
        #[allow(clippy::cast_precision_loss)]
        let cpu0_share =
            (total > 0).then(|| per_cpu.get(&0).copied().unwrap_or(0) as f64 / total as f64);
        InterruptSummary {
            per_cpu,
            cpu0_share,
        }
    };
    WatchSummary {
        schema: SUMMARY_SCHEMA.into(),
        samples: samples.len(),
        duration_s: match (samples.first(), samples.last()) {
            (Some(a), Some(b)) => b.t_s - a.t_s,
            _ => 0.0,
        },
        cpus,
        threads,
        threads_visible: sys::THREADS_VISIBLE,
        interrupts: interrupts(&|s| &s.irqs),
        softirqs: interrupts(&|s| &s.softirqs),
    }
}

/// Version of the watch summary; see `docs/watch.schema.json`.
pub const SUMMARY_SCHEMA: &str = "coretune-watch/1";

/// Where a CPU sits in the topology, for grouping per-CPU plots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    /// CPU number (OS index).
    pub cpu: usize,
    /// Logical index of its core.
    pub core: Option<usize>,
    /// Logical index of its L3 cache.
    pub l3: Option<usize>,
    /// Logical index of its NUMA node.
    pub numa: Option<usize>,
}

/// Every PU's core, L3 and NUMA node, in CPU-number order.
pub fn cpu_places(topo: &Topology) -> Vec<CpuPlace> {
    let owner = |ty: ObjectType, cpu: usize| {
        topo.objects_in_order(ty)
            .into_iter()
            .find(|o| o.cpuset().is_some_and(|s| s.is_set(cpu)))
            .map(|o| topo.logical_index(o))
    };
    set_to_vec(&topo.cpuset())
        .into_iter()
        .map(|cpu| CpuPlace {
            cpu,
            core: owner(ObjectType::Core, cpu),
            l3: owner(ObjectType::L3Cache, cpu),
            numa: owner(ObjectType::NUMANode, cpu),
        })
        .collect()
}

#[cfg(test)]
mod test;
