//! The replay corpus (`tests/data/replay/`, made by `scripts/replay-corpus.py`): every
//! generated sweep reads as recorded runs, records every configuration of the grid `tune` sweeps
//! for a program on its machine (`Grid::default_for` on the topology's counts) — so that
//! replaying it exercises the real search — and every real sweep replays.

mod util;

use std::path::PathBuf;

use coretune_core::grid::{Grid, MachineCounts};
use coretune_core::sweep::{Design, Replay, Strategy};

fn corpus() -> PathBuf {
    util::topologies_dir().join("../replay")
}

fn sweeps(folder: &str) -> Vec<PathBuf> {
    let dir = corpus().join(folder);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    out
}

#[test]
fn every_generated_sweep_records_tunes_whole_grid_on_its_machine() {
    let files = sweeps("generated");
    assert!(files.len() >= 100, "corpus looks truncated: {files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let topology = format!("{}.xml", name.split('.').next().unwrap());
        let machine = MachineCounts::of(&util::load(&topology));
        let replay = Replay::read(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(*replay.grid(), Grid::default_for(machine), "{name}");
        assert_eq!(replay.unrecorded(), 0, "{name}");
        assert_eq!(replay.recorded_runs(), 5 * replay.grid().configs().len());
    }
}

#[test]
fn every_real_sweep_replays() {
    let folders = sweeps("real");
    assert!(folders.len() >= 5, "{folders:?}");
    for folder in folders {
        let replay = Replay::read(&folder).unwrap_or_else(|e| panic!("{e}"));
        let configs = replay.grid().configs();
        let mut design = Design::one(&configs[0], 3, 0);
        design.strategy = Strategy::Exhaustive;
        let report = replay.evaluate(&design, 0).unwrap();
        assert_eq!(report.cost.exhaustive.configs, configs.len(), "{folder:?}");
        assert!(report.recommendation.gap_to_best_pct >= 0.0);
        assert!(report.best.gap_to_best_pct.abs() < 1e-9);
    }
}
