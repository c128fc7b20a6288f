//! Linux: system calls through `libc`/`nix`/`perf-event2`, `/proc` through procfs where it has a
//! parser for the file, and hand parsers (one per file format) where it has none.

mod affinity;
mod cgroup;
mod cgroup_write;
mod child;
mod clock;
mod contain;
mod counters;
mod cpu_stat;
mod files;
mod host;
mod interrupts;
mod mempolicy;
mod priority;
mod proc;
mod proc_events;
mod sched;
mod signals;
mod sysfs;
mod systemd;
mod users;

pub(crate) use super::unix_command::{executable_candidates, is_path, shell_command};
pub(crate) use affinity::{is_no_such_task, rebind_threads, set_task_affinity, task_affinity};
pub(crate) use cgroup::{cgroup_limits, cgroup_throttling};
pub(crate) use child::{ChildTree, prepare_child};
pub(crate) use contain::stop_everything;

/// `/proc` of every process, cgroups and the process-event connector: what `coretune rules` and
/// `reserve` work through.
pub(crate) const PROC_FS: bool = true;

/// The dynamic loader takes `LD_PRELOAD` (the pinning library, `crates/pin`).
pub(crate) const PRELOAD: bool = true;

/// Whether another process's threads can be seen with the CPU each last ran on (`/proc/PID/task`).
pub(crate) const THREADS_VISIBLE: bool = true;

/// What the budget calls Linux's restrictions.
pub(crate) const LIMIT_NAMES: crate::sys::types::LimitNames = crate::sys::types::LimitNames {
    cpuset: "cgroup cpuset",
    quota: "cgroup quota",
    no_quota: "no cgroup CPU quota",
};
pub(crate) use cgroup_write::{
    cgroup_mounts, cgroup_pids, child_cgroups, cpuset_hierarchies, read_cgroup_file,
    write_cgroup_file,
};
pub(crate) use clock::{boot_time_ns, monotonic_ns, ticks_per_second};
pub(crate) use counters::{
    MigrationCounter, SwitchCounter, current_cpu, current_tid, resource_usage, thread_cpu_time,
};
pub(crate) use cpu_stat::cpu_stat;
pub(crate) use files::{
    canonical_path, is_executable_file, link_meta, open_program, read_no_follow,
};
pub(crate) use host::{cpu_model, host_name, kernel_release};
pub(crate) use interrupts::{interrupts, softirqs};
pub(crate) use mempolicy::{set_mempolicy_before_exec, set_thread_mempolicy};
pub(crate) use priority::{set_task_nice, task_nice};
pub(crate) use proc::{
    PROC_DIR, allowed_cpus, load_average, loaded_libraries, memory_policy, own_cpu_ticks,
    own_threads, own_uid, peak_rss_bytes, pids, process_cgroups, process_cmdline, process_exe,
    process_facts, process_state, process_uid, processes, reset_peak_rss, socket_owners,
    tcp_listeners, thread_ids, threads,
};
pub(crate) use proc_events::ProcEvents;
pub(crate) use sched::thread_migrations;
pub(crate) use signals::{
    DaemonSignals, exit_signal, forward_signals_to, on_stop_signals, stopped_by_request,
};
pub(crate) use sysfs::{cpu_settings, isolated_cpus, online_cpus};
pub(crate) use systemd::{systemctl, systemd_booted};
pub(crate) use users::{effective_uid, user_id};
