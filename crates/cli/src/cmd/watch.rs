//! `coretune watch [--interval MS] [--json] [--out DIR] (-- CMD ARGS | --pid PID)`: samples
//! per-CPU utilisation, where each thread of the program (and of its child processes) runs and
//! how often it migrates, and interrupts per CPU, until the program ends or Ctrl-C.
//!
//! The folder (`--out`, default `coretune-results/watch-<time>/`) gets `watch.jsonl` (one
//! sample per line, appended as taken), `summary.json`, `utilisation.svg` and `residency.svg`.
//! Where the default folder cannot be made (a read-only working directory), `watch` says so and
//! watches all the same, keeping nothing but the summary it prints: the summary is what it is
//! run for. A folder given with `--out` that cannot be made is an error.
//! The summary is printed at the end: as one JSON object with `--json`
//! (`docs/watch.schema.json`), else the busiest CPUs, the threads that migrated most and CPU 0's
//! share of interrupts. With `--json` the program's own standard output goes to standard error,
//! so standard output holds only the summary.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::program::watch::{WatchSummary, cpu_places};
use coretune_core::sweep::{RunView, WatchSession, Watched};
use coretune_core::{Topology, TopologySource};

use crate::report::svg::{residency_plot, utilisation_plot};

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Milliseconds between samples.
    #[arg(long, default_value_t = 100, value_name = "MS")]
    interval: u64,
    /// Print the summary as one JSON object (docs/watch.schema.json).
    #[arg(long)]
    json: bool,
    /// Folder for watch.jsonl, summary.json and the plots (default:
    /// coretune-results/watch-DATE).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Watch this running process (and its children) instead of starting a command.
    #[arg(long, conflicts_with = "command")]
    pid: Option<i32>,
    /// The command to start and watch: after `--`, or directly after the options (everything
    /// from the first word on is the command's).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

/// Threads shown in the residency plot and the text summary, at most.
const MAX_THREADS_SHOWN: usize = 24;

