//! `coretune bench WORKLOAD`: one built-in workload, one configuration, a few measured runs.
//!
//! Warm-up runs are executed and verified but not reported. Every reported run carries the
//! measurements of [`coretune_core::measure`] and its verification verdict; the summary figures
//! (`wall_s`, `throughput`, context switches, migrations) are medians over the runs.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::placement::{Binding, Policy, plan};
use coretune_core::stats::median;
use coretune_core::workload::{RunConfig, RunRecord, Throughput, build, run_measured};
use coretune_core::{budget::CpuBudget, cpuset::format_list};
use serde::Serialize;

use crate::workload_args::WorkloadArgs;

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The workload: raymesh, membw, mixed, sum or spawn.
    workload: String,
    /// Worker threads (default: the PUs this process may use; sum: 64, as in the article).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// At most K workers compute at once (a counting semaphore), or 'adaptive': a limit that
    /// climbs from the core count while measured throughput improves; default: no throttle.
    #[arg(long, value_name = "K|adaptive")]
    throttle: Option<ThrottleArg>,
    /// Placement: os (no pinning), compact, spread, cores, round-robin.
    #[arg(long, default_value = "os")]
    place: Policy,
    /// Limit the workers to these CPUs (a CPU-set expression, e.g. 'all ~pu:0').
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Each worker's set: its PU, its whole core, or one set shared by all workers.
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

/// `--throttle`: a fixed limit or the adaptive (hill-climbing) one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
enum ThrottleArg {
    /// At most K at once.
    Fixed(usize),
    /// `Throttle::adaptive` between 1 and the thread count, starting at the core count.
    #[serde(serialize_with = "adaptive_name")]
    Adaptive,
}

fn adaptive_name<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("adaptive")
}

impl std::str::FromStr for ThrottleArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "adaptive" {
            return Ok(ThrottleArg::Adaptive);
        }
        match s.parse::<usize>() {
            Ok(0) => Err("--throttle must be at least 1".into()),
            Ok(k) => Ok(ThrottleArg::Fixed(k)),
            Err(_) => Err(format!(
                "'{s}' is neither a positive integer nor 'adaptive'"
            )),
        }
    }
}

impl std::fmt::Display for ThrottleArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThrottleArg::Fixed(k) => write!(f, "throttle {k}"),
            ThrottleArg::Adaptive => f.write_str("adaptive throttle"),
        }
    }
}

impl ThrottleArg {
    /// A fresh throttle for one run: an adaptive one starts its climb anew every run, so each
    /// run's throughput includes the climb.
    fn build(self, threads: usize, cores: usize) -> coretune_pool::Throttle {
        match self {
            ThrottleArg::Fixed(k) => coretune_pool::Throttle::new(k),
            ThrottleArg::Adaptive => {
                coretune_pool::Throttle::adaptive(coretune_pool::AdaptiveConfig {
                    min: 1,
                    max: threads,
                    initial: cores.min(threads),
                    ..coretune_pool::AdaptiveConfig::default()
                })
            }
        }
    }
}

/// One sample of an adaptive throttle's trace.
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
    place: String,
    cpus: String,
    throttle: Option<ThrottleArg>,
    verified: bool,
    wall_s: f64,
    throughput: Throughput,
    ctx_switches: CtxSwitches,
    migrations: Option<f64>,
    runs: Vec<RunRecord>,
    /// Every measured run's adaptive-throttle samples (empty without `--throttle adaptive`).
    throttle_trace: Vec<TracePoint>,
}

#[derive(Debug, Serialize)]
struct CtxSwitches {
    voluntary: f64,
    involuntary: f64,
}

