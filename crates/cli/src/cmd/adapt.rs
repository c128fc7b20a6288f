//! `coretune adapt (--pid PID | --cgroup PATH | --server CMD --ready … | -- CMD ARGS)`: keeps a
//! running program at its best, judged by
//! its own figure, probing neighbouring settings online (core's `adapt`: the controller, the
//! loop, the knobs). Here: the options, the live line, the summary at the end.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use coretune_core::Policy;
use coretune_core::adapt::{
    AdaptSpec, Decision, Direction, Ending, LogLine, ProbeSpec, Session, Target, Tuning,
};
use coretune_core::cpuset::set_to_vec;
use coretune_core::program::server::Ready;
use coretune_core::program::{exit_code, find_program, on_stop_signals, shell_command};
use coretune_core::sweep::MetricSpec;
use coretune_core::{Topology, TopologySource};

use crate::choices::one_of;
use crate::input::cpus_option;

// What `--help` says after the options: which knobs work on what, and what is not built.
#[derive(Debug, Args)]
#[command(
    after_help = "Knobs turned live (the first line says which): the CPU set and the \
placement (every thread of every process of the program's tree re-pinned, as `run --pid` does: \
any Linux program; with --cgroup, the cgroup's cpuset.cpus where its cpuset controller has it); \
the CPU quota (the cgroup's cpu.max, v1 cpu.cfs_quota_us; ± 1 CPU's worth a step) with \
--cgroup or --quota; the thread count through your hook (--set-threads, e.g. rewriting a \
config and reloading). Each interval gives one decision: hold, probe, accept, rollback, \
re-explore or skip (--log keeps them all).\nNot built yet: a pool resizing itself live."
)]
pub(crate) struct AdaptArgs {
    /// Adapt this running process (and its children) instead of starting a command; what it
    /// had is put back at the end unless --keep.
    #[arg(long, conflicts_with_all = ["command", "cgroup", "server"])]
    pid: Option<u32>,
    /// Adapt every process of this cgroup (its folder, /sys/fs/cgroup/cpu/web, or its path as
    /// /proc/PID/cgroup writes it, /system.slice/nginx.service): the CPU set is its
    /// cpuset.cpus, the quota its cpu.max (v1 cpu.cfs_quota_us), the figure by default its CPU
    /// usage (cpuacct.usage, cpu.stat); its files are put back as found unless --keep.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["command", "server"])]
    cgroup: Option<PathBuf>,
    /// The CPU quota to start with, in CPUs (1.5), or max (no limit); it makes the quota a
    /// knob (± 1 CPU's worth a step). A --pid, a command or a server is moved into a cgroup of
    /// adapt's own for it (removed at the end, each process back where it was; --keep keeps
    /// the CPU set, not this quota). With --cgroup the quota found is the start by default.
    #[arg(long, value_name = "CPUS|max", value_parser = quota_value)]
    quota: Option<f64>,
    /// Adapt a server started as `tune --server` starts one (through sh -c, contained), once
    /// --ready says it is ready; --probe is then its load generator's burst (e.g. `wrk -t1 -c8
    /// -d1s URL` with --metric 'rps=Requests/sec:\s+([0-9.]+)'). It is stopped at the end
    /// (SIGTERM; SIGKILL after 5 s). {threads} is the --threads value.
    #[arg(long, value_name = "CMD", conflicts_with = "command", requires_all = ["ready", "probe"])]
    server: Option<String>,
    /// When the server is ready: tcp:HOST:PORT (it accepts a connection) or a shell command
    /// that succeeds.
    #[arg(long, value_name = "READY", requires = "server")]
    ready: Option<String>,
    /// The longest the server may take to be ready, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "server",
          value_parser = crate::numbers::seconds())]
    ready_timeout: f64,
    /// A command (run by the shell once per interval, after it) whose output gives the
    /// figure: the first number of its standard output, or --metric. A probe that fails or
    /// prints no figure is logged as a skip; 3 in a row end adapt with an error. Default: the
    /// program's CPU progress (CPU seconds per second of its process tree, from /proc).
    #[arg(long, value_name = "CMD")]
    probe: Option<String>,
    /// How to read the probe's figure, as tune reads a program's: NAME=REGEX or
    /// NAME=json:.path. With --p99-max, the metric named p99 is the latency, the other one the
    /// figure.
    #[arg(long, value_name = "NAME=RULE", requires = "probe")]
    metric: Vec<String>,
    /// Whether a higher figure is better (max: throughput, progress) or a lower (min: latency).
    #[arg(long, default_value = "max", value_parser = ["max", "min"])]
    objective: String,
    /// A latency bound: a probe whose p99 (--metric p99=RULE) exceeds it is rolled back at
    /// once; an incumbent over it for 3 intervals makes adapt look again.
    #[arg(long, value_name = "VALUE", requires = "probe")]
    p99_max: Option<f64>,
    /// Seconds per interval: one figure, one decision.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS",
          value_parser = crate::numbers::seconds())]
    interval: f64,
    /// Stop after this many seconds (default: when the program ends, or Ctrl-C).
    #[arg(long, value_name = "SECONDS", value_parser = crate::numbers::seconds())]
    duration: Option<f64>,
    /// The CPUs to start on (a CPU-set expression; default: those the program has, or every
    /// CPU for a command).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Object indexes in --cpus are OS (physical) indexes.
    #[arg(long)]
    physical: bool,
    /// The placement to start with (default: as found; os for a command).
    #[arg(long, value_parser = one_of(Policy::ALL))]
    place: Option<Policy>,
    /// The placements adapt may try, comma-separated.
    #[arg(long, value_delimiter = ',', default_values = ["os", "cores"],
          value_parser = one_of(Policy::ALL))]
    places: Vec<Policy>,
    /// A command that sets the program's thread count live, {threads} replaced by the count
    /// (e.g. rewriting nginx's worker_processes and `nginx -s reload`); needs --threads.
    #[arg(long, value_name = "CMD", requires = "threads")]
    set_threads: Option<String>,
    /// The thread count the program runs with now (with --set-threads).
    #[arg(long, short = 't', requires = "set_threads",
          value_parser = crate::numbers::whole(1, coretune_core::placement::MAX_THREADS))]
    threads: Option<usize>,
    /// A JSON-lines log, one line per interval: t_s, setting (cpus, place, threads, quota),
    /// figure, decision (hold, probe, accept, rollback, re-explore, skip), reason. A new file.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Leave the last setting in force at the end instead of putting back the one found (a
    /// command adapt started is ended either way).
    #[arg(long)]
    keep: bool,
    /// A difference below this percentage is a tie (tune's default).
    #[arg(long, default_value_t = 3.0, value_name = "PCT",
          value_parser = crate::numbers::percent())]
    tolerance: f64,
    /// At most this percentage of the intervals go to probes, over the long run.
    #[arg(long, default_value_t = 20.0, value_name = "PCT",
          value_parser = crate::numbers::percent())]
    budget: f64,
    /// Seconds a converged adapt (every neighbour tried, none better) waits before it probes
    /// the neighbours again; a step change makes it look at once.
    #[arg(long, default_value_t = 300.0, value_name = "SECONDS",
          value_parser = crate::numbers::seconds())]
    recheck: f64,
    /// The command to start (contained: ended with everything it started when adapt ends).
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

