//! `coretune bench WORKLOAD`: one built-in workload in one configuration, measured as a sweep of
//! that one configuration (`Design::one`, in memory): the same warm-up, counters and statistics
//! as `tune`, printed run by run, or as one JSON object (`BenchReport`).

use crate::choices::one_of;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::Runner;
use coretune_core::cpuset::format_list;
use coretune_core::grid::{Cpus, Family, MachineCounts, ThrottleSpec};
use coretune_core::sweep::{BenchReport, Design, Progress, RunSettings, Sweep, SweepSpec, Target};
use coretune_core::workload::ThrottleSample;
use coretune_core::{Binding, Policy};

use crate::exit;
use crate::workload_args::WorkloadArgs;

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The workload: raymesh, membw, mixed, sum or spawn.
    #[arg(value_parser = crate::choices::workloads(), hide_possible_values = true)]
    workload: String,
    /// Worker threads (default: the PUs this process may use; sum: 64, as in the article).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// At most K workers compute at once (a counting semaphore), cores or pus for the machine's
    /// count, or 'adaptive': a limit that starts at the thread count and moves (halving, then
    /// single steps) while measured throughput improves; default: no throttle.
    #[arg(long, value_name = "K|adaptive")]
    throttle: Option<ThrottleSpec>,
    /// Placement (os: no pinning).
    #[arg(long, default_value = "os", value_parser = one_of(Policy::ALL))]
    place: Policy,
    /// Limit the workers to these CPUs (a CPU-set expression, e.g. 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Each worker's set: its PU, its whole core, one set shared by all workers (shared), or
    /// its own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu", value_parser = one_of(Binding::ALL))]
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
        spec: args.workload_args.spec(&args.workload)?,
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
    let config = Family::new(args.place)
        .with_cpus(cpus)
        .with_throttle(args.throttle.unwrap_or_default())
        .at(args.threads.unwrap_or_else(|| runner.default_threads()));
    // One configuration of the sweep engine: the same warm-up, runs, counters and statistics.
    let design = Design::one(&config, args.runs, args.warmup);
    for (cpus, warning) in runner.check(&design.grid)? {
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
    let mut sweep = Sweep::in_memory(SweepSpec::new(
        design,
        runner.target().clone(),
        runner.settings().clone(),
    ));
    let mut measured = 0;
    let mut printed = Ok(());
    let result = sweep.execute(
        &runner,
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
    let report = BenchReport::build(&args.workload, description, &config, sweep.lines());
    let traces: Vec<Vec<ThrottleSample>> = report
        .runs
        .iter()
        .map(|r| r.throttle_trace.clone())
        .collect();
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
