//! `coretune tune`: sweep a grid of configurations, recommend one, write the results folder.
//!
//! The sweep itself — target, grid, runs, log, statistics, recommendation and report model — is
//! core's engine ([`Runner`], [`SweepFolder`]). `args.rs` checks the arguments and turns them into
//! what the engine takes ([`TuneOptions`]); this file makes the [`SweepSpec`] (or reads one back
//! for `--resume`), runs it, shows progress, prints the table and writes the report files after
//! every stage of the search and at the end.
//!
//! With no arguments it is the README's main job: the `raymesh` workload over its default grid.
//! After `--`, any program is measured instead, with the configuration's placeholders
//! (`{threads}`, `{cpus}`, ...: `PLACEHOLDERS` in core's `sweep/run/placeholders.rs`)
//! substituted into its arguments. A program that is not there is refused before the folder is
//! made; a sweep in which no configuration completed a verified run exits with status 1.
//!
//! `--dry-run` plans instead of measuring: the grid this machine (or `--input TOPOLOGY`, a
//! machine this is not) would sweep, how many runs, and with `--estimate-one SECS` how long.
//! `--slurm` hands the same sweep to a Slurm cluster, one exclusive job per node (`slurm.rs`),
//! whose batch script runs `tune --fleet-node DIR/TARGET/NODE`: the fleet's sweep, its options
//! read from the fleet folder, measured here as any new sweep into that folder. `--resume` of a
//! fleet folder continues the fleet. `--replay SOURCE` runs the search on
//! recorded runs instead of a program and prints how its pick and cost compare with the
//! exhaustive answer (`replay.rs`).

