//! `coretune tune`: sweep a grid of configurations, recommend one, write the results folder.
//!
//! The sweep itself — target, grid, runs, log, statistics, recommendation and report model — is
//! core's engine ([`Runner`], [`SweepFolder`]). This command turns the arguments into a
//! [`SweepSpec`] (or reads one back for `--resume`), shows progress, prints the table and writes
//! the report files after every stage of the search and at the end.
//!
//! With no arguments it is the README's main job: the `raymesh` workload over its default grid.
//! After `--`, any program is measured instead, with `{threads}`, `{cpus}` and `{place}`
//! substituted into its arguments. A program that is not there is refused before the folder is
//! made; a sweep in which no configuration completed a verified run exits with status 1.
//!
//! `--dry-run` plans instead of measuring: the grid this machine (or `--input TOPOLOGY`, a
//! machine this is not) would sweep, how many runs, and with `--estimate-one SECS` how long.
//! `--slurm` hands the same sweep to a Slurm cluster, one exclusive job per node (`slurm.rs`);
//! `--resume` of a fleet folder continues the fleet.

mod slurm;

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::Topology;
use coretune_core::fleet::SlurmFleet;
use coretune_core::grid::{Cpus, Grid, MachineCounts, ThrottleSpec, parse_threads};
use coretune_core::program::pin::SkipMask;
use coretune_core::program::watch::{CpuPlace, cpu_places};
use coretune_core::sweep::{
    DEFAULT_TOLERANCE_PCT, Design, Progress, RunSettings, Strategy, SweepError, SweepResults,
    Target, timestamped_dir,
};
use coretune_core::topology::{MachineRecord, topology_summary};
use coretune_core::workload;
use coretune_core::{Binding, Policy};
use coretune_core::{Runner, SweepFolder, SweepReport, SweepSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exit;
use crate::input::TopologyArgs;
use crate::report::{self, table};
use crate::workload_args::WorkloadArgs;
use slurm::SlurmArgs;

#[derive(Debug, Args)]
pub(crate) struct TuneArgs {
    /// Built-in workload: raymesh (default), membw, mixed, sum, spawn. Not used with `-- CMD`.
    workload: Option<String>,
    /// Thread counts: numbers, ranges (1-8, 2-32:2) and cores, pus, K*pus (default: 1 to 4 × PUs).
    #[arg(long, value_name = "LIST")]
    threads: Option<String>,
    /// Placements to try (default: os,compact,spread,cores).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    place: Option<Vec<Policy>>,
    /// A CPU set to try, as an expression; repeat for several (default: all, and 'all ~pu:0'
    /// when there are more than 2 PUs).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Vec<String>,
    /// Throttle values to try: none, numbers, cores, pus, adaptive (default: none).
    #[arg(long, value_name = "LIST")]
    throttle: Option<String>,
    /// Each pinned thread's set: its PU, its core, one set shared by all threads (shared), or
    /// its own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu")]
    bind: Binding,
    /// Skip mask for a program's pinned threads, likwid-pin's -s (hex: bit i = the i-th
    /// pthread_create makes a helper left unpinned; default: its OpenMP runtime's).
    #[arg(long, value_name = "MASK")]
    skip: Option<SkipMask>,
    /// Measured runs per configuration.
    #[arg(long, default_value_t = 3, value_name = "N")]
    runs: usize,
    /// Warm-up runs per configuration (logged, not summarised).
    #[arg(long, default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// Add runs until each configuration has this many seconds measured (at most 10 × --runs).
    #[arg(long, default_value_t = 0.0, value_name = "SECS")]
    min_time: f64,
    /// Longest a run may take, in seconds (a configuration that times out gets no more runs).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Measure every configuration of the grid instead of searching it.
    #[arg(long)]
    exhaustive: bool,
    /// Configurations within this many percent of the fastest tie (ties go to the simplest).
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_PCT, value_name = "PCT")]
    tolerance: f64,
    /// Results folder (default: coretune-results/YYYY-MM-DDTHH-MM-SS, in UTC).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue the sweep in DIR where it stopped (its grid and settings are read from DIR); for
    /// a fleet folder (--slurm), resubmit only the nodes whose sweeps are incomplete.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "threads", "place", "cpus", "throttle", "out", "exhaustive", "command", "partition", "nodelist", "constraint", "dry_run"])]
    resume: Option<PathBuf>,
    /// Measure nothing: print the grid, the number of runs and (with --estimate-one) the time
    /// it would take, for this machine or --input TOPOLOGY; with --slurm, print the batch
    /// scripts and submit nothing.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: seconds one single-threaded run takes, for a time estimate.
    #[arg(long, value_name = "SECS", requires = "dry_run")]
    estimate_one: Option<f64>,
    #[command(flatten)]
    input: TopologyArgs,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print summary.json instead of the table (for --slurm fleet-summary.json; for --dry-run
    /// the plan).
    #[arg(long)]
    json: bool,
    /// Run the command through `sh -c` (its words joined with spaces).
    #[arg(long)]
    shell: bool,
    /// A shell command to run before each run of the program (not measured).
    #[arg(long, value_name = "CMD")]
    prepare: Option<String>,
    #[command(flatten)]
    workload_args: WorkloadArgs,
    /// Sample per-CPU utilisation and each thread's CPU during every run (every MS
    /// milliseconds, default 50), into monitor/SEQ.jsonl, for the report's plots.
    #[arg(long, value_name = "MS", num_args = 0..=1, default_missing_value = "50")]
    monitor: Option<u64>,
    #[command(flatten)]
    slurm: SlurmArgs,
    /// The program to measure, with {threads}, {cpus} and {place} placeholders.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub(crate) fn run(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = args.resume.as_deref().filter(|d| SlurmFleet::is_fleet(d)) {
        return slurm::resume(dir, &args.slurm, shown(args));
    }
    if args.slurm.slurm {
        if args.input.input.is_some() {
            bail!(
                "--input plans one machine (with --dry-run, without --slurm); with --slurm each \
                 node sweeps its own topology"
            );
        }
        // Checked here, before any job is submitted: a typo is one line, not a failed fleet.
        check_settings(args)?;
        let machine = MachineCounts { cores: 1, pus: 1 };
        target(args)?;
        axes(args, Grid::default_for(machine), machine)?;
        return slurm::start(
            &args.slurm,
            sweep_args(args),
            args.out.as_deref(),
            args.dry_run,
            shown(args),
        );
    }
    if args.dry_run {
        return plan_only(args);
    }
    if args.input.input.is_some() {
        bail!(
            "--input: tune measures this machine; plan for another with --input TOPOLOGY --dry-run"
        );
    }
    let topo = TopologyArgs::default().load()?;
    let machine = MachineCounts::live(&topo);
    let (mut folder, runner) = match &args.resume {
        Some(dir) => {
            let folder = SweepFolder::resume(dir).context("--resume")?;
            let spec = folder.spec();
            let runner = Runner::new(&topo, spec.target.clone(), spec.settings.clone(), machine)?;
            check_grid(&runner, &spec.design.grid)?;
            (folder, runner)
        }
        None => new_sweep(args, &topo, machine)?,
    };
    let dir = folder.dir().to_path_buf();
    let record = MachineRecord::gather(topology_summary(&topo), env!("CARGO_PKG_VERSION"));
    folder.write_machine(&record, &topo)?;

    let stop = ctrl_c(&dir);
    let already = folder.lines().len();
    let bar = progress_bar(args.quiet || args.json);
    let places = cpu_places(&topo);
    let spec = folder.spec().clone();
    let export = |lines: &[coretune_core::sweep::RunLine]| -> anyhow::Result<SweepReport> {
        let results = SweepResults {
            dir: &dir,
            spec: &spec,
            lines,
        };
        write_report(&results, record.clone(), &topo, &places)
    };
    let mut stage = (usize::MAX, 0);
    let result = folder.execute(
        &runner,
        &mut |p: &Progress<'_>| {
            show(&bar, &mut stage, p);
            if p.remaining_in_stage == 0 {
                // After every stage, so an interrupted sweep still has its summaries.
                if let Err(e) = export(p.lines) {
                    bar.suspend(|| eprintln!("coretune: warning: {e:#}"));
                }
            }
        },
        &|| stop.load(Ordering::SeqCst),
    );
    bar.finish_and_clear();
    let report = export(folder.lines())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        if let Some(d) = runner.describe() {
            writeln!(out, "{}: {d}", report.target.label())?;
        }
        writeln!(out, "{}", report.machine.topology)?;
        out.write_all(table::render(&report, std::io::stdout().is_terminal()).as_bytes())?;
        let all = folder.lines().len();
        writeln!(
            out,
            "\nResults: {} ({} runs this time, {all} in all)",
            dir.display(),
            all - already,
        )?;
    }
    out.flush()?;
    let resume = format!("coretune tune --resume {}", dir.display());
    match result {
        Ok(()) => {}
        Err(SweepError::Interrupted) => {
            eprintln!("coretune: interrupted; continue with: {resume}");
            return Ok(ExitCode::from(exit::INTERRUPTED));
        }
        Err(SweepError::Abandoned(why)) => {
            bail!("{why}; the finished runs are saved, continue with: {resume}")
        }
        Err(e) => return Err(e).context("sweep"),
    }
    if let Some(why) = report.failure(folder.lines()) {
        eprintln!("coretune: {why}");
        return Ok(ExitCode::from(exit::FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// How a fleet shows its progress and report.
fn shown(args: &TuneArgs) -> slurm::Shown {
    slurm::Shown {
        quiet: args.quiet || args.json,
        json: args.json,
    }
}

/// Builds the sweep the arguments describe, checks it against this machine (the workload builds,
/// the program exists, every CPU set resolves), and only then creates its folder.
fn new_sweep<'t>(
    args: &TuneArgs,
    topo: &'t Topology,
    machine: MachineCounts,
) -> anyhow::Result<(SweepFolder, Runner<'t>)> {
    check_settings(args)?;
    let settings = settings(args);
    let runner = Runner::new(topo, target(args)?, settings.clone(), machine)?;
    let grid = axes(args, runner.default_grid(), machine)?;
    check_grid(&runner, &grid)?;
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => timestamped_dir(Path::new("coretune-results"), ""),
    };
    let spec = SweepSpec::new(plan(args, grid), runner.target().clone(), settings);
    Ok((SweepFolder::create(&dir, spec)?, runner))
}

/// The numbers that are not grid values.
fn check_settings(args: &TuneArgs) -> anyhow::Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !(args.tolerance >= 0.0 && args.tolerance < 100.0) {
        bail!("--tolerance must be a percentage from 0 to 100");
    }
    if !(args.min_time >= 0.0 && args.min_time.is_finite()) {
        bail!("--min-time must be a number of seconds");
    }
    if args.timeout.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
        bail!("--timeout must be a positive number of seconds");
    }
    Ok(())
}

