//! `coretune tune`: sweep a grid of configurations, recommend one, write the results folder.
//!
//! With no arguments it is the README's main job: the `raymesh` workload over the default grid
//! (thread counts from 1 to 4 × the PUs, placements os/compact/spread/cores, and CPU 0 kept free
//! as a variant on machines with more than 2 PUs), at 500,000 rays per table so that the default
//! search takes about a minute on 2 cores. After `--`, any program is measured instead, with
//! `{threads}`, `{cpus}` and `{place}` substituted into its arguments.
//!
//! The folder (`coretune-results/<time>/` or `--out`) holds `sweep.json` (what to measure: read
//! back by `--resume`), `runs.jsonl` (every run, appended as it finishes), `summary.json`
//! (`docs/summary.schema.json`), `summary.csv`, `summary.md`, `hyperfine.json`, `machine.json`
//! and `topology.xml`. Summaries are rewritten after every stage of the search, so an
//! interrupted sweep still leaves them.
//!
//! Built-in workloads run in this process (as `bench` runs them); a run that exceeds `--timeout`
//! cannot be stopped safely there, so coretune exits (status 2) with every finished run saved,
//! and `--resume` continues. External programs are child processes, killed at the timeout and
//! logged as timed out.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::cpuset::{CpuSetExpr, ResolveOptions};
use coretune_core::launch;
use coretune_core::machine::{MachineRecord, topology_summary};
use coretune_core::measure::ChildProbe;
use coretune_core::placement::{Binding, Placement, Policy, plan};
use coretune_core::sweep::{
    Config, Grid, MachineCounts, Outcome, Plan, Progress, RunLog, Strategy, SweepError,
    default_threads, execute, parse_threads,
};
use coretune_core::topology::{Topology, set_to_vec};
use coretune_core::workload::{RunConfig, RunRecord, Size, Unit, Work, Workload, run_measured};
use coretune_core::{budget::CpuBudget, cpuset::format_list};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::report::{self, SweepReport, Target, table};
use crate::workload_args::WorkloadArgs;

/// raymesh rays per table for `coretune tune` when no size is given: the default sweep (about 80
/// runs on a 2-PU machine) then takes about a minute on 2 cores.
const TUNE_RAYS: usize = 500_000;

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
    /// Throttle limits to try: none, numbers, cores (default: none).
    #[arg(long, value_name = "LIST")]
    throttle: Option<String>,
    /// Each pinned thread's set: its PU, its core, or one set shared by all threads.
    #[arg(long, default_value = "pu")]
    bind: Binding,
    /// Measured runs per configuration.
    #[arg(long, default_value_t = 3, value_name = "N")]
    runs: usize,
    /// Warm-up runs per configuration (logged, not summarised).
    #[arg(long, default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// Add runs until each configuration has this many seconds measured (at most 10 × --runs).
    #[arg(long, default_value_t = 0.0, value_name = "SECS")]
    min_time: f64,
    /// Longest a run may take, in seconds.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Measure every configuration of the grid instead of searching it.
    #[arg(long)]
    exhaustive: bool,
    /// Configurations within this many percent of the fastest tie (ties go to the simplest).
    #[arg(long, default_value_t = 3.0, value_name = "PCT")]
    tolerance: f64,
    /// Results folder (default: coretune-results/YYYY-MM-DDTHH-MM-SS, in UTC).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue the sweep in DIR where it stopped (its grid and settings are read from DIR).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "threads", "place", "cpus", "throttle", "out", "exhaustive", "command"])]
    resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print summary.json instead of the table.
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
    /// The program to measure, with {threads}, {cpus} and {place} placeholders.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// `sweep.json`: what the folder's sweep measures, for `--resume`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SweepFile {
    pub(crate) schema: String,
    pub(crate) plan: Plan,
    pub(crate) target: Target,
    pub(crate) binding: Binding,
    pub(crate) timeout_s: Option<f64>,
    pub(crate) prepare: Option<String>,
    /// Monitor interval in milliseconds (`--monitor`); absent in older folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) monitor_ms: Option<u64>,
}