mod args;
mod replay;
mod slurm;

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use coretune_core::grid::{Grid, MachineCounts};
use coretune_core::program::watch::{CpuPlace, cpu_places};
use coretune_core::program::{self, StopSignal};
use coretune_core::sweep::{
    Progress, RunLine, RunSettings, SweepError, SweepResults, claim_timestamped_dir,
};
use coretune_core::topology::{CpuBudget, MachineRecord, topology_summary};
use coretune_core::{Binding, Topology};
use coretune_core::{Runner, SweepFolder, SweepReport, SweepSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exit;
use crate::report::{self, table};
use args::{Folder, Job, Machine, SweepOptions, TuneOptions};

pub(crate) use args::TuneArgs;

pub(crate) fn run(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    args::check_escape(args, std::env::args_os())?;
    let TuneOptions {
        job,
        quiet,
        json,
        show_output,
    } = TuneOptions::try_from(args)?;
    let shown = slurm::Shown { quiet, json };
    match job {
        Job::ResumeFleet { dir, cluster } => slurm::resume(&dir, &cluster, shown),
        Job::Fleet {
            cluster,
            sweep,
            out,
            dry_run,
        } => slurm::start(&cluster, sweep, out.as_deref(), dry_run, shown),
        Job::Plan {
            on,
            sweep,
            binding,
            one,
        } => plan_only(&on, &sweep, binding, one, json),
        Job::Measure { on, folder } => measure(on, folder, quiet, json, show_output),
        Job::Replay {
            source,
            sweep,
            seed,
            topo,
        } => replay::run(&source, &sweep, seed, topo.as_ref(), json),
    }
}

/// Runs the sweep on this machine (`on`), shows its progress, prints the table (or with `json`
/// summary.json) and writes the report files.
fn measure(
    on: Machine,
    folder: Folder,
    quiet: bool,
    json: bool,
    show_output: bool,
) -> anyhow::Result<ExitCode> {
    let Machine {
        topo,
        counts: machine,
    } = on;
    let (mut folder, runner) = match folder {
        Folder::Resume { dir, force } => resume(&dir, force, &topo, machine)?,
        Folder::New {
            sweep,
            settings,
            out,
        } => new_sweep(&sweep, settings, out.as_deref(), &topo, machine)?,
    };
    let runner = runner.show_output(show_output);
    let dir = folder.dir().to_path_buf();
    let record = MachineRecord::gather(&topo, env!("CARGO_PKG_VERSION"));
    folder.write_machine(&record, &topo)?;
    // What makes the timings vary on this machine, one line each (also in machine.json).
    for warning in record.settings.warnings(&CpuBudget::live(&topo).usable) {
        eprintln!("coretune: warning: {warning}");
    }

    let stop = ctrl_c(&dir);
    let already = folder.lines().len();
    let bar = progress_bar(quiet);
    let places = cpu_places(&topo);
    let spec = folder.spec().clone();
    let results = |lines| SweepResults {
        dir: &dir,
        spec: &spec,
        lines,
    };
    let mut stage = (usize::MAX, 0);
    let expected = spec.design.expected_runs(machine.pus);
    let result = folder.execute(
        &runner,
        &mut |p: &Progress<'_>| {
            if let Some(note) = p.failure_note() {
                bar.suspend(|| eprintln!("coretune: {note}"));
            }
            show(&bar, &mut stage, expected, p);
            if p.remaining_in_stage == 0 {
                // After every stage, so an interrupted sweep still has its summaries.
                let now = SweepResults {
                    dir: &dir,
                    spec: &spec,
                    lines: p.lines,
                };
                let report = now.report(record.clone(), Some(&topo), None);
                // Not said here: the files are written again at the end, and what fails then
                // is said once (a full disk would say it after every stage).
                let _ = write_report(&now, &report, &places);
            }
        },
        &|| stop.load(Ordering::SeqCst),
    );
    bar.finish_and_clear();
    while QUITTING.load(Ordering::SeqCst) {
        // The handler ends what was started, says so and exits.
        std::thread::park();
    }
    // The table is printed from the runs held in memory, whether or not the files can be
    // written (a full disk): the files are written whole or not at all.
    let report = results(folder.lines()).report(record.clone(), Some(&topo), None);
    let written = write_report(&results(folder.lines()), &report, &places);
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        if let Some(d) = runner.describe() {
            writeln!(out, "{}: {d}", report.target.label())?;
        }
        writeln!(out, "{}", report.machine.topology)?;
        out.write_all(table::render(&report, table::color_stdout()).as_bytes())?;
        let all = folder.lines().len();
        writeln!(
            out,
            "\nResults: {} ({} this time, {all} in all)",
            dir.display(),
            coretune_core::cpuset::counted(all - already, "run"),
        )?;
    }
    out.flush()?;
    let resume = format!("coretune tune --resume {}", dir.display());
    match result {
        Ok(()) => {}
        // Stopped after its last run had finished: nothing is missing.
        Err(SweepError::Interrupted) if report.complete => {
            eprintln!("coretune: interrupted after the sweep's last run: the sweep is complete");
            return Ok(ExitCode::from(exit::INTERRUPTED));
        }
        Err(SweepError::Interrupted) => {
            let runs = &report.runs;
            let after = if runs.measured == 0 {
                "before any configuration completed a measured run".to_owned()
            } else {
                format!(
                    "after {}{}",
                    runs.measured,
                    runs.planned.map_or_else(
                        || " measured runs".to_owned(),
                        |planned| format!(" of {planned} measured runs")
                    )
                )
            };
            eprintln!(
                "coretune: interrupted {after}; the sweep is incomplete: continue with: {resume}"
            );
            return Ok(ExitCode::from(exit::INTERRUPTED));
        }
        Err(SweepError::Abandoned(why)) => {
            bail!("{why}; the finished runs are saved, continue with: {resume}")
        }
        // The log (or a run's monitor samples) could not be written, as on a full disk: the
        // sweep stopped at the first failed append, and says so once.
        Err(e @ SweepError::Write { .. }) => {
            bail!(
                "{e}: the sweep stopped there{}; every run before it is saved: free some space \
                 and continue with: {resume}",
                if written.is_err() {
                    " (and its report files were left as they were)"
                } else {
                    ""
                }
            )
        }
        Err(e) => return Err(e).context("sweep"),
    }
    written?;
    if let Some(why) = report.failure(folder.lines()) {
        eprintln!("coretune: {why}");
        return Ok(ExitCode::from(exit::FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the sweep in `dir` to continue it, with the runner its `sweep.json` describes: run
/// from the directory it ran in, whatever this one is (`dir` is made absolute first), and only
/// when its program is the file it measured — or, with `force`, regardless (said once).
fn resume<'t>(
    dir: &Path,
    force: bool,
    topo: &'t Topology,
    machine: MachineCounts,
) -> anyhow::Result<(SweepFolder, Runner<'t>)> {
    // Named from anywhere, the folder is the same once the directory changes (Windows'
    // absolute paths are normalised already; its canonical ones are `\\?\` paths).
    let dir = if cfg!(windows) {
        std::path::absolute(dir)
    } else {
        std::fs::canonicalize(dir).or_else(|_| std::path::absolute(dir))
    }
    .with_context(|| format!("--resume {}", dir.display()))?;
    let folder = SweepFolder::resume(&dir).context("--resume")?;
    let spec = folder.spec();
    if let Some(cwd) = spec.working_dir() {
        match std::env::set_current_dir(cwd) {
            Ok(()) => {}
            Err(_) if force => eprintln!(
                "coretune: warning: the sweep ran in {}, which is gone: --force runs it from here",
                cwd.display()
            ),
            Err(_) => {
                return Err(SweepError::WorkingDirGone {
                    dir: cwd.to_path_buf(),
                })
                .context("--resume");
            }
        }
    }
    match spec.check_program() {
        Ok(()) => {}
        Err(SweepError::NotTheSameProgram {
            name,
            path,
            differs,
        }) if force => eprintln!(
            "coretune: warning: --force: going on with '{name}', which is not the file this sweep \
             measured ({}: {differs})",
            path.display()
        ),
        Err(e) => return Err(e).context("--resume"),
    }
    let runner = Runner::new(topo, spec.target.clone(), spec.settings.clone(), machine)?;
    if let Some(launcher) = spec.settings.launcher {
        launcher.check_grid(topo, &spec.design.grid)?;
        launcher.check_here(&spec.design.grid)?;
    }
    check_grid(&runner, &spec.design.grid, folder.lines())?;
    show_instance_warnings(&spec.design.grid, topo);
    Ok((folder, runner))
}

/// Makes the sweep the arguments describe, checks it against this machine (the workload builds,
/// the program exists, every CPU set resolves), and only then creates its folder.
fn new_sweep<'t>(
    sweep: &SweepOptions,
    settings: RunSettings,
    out: Option<&Path>,
    topo: &'t Topology,
    machine: MachineCounts,
) -> anyhow::Result<(SweepFolder, Runner<'t>)> {
    let runner = Runner::new(topo, sweep.target.clone(), settings.clone(), machine)?;
    let mut grid = sweep.grid(runner.default_grid(), machine)?;
    show_merged(&grid.merge_duplicates(topo));
    let grid = launcher_grid(sweep, topo, grid)?;
    if let Some(launcher) = sweep.launcher {
        launcher.check_here(&grid)?;
    }
    check_grid(&runner, &grid, &[])?;
    show_instance_warnings(&grid, topo);
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => claim_timestamped_dir(Path::new("coretune-results"), "")?,
    };
    let design = sweep.design(grid).with_pus(topo, machine);
    let mut spec = SweepSpec::new(design, runner.target().clone(), settings);
    spec.record(runner.env_set(&spec.design.grid))?;
    Ok((SweepFolder::create(&dir, spec)?, runner))
}