/// What the sweep measures: the built-in workload named (raymesh by default), or the program.
fn target(args: &TuneArgs) -> anyhow::Result<Target> {
    if args.command.is_empty() {
        let name = args.workload.clone().unwrap_or_else(|| "raymesh".into());
        if !workload::NAMES.contains(&name.as_str()) {
            bail!(
                "unknown workload '{name}' (known: {})",
                workload::NAMES.join(", ")
            );
        }
        Ok(Target::Workload {
            spec: args
                .workload_args
                .spec(&name)
                .for_sweep(args.workload_args.size.is_some()),
            description: String::new(),
        })
    } else {
        if args.workload.is_some() {
            bail!("give a built-in workload or a command after --, not both");
        }
        Ok(Target::Command {
            argv: args.command.clone(),
            shell: args.shell,
        })
    }
}

fn settings(args: &TuneArgs) -> RunSettings {
    RunSettings {
        binding: args.bind,
        timeout: args.timeout.map(Duration::from_secs_f64),
        prepare: args.prepare.clone(),
        monitor: args.monitor.map(Duration::from_millis),
        skip: args.skip,
    }
}

/// `grid` with the axes the arguments name replaced.
fn axes(args: &TuneArgs, mut grid: Grid, machine: MachineCounts) -> anyhow::Result<Grid> {
    if let Some(spec) = &args.threads {
        grid.threads =
            parse_threads(spec, machine).map_err(|e| anyhow::anyhow!("--threads: {e}"))?;
    }
    if let Some(places) = &args.place {
        grid.places.clone_from(places);
    }
    if !args.cpus.is_empty() {
        grid.cpus = args
            .cpus
            .iter()
            .map(|e| e.parse::<Cpus>().with_context(|| format!("--cpus '{e}'")))
            .collect::<anyhow::Result<_>>()?;
    }
    if let Some(spec) = &args.throttle {
        grid.throttles =
            ThrottleSpec::parse_list(spec).map_err(|e| anyhow::anyhow!("--throttle: {e}"))?;
    }
    Ok(grid)
}

