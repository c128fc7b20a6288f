//! Linux: system calls through `libc`/`nix`/`perf-event2`, `/proc` through procfs where it has a
//! parser for the file, and hand parsers (one per file format) where it has none.

mod affinity;
mod cgroup;
mod counters;
mod cpu_stat;
mod files;
mod host;
mod interrupts;
mod proc;
mod sched;
mod signals;
mod sysfs;

pub(crate) use affinity::{bind_before_exec, is_no_such_task, set_task_affinity, task_affinity};
pub(crate) use cgroup::cgroup_limits;
#[cfg(test)]
pub(crate) use counters::thread_cpu_time;
pub(crate) use counters::{MigrationCounter, current_cpu, current_tid, resource_usage};
pub(crate) use cpu_stat::cpu_stat;
pub(crate) use files::{is_executable_file, open_program};
pub(crate) use host::{cpu_model, host_name, kernel_release};
pub(crate) use interrupts::{interrupts, softirqs};
pub(crate) use proc::{
    PROC_DIR, allowed_cpus, load_average, own_cpu_ticks, own_threads, own_uid, peak_rss_bytes,
    process_state, process_uid, processes, reset_peak_rss, thread_ids, threads,
};
pub(crate) use sched::thread_migrations;
pub(crate) use signals::{exit_signal, forward_signals_to, stopped_by_request};
pub(crate) use sysfs::{cpu_governor, isolated_cpus, online_cpus};
