//! CPU sets: coretune's expression language for naming them ([`CpuSetExpr`], evaluated on a
//! topology by [`CpuSetExpr::resolve`] into a [`Resolved`] set), the formats other tools take
//! ([`Format`]), and warnings about sets likely to measure something other than what was meant
//! ([`Warning`]).
//!
//! The language is a superset of the part of `hwloc-calc`'s location syntax people use (see
//! [`CpuSetExpr`] for the table). Where `hwloc-calc` accepts the same input on the same topology, the
//! answer is the same; the differences are deliberate and all on inputs hwloc would only warn
//! about:
//!
//! - a plain `0-3,8` is a Linux CPU list here (hwloc-calc reads `1,3` as two hex words and ignores
//!   `0-3`);
//! - an index past the last object, an OS index no object has, a CPU the machine does not have, a
//!   type the machine does not have, a device it cannot find, and an empty result are errors here
//!   (hwloc-calc warns and carries on, or prints `0x0`);
//! - `8-` and `0xf...f` run to the machine's last CPU (hwloc-calc ignores the first and keeps
//!   the second infinite).
//!
//! Locations this language does not spell itself (devices: `os=eth0`, `pci=...`; groups, cache
//! variants) go to hwloc-calc's own engine, [`crate::hwloc::Calc`], which is also all of
//! `coretune calc`: a reimplementation of hwloc-calc 2.9 that prints what it prints.
//!
//! ```
//! use coretune_core::cpuset::{CpuSetExpr, Format, ResolveOptions};
//! use coretune_core::{Topology, TopologySource};
//!
//! let topo = Topology::load(&TopologySource::Synthetic("pack:2 core:4 pu:2".into()))?;
//! let expr: CpuSetExpr = "all ~core:0".parse()?;
//! let resolved = expr.resolve(&topo, &ResolveOptions::default())?;
//! assert_eq!(Format::List.render(&resolved.set)?, "2-15");
//! assert_eq!(Format::Hwloc.render(&resolved.set)?, "0x0000fffc");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod expr;
mod format;
mod likwid;
mod resolve;
mod warn;

pub use error::{CpuSetError, MAX_CPU};
pub use expr::{Atom, CpuSetExpr, IndexRange, KindSel, Level, Op, Term};
pub use format::{Format, FormatError};
pub use likwid::LikwidSel;
pub use resolve::{ResolveOptions, Resolved, resolve};
pub use warn::{Warning, warnings};

pub use crate::sys::{counted, cpus_named, format_list, parse_list, set_from_indexes, set_to_vec};
pub use crate::topology::ObjKind;