pub(crate) fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let topo = crate::input::TopologyArgs::default().load()?;
    let llc = topo.last_level_cache_bytes().unwrap_or(32 << 20);
    let workload = build(&args.workload_args.spec(&args.workload), llc)?;
    let threads = match args.threads {
        Some(0) => bail!("--threads must be at least 1"),
        Some(n) => n,
        None => workload
            .default_threads()
            .unwrap_or_else(|| CpuBudget::live(&topo).usable.len().max(1)),
    };
    // Where an adaptive throttle starts: the CPUs this process may use.
    let usable = CpuBudget::live(&topo).usable.len().max(1);
    let cpus = crate::cmd::place::cpus_option(&topo, args.cpus.as_deref(), false)?;
    let placement =
        plan(&topo, threads, args.place, cpus.as_ref(), args.bind).context("--place")?;
    let config = RunConfig {
        start_hook: placement.pin_hook(&topo),
        ..RunConfig::threads(threads)
    };
    let new_throttle = || args.throttle.map(|t| t.build(threads, usable));
    let mut out = std::io::stdout().lock();
    if !args.json {
        writeln!(out, "{}: {}", workload.name(), workload.describe())?;
        writeln!(
            out,
            "{threads} thread{}, placement {}{}, {}, {} run{} after {} warm-up",
            if threads == 1 { "" } else { "s" },
            args.place,
            args.cpus
                .as_ref()
                .map_or(String::new(), |c| format!(" on '{c}'")),
            args.throttle
                .map_or("no throttle".into(), |t| t.to_string()),
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
    for i in 0..args.warmup {
        let throttle = new_throttle();
        let config = RunConfig {
            throttle: throttle.as_ref(),
            ..config.clone()
        };
        let r = run_measured(workload.as_ref(), &config)
            .with_context(|| format!("warm-up run {}", i + 1))?;
        if !r.verified {
            bail!(
                "warm-up run {} failed verification: {}",
                i + 1,
                r.verify_error.unwrap_or_default()
            );
        }
    }
    let mut runs = Vec::with_capacity(args.runs);
    let mut traces = Vec::with_capacity(args.runs);
    for i in 0..args.runs {
        let throttle = new_throttle();
        let run_config = RunConfig {
            throttle: throttle.as_ref(),
            ..config.clone()
        };
        let r = run_measured(workload.as_ref(), &run_config)
            .with_context(|| format!("run {}", i + 1))?;
        traces.push(throttle.map(|t| t.trace()).unwrap_or_default());
        if !args.json {
            let m = &r.measurement;
            writeln!(
                out,
                "{:>3} {:>8.3}s {:>7.3}s {:>7.3}s {:>8} {:>8} {:>6} {:>9} {:>14}  {}",
                i + 1,
                m.wall.as_secs_f64(),
                m.user.as_secs_f64(),
                m.sys.as_secs_f64(),
                m.voluntary_ctx_switches,
                m.involuntary_ctx_switches,
                m.migrations.map_or("-".into(), |n| n.to_string()),
                format!("{} MiB", m.peak_rss_bytes >> 20),
                r.throughput.to_string(),
                if r.verified {
                    "yes".to_owned()
                } else {
                    format!("NO: {}", r.verify_error.clone().unwrap_or_default())
                }
            )?;
        }
        runs.push(r);
    }
    let med = |f: &dyn Fn(&RunRecord) -> f64| {
        median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let report = Report {
        workload: workload.name().to_owned(),
        description: workload.describe(),
        threads,
        place: args.place.to_string(),
        cpus: args.cpus.clone().unwrap_or_else(|| "all".into()),
        throttle: args.throttle,
        verified: runs.iter().all(|r| r.verified),
        wall_s: med(&|r| r.measurement.wall.as_secs_f64()),
        throughput: Throughput {
            value: med(&|r| r.throughput.value),
            unit: runs[0].throughput.unit,
        },
        ctx_switches: CtxSwitches {
            voluntary: med(&|r| r.measurement.voluntary_ctx_switches as f64),
            involuntary: med(&|r| r.measurement.involuntary_ctx_switches as f64),
        },
        migrations: runs
            .iter()
            .all(|r| r.measurement.migrations.is_some())
            .then(|| med(&|r| r.measurement.migrations.unwrap_or(0) as f64)),
        runs,
        throttle_trace: traces
            .iter()
            .enumerate()
            .flat_map(|(i, trace)| {
                trace.iter().map(move |s| TracePoint {
                    run: i + 1,
                    t_s: s.at.as_secs_f64(),
                    limit: s.limit,
                    throughput: s.throughput,
                })
            })
            .collect(),
    };
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "median: {:.3} s, {}; {}",
            report.wall_s,
            report.throughput,
            if report.verified {
                "every run verified"
            } else {
                "VERIFICATION FAILED"
            }
        )?;
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
                    s.at.as_secs_f64(),
                    s.limit,
                    s.throughput
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
        ExitCode::from(crate::EXIT_ERROR)
    })
}
