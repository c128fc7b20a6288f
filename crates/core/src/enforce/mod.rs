//! Keeping a placement in force outside coretune's own runs — Process Lasso's job on Linux:
//! [`rules`] applies a rules file's CPU sets, policies and nice values to running processes and,
//! as a daemon on the kernel's process-event connector, to every process as it starts;
//! [`reserve`] keeps CPUs free of every process through cgroup cpusets or systemd slices, with
//! an exact undo.
//!
//! ```no_run
//! use std::path::Path;
//! use coretune_core::enforce::rules::{Enforcer, RuleSet, Trigger};
//! use coretune_core::{Topology, TopologySource};
//!
//! let topology = Topology::load(&TopologySource::Live)?;
//! let rules = RuleSet::load(Path::new("/etc/coretune/rules.toml"), &topology)?;
//! for w in &rules.warnings {
//!     eprintln!("{w}");
//! }
//! let mut enforcer = Enforcer::new(rules, true); // dry run: say what would change
//! for action in enforcer.scan(Trigger::Start)? {
//!     println!("{action:?}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod reserve;
pub mod rules;
