//! Counters of the calling process and thread: `getrusage`, the perf software event
//! `cpu-migrations`, `sched_getcpu` and `gettid`.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use perf_event::Builder;
use perf_event::events::Software;

use crate::sys::error::SysError;
use crate::sys::types::{ResourceUsage, UsageOf};

/// `getrusage` of this process (all its threads, exited ones included) or of its waited-for
/// children.
pub(crate) fn resource_usage(of: UsageOf) -> Result<ResourceUsage, SysError> {
    let who = match of {
        UsageOf::ThisProcess => UsageWho::RUSAGE_SELF,
        UsageOf::Children => UsageWho::RUSAGE_CHILDREN,
    };
    let usage = getrusage(who).map_err(|e| SysError::Call {
        call: "getrusage",
        error: e.into(),
    })?;
    // The counts are `long`s that are never negative; `ru_maxrss` is in KiB.
    let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
    Ok(ResourceUsage {
        user: duration(usage.user_time()),
        system: duration(usage.system_time()),
        voluntary_ctx_switches: Some(count(usage.voluntary_context_switches())),
        involuntary_ctx_switches: Some(count(usage.involuntary_context_switches())),
        max_rss_bytes: count(usage.max_rss()) * 1024,
    })
}

fn duration(t: nix::sys::time::TimeVal) -> Duration {
    let secs = u64::try_from(t.tv_sec()).unwrap_or(0);
    let micros = u64::try_from(t.tv_usec()).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

/// The context switches of the calling thread since [`SwitchCounter::open`], voluntary plus
/// involuntary: `getrusage(RUSAGE_THREAD)`, one system call (workers open and read it inside the
/// measured run).
#[derive(Debug)]
pub(crate) struct SwitchCounter {
    start: u64,
}

impl SwitchCounter {
    /// Notes the calling thread's count so far.
    pub(crate) fn open() -> Result<Self, SysError> {
        Ok(Self {
            start: thread_switches()?,
        })
    }

    /// The switches since `open` (call it on the same thread).
    pub(crate) fn read(&mut self) -> Result<u64, SysError> {
        Ok(thread_switches()?.saturating_sub(self.start))
    }
}

fn thread_switches() -> Result<u64, SysError> {
    let usage = getrusage(UsageWho::RUSAGE_THREAD).map_err(|e| SysError::Call {
        call: "getrusage(RUSAGE_THREAD)",
        error: e.into(),
    })?;
    let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
    Ok(count(usage.voluntary_context_switches()) + count(usage.involuntary_context_switches()))
}

/// The perf software event `cpu-migrations` of the calling thread.
#[derive(Debug)]
pub(crate) struct MigrationCounter(perf_event::Counter);

impl MigrationCounter {
    /// Opens and starts the counter on the calling thread.
    pub(crate) fn open() -> Result<Self, SysError> {
        // Migrations are counted in kernel context (when the thread is scheduled in on its new
        // CPU), so a counter that excludes the kernel — perf's default for unprivileged users
        // under perf_event_paranoid >= 2 — reads 0. Open it with the kernel included or not at
        // all; the caller falls back to scheduler statistics where this is refused.
        Builder::new(Software::CPU_MIGRATIONS)
            .observe_self()
            .any_cpu()
            .exclude_kernel(false)
            .exclude_hv(false)
            .enabled(true)
            .build()
            .map(Self)
            .map_err(|error| SysError::Call {
                call: "perf_event_open",
                error,
            })
    }

    /// The migrations counted so far.
    pub(crate) fn read(&mut self) -> Result<u64, SysError> {
        self.0.read().map_err(|error| SysError::Call {
            call: "read of a perf counter",
            error,
        })
    }
}

/// The CPU the calling thread is on now (a vDSO call of a few nanoseconds).
pub(crate) fn current_cpu() -> Result<usize, SysError> {
    nix::sched::sched_getcpu().map_err(|e| SysError::Call {
        call: "sched_getcpu",
        error: e.into(),
    })
}

/// The calling thread's id.
pub(crate) fn current_tid() -> Result<i32, SysError> {
    Ok(nix::unistd::gettid().as_raw())
}

/// CPU time the calling thread has used.
pub(crate) fn thread_cpu_time() -> Result<Duration, SysError> {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .map_err(|e| SysError::Call {
            call: "clock_gettime",
            error: e.into(),
        })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counters_of_this_thread() {
        let before = resource_usage(UsageOf::ThisProcess).unwrap();
        let start = thread_cpu_time().unwrap();
        let mut x = 0u64;
        while thread_cpu_time().unwrap() - start < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = resource_usage(UsageOf::ThisProcess).unwrap();
        assert!(after.user + after.system > before.user + before.system);
        assert!(after.max_rss_bytes > 0);
        assert!(current_cpu().unwrap() < 65_536);
        assert!(current_tid().unwrap() > 0);
        assert!(resource_usage(UsageOf::Children).is_ok());
    }
}
