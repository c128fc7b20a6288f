//! hwloc's object type names, read and written as libhwloc 2.9 does (`hwloc_type_sscanf`,
//! `hwloc_obj_type_string`, `hwloc_obj_type_snprintf`), and the depth a type lives at.

use hwlocality::Topology as HwlocTopology;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::depth::{Depth, NormalDepth, TypeToDepthError};
use hwlocality::object::types::{BridgeType, CacheType, OSDeviceType, ObjectType};

/// hwloc's special depths, as `hwloc_get_type_depth` returns them.
pub(crate) const DEPTH_UNKNOWN: i32 = -1;
pub(crate) const DEPTH_MULTIPLE: i32 = -2;
pub(crate) const DEPTH_NUMANODE: i32 = -3;
pub(crate) const DEPTH_BRIDGE: i32 = -4;
pub(crate) const DEPTH_PCI_DEVICE: i32 = -5;
pub(crate) const DEPTH_OS_DEVICE: i32 = -6;
pub(crate) const DEPTH_MISC: i32 = -7;
pub(crate) const DEPTH_MEMCACHE: i32 = -8;

/// A type name as `hwloc_type_sscanf` reads it: the type and the attributes the name carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TypeSpec {
    pub(crate) ty: ObjectType,
    /// `group2` names the groups of depth attribute 2.
    pub(crate) group_depth: Option<u32>,
    /// `gpu`, `net`, `block`, ... name a kind of OS device; `osdev` names them all.
    pub(crate) osdev: Option<OSDeviceType>,
}

/// `hwloc__type_match`: whether `s` names `ty` (lowercase) on at least `minmatch` characters,
/// and where the name stopped in `s`.
fn type_match(s: &[u8], ty: &[u8], minmatch: usize) -> Option<usize> {
    let mut i = 0;
    loop {
        let Some(&c) = s.get(i) else {
            return (i >= minmatch).then_some(i);
        };
        let t = ty.get(i).copied().unwrap_or(0);
        // C compares `*s != *t + 'A' - 'a'` in int arithmetic.
        if c != t && i32::from(c) != i32::from(t) - 32 {
            if c.is_ascii_alphabetic() || c == b'-' {
                return None;
            }
            return (i >= minmatch).then_some(i);
        }
        i += 1;
    }
}

/// `hwloc_type_sscanf`.
pub(crate) fn parse_type(s: &str) -> Option<TypeSpec> {
    let b = s.as_bytes();
    let m = |ty: &str, min: usize| type_match(b, ty.as_bytes(), min).is_some();
    let plain = |ty| {
        Some(TypeSpec {
            ty,
            group_depth: None,
            osdev: None,
        })
    };
    let osdev = |kind| {
        Some(TypeSpec {
            ty: ObjectType::OSDevice,
            group_depth: None,
            osdev: Some(kind),
        })
    };
    if m("osdev", 2) {
        return plain(ObjectType::OSDevice);
    }
    if m("block", 4) {
        return osdev(OSDeviceType::Storage);
    }
    if m("network", 3) {
        return osdev(OSDeviceType::Network);
    }
    if m("openfabrics", 7) {
        return osdev(OSDeviceType::OpenFabrics);
    }
    if m("dma", 3) {
        return osdev(OSDeviceType::DMA);
    }
    if m("gpu", 3) {
        return osdev(OSDeviceType::GPU);
    }
    if m("coproc", 5) || m("co-processor", 6) {
        return osdev(OSDeviceType::CoProcessor);
    }
    if m("machine", 2) {
        return plain(ObjectType::Machine);
    }
    if m("numanode", 2) || m("node", 2) {
        return plain(ObjectType::NUMANode);
    }
    if m("memcache", 5) || m("memory-side cache", 8) {
        return plain(ObjectType::MemCache);
    }
    if m("package", 2) || m("socket", 2) {
        return plain(ObjectType::Package);
    }
    if m("die", 2) {
        return plain(ObjectType::Die);
    }
    if m("core", 2) {
        return plain(ObjectType::Core);
    }
    if m("pu", 2) {
        return plain(ObjectType::PU);
    }
    if m("misc", 4) {
        return plain(ObjectType::Misc);
    }
    if m("bridge", 4) || m("hostbridge", 6) || m("pcibridge", 5) {
        return plain(ObjectType::Bridge);
    }
    if m("pcidev", 3) {
        return plain(ObjectType::PCIDevice);
    }
    if matches!(b.first(), Some(b'l' | b'L')) && b.get(1).is_some_and(u8::is_ascii_digit) {
        let (depth, used) = super::cnum::strtol(&b[1..], 10);
        let end = 1 + used;
        let (ty, suffix) = if matches!(b.get(end), Some(b'i' | b'I')) {
            let ty = match depth {
                1 => ObjectType::L1ICache,
                2 => ObjectType::L2ICache,
                3 => ObjectType::L3ICache,
                _ => return None,
            };
            (ty, end + 1)
        } else {
            let ty = match depth {
                1 => ObjectType::L1Cache,
                2 => ObjectType::L2Cache,
                3 => ObjectType::L3Cache,
                4 => ObjectType::L4Cache,
                5 => ObjectType::L5Cache,
                _ => return None,
            };
            let suffix = if matches!(b.get(end), Some(b'd' | b'D' | b'u' | b'U')) {
                end + 1
            } else {
                end
            };
            (ty, suffix)
        };
        type_match(&b[suffix..], b"cache", 0)?;
        return plain(ty);
    }
    if let Some(end) = type_match(b, b"group", 2) {
        let group_depth = b
            .get(end)
            .filter(|c| c.is_ascii_digit())
            .map(|_| super::cnum::strtol(&b[end..], 10).0 as u32);
        return Some(TypeSpec {
            ty: ObjectType::Group,
            group_depth,
            osdev: None,
        });
    }
    None
}