/// `--dry-run` without `--slurm`: the grid this machine (or `--input`'s) would sweep, how many
/// runs, and with `--estimate-one` (`one`) how long.
fn plan_only(
    on: &Machine,
    sweep: &SweepOptions,
    binding: Binding,
    one: Option<Duration>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (topo, machine) = (&on.topo, on.counts);
    let target = &sweep.target;
    let mut grid = sweep.grid(target.default_grid(topo, machine)?, machine)?;
    // Checked as the sweep checks it, so that a plan is never printed for what would be refused.
    show_merged(&grid.merge_duplicates(topo));
    show_cpus_warnings(grid.check(topo)?);
    show_instance_warnings(&grid, topo);
    let plan = sweep.design(launcher_grid(sweep, topo, grid)?);
    let estimate = plan.estimate(topo, binding, machine, one)?;
    let text = if json {
        report::plan::json(&topology_summary(topo), target, &plan, &estimate)?
    } else {
        report::plan::text(&topology_summary(topo), target, &plan, &estimate, one)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `grid` as the sweep's launcher runs it (unchanged without one): what it cannot express is
/// refused, and a value that starts the same ranks as another is dropped, saying so.
fn launcher_grid(sweep: &SweepOptions, topo: &Topology, grid: Grid) -> anyhow::Result<Grid> {
    let Some(launcher) = sweep.launcher else {
        return Ok(grid);
    };
    let (grid, notes) = launcher.check_grid(topo, &grid)?;
    for note in notes {
        eprintln!("coretune: {note}");
    }
    Ok(grid)
}

/// Every CPU set of the grid resolves here, and no metric file is in the way (`lines`: the runs
/// a resumed sweep has made); the warnings go to stderr, and so does the reason when pinned
/// placements cannot reach the program's threads one by one.
fn check_grid(runner: &Runner<'_>, grid: &Grid, lines: &[RunLine]) -> anyhow::Result<()> {
    show_cpus_warnings(runner.check(grid)?);
    runner.check_program(grid)?;
    runner.check_metric_files(grid, lines)?;
    if let Some(warning) = runner.pinning_warning(grid) {
        eprintln!("coretune: warning: {warning}");
    }
    if let Some(note) = runner.pinning_note(grid) {
        eprintln!("coretune: {note}");
    }
    if let Some(warning) = runner.client_warning(grid) {
        eprintln!("coretune: warning: {warning}");
    }
    if let Some(note) = runner.mem_note(grid) {
        eprintln!("coretune: warning: {note}");
    }
    Ok(())
}

/// The grid values measured once though given twice ([`Grid::merge_duplicates`]).
fn show_merged(notes: &[String]) {
    for note in notes {
        eprintln!("coretune: note: {note}");
    }
}

/// What each CPU set of the grid is worth knowing for ([`Grid::check`]).
fn show_cpus_warnings(warnings: Vec<(String, coretune_core::cpuset::Warning)>) {
    for (cpus, warning) in warnings {
        eprintln!("coretune: warning: --cpus '{cpus}': {warning}");
    }
}

/// Copies that share PUs or get parts of different sizes ([`Grid::instance_warnings`]).
fn show_instance_warnings(grid: &Grid, topo: &Topology) {
    for warning in grid.instance_warnings(topo) {
        eprintln!("coretune: warning: {warning}");
    }
}

/// Set once a signal's handler is ending everything the sweep started to quit: the sweep's own
/// thread, which sees its run end then, leaves the exit to the handler.
static QUITTING: AtomicBool = AtomicBool::new(false);

/// The first Ctrl-C asks the sweep to stop after the run in flight; a second one, SIGTERM or
/// SIGHUP quit at once: everything the sweep started (the program, a server and its client,
/// what they started) is ended first, then coretune exits with the signal's status (130, 143,
/// 129). The log is flushed after every run, so nothing finished is lost either way.
fn ctrl_c(dir: &Path) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let presses = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&stop);
    let shown = dir.display().to_string();
    // Not fatal: without the handlers a signal ends coretune, the log is still intact, and the
    // kernel ends what it started (its children die with it: PR_SET_PDEATHSIG).
    let _ = program::on_stop_signals(move |signal| {
        if signal == StopSignal::Interrupt && presses.fetch_add(1, Ordering::SeqCst) == 0 {
            flag.store(true, Ordering::SeqCst);
            eprintln!(
                "\ncoretune: stopping after the run in flight (Ctrl-C again to quit now); \
                 continue with: coretune tune --resume {shown}"
            );
            return;
        }
        QUITTING.store(true, Ordering::SeqCst);
        // The run cut short by this is not a measurement: it is not logged.
        flag.store(true, Ordering::SeqCst);
        let why = match signal {
            StopSignal::Interrupt => "Ctrl-C again",
            StopSignal::Terminate => "terminated",
            StopSignal::Hangup => "hung up",
        };
        let ended = program::stop_everything();
        eprintln!(
            "\ncoretune: {why}: quitting now{}; the finished runs are saved, continue with: \
             coretune tune --resume {shown}",
            if ended > 0 {
                format!(
                    ", after ending {} it had started",
                    coretune_core::cpuset::counted(ended, "process")
                )
            } else {
                String::new()
            }
        );
        std::process::exit(i32::from(signal.exit_code()));
    });
    stop
}

