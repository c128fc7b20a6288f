//! `coretune`: how many threads, on which CPUs, with how many running at once — measured.
//!
//! Each subcommand lives in its own module under `cmd/`; shared options (the `--input` topology)
//! in `input.rs`. `completions` and `man` are generated from [`Cli`]'s definitions, which they
//! get from here as a `clap::Command` (commands do not import each other). Errors are printed as
//! one line, `coretune: <what>: <why>`, with exit status 2; a closed stdout
//! (`coretune topo | head`) is not an error.
#![forbid(unsafe_code)]

mod choices;
mod cmd;
mod exit;
mod input;
mod numbers;
mod report;
mod workload_args;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// `coretune -V`: the version and the commit it was built from (`build.rs`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CORETUNE_COMMIT"),
    ")"
);

/// `coretune --version`: the same, and where to see the rest.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CORETUNE_COMMIT"),
    ")\nhwloc, the pinning library and what this machine allows: coretune doctor"
);

/// How many threads, on which CPUs, with how many running at once: measured.
#[derive(Debug, Parser)]
#[command(
    name = "coretune",
    version = VERSION,
    long_version = LONG_VERSION,
    about,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What this machine is: packages, NUMA nodes, L3 groups, cores, SMT, CPU kinds, and the CPU
    /// budget this process really has.
    Topo(cmd::topo::TopoArgs),
    /// Run one built-in workload in one configuration and report what each run cost.
    Bench(Box<cmd::bench::BenchArgs>),
    /// Evaluate a CPU-set expression (hwloc-calc's syntax and more) and print it in one format.
    Cpus(cmd::cpus::CpusArgs),
    /// Plan which CPUs each of N threads runs on, and print how to apply it.
    Place(cmd::place::PlaceArgs),
    /// hwloc-calc, as a drop-in: takes its command line unchanged and prints what it prints.
    Calc(cmd::hwloc::calc::CalcArgs),
    /// hwloc-distrib, as a drop-in: takes its command line unchanged and prints what it prints.
    Distrib(cmd::hwloc::distrib::DistribArgs),
    /// Run a command on a CPU set with its thread-count variables set, or rebind a process.
    Run(cmd::run::RunArgs),
    /// Sweep the configurations of a workload or a program (threads, placement, CPU set and the
    /// other axes `tune --help` lists), recommend one, and write a results folder.
    Tune(Box<cmd::tune::TuneArgs>),
    /// Compare two sweeps (summary.json files or results folders): per-configuration ratios,
    /// markers beyond a threshold, geometric mean; --fail-above for CI gates.
    Compare(cmd::compare::CompareArgs),
    /// Regenerate a results folder's summaries, plots and report.html from its runs.jsonl,
    /// sweep.json and machine.json (works on folders copied from other machines).
    Report(cmd::report::ReportArgs),
    /// Watch a program (started here, or --pid): per-CPU utilisation, each thread's CPU and
    /// migrations, interrupts per CPU; JSON-lines samples, plots and a summary.
    Watch(cmd::watch::WatchArgs),
    /// Keep a running program, cgroup or server at its best online: probe neighbouring CPU sets,
    /// placements, CPU quotas and thread counts, judged by its own figure; roll back what is
    /// worse, re-explore on change.
    Adapt(Box<cmd::adapt::AdaptArgs>),
    /// Keep a placement in force as programs start: check a rules file against the running
    /// processes, apply it once, or run the daemon that applies it to every new process.
    Rules(cmd::rules::RulesArgs),
    /// Keep a CPU set (CPU 0 by default) free of every process, through systemd's slices, the
    /// cgroup cpusets or each process; --undo puts back exactly what was there.
    Reserve(cmd::reserve::ReserveArgs),
    /// Which coretune this is and what this machine lets it do: hwloc and its plugins, the
    /// pinning library, perf events, cgroups, systemd, the process-event connector, Slurm.
    Doctor(cmd::doctor::DoctorArgs),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish).
    Completions(cmd::completions::CompletionsArgs),
    /// Print the man page coretune(1), or with --out DIR write it and one page per command.
    Man(cmd::man::ManArgs),
}

fn main() -> ExitCode {
    // The pinning library this binary was built with (`build.rs`; empty where nothing is
    // preloaded), for when none is installed beside it.
    coretune_core::program::pin::embed_library(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/libcoretune_pin.so"
    )));
    // The helper that starts a measured program (`build.rs`; empty off Linux).
    coretune_core::program::pin::embed_exec_helper(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/coretune-exec"
    )));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => match numbers::one_line(&err) {
            // A number out of range: one line, as every other bad input.
            Some(line) => {
                eprintln!("coretune: {line}");
                return ExitCode::from(exit::ERROR);
            }
            None => err.exit(),
        },
    };
    // `run`, `watch` and `adapt` start a program: like env, taskset and timeout they end with 127 when
    // it is not found and 126 when it cannot be executed.
    let starts_program = matches!(
        cli.command,
        Command::Run(_) | Command::Watch(_) | Command::Adapt(_)
    );
    let result = match cli.command {
        Command::Topo(args) => cmd::topo::run(&args),
        Command::Bench(args) => cmd::bench::run(&args),
        Command::Cpus(args) => cmd::cpus::run(&args),
        Command::Place(args) => cmd::place::run(&args),
        Command::Calc(args) => cmd::hwloc::calc::run(&args),
        Command::Distrib(args) => cmd::hwloc::distrib::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Tune(args) => cmd::tune::run(&args),
        Command::Compare(args) => cmd::compare::run(&args),
        Command::Report(args) => cmd::report::run(&args),
        Command::Watch(args) => cmd::watch::run(&args),
        Command::Adapt(args) => cmd::adapt::run(&args),
        Command::Rules(args) => cmd::rules::run(&args),
        Command::Reserve(args) => cmd::reserve::run(&args),
        Command::Doctor(args) => cmd::doctor::run(&args),
        // Both are generated from the definitions above, which only this file knows in full.
        Command::Completions(args) => cmd::completions::run(&args, Cli::command()),
        Command::Man(args) => cmd::man::run(&args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = io::stdout().flush();
            eprintln!("coretune: {err:#}");
            ExitCode::from(if starts_program {
                exit::of_launch_error(&err)
            } else {
                exit::ERROR
            })
        }
    }
}

/// A reader that went away (`| head`) is not a failure (ripgrep does the same).
/// JSON written straight to stdout fails with a `serde_json::Error` that wraps the I/O error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
    })
}

#[cfg(test)]
mod test {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
