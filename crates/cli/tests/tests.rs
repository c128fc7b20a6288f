//! The command line's integration tests: one binary, each file a module (ripgrep's
//! `tests/tests.rs`), sharing one copy of [`util`].
//!
//! Run one file's tests by its module path: `cargo test -p coretune --test cli pin::`. Each
//! module's own doc says what it covers and what it needs. Tests that find a tool missing skip
//! with a visible message, and fail instead under `CORETUNE_TEST_STRICT=1` (`make test` sets it).

mod util;

mod adapt;
mod bench;
mod calc_distrib;
mod cpus_place_run;
mod device_locality;
mod doctor;
mod hwloc_dropins;
mod install;
mod instances;
mod metric;
mod mpi;
mod old_folders;
mod pin;
mod readme;
mod replay;
mod report;
mod reserve;
mod rules;
mod server;
mod slurm;
mod topo;
mod tune;
mod vm;
mod watch;
mod windows_wine;
