//! Rules that keep a placement in force as programs start (`coretune rules`): Process Lasso's job
//! on Linux, in coretune's CPU-set language.
//!
//! A rules file is TOML, one `[[rule]]` table per rule, tried in order; the first rule a process
//! matches decides for it:
//!
//! ```toml
//! [[rule]]
//! name = "keep CPU 0 free for the system"
//! exe = "ffmpeg*"        # glob on the executable's file name
//! cpus = "all ~pu:0"     # a coretune CPU-set expression, evaluated on this machine
//! ```
//!
//! | key | meaning |
//! |---|---|
//! | `name` | the rule's name in logs (default `rule N`) |
//! | `exe` | glob (or list of globs) on the executable's file name (`/proc/PID/exe`) |
//! | `path` | glob on the executable's full path; `*` stops at `/`, `**` crosses it |
//! | `cmdline` | regex searched in the command line (arguments joined by spaces) |
//! | `user` | user name or uid (or a list), matched against the effective uid |
//! | `parent` | glob on the parent's executable file name |
//! | `cgroup` | glob on any of the process's cgroup paths (`/user.slice/**`) |
//! | `cpus` | CPU-set expression: every thread gets these CPUs |
//! | `physical` | object indexes in `cpus` are OS indexes |
//! | `policy` | `compact`, `spread`, `cores`, `round-robin`: one CPU of `cpus` per thread, in creation order (wrapping around), for the threads it has and those it creates; `os` = the whole set |
//! | `bind` | with a policy: `pu` (default) or `core` (each thread on its CPU's whole core) |
//! | `nice` | nice value, -20 to 19, for every thread |
//! | `exclude` | `true`: leave matching processes alone (rules after it do not apply) |
//!
//! Every key given must match (a list matches when any item does); a rule needs at least one
//! key to match on and something to apply. [`RuleSet::load`] refuses a file with any error
//! (naming line and column), and skips with a [`RuleWarning`] a rule that only fails on this
//! machine. [`Enforcer`] applies a rule set to processes; [`run_daemon`] is the daemon.

mod daemon;
mod enforcer;
mod file;
mod matching;
mod rule;
mod set;

pub use daemon::{DaemonEvent, DaemonOptions, EventSource, run_daemon};
pub use enforcer::{Action, Enforcer, Outcome, Trigger};
pub use rule::{Rule, RuleAction, RuleEffect, RuleWarning, RulesError};
pub use set::{RuleSet, keeping_in_force_is_supported};