fn progress_bar(hidden: bool) -> ProgressBar {
    let bar = if hidden {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    };
    // Until the first run ends, the stage's length is not known: a line that says what is
    // going on, not a bar at "0/0 runs" (which indicatif draws full).
    bar.set_style(
        ProgressStyle::with_template("{spinner} stage {prefix}: first run…")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix("1");
    bar
}

/// The bar once runs have ended.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner} stage {prefix} [{bar:30}] {pos}/{len} runs, ETA {eta}  {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}

/// Moves the bar on after a run; `stage` is (current stage, runs done when it began),
/// `expected` the runs the whole sweep is expected to make ([`Design::expected_runs`]).
///
/// [`Design::expected_runs`]: coretune_core::sweep::Design::expected_runs
fn show(bar: &ProgressBar, stage: &mut (usize, usize), expected: usize, p: &Progress<'_>) {
    if stage.0 == usize::MAX {
        bar.set_style(bar_style());
    }
    let new_stage = p.stage != stage.0;
    if new_stage {
        *stage = (p.stage, p.done - 1);
    }
    let in_stage = p.done - stage.1;
    // Length and position in one step, so that no frame shows one without the other.
    bar.update(|s| {
        s.set_len((in_stage + p.remaining_in_stage) as u64);
        s.set_pos(in_stage as u64);
    });
    if new_stage {
        bar.set_prefix((p.stage + 1).to_string());
    }
    let wall = p
        .line
        .wall_s()
        .map_or(format!("{:?}", p.line.status), |w| format!("{w:.3} s"));
    let all = p.lines.len();
    let in_all = if all <= expected {
        format!("{all}/~{expected} runs in all")
    } else {
        format!("{all} runs in all")
    };
    bar.set_message(format!("{}: {wall}; {in_all}", p.line.config));
}

/// Writes every report file of `report`, the report of `results`, into its folder.
fn write_report(
    results: &SweepResults<'_>,
    report: &SweepReport,
    places: &[CpuPlace],
) -> anyhow::Result<()> {
    let view = results.run_view(report, places);
    report::write_all(results.dir, report, &view)
}
