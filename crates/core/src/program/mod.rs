//! Other programs: starting them on a CPU set with the thread-count variables their runtimes
//! read ([`spawn`], [`run`], [`thread_env`]), their process trees ([`Launched`]), rebinding a
//! running one ([`rebind_process`]), placing their threads one by one ([`pin`]: the preloaded
//! pinning library, its plan and the check of where threads ran), watching where they run
//! ([`watch`]: per-CPU utilisation, thread placement and migrations over time) and servers for
//! one measured run ([`server`]: started, waited for until ready, stopped with their whole
//! process group).
//!
//! ```no_run
//! use std::time::Duration;
//! use coretune_core::cpuset::set_from_indexes;
//! use coretune_core::program;
//!
//! // `timeout 10 taskset -c 0 sh -c 'exit 3'`, with OMP_NUM_THREADS=1 and the like.
//! let mut cmd = program::shell_command("exit 3");
//! cmd.envs(program::thread_env(1, None));
//! let status = program::run(cmd, Some(&set_from_indexes([0])), Some(Duration::from_secs(10)))?
//!     .expect("ends within 10 s");
//! assert_eq!(program::exit_code(status), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod contain;
mod env;
mod launch;
pub mod pin;
mod placed;
pub mod server;
pub mod watch;

pub use contain::{StopSignal, on_stop_signals, stop_everything};
pub use env::thread_env;
pub use launch::{
    LaunchError, Launched, affinity_of, exit_code, find_program, process_binding, rebind_process,
    shell_command, shell_quote, spawn, thread_count,
};
pub use pin::repin_process;
pub use placed::{Audit, LOG_VAR, Placed, PlacedCommand, placed_env, run};

pub(crate) use launch::shell_program;
