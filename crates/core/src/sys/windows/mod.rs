//! Windows: the Windows API through `windows-sys`, one file per concern. CPUs are numbered as
//! hwloc numbers them on Windows, 64 × processor group + number in the group, everywhere.
//!
//! | file | what it holds |
//! |---|---|
//! | `handle.rs` | owned handles, opening threads and processes, UTF-16 and `FILETIME` |
//! | `affinity.rs` | group affinity of a thread (`SetThreadGroupAffinity`), of a process (`SetProcessAffinityMask`), CPU sets (`SetProcessDefaultCpuSets`): the real calls behind `sys/groups.rs` |
//! | `child.rs` | starting a program suspended in a job object, placing and resuming it, killing, listing and accounting its tree; `cmd /C`; `PATHEXT`; Ctrl-C |
//! | `counters.rs` | this process's and thread's CPU times, peak working set, current processor, a thread's context switches (thread profiling) |
//! | `processes.rs` | processes and threads (ToolHelp snapshots), thread creation times, a process's state and executable |
//! | `cpu_stat.rs` | per-processor idle, kernel and user time |
//! | `host.rs` | computer name, Windows version, CPU model |
//! | `limits.rs` | the CPU budget's inputs: active processors, process affinity, CPU sets, a job's CPU rate cap |
//!
//! What has no Windows meaning comes from `unsupported.rs` and fails as unsupported: cgroups,
//! systemd, the process-event connector and signals (so `coretune rules` and `reserve` are
//! Linux-only), nice values, `/proc/loadavg`, interrupt counts, migration counts, uids, and
//! inspecting ELF programs for the pinning library (Linux-only too).

mod affinity;
mod child;
mod counters;
mod cpu_stat;
mod handle;
mod host;
mod limits;
mod processes;

pub(crate) use affinity::{is_no_such_task, rebind_threads, set_task_affinity, task_affinity};
pub(crate) use child::{
    ChildTree, executable_candidates, exit_signal, forward_signals_to, is_executable_file, is_path,
    on_stop_signals, prepare_child, shell_command, stop_everything, stopped_by_request,
};
pub(crate) use counters::{
    SwitchCounter, current_cpu, current_tid, own_cpu_ticks, peak_rss_bytes, reset_peak_rss,
    resource_usage, thread_cpu_time, thread_migrations,
};
pub(crate) use cpu_stat::cpu_stat;
pub(crate) use host::{cpu_model, cpu_settings, host_name, kernel_release};
pub(crate) use limits::{LIMIT_NAMES, allowed_cpus, cgroup_limits, isolated_cpus, online_cpus};
pub(crate) use processes::{
    own_threads, pids, process_exe, process_state, processes, thread_ids, threads,
};

/// Windows does not tell the CPU another thread is on (only a thread itself can ask,
/// `GetCurrentProcessorNumberEx`): `watch` samples per-CPU time, not threads.
pub(crate) const THREADS_VISIBLE: bool = false;

pub(crate) use super::unsupported::{
    DaemonSignals, MigrationCounter, PRELOAD, PROC_DIR, PROC_FS, ProcEvents, boot_time_ns,
    canonical_path, cgroup_mounts, cgroup_pids, cgroup_throttling, child_cgroups,
    cpuset_hierarchies, effective_uid, interrupts, link_meta, load_average, loaded_libraries,
    memory_policy, monotonic_ns, open_program, own_uid, process_cgroups, process_cmdline,
    process_facts, process_uid, read_cgroup_file, read_no_follow, set_mempolicy_before_exec,
    set_task_nice, set_thread_mempolicy, socket_owners, softirqs, systemctl, systemd_booted,
    task_nice, tcp_listeners, ticks_per_second, user_id, write_cgroup_file,
};
