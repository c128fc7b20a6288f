//! Any text: parsing never panics, and whatever parses prints a canonical form that parses back to
//! the same expression and evaluates (or fails) without panicking on a small synthetic machine.
#![no_main]

use std::sync::OnceLock;

use coretune_core::CpuSetExpr;
use coretune_core::cpuset::ResolveOptions;
use coretune_core::{Topology, TopologySource};
use libfuzzer_sys::fuzz_target;

fn topology() -> &'static Topology {
    static TOPO: OnceLock<Topology> = OnceLock::new();
    TOPO.get_or_init(|| {
        Topology::load(&TopologySource::Synthetic(
            "pack:2 numa:2 l3:2 core:2 pu:2".into(),
        ))
        .expect("a valid synthetic description")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = text.parse::<CpuSetExpr>() else {
        return;
    };
    let shown = expr.to_string();
    let again: CpuSetExpr = shown.parse().expect("canonical form parses");
    assert_eq!(again, expr, "'{text}' printed as '{shown}'");
    for physical in [false, true] {
        let _ = expr.resolve(topology(), &ResolveOptions { physical });
    }
});
