//! The kinds of object coretune's CPU-set language and its summaries name (`pu`, `core`,
//! `package`, `numa`, `die`, `l1`-`l3`, `machine`), with their names as hwloc's tools spell them.
//! hwloc's full type syntax (`group1`, `l3u`, `osdev`) is hwloc-calc's, in `crate::hwloc`.

use std::fmt;

use hwlocality::object::types::ObjectType;

/// A type of hwloc object that locations can name.
///
/// Names are case-insensitive, and as in hwloc any prefix of at least two letters of the long
/// name works: `pu`; `core`/`co`; `package`/`pack`/`pa`, `socket`/`so`; `numa`/`numanode`/`node`
/// /`nu`/`no`; `die`/`di`; `l1`, `l2`, `l3` with optional `cache`/`c` suffix (`l3cache`);
/// `machine`/`ma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjKind {
    /// A processing unit (hardware thread, the OS's CPU).
    Pu,
    /// A physical core.
    Core,
    /// A package (socket).
    Package,
    /// A NUMA node.
    Numa,
    /// A die.
    Die,
    /// A level-1 data cache.
    L1,
    /// A level-2 cache.
    L2,
    /// A level-3 cache (on AMD, one per CCX).
    L3,
    /// The whole machine.
    Machine,
}

impl ObjKind {
    /// The canonical name, as [`Display`](fmt::Display) prints it.
    pub fn name(self) -> &'static str {
        match self {
            ObjKind::Pu => "pu",
            ObjKind::Core => "core",
            ObjKind::Package => "package",
            ObjKind::Numa => "numa",
            ObjKind::Die => "die",
            ObjKind::L1 => "l1",
            ObjKind::L2 => "l2",
            ObjKind::L3 => "l3",
            ObjKind::Machine => "machine",
        }
    }

    /// The hwloc object type.
    pub fn object_type(self) -> ObjectType {
        match self {
            ObjKind::Pu => ObjectType::PU,
            ObjKind::Core => ObjectType::Core,
            ObjKind::Package => ObjectType::Package,
            ObjKind::Numa => ObjectType::NUMANode,
            ObjKind::Die => ObjectType::Die,
            ObjKind::L1 => ObjectType::L1Cache,
            ObjKind::L2 => ObjectType::L2Cache,
            ObjKind::L3 => ObjectType::L3Cache,
            ObjKind::Machine => ObjectType::Machine,
        }
    }

    /// Looks a type name up (case-insensitive, hwloc's two-letter prefixes allowed).
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        let prefix_of = |long: &str| lower.len() >= 2 && long.starts_with(&lower);
        let kind = match lower.as_str() {
            "pu" => ObjKind::Pu,
            "l1" | "l1c" | "l1cache" | "l1d" | "l1dcache" => ObjKind::L1,
            "l2" | "l2c" | "l2cache" => ObjKind::L2,
            "l3" | "l3c" | "l3cache" => ObjKind::L3,
            "node" | "no" => ObjKind::Numa,
            _ if prefix_of("core") => ObjKind::Core,
            _ if prefix_of("package") || prefix_of("socket") => ObjKind::Package,
            _ if prefix_of("numanode") => ObjKind::Numa,
            _ if prefix_of("die") => ObjKind::Die,
            _ if prefix_of("machine") => ObjKind::Machine,
            _ => return None,
        };
        Some(kind)
    }
}

impl fmt::Display for ObjKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