/// `hwloc_obj_type_string`.
pub(crate) fn type_string(ty: ObjectType) -> &'static str {
    match ty {
        ObjectType::Machine => "Machine",
        ObjectType::Misc => "Misc",
        ObjectType::Group => "Group",
        ObjectType::MemCache => "MemCache",
        ObjectType::NUMANode => "NUMANode",
        ObjectType::Package => "Package",
        ObjectType::Die => "Die",
        ObjectType::L1Cache => "L1Cache",
        ObjectType::L2Cache => "L2Cache",
        ObjectType::L3Cache => "L3Cache",
        ObjectType::L4Cache => "L4Cache",
        ObjectType::L5Cache => "L5Cache",
        ObjectType::L1ICache => "L1iCache",
        ObjectType::L2ICache => "L2iCache",
        ObjectType::L3ICache => "L3iCache",
        ObjectType::Core => "Core",
        ObjectType::Bridge => "Bridge",
        ObjectType::PCIDevice => "PCIDev",
        ObjectType::OSDevice => "OSDev",
        ObjectType::PU => "PU",
        _ => "Unknown",
    }
}

/// `hwloc_obj_type_snprintf(obj, verbose)`: `L3Cache`/`L3`, `Group0`, `Net`/`Network`, ...
pub(crate) fn object_type_name(obj: &TopologyObject, verbose: bool) -> String {
    let ty = obj.object_type();
    match (ty, obj.attributes()) {
        (ty, Some(ObjectAttributes::Cache(cache))) if ty.is_cpu_cache() => {
            let letter = match cache.cache_type() {
                CacheType::Unified => "",
                CacheType::Data => "d",
                CacheType::Instruction => "i",
                _ => "unknown",
            };
            format!(
                "L{}{letter}{}",
                cache.depth(),
                if verbose { "Cache" } else { "" }
            )
        }
        (ObjectType::Group, Some(ObjectAttributes::Group(group))) => {
            let depth = group.depth();
            if u32::try_from(depth).is_ok_and(|d| d != u32::MAX) {
                format!("Group{depth}")
            } else {
                "Group".to_owned()
            }
        }
        (ObjectType::Bridge, Some(ObjectAttributes::Bridge(bridge))) => {
            if bridge.upstream_type() == BridgeType::PCI {
                "PCIBridge".to_owned()
            } else {
                "HostBridge".to_owned()
            }
        }
        (ObjectType::PCIDevice, _) => "PCI".to_owned(),
        (ObjectType::OSDevice, Some(ObjectAttributes::OSDevice(osdev))) => {
            match osdev.device_type() {
                OSDeviceType::Storage => "Block",
                OSDeviceType::Network if verbose => "Network",
                OSDeviceType::Network => "Net",
                OSDeviceType::OpenFabrics => "OpenFabrics",
                OSDeviceType::DMA => "DMA",
                OSDeviceType::GPU => "GPU",
                OSDeviceType::CoProcessor if verbose => "Co-Processor",
                OSDeviceType::CoProcessor => "CoProc",
                _ => "",
            }
            .to_owned()
        }
        (
            ObjectType::Misc
            | ObjectType::Machine
            | ObjectType::NUMANode
            | ObjectType::MemCache
            | ObjectType::Package
            | ObjectType::Die
            | ObjectType::Core
            | ObjectType::PU,
            _,
        ) => type_string(ty).to_owned(),
        _ => String::new(),
    }
}

/// hwloc's depth number for an hwlocality depth.
pub(crate) fn depth_number(depth: Depth) -> i32 {
    match depth {
        Depth::Normal(n) => i32::try_from(usize::from(n)).unwrap_or(i32::MAX),
        Depth::NUMANode => DEPTH_NUMANODE,
        Depth::Bridge => DEPTH_BRIDGE,
        Depth::PCIDevice => DEPTH_PCI_DEVICE,
        Depth::OSDevice => DEPTH_OS_DEVICE,
        Depth::Misc => DEPTH_MISC,
        Depth::MemCache => DEPTH_MEMCACHE,
        _ => DEPTH_UNKNOWN,
    }
}

