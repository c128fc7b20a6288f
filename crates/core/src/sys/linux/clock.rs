//! Clocks the process-event timestamps and `/proc` start times are given in.

use nix::time::{ClockId, clock_gettime};

fn nanos(clock: ClockId) -> u64 {
    clock_gettime(clock).map_or(0, |t| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_nsec()).unwrap_or(0)
    })
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock of the process connector's event timestamps
/// (`ktime_get_ns`).
pub(crate) fn monotonic_ns() -> u64 {
    nanos(ClockId::CLOCK_MONOTONIC)
}

/// `CLOCK_BOOTTIME` in nanoseconds: the clock of `/proc/PID/stat`'s start time.
pub(crate) fn boot_time_ns() -> u64 {
    nanos(ClockId::CLOCK_BOOTTIME)
}

/// Clock ticks per second (`USER_HZ`), the unit of `/proc/PID/stat`'s start time.
pub(crate) fn ticks_per_second() -> u64 {
    procfs::ticks_per_second()
}