pub(crate) fn run(args: &AdaptArgs) -> anyhow::Result<ExitCode> {
    let target = match (
        args.pid,
        &args.cgroup,
        &args.server,
        args.command.split_first(),
    ) {
        (Some(pid), ..) => Target::Pid(pid),
        (None, Some(cgroup), ..) => Target::Cgroup(cgroup.clone()),
        (None, None, Some(server), _) => {
            if server.trim().is_empty() {
                bail!("--server: the server's command is empty");
            }
            let ready = args.ready.as_deref().unwrap_or_default();
            let ready = ready
                .parse::<Ready>()
                .map_err(|e| anyhow::anyhow!("--ready '{ready}': {e}"))?;
            let line = match args.threads {
                Some(n) => server.replace("{threads}", &n.to_string()),
                None => server.clone(),
            };
            Target::Server {
                command: shell_command(&line),
                name: line,
                ready,
                ready_timeout: Duration::from_secs_f64(args.ready_timeout),
            }
        }
        (None, None, None, Some((program, rest))) => {
            find_program(program)?;
            let mut cmd = Command::new(program);
            cmd.args(rest);
            Target::Command(cmd)
        }
        (None, None, None, None) => bail!(
            "adapt: give a command after --, --pid PID, --cgroup PATH or --server CMD --ready …"
        ),
    };
    let start_cpus = if args.cpus.is_some() {
        let topo = Topology::load(&TopologySource::Live)?;
        cpus_option(&topo, args.cpus.as_deref(), args.physical)?.map(|s| set_to_vec(&s))
    } else {
        None
    };
    let probe = match &args.probe {
        Some(command) => Some(probe_spec(command, args)?),
        None => None,
    };
    let direction = if args.objective == "min" {
        Direction::Min
    } else {
        Direction::Max
    };
    let interval = Duration::from_secs_f64(args.interval);
    // In intervals: both are positive, and a recheck longer than 2^52 intervals is never.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let recheck = (args.recheck / args.interval).ceil().max(1.0) as usize;
    let spec = AdaptSpec {
        target,
        probe,
        interval,
        tuning: Tuning {
            direction,
            tolerance: args.tolerance / 100.0,
            bound: args.p99_max,
            budget_share: args.budget / 100.0,
            recheck,
            ..Tuning::default()
        },
        start_cpus,
        start_place: args.place,
        places: args.places.clone(),
        threads: args.set_threads.clone().zip(args.threads),
        quota: args.quota,
        duration: args.duration.map(Duration::from_secs_f64),
        keep: args.keep,
        log: args.log.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // Not fatal: without the handler Ctrl-C ends coretune, and a started program with it.
        let _ = on_stop_signals(move |_| stop.store(true, Ordering::SeqCst));
    }
    let session = Session::start(spec).context("adapt")?;
    let pid = session.pid();
    let live = std::io::stderr().is_terminal();
    let what = match &args.cgroup {
        Some(cgroup) => format!("cgroup {}", cgroup.display()),
        None => format!("pid {pid}"),
    };
    eprintln!(
        "coretune: adapting {what} from {} (an interval of {} s)",
        session.found(),
        args.interval
    );
    eprintln!("coretune: adapt {}", session.knobs());
    let outcome = session
        .run(&stop, |line| show_line(line, live))
        .context("adapt")?;
    if live {
        eprintln!();
    }
    let ended = match outcome.ending {
        Ending::Duration => "the duration is up".to_owned(),
        Ending::Stopped => "stopped".to_owned(),
        Ending::Exited(Some(status)) => {
            format!("the program ended with status {}", exit_code(status))
        }
        Ending::Exited(None) => "the program ended".to_owned(),
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    eprintln!(
        "coretune: adapt: {ended}; {} interval{}, {} trial{} ({} interval{} on probes), {} change{}; \
         best {} (found {}){}",
        outcome.intervals,
        plural(outcome.intervals),
        outcome.trials,
        plural(outcome.trials),
        outcome.probe_intervals,
        plural(outcome.probe_intervals),
        outcome.changes,
        plural(outcome.changes),
        outcome.incumbent,
        outcome.found,
        if outcome.restored {
            "; put back as found"
        } else {
            ""
        }
    );
    Ok(match outcome.ending {
        Ending::Exited(Some(status)) => {
            ExitCode::from(u8::try_from(exit_code(status)).unwrap_or(1))
        }
        Ending::Stopped => ExitCode::from(crate::exit::INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// `--quota`: a positive number of CPUs, or `max` (no limit: infinity).
fn quota_value(text: &str) -> Result<f64, String> {
    if text == "max" {
        return Ok(f64::INFINITY);
    }
    match text.parse::<f64>() {
        Ok(q) if q.is_finite() && q > 0.0 => Ok(q),
        _ => Err(format!(
            "'{text}': give a positive number of CPUs (1.5), or max"
        )),
    }
}

/// The probe, its figure's and latency's metrics from `--metric` and `--p99-max`.
fn probe_spec(command: &str, args: &AdaptArgs) -> anyhow::Result<ProbeSpec> {
    let metrics = MetricSpec::from_options(&args.metric, "stdout", &[], &[])?;
    let (latency, figures): (Vec<MetricSpec>, Vec<MetricSpec>) = metrics
        .into_iter()
        .partition(|m| args.p99_max.is_some() && m.name == "p99");
    if args.p99_max.is_some() && latency.is_empty() {
        bail!("--p99-max: give the probe's latency as --metric p99=RULE");
    }
    if figures.len() > 1 {
        bail!(
            "--metric: one figure is judged ({} given: {})",
            figures.len(),
            figures
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !latency.is_empty() && figures.is_empty() && args.objective == "max" {
        bail!("--p99-max with only the p99 metric: the figure is p99 itself, give --objective min");
    }
    let latency = latency.into_iter().next();
    let figure = figures.into_iter().next().or_else(|| latency.clone());
    Ok(ProbeSpec {
        command: command.to_owned(),
        figure,
        latency,
        // A probe may take the interval and more, but not forever.
        timeout: Duration::from_secs_f64((4.0 * args.interval).max(5.0)),
    })
}

/// The live line: rewritten in place on a terminal; elsewhere only what changes something.
fn show_line(line: &LogLine, live: bool) {
    let figure = line.figure.map_or("-".to_owned(), |f| format!("{f:.4}"));
    let text = format!(
        "{:>7.1} s  {}  figure {figure}  {}: {}",
        line.t_s,
        line.setting,
        line.decision.as_str(),
        line.reason
    );
    let mut err = std::io::stderr().lock();
    if live {
        let _ = write!(err, "\r\x1b[K{text}");
        if line.next.is_some() || line.decision != Decision::Hold {
            let _ = writeln!(err);
        }
    } else if line.decision != Decision::Hold
        && (line.decision != Decision::Probe || line.next.is_some())
    {
        let _ = writeln!(err, "{text}");
    }
    let _ = err.flush();
}
