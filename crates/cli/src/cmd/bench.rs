use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::Runner;
use coretune_core::cpuset::format_list;
use coretune_core::grid::{Config, Cpus, Grid, MachineCounts, ThrottleSpec};
use coretune_core::sweep::{
    Design, Progress, RunLog, RunSettings, Status, Strategy, Target, execute, summarize,
};
use coretune_core::workload::{RunRecord, Throughput};
use coretune_core::{Binding, Policy};
use serde::Serialize;

use crate::exit;
use crate::workload_args::WorkloadArgs;

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The workload: raymesh, membw, mixed, sum or spawn.
    workload: String,
    /// Worker threads (default: the PUs this process may use; sum: 64, as in the article).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// At most K workers compute at once (a counting semaphore), cores or pus for the machine's
    /// count, or 'adaptive': a limit that starts at the thread count and moves (halving, then
    /// single steps) while measured throughput improves; default: no throttle.
    #[arg(long, value_name = "K|adaptive")]
    throttle: Option<ThrottleSpec>,
    /// Placement: os (no pinning), compact, spread, cores, round-robin.
    #[arg(long, default_value = "os")]
    place: Policy,
    /// Limit the workers to these CPUs (a CPU-set expression, e.g. 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Each worker's set: its PU, its whole core, one set shared by all workers (shared), or
    /// its own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu")]
    bind: Binding,
    /// Measured runs.
    #[arg(long, default_value_t = 3, value_name = "R")]
    runs: usize,
    /// Unmeasured runs first (caches, page faults, CPU frequency).
    #[arg(long, default_value_t = 1, value_name = "W")]
    warmup: usize,
    #[command(flatten)]
    workload_args: WorkloadArgs,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// One sample of an adaptive throttle's trace, with the run it belongs to.
#[derive(Debug, Serialize)]
struct TracePoint {
    /// Measured run (1-based) whose throttle took the sample.
    run: usize,
    /// Time since that run's throttle was created.
    t_s: f64,
    /// Limit in force during the sample.
    limit: usize,
    /// Completions (work units) per second during the sample.
    throughput: f64,
}

/// `coretune bench --json`'s object.
#[derive(Debug, Serialize)]
struct Report {
    workload: String,
    description: String,
    threads: usize,
    place: Policy,
    cpus: Cpus,
    throttle: ThrottleSpec,
    verified: bool,
    /// Median wall time of the verified runs (null when none verified).
    wall_s: Option<f64>,
    /// Bootstrap 95% interval of that median.
    ci_s: Option<(f64, f64)>,
    throughput: Option<Throughput>,
    ctx_switches: CtxSwitches,
    migrations: Option<f64>,
    runs: Vec<RunRecord>,
    /// Every measured run's adaptive-throttle samples (empty without `--throttle adaptive`).
    throttle_trace: Vec<TracePoint>,
}

#[derive(Debug, Serialize)]
struct CtxSwitches {
    voluntary: Option<f64>,
    involuntary: Option<f64>,
}