pub(crate) const SWEEP_SCHEMA: &str = "coretune-sweep/1";

/// Civil date and time (UTC) of a Unix time, for folder names (Hinnant's `civil_from_days`).
fn timestamp(unix: u64) -> String {
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// The current time as [`timestamp`] writes it.
pub(crate) fn now_stamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    timestamp(now)
}

fn counts(topo: &Topology) -> MachineCounts {
    let budget = CpuBudget::live(topo);
    MachineCounts {
        cores: budget.usable_cores.max(1),
        pus: budget.usable.len().max(1),
    }
}

/// Throttle list: `none`, numbers, `cores`, `pus`.
fn parse_throttles(spec: &str, machine: MachineCounts) -> anyhow::Result<Vec<Option<usize>>> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        out.push(match item {
            "none" => None,
            "cores" => Some(machine.cores),
            "pus" => Some(machine.pus),
            n => match n.parse::<usize>() {
                Ok(k) if k > 0 => Some(k),
                _ => bail!("--throttle: '{item}' is not none, cores, pus or a positive number"),
            },
        });
    }
    if out.is_empty() {
        bail!("--throttle: no values");
    }
    out.dedup();
    Ok(out)
}

/// Checks every CPU-set expression of the grid against the topology before anything runs.
fn check_cpus(topo: &Topology, exprs: &[String]) -> anyhow::Result<()> {
    for e in exprs.iter().filter(|e| *e != "all") {
        let resolved = e
            .parse::<CpuSetExpr>()
            .and_then(|x| x.resolve(topo, &ResolveOptions::default()))
            .with_context(|| format!("--cpus '{e}'"))?;
        for w in &resolved.warnings {
            eprintln!("coretune: warning: --cpus '{e}': {w}");
        }
    }
    Ok(())
}

/// The placement of a configuration.
fn placement_of(topo: &Topology, c: &Config, binding: Binding) -> anyhow::Result<Placement> {
    let policy: Policy = c
        .place
        .parse()
        .map_err(|e| anyhow::anyhow!("place '{}': {e}", c.place))?;
    let cpus = if c.cpus == "all" {
        None
    } else {
        Some(
            e_resolve(topo, &c.cpus)
                .with_context(|| format!("cpus '{}'", c.cpus))?
                .usable(topo),
        )
    };
    Ok(plan(topo, c.threads, policy, cpus.as_ref(), binding)?)
}

fn e_resolve(
    topo: &Topology,
    expr: &str,
) -> Result<coretune_core::cpuset::Resolved, coretune_core::cpuset::CpuSetError> {
    expr.parse::<CpuSetExpr>()?
        .resolve(topo, &ResolveOptions::default())
}

