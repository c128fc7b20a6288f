//! hwloc's own tools, reimplemented on hwloc's library: hwloc-calc ([`Calc`]) and hwloc-distrib
//! ([`hwloc_distrib`]), which `coretune calc` and `coretune distrib` drive with hwloc's command
//! lines and which print what Debian's hwloc 2.9 tools print, quirks included.
//!
//! They are also the ground coretune's own languages stand on, which is why this unit sits
//! below `cpuset` and `placement` rather than beside the commands: coretune's CPU-set language
//! is a superset of hwloc-calc's and hands the locations it does not spell itself (devices:
//! `os=eth0`, `pci=…`; groups, cache variants) to hwloc-calc's engine; its `hwloc` and `taskset`
//! outputs are hwloc's bitmap strings; its `spread` placement is hwloc-distrib's split.
//!
//! | file | what it holds |
//! |---|---|
//! | `cnum.rs` | the C library's number parsing as hwloc's tools rely on it (`strtoul`, `strtol`, [`atoi`], [`atol`]) |
//! | `types.rs` | hwloc's object type names and levels (`hwloc_type_sscanf`, depths), [`type_from_name`] |
//! | `bitmap.rs` | hwloc's bitmap strings, read and written as libhwloc does ([`BitmapFormat`]) |
//! | `location.rs` | hwloc-calc's location language (`hwloc-calc.h`), evaluated on a topology |
//! | `calc.rs` | hwloc-calc's outputs (`-N`, `-I`, `-H`, `--largest`, `--local-memory`, …) and stops ([`Calc`]) |
//! | `flags.rs` | hwloc's flag arguments ([`parse_flags`]) |
//! | `distrib.rs` | hwloc's recursive split and `hwloc-distrib N` ([`hwloc_distrib`]) |
//!
//! ```
//! use coretune_core::hwloc::{Calc, LocationSettings, hwloc_string};
//! use coretune_core::topology::{LoadOptions, Topology, TopologySource};
//!
//! let source = TopologySource::Synthetic("pack:2 core:2 pu:2".into());
//! let topo = Topology::load_with(&source, &LoadOptions::hwloc_calc(false))?;
//! // `hwloc-calc core:1-2`
//! let mut set = coretune_core::Bitmap::new();
//! let mut messages = Vec::new();
//! Calc::new(&topo).apply(&mut set, "core:1-2", &LocationSettings::default(), &mut messages)?;
//! assert_eq!(hwloc_string(&set), "0x0000003c");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bitmap;
mod calc;
mod cnum;
mod distrib;
mod flags;
mod location;
mod types;

pub use bitmap::{BitmapFormat, hwloc_string};
pub use calc::{Calc, CalcStop, OutputSettings, PreparedOutput, parse_hwloc_bitmap};
pub use cnum::{atoi, atol};
pub use distrib::{DistribError, DistribOptions, hwloc_distrib};
pub use flags::{LOCAL_NUMANODE_FLAGS, RESTRICT_FLAGS, parse_flags};
pub use location::{LocationSettings, Message};
pub use types::type_from_name;

pub(crate) use bitmap::{parse_hwloc_bitmap_checked, taskset_string};
pub(crate) use distrib::split;
pub(crate) use types::is_hwloc_type;