fn plan(args: &TuneArgs, grid: Grid) -> Design {
    Design {
        grid,
        strategy: if args.exhaustive {
            Strategy::Exhaustive
        } else {
            Strategy::Search
        },
        runs: args.runs,
        warmup: args.warmup,
        min_time: Duration::from_secs_f64(args.min_time),
        tolerance: args.tolerance / 100.0,
    }
}

/// `--dry-run` without `--slurm`: the grid this machine (or `--input`'s) would sweep, how many
/// runs, and with `--estimate-one` how long.
fn plan_only(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    check_settings(args)?;
    let one = args
        .estimate_one
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .context("--estimate-one must be a positive number of seconds")
        })
        .transpose()?;
    let topo = args.input.load()?;
    let machine = if args.input.input.is_some() {
        MachineCounts::of(&topo)
    } else {
        MachineCounts::live(&topo)
    };
    let target = target(args)?;
    let default = match &target {
        Target::Workload { spec, .. } => {
            let llc = topo.last_level_cache_bytes().unwrap_or(32 << 20);
            workload::build(spec, llc)?.default_grid(machine)
        }
        Target::Command { .. } => Grid::default_for(machine),
    };
    let grid = axes(args, default, machine)?;
    let plan = plan(args, grid);
    let estimate = plan.estimate(&topo, args.bind, machine, one)?;
    let text = if args.json {
        report::plan::json(&topology_summary(&topo), &target, &plan, &estimate)?
    } else {
        report::plan::text(&topology_summary(&topo), &target, &plan, &estimate, one)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The arguments that repeat this sweep on another machine (a Slurm node): every sweep option
/// as given, without where the results go or how progress is shown. Written `--name=value`, so
/// that a value starting with `-` stays a value.
fn sweep_args(args: &TuneArgs) -> Vec<String> {
    let mut v: Vec<String> = args.workload.iter().cloned().collect();
    let mut opt = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            v.push(format!("--{name}={value}"));
        }
    };
    let w = &args.workload_args;
    opt("threads", args.threads.clone());
    opt(
        "place",
        args.place.as_ref().map(|p| {
            p.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        }),
    );
    for cpus in &args.cpus {
        opt("cpus", Some(cpus.clone()));
    }
    opt("throttle", args.throttle.clone());
    opt("bind", Some(args.bind.to_string()));
    opt("runs", Some(args.runs.to_string()));
    opt("warmup", Some(args.warmup.to_string()));
    opt("min-time", Some(args.min_time.to_string()));
    opt("timeout", args.timeout.map(|t| t.to_string()));
    opt("tolerance", Some(args.tolerance.to_string()));
    opt("prepare", args.prepare.clone());
    opt("monitor", args.monitor.map(|m| m.to_string()));
    opt("size", w.size.map(|s| s.to_string()));
    opt("rays", w.rays.map(|x| x.to_string()));
    opt("mib", w.mib.map(|x| x.to_string()));
    opt("tasks", w.tasks.map(|x| x.to_string()));
    opt("compute-us", w.compute_us.map(|x| x.to_string()));
    opt("block-us", w.block_us.map(|x| x.to_string()));
    opt("count", w.count.map(|x| x.to_string()));
    opt("repeat", w.repeat.map(|x| x.to_string()));
    opt("items", w.items.map(|x| x.to_string()));
    opt("pool", w.pool.clone());
    for (flag, on) in [
        ("--exhaustive", args.exhaustive),
        ("--shell", args.shell),
        ("--batch", w.batch),
    ] {
        if on {
            v.push(flag.into());
        }
    }
    if !args.command.is_empty() {
        v.push("--".into());
        v.extend(args.command.iter().cloned());
    }
    v
}