pub(crate) fn run(args: &TuneArgs) -> anyhow::Result<ExitCode> {
    let topo = crate::input::TopologyArgs::default().load()?;
    let machine_counts = counts(&topo);
    let (dir, sweep) = match &args.resume {
        Some(dir) => {
            let path = dir.join("sweep.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("--resume: {}", path.display()))?;
            let sweep: SweepFile = serde_json::from_str(&text)
                .with_context(|| format!("--resume: {}", path.display()))?;
            if sweep.schema != SWEEP_SCHEMA {
                bail!(
                    "--resume: {} is a {} file, not {SWEEP_SCHEMA}",
                    path.display(),
                    sweep.schema
                );
            }
            (dir.clone(), sweep)
        }
        None => new_sweep(args, &topo, machine_counts)?,
    };
    check_cpus(&topo, &sweep.plan.grid.cpus)?;

    // The workload (prepared once) or the command.
    let llc = topo.last_level_cache_bytes().unwrap_or(32 << 20);
    let workload: Option<Box<dyn Workload>> = match &sweep.target {
        Target::Workload { spec, .. } => Some(coretune_core::workload::build(spec, llc)?),
        Target::Command { .. } => None,
    };

    let machine = MachineRecord::gather(topology_summary(&topo), env!("CARGO_PKG_VERSION"));
    std::fs::write(
        dir.join("machine.json"),
        serde_json::to_vec_pretty(&machine)?,
    )
    .with_context(|| format!("writing {}", dir.join("machine.json").display()))?;
    if let Ok(xml) = topo.to_xml() {
        std::fs::write(dir.join("topology.xml"), xml)
            .with_context(|| format!("writing {}", dir.join("topology.xml").display()))?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let presses = Arc::new(AtomicUsize::new(0));
    {
        let (stop, presses) = (Arc::clone(&stop), Arc::clone(&presses));
        let shown = dir.display().to_string();
        // Not fatal: without a handler Ctrl-C ends the process, and the log is still intact.
        let _ = ctrlc::set_handler(move || {
            if presses.fetch_add(1, Ordering::SeqCst) == 0 {
                stop.store(true, Ordering::SeqCst);
                eprintln!(
                    "\ncoretune: stopping after the run in flight (Ctrl-C again to quit now); \
                     continue with: coretune tune --resume {shown}"
                );
            } else {
                std::process::exit(130);
            }
        });
    }

    let mut log = RunLog::open(&dir.join("runs.jsonl")).map_err(anyhow::Error::msg)?;
    let already = log.lines().len();
    let bar = if args.quiet || args.json {
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
    let timeout = sweep.timeout_s.map(Duration::from_secs_f64);
    let mut stage_start = 0;
    let mut last_stage = usize::MAX;
    let describe = workload.as_ref().map(|w| w.describe());
    let places = coretune_core::watch::cpu_places(&topo);
    let report_now = |log_lines: &[coretune_core::sweep::RunLine]| -> anyhow::Result<SweepReport> {
        report::finish(
            &dir,
            (&sweep.target, &machine, &sweep.plan),
            log_lines,
            &|c| apply_lines(&topo, &sweep.target, c, sweep.binding),
            &places,
        )
    };
    let monitored = std::cell::RefCell::new(None);
    let mut interrupted = false;
    let result = {
        let mut runner = |c: &Config| -> Outcome {
            let placement = match placement_of(&topo, c, sweep.binding) {
                Ok(p) => p,
                Err(e) => return Outcome::Failed(format!("{e:#}")),
            };
            let monitor = sweep.monitor_ms.and_then(|ms| {
                coretune_core::watch::Monitor::start_self(Duration::from_millis(ms.max(1))).ok()
            });
            let outcome = match (&workload, &sweep.target) {
                (Some(w), _) => run_builtin(w.as_ref(), &topo, c, &placement, timeout),
                (None, Target::Command { argv, shell }) => run_external(
                    argv,
                    *shell,
                    c,
                    &placement,
                    timeout,
                    sweep.prepare.as_deref(),
                ),
                (None, Target::Workload { .. }) => Outcome::Failed("no workload".into()),
            };
            *monitored.borrow_mut() = monitor.map(coretune_core::watch::Monitor::finish);
            outcome
        };
        let mut progress = |p: &Progress<'_>| {
            if p.stage != last_stage {
                last_stage = p.stage;
                stage_start = p.done - 1;
                bar.set_prefix((p.stage + 1).to_string());
            }
            let in_stage = p.done - stage_start;
            bar.set_length((in_stage + p.remaining_in_stage) as u64);
            bar.set_position(in_stage as u64);
            let wall = p
                .line
                .wall_s()
                .map_or(format!("{:?}", p.line.status), |w| format!("{w:.3} s"));
            bar.set_message(format!("{}: {wall}", p.line.config));
            if let Some(samples) = monitored.borrow_mut().take() {
                if let Err(e) = save_samples(&dir, p.line.seq, &samples) {
                    bar.suspend(|| eprintln!("coretune: warning: {e:#}"));
                }
            }
            if p.remaining_in_stage == 0 {
                // Export after every stage, so an interrupted sweep still has its summaries.
                let _ = report_now(p.lines);
            }
        };
        let stop_fn = || stop.load(Ordering::SeqCst);
        execute(&sweep.plan, &mut log, &mut runner, &mut progress, &stop_fn)
    };
    bar.finish_and_clear();
    match result {
        Ok(()) => {}
        Err(SweepError::Interrupted) => interrupted = true,
        Err(e) => return Err(e).context("sweep"),
    }
    let report = report_now(log.lines())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        if let Some(d) = &describe {
            writeln!(out, "{}: {d}", report.target.label())?;
        }
        writeln!(out, "{}", report.machine.topology)?;
        out.write_all(table::render(&report, std::io::stdout().is_terminal()).as_bytes())?;
        writeln!(
            out,
            "\nResults: {} ({} runs this time, {} in all)",
            dir.display(),
            log.lines().len() - already,
            log.lines().len()
        )?;
    }
    if interrupted {
        eprintln!(
            "coretune: interrupted; continue with: coretune tune --resume {}",
            dir.display()
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}

/// Sets up a new sweep folder from the command line.
fn new_sweep(
    args: &TuneArgs,
    topo: &Topology,
    machine: MachineCounts,
) -> anyhow::Result<(PathBuf, SweepFile)> {
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
    let target = if args.command.is_empty() {
        let name = args.workload.clone().unwrap_or_else(|| "raymesh".into());
        let mut spec = args.workload_args.spec(&name);
        if name == "raymesh" && args.workload_args.size.is_none() && spec.rays.is_none() {
            spec.rays = Some(TUNE_RAYS);
        }
        let llc = topo.last_level_cache_bytes().unwrap_or(32 << 20);
        let w = coretune_core::workload::build(&spec, llc)?;
        Target::Workload {
            description: w.describe(),
            spec,
        }
    } else {
        if args.workload.is_some() {
            bail!("give a built-in workload or a command after --, not both");
        }
        Target::Command {
            argv: args.command.clone(),
            shell: args.shell,
        }
    };
    let sum_like = matches!(&target, Target::Workload { spec, .. } if spec.name == "sum");
    let threads = match &args.threads {
        Some(spec) => {
            parse_threads(spec, machine).map_err(|e| anyhow::anyhow!("--threads: {e}"))?
        }
        None if sum_like => vec![coretune_core::workload::sum::DEFAULT_THREADS],
        None => default_threads(machine),
    };
    let places: Vec<String> = match &args.place {
        Some(p) => p.iter().map(ToString::to_string).collect(),
        None if sum_like => vec!["os".into()],
        None => ["os", "compact", "spread", "cores"]
            .map(String::from)
            .to_vec(),
    };
    let cpus = if args.cpus.is_empty() {
        let mut v = vec!["all".to_owned()];
        if machine.pus > 2 && !sum_like {
            v.push("all ~pu:0".into());
        }
        v
    } else {
        args.cpus.clone()
    };
    check_cpus(topo, &cpus)?;
    let throttles = match &args.throttle {
        Some(spec) => parse_throttles(spec, machine)?,
        None if sum_like => {
            let mut v = vec![None];
            v.extend([1, 2, 3, 4, 6, 8, 16, 64].map(Some));
            v
        }
        None => vec![None],
    };
    let plan = Plan {
        grid: Grid {
            threads,
            places,
            cpus,
            throttles,
        },
        strategy: if args.exhaustive {
            Strategy::Exhaustive
        } else {
            Strategy::Search
        },
        runs: args.runs,
        warmup: args.warmup,
        min_time: Duration::from_secs_f64(args.min_time),
        tolerance: args.tolerance / 100.0,
    };
    let dir = match &args.out {
        Some(d) => d.clone(),
        None => PathBuf::from("coretune-results").join(now_stamp()),
    };
    if dir.join("runs.jsonl").exists() {
        bail!(
            "{} already holds a sweep; continue it with --resume {}, or choose another --out",
            dir.display(),
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let sweep = SweepFile {
        schema: SWEEP_SCHEMA.into(),
        plan,
        target,
        binding: args.bind,
        timeout_s: args.timeout,
        prepare: args.prepare.clone(),
        monitor_ms: args.monitor,
    };
    write_json(&dir.join("sweep.json"), &sweep)?;
    Ok((dir, sweep))
}

/// Writes a run's monitor samples to `monitor/<seq>.jsonl`.
fn save_samples(
    dir: &Path,
    seq: usize,
    samples: &[coretune_core::watch::Sample],
) -> anyhow::Result<()> {
    let path = dir.join(report::monitor_file(seq));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut text = String::new();
    for s in samples {
        text.push_str(&serde_json::to_string(s)?);
        text.push('\n');
    }
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

fn write_json(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// One in-process run of a built-in workload, on a thread of its own so that a timeout can be
/// noticed (the thread itself cannot be stopped).
fn run_builtin(
    w: &dyn Workload,
    topo: &Topology,
    c: &Config,
    placement: &Placement,
    timeout: Option<Duration>,
) -> Outcome {
    let throttle = c.throttle.map(coretune_pool::Throttle::new);
    let config = RunConfig {
        throttle: throttle.as_ref(),
        start_hook: placement.pin_hook(topo),
        ..RunConfig::threads(c.threads)
    };
    let Some(limit) = timeout else {
        return match run_measured(w, &config) {
            Ok(r) => Outcome::Done(r),
            Err(e) => Outcome::Failed(e.to_string()),
        };
    };
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let config = &config;
        s.spawn(move || {
            let _ = tx.send(run_measured(w, config));
        });
        match rx.recv_timeout(limit) {
            Ok(Ok(r)) => Outcome::Done(r),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(_) => {
                // The scope would wait for the stuck run: leave the process instead. The log is
                // flushed after every run, so nothing finished is lost.
                eprintln!(
                    "coretune: a {} run exceeded --timeout ({:.1} s) and cannot be stopped \
                     in-process; exiting (finished runs are saved; use --resume)",
                    w.name(),
                    limit.as_secs_f64()
                );
                std::process::exit(2);
            }
        }
    })
}

/// Substitutes `{threads}`, `{cpus}` and `{place}` in one argument.
fn substitute(arg: &str, c: &Config, cpus: &str) -> String {
    arg.replace("{threads}", &c.threads.to_string())
        .replace("{cpus}", cpus)
        .replace("{place}", &c.place)
}

/// The CPU list a configuration's process runs on (`{cpus}`): the placement's union when it
/// pins or restricts, else every PU.
fn cpus_list(placement: &Placement) -> String {
    format_list(&set_to_vec(&placement.union()))
}

/// One run of an external program.
fn run_external(
    argv: &[String],
    shell: bool,
    c: &Config,
    placement: &Placement,
    timeout: Option<Duration>,
    prepare: Option<&str>,
) -> Outcome {
    let cpus = cpus_list(placement);
    if let Some(prep) = prepare {
        match Command::new("sh").arg("-c").arg(prep).status() {
            Ok(s) if s.success() => {}
            Ok(s) => return Outcome::Failed(format!("--prepare exited with {s}")),
            Err(e) => return Outcome::Failed(format!("--prepare: {e}")),
        }
    }
    let words: Vec<String> = argv.iter().map(|a| substitute(a, c, &cpus)).collect();
    let mut cmd = if shell {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(words.join(" "));
        cmd
    } else {
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        cmd
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.envs(launch::thread_env(c.threads, Some(placement)));
    let restrict = (placement.is_pinned() || c.cpus != "all").then(|| placement.union());
    let probe = ChildProbe::start();
    let mut child = match launch::spawn(cmd, restrict.as_ref()) {
        Ok(child) => child,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Outcome::Failed(format!("waiting for the program: {e}")),
        }
        if timeout.is_some_and(|t| probe.elapsed() > t) {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::Timeout;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let measurement = probe.finish();
    if !status.success() {
        return Outcome::Failed(format!(
            "{} exited with status {}",
            words[0],
            launch::exit_code(status)
        ));
    }
    let work = Work {
        amount: 1.0,
        unit: Unit::RunsPerSec,
        kernel_time: None,
    };
    Outcome::Done(RunRecord {
        throughput: work.throughput(measurement.wall),
        verified: true,
        verify_error: None,
        checksum: None,
        measurement,
    })
}

/// Ready-to-paste lines that apply a configuration.
pub(crate) fn apply_lines(
    topo: &Topology,
    target: &Target,
    c: &Config,
    binding: Binding,
) -> Vec<String> {
    let Ok(placement) = placement_of(topo, c, binding) else {
        return Vec::new();
    };
    let n = c.threads;
    let cpus_flag = if c.cpus == "all" {
        String::new()
    } else {
        format!(" --cpus '{}'", c.cpus)
    };
    let throttle_flag = c
        .throttle
        .map_or(String::new(), |k| format!(" --throttle {k}"));
    let list = cpus_list(&placement);
    let restricted = placement.is_pinned() || c.cpus != "all";
    let mut lines = Vec::new();
    match target {
        Target::Workload { spec, .. } => {
            let mut extra = String::new();
            if spec.size != Size::Default {
                extra.push_str(&format!(" --size {}", spec.size));
            }
            if let Some(r) = spec.rays {
                extra.push_str(&format!(" --rays {r}"));
            }
            lines.push(format!(
                "coretune bench {} --threads {n} --place {}{cpus_flag}{throttle_flag}{extra}",
                spec.name, c.place
            ));
        }
        Target::Command { argv, shell } => {
            let words: Vec<String> = argv.iter().map(|a| substitute(a, c, &list)).collect();
            let cmd = if *shell {
                format!("sh -c '{}'", words.join(" "))
            } else {
                words.join(" ")
            };
            lines.push(format!(
                "coretune run --threads {n} --place {}{cpus_flag} -- {cmd}",
                c.place
            ));
            if restricted {
                lines.push(format!("taskset -c {list} {cmd}"));
            }
        }
    }
    let mut omp = format!("OMP_NUM_THREADS={n}");
    if let Some(places) = placement.omp_places() {
        omp.push_str(&format!(" OMP_PLACES='{places}'"));
    }
    omp.push_str(&format!(" OMP_PROC_BIND={}", placement.omp_proc_bind()));
    lines.push(omp);
    lines.push(format!("RAYON_NUM_THREADS={n} TOKIO_WORKER_THREADS={n}"));
    if restricted {
        lines.push(format!(
            "systemd unit: CPUAffinity={} (AllowedCPUs= for a slice)",
            list.replace(',', " ")
        ));
    }
    lines
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn timestamps_are_civil_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00-00-00");
        // 2026-11-21 21:58:15 UTC
        assert_eq!(timestamp(1_795_298_295), "2026-11-21T21-58-15");
        // A leap day.
        assert_eq!(timestamp(951_782_400), "2000-02-29T00-00-00");
    }

    #[test]
    fn throttles_and_placeholders() {
        let m = MachineCounts { cores: 4, pus: 8 };
        assert_eq!(
            parse_throttles("none,2,cores", m).unwrap(),
            vec![None, Some(2), Some(4)]
        );
        assert!(parse_throttles("0", m).is_err());
        let c = Config {
            threads: 4,
            place: "spread".into(),
            cpus: "all".into(),
            throttle: None,
        };
        assert_eq!(
            substitute("--threads={threads} --on {cpus} ({place})", &c, "0-3"),
            "--threads=4 --on 0-3 (spread)"
        );
    }
}