/// The hwlocality depth for an hwloc depth number, `None` for a depth with no level.
pub(crate) fn depth_of_number(topology: &HwlocTopology, depth: i32) -> Option<Depth> {
    Some(match depth {
        DEPTH_NUMANODE => Depth::NUMANode,
        DEPTH_BRIDGE => Depth::Bridge,
        DEPTH_PCI_DEVICE => Depth::PCIDevice,
        DEPTH_OS_DEVICE => Depth::OSDevice,
        DEPTH_MISC => Depth::Misc,
        DEPTH_MEMCACHE => Depth::MemCache,
        n if n >= 0 && (n as usize) < usize::from(topology.depth()) => {
            Depth::Normal(NormalDepth::try_from(n as usize).ok()?)
        }
        _ => return None,
    })
}

/// `hwloc_get_obj_by_depth` for every index: the objects of one level, in logical order.
pub(crate) fn objects_at(topology: &HwlocTopology, depth: i32) -> Vec<&TopologyObject> {
    depth_of_number(topology, depth)
        .map(|d| topology.objects_at_depth(d).collect())
        .unwrap_or_default()
}

/// `hwloc_get_type_depth`.
pub(crate) fn type_depth(topology: &HwlocTopology, ty: ObjectType) -> i32 {
    match topology.depth_for_type(ty) {
        Ok(depth) => depth_number(depth),
        Err(TypeToDepthError::Multiple) => DEPTH_MULTIPLE,
        Err(_) => DEPTH_UNKNOWN,
    }
}

/// The depth of a parsed type as `hwloc_type_sscanf_as_depth` finds it: a group of a given
/// depth attribute is looked up among the levels when groups sit at several depths.
pub(crate) fn spec_depth(topology: &HwlocTopology, spec: &TypeSpec) -> i32 {
    let depth = type_depth(topology, spec.ty);
    if spec.ty == ObjectType::Group && depth == DEPTH_MULTIPLE {
        if let Some(wanted) = spec.group_depth {
            for level in 0..usize::from(topology.depth()) {
                let Ok(normal) = NormalDepth::try_from(level) else {
                    break;
                };
                let first = topology.objects_at_depth(normal).next();
                if let Some(obj) = first {
                    if let Some(ObjectAttributes::Group(g)) = obj.attributes() {
                        if obj.object_type() == ObjectType::Group && g.depth() == wanted as usize {
                            return level as i32;
                        }
                    }
                }
            }
            return DEPTH_UNKNOWN;
        }
    }
    depth
}

/// `hwloc_obj_type_is_normal`: CPU-side objects (not memory, I/O or Misc).
pub(crate) fn is_normal(ty: ObjectType) -> bool {
    ty.is_normal()
}

/// Whether hwloc's tools read `name` as a type (or hwloc-calc's `hbm`/`mcdram`).
pub(crate) fn is_hwloc_type(name: &str) -> bool {
    parse_type(name).is_some()
        || name.eq_ignore_ascii_case("hbm")
        || name.eq_ignore_ascii_case("mcdram")
}

/// An hwloc object type by the names hwloc's tools accept (`core`, `l3`, `group1`, `gpu`...).
pub fn type_from_name(name: &str) -> Option<ObjectType> {
    parse_type(name).map(|spec| spec.ty)
}

/// The depth of the level a type name names (`hwloc_type_sscanf_as_depth`): hwloc's numbers,
/// negative for special and missing levels; `None` when the name is not a type.
pub(crate) fn type_name_depth(topology: &HwlocTopology, name: &str) -> Option<i32> {
    parse_type(name).map(|spec| spec_depth(topology, &spec))
}

#[cfg(test)]
mod test {
    use super::*;

    fn ty(s: &str) -> Option<ObjectType> {
        parse_type(s).map(|t| t.ty)
    }

    #[test]
    fn type_names_as_hwloc_reads_them() {
        assert_eq!(ty("core"), Some(ObjectType::Core));
        assert_eq!(ty("co"), Some(ObjectType::Core));
        assert_eq!(ty("Core2"), Some(ObjectType::Core));
        assert_eq!(ty("corex"), None);
        assert_eq!(ty("no"), Some(ObjectType::NUMANode));
        assert_eq!(ty("numa"), Some(ObjectType::NUMANode));
        assert_eq!(ty("sock"), Some(ObjectType::Package));
        assert_eq!(ty("l3"), Some(ObjectType::L3Cache));
        assert_eq!(ty("l3u"), Some(ObjectType::L3Cache));
        assert_eq!(ty("L1d"), Some(ObjectType::L1Cache));
        assert_eq!(ty("l1i"), Some(ObjectType::L1ICache));
        assert_eq!(ty("l4i"), None);
        assert_eq!(ty("l3cache"), Some(ObjectType::L3Cache));
        assert_eq!(ty("l3x"), None);
        assert_eq!(ty("os"), Some(ObjectType::OSDevice));
        assert_eq!(ty("pci"), Some(ObjectType::PCIDevice));
        assert_eq!(ty("pcib"), None);
        assert_eq!(ty("p"), None);
        assert_eq!(ty("cpukind"), None);
        assert_eq!(parse_type("group1").unwrap().group_depth, Some(1));
        assert_eq!(parse_type("gr").unwrap().group_depth, None);
        assert_eq!(parse_type("gpu").unwrap().osdev, Some(OSDeviceType::GPU));
    }
}