/// Every CPU set of the grid resolves here; their warnings go to stderr, and so does the
/// reason when pinned placements cannot reach the program's threads one by one.
fn check_grid(runner: &Runner<'_>, grid: &Grid) -> anyhow::Result<()> {
    for (cpus, warning) in runner.check(grid)? {
        eprintln!("coretune: warning: --cpus '{cpus}': {warning}");
    }
    if let Some(warning) = runner.pinning_warning(grid) {
        eprintln!("coretune: warning: {warning}");
    }
    Ok(())
}

/// The first Ctrl-C asks the sweep to stop after the run in flight; the second quits at once
/// (the log is flushed after every run, so nothing finished is lost either way).
fn ctrl_c(dir: &Path) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let presses = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&stop);
    let shown = dir.display().to_string();
    // Not fatal: without a handler Ctrl-C ends the process, and the log is still intact.
    let _ = ctrlc::set_handler(move || {
        if presses.fetch_add(1, Ordering::SeqCst) == 0 {
            flag.store(true, Ordering::SeqCst);
            eprintln!(
                "\ncoretune: stopping after the run in flight (Ctrl-C again to quit now); \
                 continue with: coretune tune --resume {shown}"
            );
        } else {
            std::process::exit(i32::from(exit::INTERRUPTED));
        }
    });
    stop
}

