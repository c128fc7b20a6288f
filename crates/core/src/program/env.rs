//! The thread-count variables common runtimes read, and OpenMP's placement variables: what a
//! program started by coretune finds in its environment.
//!
//! | variable | read by | set to |
//! |---|---|---|
//! | `OMP_NUM_THREADS` | OpenMP runtimes (libgomp, libomp, Intel) | N |
//! | `OMP_PLACES`, `OMP_PROC_BIND` | OpenMP | one place per thread and `close` when pinned, else `OMP_PROC_BIND=false` |
//! | `RAYON_NUM_THREADS` | Rust rayon's global pool | N |
//! | `MKL_NUM_THREADS` | Intel MKL | N |
//! | `OPENBLAS_NUM_THREADS` | OpenBLAS | N |
//! | `BLIS_NUM_THREADS` | BLIS | N |
//! | `NUMEXPR_NUM_THREADS` | Python numexpr | N |
//! | `JULIA_NUM_THREADS` | Julia | N |
//! | `GOMAXPROCS` | Go runtime | N |
//! | `TOKIO_WORKER_THREADS` | Rust tokio's multi-thread runtime (`#[tokio::main]`) | N |
//! | `TBB_NUM_THREADS` | programs that size oneTBB's arena from it (oneTBB itself reads no variable) | N |
//! | `CORETUNE_NUM_THREADS` | coretune-pool's `ThreadPoolBuilder::from_env` | N − 1, at least 1 |
//!
//! `CORETUNE_NUM_THREADS` counts workers and leaves out the main thread, which runs scope
//! bodies and `join`'s first closure itself and has the plan's first place: N threads in all,
//! each on its own place, as OpenMP's N counts its initial thread. (rayon's N counts workers
//! only, its calling thread blocks; for N = 1 the pool still needs its one worker.)

use crate::placement::Placement;

/// The thread-count environment for `threads` threads, plus OpenMP's placement variables when a
/// pinned placement is given (see the module table).
pub fn thread_env(threads: usize, placement: Option<&Placement>) -> Vec<(&'static str, String)> {
    let n = threads.to_string();
    let mut env: Vec<(&'static str, String)> = [
        "OMP_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "JULIA_NUM_THREADS",
        "GOMAXPROCS",
        "TOKIO_WORKER_THREADS",
        "TBB_NUM_THREADS",
    ]
    .into_iter()
    .map(|k| (k, n.clone()))
    .collect();
    env.push((
        "CORETUNE_NUM_THREADS",
        threads.saturating_sub(1).max(1).to_string(),
    ));
    if let Some(p) = placement {
        if let Some(places) = p.omp_places() {
            env.push(("OMP_PLACES", places));
        }
        env.push(("OMP_PROC_BIND", p.omp_proc_bind().to_owned()));
    }
    env
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::placement::{Binding, Policy, plan};
    use crate::topology::{Topology, TopologySource};

    #[test]
    fn env_has_every_runtime_and_omp_placement() {
        let topo = Topology::load(&TopologySource::Synthetic("core:2 pu:2".into())).unwrap();
        let p = plan(&topo, 2, Policy::Cores, None, Binding::Pu).unwrap();
        let env = thread_env(2, Some(&p));
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        for k in [
            "OMP_NUM_THREADS",
            "RAYON_NUM_THREADS",
            "GOMAXPROCS",
            "TBB_NUM_THREADS",
        ] {
            assert_eq!(get(k), Some("2"), "{k}");
        }
        // coretune-pool's workers: the main thread is the other one.
        assert_eq!(get("CORETUNE_NUM_THREADS"), Some("1"));
        let count = |n: usize| {
            thread_env(n, None)
                .into_iter()
                .find(|(k, _)| *k == "CORETUNE_NUM_THREADS")
                .map(|(_, v)| v)
        };
        assert_eq!((count(1), count(8)), (Some("1".into()), Some("7".into())));
        assert_eq!(get("OMP_PLACES"), Some("{0},{2}"));
        assert_eq!(get("OMP_PROC_BIND"), Some("close"));
        let unpinned = thread_env(2, None);
        assert!(
            unpinned.iter().all(|(k, _)| !k.starts_with("OMP_P")),
            "{unpinned:?}"
        );
    }
}