pub(crate) fn run(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    if args.interval == 0 {
        bail!("--interval must be at least 1 ms");
    }
    if args.pid.is_none() && args.command.is_empty() {
        bail!("watch: give a command after -- or --pid PID");
    }
    // A program that is not there is refused before the folder is made.
    if let Some(program) = args.command.first() {
        coretune_core::program::find_program(program)?;
    }
    let (dir, warning) = WatchSession::claim_folder(args.out.as_deref())?;
    if let Some(warning) = warning {
        eprintln!("coretune: warning: {warning}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Not fatal: without a handler Ctrl-C ends coretune and the samples so far stay on disk.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let watched = match args.pid {
        Some(pid) => Watched::Pid(pid),
        None => {
            let mut cmd = Command::new(&args.command[0]);
            cmd.args(&args.command[1..]);
            if args.json {
                // The program's output goes to standard error: standard output is the JSON.
                cmd.stdout(Stdio::from(std::io::stderr()));
            }
            // Started as every program coretune starts (in its process group: Ctrl-C reaches
            // both), unplaced: watch looks where it runs on its own.
            Watched::Started(Box::new(
                coretune_core::program::PlacedCommand::new(cmd)
                    .start()
                    .with_context(|| args.command[0].clone())?,
            ))
        }
    };
    let mut session = WatchSession::start(watched, Duration::from_millis(args.interval), dir)?;
    let status = session.run(&stop)?;
    let dir = session.dir().map(Path::to_path_buf);
    let (summary, samples) = session.finish()?;
    let places = Topology::load(&TopologySource::Live)
        .map(|t| cpu_places(&t))
        .unwrap_or_default();
    let label = match args.pid {
        Some(pid) => format!("pid {pid}"),
        None => args.command.join(" "),
    };
    let view = RunView {
        label: shorten(&label, 60),
        threads: summary
            .threads
            .iter()
            .take(MAX_THREADS_SHOWN)
            .map(|t| {
                (
                    format!("{} (tid {})", t.name, t.tid),
                    t.cpus_seen.clone(),
                    t.migrations,
                )
            })
            .collect(),
        samples,
        places,
        throttle_traces: Vec::new(),
    };
    if let Some(dir) = &dir {
        for (name, svg) in [
            ("utilisation.svg", utilisation_plot(&view)?),
            ("residency.svg", residency_plot(&view)?),
        ] {
            if let Some(svg) = svg {
                let path = dir.join(name);
                std::fs::write(&path, svg)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }

    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        // On standard error, as `time` and `perf stat` print theirs: standard output stays
        // the program's (`coretune watch -- xz -c f > f.xz`).
        print_summary(&mut std::io::stderr().lock(), &summary, dir.as_deref())?;
    }
    Ok(match status {
        Some(s) => ExitCode::from(u8::try_from(coretune_core::program::exit_code(s)).unwrap_or(1)),
        None => ExitCode::SUCCESS,
    })
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn print_summary(
    out: &mut impl std::io::Write,
    s: &WatchSummary,
    dir: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    writeln!(out, "{} samples over {:.1} s", s.samples, s.duration_s)?;
    let mut cpus = s.cpus.clone();
    cpus.sort_by(|a, b| b.busy_pct.total_cmp(&a.busy_pct));
    let busiest: Vec<String> = cpus
        .iter()
        .take(8)
        .map(|c| format!("CPU {} {:.0}%", c.cpu, c.busy_pct))
        .collect();
    writeln!(out, "Busiest CPUs: {}", busiest.join(", "))?;
    if !s.threads_visible {
        writeln!(
            out,
            "Threads: not shown: this system (Windows) does not tell where another process's \
             threads run, only each thread itself can ask"
        )?;
    }
    let mut threads: Vec<_> = s.threads.iter().collect();
    threads.sort_by_key(|t| (std::cmp::Reverse(t.migrations.unwrap_or(0)), t.tid));
    if s.threads_visible {
        writeln!(
            out,
            "Threads (most migrations first): tid, name, CPU time and %CPU while watched \
             (pidstat -t), migrations, share of samples seen on each CPU"
        )?;
    }
    for t in threads.iter().take(10) {
        let total: u64 = t.cpus_seen.values().sum();
        let mut seen: Vec<(usize, u64)> = t.cpus_seen.iter().map(|(&c, &n)| (c, n)).collect();
        seen.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
        #[allow(clippy::cast_precision_loss)]
        let where_: Vec<String> = seen
            .iter()
            .take(4)
            .map(|(c, n)| format!("CPU {c} {:.0}%", 100.0 * *n as f64 / total.max(1) as f64))
            .collect();
        let cpu = match (t.cpu_time_s, t.cpu_pct) {
            (Some(s), Some(p)) => format!("{s:>7.2} s {p:>4.0}%"),
            (Some(s), None) => format!("{s:>7.2} s     "),
            _ => format!("{:>7}   {:>4} ", "?", "?"),
        };
        writeln!(
            out,
            "  {:>7} {:<16} {cpu} {:>5} migrations  seen on {}",
            t.tid,
            t.name,
            t.migrations.map_or("?".into(), |m| m.to_string()),
            where_.join(", ")
        )?;
    }
    if s.threads.len() > 10 {
        let more = if dir.is_some() {
            " more in summary.json"
        } else {
            " more (not kept: no folder)"
        };
        writeln!(out, "  ... {}{more}", s.threads.len() - 10)?;
    }
    let share = |x: Option<f64>| x.map_or("no interrupts".into(), |v| format!("{:.0}%", v * 100.0));
    writeln!(
        out,
        "CPU 0's share of interrupts: {} (hardware), {} (soft)",
        share(s.interrupts.cpu0_share),
        share(s.softirqs.cpu0_share)
    )?;
    match dir {
        Some(dir) => writeln!(out, "Samples and plots: {}", dir.display())?,
        None => writeln!(out, "Samples and plots: not kept (--out DIR keeps them)")?,
    }
    Ok(())
}