fn progress_bar(hidden: bool) -> ProgressBar {
    let bar = if hidden {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} stage {prefix} [{bar:30}] {pos}/{len} runs, ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// Moves the bar on after a run; `stage` is (current stage, runs done when it began).
fn show(bar: &ProgressBar, stage: &mut (usize, usize), p: &Progress<'_>) {
    if p.stage != stage.0 {
        *stage = (p.stage, p.done - 1);
        bar.set_prefix((p.stage + 1).to_string());
    }
    let in_stage = p.done - stage.1;
    bar.set_length((in_stage + p.remaining_in_stage) as u64);
    bar.set_position(in_stage as u64);
    let wall = p
        .line
        .wall_s()
        .map_or(format!("{:?}", p.line.status), |w| format!("{w:.3} s"));
    bar.set_message(format!("{}: {wall}", p.line.config));
}

/// Builds the report of `results` (apply lines on this machine's topology) and writes every
/// report file into its folder.
fn write_report(
    results: &SweepResults<'_>,
    machine: MachineRecord,
    topo: &Topology,
    places: &[CpuPlace],
) -> anyhow::Result<SweepReport> {
    let report = results.report(machine, Some(topo), None);
    let view = results.run_view(&report, places);
    report::write_all(results.dir, &report, &view)?;
    Ok(report)
}

#[cfg(test)]
mod test {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        tune: TuneArgs,
    }

    fn parse(args: &[&str]) -> TuneArgs {
        Cli::try_parse_from(std::iter::once("tune").chain(args.iter().copied()))
            .unwrap()
            .tune
    }

    /// The arguments without where results go, how progress shows, and the Slurm options.
    fn sweep_only(mut a: TuneArgs) -> String {
        a.out = None;
        a.quiet = false;
        a.json = false;
        a.dry_run = false;
        a.slurm = SlurmArgs::default();
        format!("{a:?}")
    }

    #[test]
    fn sweep_args_repeat_the_sweep_on_a_node() {
        let cases: [&[&str]; 3] = [
            &[
                "sum",
                "--size",
                "small",
                "--threads",
                "1,2",
                "--place",
                "os,compact",
                "--cpus",
                "all ~pu:0",
                "--cpus",
                "all",
                "--throttle",
                "none,2",
                "--bind",
                "core",
                "--runs",
                "5",
                "--warmup",
                "0",
                "--min-time",
                "0.5",
                "--timeout",
                "9.5",
                "--tolerance",
                "2.5",
                "--exhaustive",
                "--count",
                "99",
                "--repeat",
                "3",
                "--slurm",
                "--partition",
                "a",
                "--out",
                "/x",
                "-q",
                "--monitor",
            ],
            &[
                "spawn",
                "--items",
                "1000",
                "--pool",
                "rayon",
                "--batch",
                "--monitor",
                "10",
                "--rays",
                "5",
                "--mib",
                "2",
                "--tasks",
                "3",
                "--compute-us",
                "4",
                "--block-us",
                "5",
            ],
            &[
                "--shell",
                "--prepare",
                "echo hi",
                "--threads",
                "2*pus",
                "--",
                "./app",
                "-t",
                "{threads}",
                "--out",
                "x",
            ],
        ];
        for args in cases {
            let a = parse(args);
            let node = sweep_args(&a);
            assert!(
                !node.iter().any(|w| w == "--slurm" || w == "-q"),
                "{node:?}"
            );
            let words: Vec<&str> = node.iter().map(String::as_str).collect();
            let again = parse(&words);
            assert_eq!(sweep_only(a), sweep_only(again), "{node:?}");
        }
    }
}