pub(crate) fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if args.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    let topo = crate::input::TopologyArgs::default().load()?;
    let machine = MachineCounts::live(&topo);
    let target = Target::Workload {
        spec: args.workload_args.spec(&args.workload),
        description: String::new(),
    };
    let settings = RunSettings {
        binding: args.bind,
        ..RunSettings::default()
    };
    let runner = Runner::new(&topo, target, settings, machine)?;
    let cpus: Cpus = match &args.cpus {
        Some(e) => e.parse().with_context(|| format!("--cpus '{e}'"))?,
        None => Cpus::All,
    };
    let config = Config {
        threads: args.threads.unwrap_or_else(|| runner.default_threads()),
        place: args.place,
        cpus,
        throttle: args.throttle.unwrap_or_default(),
    };
    // One configuration of the sweep engine: the same warm-up, runs, counters and statistics.
    let plan = Design {
        grid: Grid {
            threads: vec![config.threads],
            places: vec![config.place],
            cpus: vec![config.cpus.clone()],
            throttles: vec![config.throttle],
        },
        strategy: Strategy::Exhaustive,
        runs: args.runs,
        warmup: args.warmup,
        min_time: std::time::Duration::ZERO,
        tolerance: 0.03,
    };
    for (cpus, warning) in runner.check(&plan.grid)? {
        eprintln!("coretune: warning: --cpus '{cpus}': {warning}");
    }
    config.placement(&topo, args.bind).context("--place")?;
    let description = runner.describe().unwrap_or_default();
    let mut out = std::io::stdout().lock();
    if !args.json {
        writeln!(out, "{}: {description}", args.workload)?;
        writeln!(
            out,
            "{}, {} run{} after {} warm-up",
            config,
            args.runs,
            if args.runs == 1 { "" } else { "s" },
            args.warmup
        )?;
        writeln!(
            out,
            "{:>3} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>14}  verified",
            "run", "wall", "user", "sys", "vol.cs", "invol.cs", "migr", "peak RSS", "throughput"
        )?;
    }
    let mut log = RunLog::in_memory();
    let mut measured = 0;
    let mut printed = Ok(());
    let result = execute(
        &plan,
        &mut log,
        &mut |c| runner.run(c).outcome,
        &mut |p: &Progress<'_>| {
            if p.line.warmup || args.json || printed.is_err() {
                return;
            }
            measured += 1;
            printed = print_run(&mut out, measured, p);
        },
        &|| false,
    );
    printed?;
    result?;
    let lines: Vec<_> = log.lines().iter().filter(|l| !l.warmup).collect();
    let summary = summarize(log.lines()).into_iter().next();
    let runs: Vec<RunRecord> = lines.iter().filter_map(|l| l.record.clone()).collect();
    let traces: Vec<Vec<coretune_core::workload::ThrottleSample>> =
        runs.iter().map(|r| r.throttle_trace.clone()).collect();
    let report = Report {
        workload: args.workload.clone(),
        description,
        threads: config.threads,
        place: config.place,
        cpus: config.cpus.clone(),
        throttle: config.throttle,
        verified: lines.iter().all(|l| l.status == Status::Ok),
        wall_s: summary
            .as_ref()
            .and_then(|s| s.wall.as_ref())
            .map(|w| w.median),
        ci_s: summary.as_ref().and_then(|s| s.wall.as_ref()).map(|w| w.ci),
        throughput: summary.as_ref().and_then(|s| s.throughput),
        ctx_switches: CtxSwitches {
            voluntary: summary.as_ref().and_then(|s| s.voluntary_ctx_switches),
            involuntary: summary.as_ref().and_then(|s| s.involuntary_ctx_switches),
        },
        migrations: summary.as_ref().and_then(|s| s.migrations),
        throttle_trace: traces
            .iter()
            .enumerate()
            .flat_map(|(i, trace)| {
                trace.iter().map(move |s| TracePoint {
                    run: i + 1,
                    t_s: s.t_s,
                    limit: s.limit,
                    throughput: s.throughput,
                })
            })
            .collect(),
        runs,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        match (report.wall_s, report.ci_s, report.throughput) {
            (Some(wall), Some((lo, hi)), Some(throughput)) => writeln!(
                out,
                "median: {wall:.3} s (95% interval {lo:.3} – {hi:.3} s), {throughput}; {}",
                if report.verified {
                    "every run verified"
                } else {
                    "SOME RUNS FAILED"
                }
            )?,
            _ => writeln!(out, "no run completed and verified")?,
        }
        for (i, trace) in traces.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            let limits: Vec<usize> = trace.iter().map(|s| s.limit).collect();
            let second_half = &limits[limits.len() / 2..];
            writeln!(
                out,
                "run {}: adaptive throttle, {} samples, limit {} at the end, {}..={} over the \
                 second half",
                i + 1,
                trace.len(),
                limits.last().copied().unwrap_or_default(),
                second_half.iter().min().copied().unwrap_or_default(),
                second_half.iter().max().copied().unwrap_or_default(),
            )?;
        }
        if let Some(trace) = traces.last().filter(|t| !t.is_empty()) {
            writeln!(
                out,
                "last run's throttle trace (time, limit, work units/s):"
            )?;
            for s in trace {
                writeln!(
                    out,
                    "  {:>7.3}s {:>4} {:>12.1}",
                    s.t_s, s.limit, s.throughput
                )?;
            }
        }
        if let Some(last) = report.runs.last() {
            let source = &last.measurement.migrations_source;
            writeln!(
                out,
                "migrations counted by: {}",
                serde_json::to_string(source)?.trim_matches('"')
            )?;
            for t in &last.measurement.threads {
                let total: u64 = t.cpus_seen.values().sum();
                let cpus: Vec<usize> = t.cpus_seen.keys().copied().collect();
                let shares: Vec<String> = t
                    .cpus_seen
                    .iter()
                    .map(|(cpu, n)| format!("{cpu}: {}%", n * 100 / total.max(1)))
                    .collect();
                writeln!(
                    out,
                    "  worker {} (tid {}) ran on CPU {} ({}), {} migrations",
                    t.worker,
                    t.tid,
                    format_list(&cpus),
                    shares.join(", "),
                    t.migrations.map_or("?".into(), |n| n.to_string())
                )?;
            }
        }
    }
    Ok(if report.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
}

/// One measured run's row of the text output.
fn print_run(out: &mut impl std::io::Write, n: usize, p: &Progress<'_>) -> std::io::Result<()> {
    let Some(r) = &p.line.record else {
        return writeln!(
            out,
            "{n:>3} FAILED: {}",
            p.line.error.as_deref().unwrap_or("no result")
        );
    };
    let m = &r.measurement;
    writeln!(
        out,
        "{:>3} {:>8.3}s {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>14}  {}",
        n,
        m.wall.as_secs_f64(),
        m.user
            .map_or("-".into(), |d| format!("{:.3}s", d.as_secs_f64())),
        m.sys
            .map_or("-".into(), |d| format!("{:.3}s", d.as_secs_f64())),
        m.voluntary_ctx_switches
            .map_or("-".into(), |n| n.to_string()),
        m.involuntary_ctx_switches
            .map_or("-".into(), |n| n.to_string()),
        m.migrations.map_or("-".into(), |n| n.to_string()),
        m.peak_rss_bytes
            .map_or("-".into(), |b| format!("{} MiB", b >> 20)),
        r.throughput.to_string(),
        if r.verified {
            "yes".to_owned()
        } else {
            format!("NO: {}", r.verify_error.clone().unwrap_or_default())
        }
    )
}
