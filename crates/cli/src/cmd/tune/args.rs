//! `coretune tune`'s command line: the clap arguments ([`TuneArgs`]) and what they are checked
//! and turned into before anything runs ([`TuneOptions`]), as hyperfine's `options.rs` does:
//! which of tune's jobs this is, the machine it plans or measures, the target, the run settings,
//! the design, and for `--slurm` the sweep's options as every node reads them back
//! ([`SweepArgs`], kept in the fleet's `fleet.json`). `mod.rs` only runs and prints.
//!
//! Each job checks in its own fixed order, and a command line with several mistakes is told the
//! first: for a new sweep the settings, the target, the target on this machine (the program is
//! there, the workload builds: `mod.rs`, through the engine), then the axes. That is why the axes
//! stay as given until [`SweepOptions::grid`] lays them over the target's default grid.

use crate::choices::one_of;
use crate::numbers;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, FromArgMatches as _};
use coretune_core::Topology;
use coretune_core::fleet::{NodeSweep, SlurmFleet};
use coretune_core::grid::{
    Cpus, Grid, MachineCounts, ThrottleSpec, parse_instances, parse_mems, parse_threads,
};
use coretune_core::program::pin::SkipMask;
use coretune_core::program::server::Ready;
use coretune_core::sweep::{
    DEFAULT_MAX_RUNS, DEFAULT_TOLERANCE_PCT, Design, Launcher, MetricSource, MetricSpec, Objective,
    RunSettings, ServerSettings, Strategy, Target,
};
use coretune_core::{Binding, Policy};
use serde::{Deserialize, Serialize};

use super::slurm::SlurmArgs;
use crate::input::TopologyArgs;
use crate::workload_args::WorkloadArgs;

/// `coretune tune`'s arguments: the sweep ([`SweepArgs`]), where its results go, how it shows,
/// and the Slurm options.
#[derive(Debug, Args)]
pub(crate) struct TuneArgs {
    #[command(flatten)]
    sweep: SweepArgs,
    /// Results folder (default: coretune-results/YYYY-MM-DDTHH-MM-SS, in UTC).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue the sweep in DIR where it stopped (its grid and settings are read from DIR, so
    /// none can be given again); for a fleet folder (--slurm), resubmit only the nodes whose
    /// sweeps are incomplete.
    #[arg(long, value_name = "DIR", conflicts_with_all = SWEEP_OPTIONS, conflicts_with_all = [
        "out", "partition", "nodelist", "constraint", "dry_run",
    ])]
    resume: Option<PathBuf>,
    /// Run the search on recorded runs instead of a program: a results folder (an exhaustive
    /// sweep's) or a JSON-lines file, one run a line ({"threads": 8, "place": "compact",
    /// "cpus": "all", "time_s": 1.234}, or coretune's runs.jsonl lines). Each configuration the
    /// search asks for gets its next recorded run; prints the pick against the exhaustive
    /// answer and both costs. Nothing is run and no folder is written.
    #[arg(long, value_name = "SOURCE", conflicts_with_all = [
        "workload", "threads", "place", "cpus", "throttle", "mem", "instances", "launcher", "out",
        "command", "resume", "dry_run", "slurm", "server", "metric", "objective", "prepare",
        "monitor", "timeout", "shell", "show_output",
    ])]
    replay: Option<PathBuf>,
    /// With --replay: the seed that chooses which recorded run each configuration hands out
    /// first (the same seed, the same answer).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "replay")]
    seed: u64,
    /// With --resume: continue although the program is not the file the sweep measured (its
    /// size or content changed), or from here when the sweep's working directory is gone.
    #[arg(long, requires = "resume")]
    force: bool,
    /// Measure nothing: print the grid, the number of runs and (with --estimate-one) the time
    /// it would take, for this machine or --input TOPOLOGY; with --slurm, print the batch
    /// scripts and submit nothing.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: seconds one single-threaded run takes, for a time estimate.
    #[arg(
        long,
        value_name = "SECS",
        requires = "dry_run",
        allow_negative_numbers = true
    )]
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
    /// Let the program write to the terminal instead of dropping its output (as hyperfine's
    /// --show-output), to see why runs fail. Without it a failed run keeps the last 4 KiB of
    /// its stderr in runs.jsonl.
    #[arg(long)]
    show_output: bool,
    #[command(flatten)]
    slurm: SlurmArgs,
    /// Run on a node of a fleet (`--slurm`), from its batch script: the sweep of the fleet whose
    /// node folder DIR is (DIR/TARGET/NODE), its options read from the fleet's fleet.json, into
    /// DIR.
    #[arg(long, value_name = "DIR", hide = true, conflicts_with_all = SWEEP_OPTIONS,
          conflicts_with_all = ["out", "resume", "replay", "dry_run", "slurm", "input"])]
    fleet_node: Option<PathBuf>,
}

/// Every sweep option ([`SweepArgs`]'s and the workload's), by clap's id: what `--resume` and
/// `--fleet-node` refuse beside them, since their sweep is read from a folder. (clap's derive
/// makes no group of a struct that flattens another;
/// `resume_and_fleet_node_refuse_every_sweep_option` checks that this list is whole.)
const SWEEP_OPTIONS: [&str; 43] = [
    "workload",
    "threads",
    "place",
    "cpus",
    "throttle",
    "mem",
    "instances",
    "launcher",
    "bind",
    "skip",
    "runs",
    "warmup",
    "min_time",
    "timeout",
    "ignore_failure",
    "exhaustive",
    "tolerance",
    "max_runs",
    "shell",
    "prepare",
    "size",
    "rays",
    "mib",
    "tasks",
    "compute_us",
    "block_us",
    "count",
    "repeat",
    "items",
    "pool",
    "batch",
    "monitor",
    "metric",
    "metric_from",
    "higher_is_better",
    "unit",
    "objective",
    "server",
    "ready",
    "client",
    "client_cpus",
    "ready_timeout",
    "command",
];

/// The sweep as the command line gives it: every option of `coretune tune` but where the
/// results go, how progress and the report show, and the Slurm options.
///
/// A fleet (`--slurm`) keeps these in its `fleet.json` as they were given, by this serde derive
/// (unresolved: `--threads pus` is each node's PUs), and each node's `--fleet-node` reads them
/// back: an option added here reaches the nodes without another line
/// (`every_sweep_option_reaches_the_nodes` checks that each one does). A field missing from a
/// fleet's options — one written before the option existed — is what an empty command line
/// gives ([`SweepArgs::default`]).
#[derive(Debug, Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
struct SweepArgs {
    /// Built-in workload: raymesh (default), membw, mixed, sum, spawn. Not used with `-- CMD`.
    #[arg(value_parser = crate::choices::workloads(), hide_possible_values = true)]
    workload: Option<String>,
    /// Thread counts: numbers, ranges (1-8, 2-32:2) and cores, pus, K*pus (default: 1 to 4 × PUs).
    #[arg(long, value_name = "LIST", allow_negative_numbers = true)]
    threads: Option<String>,
    /// Placements to try (default: os,compact,spread,cores).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = one_of(Policy::ALL))]
    place: Option<Vec<Policy>>,
    /// A CPU set to try, as an expression; repeat for several (default: all, and 'all ~pu:0'
    /// when there are more than 2 PUs).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    cpus: Vec<String>,
    /// Throttle values to try: none, numbers, cores, pus, adaptive (default: none).
    #[arg(long, value_name = "LIST")]
    throttle: Option<String>,
    /// Memory policies to try, as run --mem takes them: none (the OS's first touch), local,
    /// interleave or interleave:NODES, bind or bind:NODES (near the CPUs used without NODES),
    /// preferred:NODE (NODES: 0-1 as numactl numbers nodes, numa:0-1, package:1, near);
    /// comma-separated (default: none).
    #[arg(long, value_name = "LIST")]
    mem: Option<String>,
    /// Instance counts to try, as --threads takes them (1-4, 1,2,4): each run starts that many
    /// copies at once, each on its own part of the CPUs as hwloc-distrib splits them (NUMA
    /// node, then L3, then core), with --threads threads each; judged on their throughput
    /// together (default: 1). More copies than PUs, or an uneven split, is said before the sweep.
    #[arg(long, value_name = "LIST", allow_negative_numbers = true)]
    instances: Option<String>,
    /// Start the program's copies with a launcher instead: mpirun (Open MPI: -np INSTANCES,
    /// each rank on THREADS cores, OpenMP's variables passed) or srun (inside a Slurm
    /// allocation); --instances are the ranks, and the whole launch is timed. --place, --cpus
    /// and --mem become the launcher's options (--bind-to, --cpu-set, numactl in each rank) or
    /// are refused before anything runs; values that start the same ranks are measured once.
    #[arg(long, value_name = "LAUNCHER", value_parser = clap::builder::PossibleValuesParser::new(Launcher::ALL))]
    launcher: Option<String>,
    /// Each pinned thread's set: its PU, its core, one set shared by all threads (shared), or
    /// its own part of the CPUs (share: for spread, its hwloc-distrib set).
    #[arg(long, default_value = "pu", value_parser = one_of(Binding::ALL))]
    bind: Binding,
    /// Skip mask for a program's pinned threads, likwid-pin's -s (hex: bit i = the i-th
    /// pthread_create makes a helper left unpinned; default: its OpenMP runtime's).
    #[arg(long, value_name = "MASK")]
    skip: Option<SkipMask>,
    /// Measured runs per configuration.
    #[arg(long, default_value_t = 3, value_name = "N", allow_negative_numbers = true,
          value_parser = numbers::whole(1, usize::MAX))]
    runs: usize,
    /// Warm-up runs per configuration (logged, not summarised).
    #[arg(long, default_value_t = 1, value_name = "N", allow_negative_numbers = true,
          value_parser = numbers::whole(0, usize::MAX))]
    warmup: usize,
    /// Add runs until each configuration has this many seconds measured (at most 10 × --runs).
    #[arg(long, default_value_t = 0.0, value_name = "SECS", allow_negative_numbers = true,
          value_parser = numbers::seconds_or_zero())]
    min_time: f64,
    /// Longest a run may take, in seconds (a configuration that times out gets no more runs).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true,
          value_parser = numbers::seconds())]
    timeout: Option<f64>,
    /// Keep a configuration whose runs fail (hyperfine's -i): its failed runs are left out of
    /// its statistics and it stays eligible. Without it a failed run (a non-zero exit, a
    /// crash, a timeout, a result that does not verify) ends the configuration's runs and it is
    /// never recommended.
    #[arg(long, short = 'i')]
    ignore_failure: bool,
    /// Measure every configuration of the grid instead of searching it.
    #[arg(long)]
    exhaustive: bool,
    /// Configurations within this many percent of the fastest tie (ties go to the simplest).
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_PCT, value_name = "PCT",
          allow_negative_numbers = true, value_parser = numbers::percent())]
    tolerance: f64,
    /// When a configuration simpler than the pick is within the tolerance of the fastest by
    /// median but its runs cannot show it (the 95% bound of their ratio), measure both
    /// further, in turn, until the bound is within the tolerance or the median leaves it, up to
    /// this many runs each for that comparison; then the pick against a configuration within
    /// the tolerance of it that its runs cannot show it within the tolerance of [default: 10;
    /// no more runs when N ≤ --runs].
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = numbers::whole(1, usize::MAX))]
    max_runs: Option<usize>,
    /// Run the command through `sh -c` (its words joined with spaces).
    #[arg(long)]
    shell: bool,
    /// A shell command to run before each run of the program (not measured).
    #[arg(long, value_name = "CMD")]
    prepare: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    workload_args: WorkloadArgs,
    /// Sample per-CPU utilisation and each thread's CPU during every run (every MS
    /// milliseconds, default 50; less often when a sample takes over 1% of that, as with
    /// thousands of threads), into monitor/SEQ.jsonl, for the report's plots.
    #[arg(long, value_name = "MS", num_args = 0..=1, default_missing_value = "50")]
    monitor: Option<u64>,
    /// A figure the program prints, read after each run: NAME=REGEX (its first group, or the
    /// whole match, at its last match: a figure printed several times counts as printed last;
    /// the regex matches within one line) or NAME=json:.path (jq's path syntax, in the whole
    /// output or its last JSON line); repeat for several. A run whose output lacks one fails.
    #[arg(long, value_name = "NAME=RULE")]
    metric: Vec<String>,
    /// Where the metrics are read: stdout, stderr (the only keywords: a near miss such as stdin
    /// is refused; ./NAME is a file), or a file the program writes (placeholders substituted).
    /// A file that already exists is refused before anything runs: coretune removes the file
    /// between runs so that an old figure never counts, and removes only what its runs wrote.
    #[arg(long, value_name = "FROM", default_value = "stdout", value_hint = clap::ValueHint::FilePath,
          value_parser = crate::choices::offered(&MetricSource::KEYWORDS), hide_possible_values = true)]
    metric_from: String,
    /// A metric for which higher is better (events/s, requests/s); lower is better otherwise.
    #[arg(long, value_name = "NAME")]
    higher_is_better: Vec<String>,
    /// A metric's unit, for display: NAME=UNIT (rps=req/s).
    #[arg(long, value_name = "NAME=UNIT")]
    unit: Vec<String>,
    /// What the search and the recommendation optimise: time, cpu (CPU seconds), rss (peak
    /// memory), throughput (work per second) or a --metric's name; two or more
    /// (comma-separated) add their Pareto front, the recommendation taken on the first.
    /// Default: the first --metric, else time (throughput with --instances).
    #[arg(long, value_name = "LIST", value_delimiter = ',', hide_possible_values = true,
          value_parser = crate::choices::offered(&Objective::BUILT_IN))]
    objective: Vec<String>,
    /// Measure a server under a load generator instead of a program that ends: its command
    /// (through sh -c, with the placeholders), started anew for each run with the configuration,
    /// loaded by --client once --ready says so, then stopped (SIGTERM; SIGKILL after 5 s).
    #[arg(long, value_name = "CMD")]
    server: Option<String>,
    /// When the server is ready: tcp:HOST:PORT (it accepts a connection) or a shell command
    /// that succeeds.
    #[arg(long, value_name = "READY")]
    ready: Option<String>,
    /// The load generator run against the server (through sh -c, with the placeholders); its
    /// time is the run's, and --metric reads its output.
    #[arg(long, value_name = "CMD")]
    client: Option<String>,
    /// The CPUs the client runs on (default: those the server's configuration leaves free; all
    /// of them, with a warning, when it leaves none).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    client_cpus: Option<String>,
    /// The longest a server may take to be ready, in seconds.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    ready_timeout: Option<f64>,
    /// The program to measure, with {threads}, {cpus}, {place}, {mem}, {instance} and
    /// {instances} placeholders.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

impl Default for SweepArgs {
    /// The options of `coretune tune` with none given: clap's defaults.
    fn default() -> Self {
        let command = Self::augment_args(clap::Command::new("tune").no_binary_name(true));
        command
            .try_get_matches_from(std::iter::empty::<String>())
            .and_then(|m| Self::from_arg_matches(&m))
            .expect("an empty command line is a sweep of the defaults")
    }
}

/// `coretune tune`, checked: the job the arguments ask for, and how it shows.
#[derive(Debug)]
pub(super) struct TuneOptions {
    pub(super) job: Job,
    /// No progress bar or line (`-q`, or `--json`).
    pub(super) quiet: bool,
    /// JSON instead of the table (`--json`).
    pub(super) json: bool,
    /// `--show-output`: the program's output passes through.
    pub(super) show_output: bool,
}

/// What `coretune tune` does.
#[derive(Debug)]
pub(super) enum Job {
    /// `--resume` of a fleet folder: follow its jobs and resubmit the incomplete nodes.
    ResumeFleet { dir: PathBuf, cluster: SlurmArgs },
    /// `--slurm`: the sweep on cluster nodes, one exclusive job each, or with `dry_run` their
    /// batch scripts.
    Fleet {
        cluster: SlurmArgs,
        /// The sweep's options, which every node reads back (`--fleet-node`).
        sweep: NodeSweep,
        out: Option<PathBuf>,
        dry_run: bool,
    },
    /// `--dry-run` without `--slurm`: the plan for this machine or `--input`'s.
    Plan {
        on: Machine,
        sweep: Box<SweepOptions>,
        /// `--bind`: what the estimate counts as a pinned thread's set.
        binding: Binding,
        /// `--estimate-one`: how long one single-threaded run takes.
        one: Option<Duration>,
    },
    /// A sweep measured on this machine.
    Measure { on: Machine, folder: Folder },
    /// `--replay SOURCE`: the design searched on recorded runs.
    Replay {
        source: PathBuf,
        sweep: Box<SweepOptions>,
        seed: u64,
        /// `--input`: the topology the recorded grid must resolve on.
        topo: Option<Topology>,
    },
}

/// The machine a sweep is planned for or measured on.
#[derive(Debug)]
pub(super) struct Machine {
    pub(super) topo: Topology,
    /// What `pus` and `cores` mean in thread lists.
    pub(super) counts: MachineCounts,
}

/// Where a measured sweep comes from and goes.
#[derive(Debug)]
pub(super) enum Folder {
    /// `--resume DIR`: the sweep in DIR (its grid and settings are read from DIR); `force`:
    /// even when its program changed or its working directory is gone.
    Resume { dir: PathBuf, force: bool },
    /// A new sweep, into `--out` (`None`: a timestamped folder).
    New {
        sweep: Box<SweepOptions>,
        settings: RunSettings,
        out: Option<PathBuf>,
    },
}

/// A sweep as the arguments describe it: what it measures, and all of its design but the grid.
#[derive(Debug)]
pub(super) struct SweepOptions {
    pub(super) target: Target,
    axes: Axes,
    strategy: Strategy,
    runs: usize,
    warmup: usize,
    /// Seconds: made a `Duration` only with a design ([`SweepOptions::design`]).
    min_time: f64,
    /// A fraction (the argument is a percentage).
    tolerance: f64,
    /// `--max-runs`.
    max_runs: usize,
    /// `--objective`, resolved against `--metric`.
    objectives: Vec<Objective>,
    /// `--launcher`: who starts the program's ranks.
    pub(super) launcher: Option<Launcher>,
    /// `-i`/`--ignore-failure`.
    ignore_failure: bool,
}

/// The grid axes the arguments name, as given.
#[derive(Debug)]
struct Axes {
    threads: Option<String>,
    place: Option<Vec<Policy>>,
    cpus: Vec<String>,
    throttle: Option<String>,
    mem: Option<String>,
    instances: Option<String>,
}

impl TryFrom<&TuneArgs> for TuneOptions {
    type Error = anyhow::Error;

    fn try_from(args: &TuneArgs) -> anyhow::Result<Self> {
        let job = if let Some(dir) = args.resume.as_deref().filter(|d| SlurmFleet::is_fleet(d)) {
            Job::ResumeFleet {
                dir: dir.to_path_buf(),
                cluster: args.slurm.clone(),
            }
        } else if let Some(source) = &args.replay {
            let topo = args
                .input
                .input
                .is_some()
                .then(|| args.input.load())
                .transpose()?;
            Job::Replay {
                source: source.clone(),
                sweep: Box::new(SweepOptions::from_args(&args.sweep, args.show_output)?),
                seed: args.seed,
                topo,
            }
        } else if args.slurm.slurm {
            if args.input.input.is_some() {
                bail!(
                    "--input plans one machine (with --dry-run, without --slurm); with --slurm \
                     each node sweeps its own topology"
                );
            }
            // Checked here, before any job is submitted: a typo is one line, not a failed fleet.
            check_settings(&args.sweep)?;
            let machine = MachineCounts { cores: 1, pus: 1 };
            SweepOptions::from_args(&args.sweep, args.show_output)?
                .grid(Grid::default_for(machine), machine)?;
            Job::Fleet {
                cluster: args.slurm.clone(),
                sweep: NodeSweep::Options(
                    serde_json::to_value(&args.sweep).context("the sweep's options")?,
                ),
                out: args.out.clone(),
                dry_run: args.dry_run,
            }
        } else if args.dry_run {
            check_settings(&args.sweep)?;
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
            let counts = if args.input.input.is_some() {
                MachineCounts::of(&topo)
            } else {
                MachineCounts::live(&topo)
            };
            Job::Plan {
                on: Machine { topo, counts },
                sweep: Box::new(SweepOptions::from_args(&args.sweep, args.show_output)?),
                binding: args.sweep.bind,
                one,
            }
        } else {
            if args.input.input.is_some() {
                bail!(
                    "--input: tune measures this machine; plan for another with --input TOPOLOGY \
                     --dry-run"
                );
            }
            let topo = TopologyArgs::default().load()?;
            let counts = MachineCounts::live(&topo);
            let folder = match (&args.resume, &args.fleet_node) {
                (Some(dir), _) => Folder::Resume {
                    dir: dir.clone(),
                    force: args.force,
                },
                // A fleet's node: the fleet's sweep, as the command line that made the fleet
                // gave it, into the node's folder.
                (None, Some(node)) => Folder::new(
                    &SweepArgs::of_fleet_node(node)?,
                    args.show_output,
                    Some(node.clone()),
                )?,
                (None, None) => Folder::new(&args.sweep, args.show_output, args.out.clone())?,
            };
            Job::Measure {
                on: Machine { topo, counts },
                folder,
            }
        };
        Ok(Self {
            job,
            quiet: args.quiet || args.json,
            show_output: args.show_output,
            json: args.json,
        })
    }
}

impl Folder {
    /// A new sweep of `sweep`'s options into `out`.
    fn new(sweep: &SweepArgs, show_output: bool, out: Option<PathBuf>) -> anyhow::Result<Self> {
        check_settings(sweep)?;
        let settings = settings(sweep, show_output)?;
        Ok(Self::New {
            sweep: Box::new(SweepOptions::from_args(sweep, show_output)?),
            settings,
            out,
        })
    }
}

impl SweepArgs {
    /// The options of the fleet whose node folder `node` is, as the fleet's command line gave
    /// them ([`SlurmFleet::node_options`]).
    fn of_fleet_node(node: &Path) -> anyhow::Result<Self> {
        let options = SlurmFleet::node_options(node)
            .with_context(|| format!("--fleet-node {}", node.display()))?;
        serde_json::from_value(options).with_context(|| {
            format!(
                "--fleet-node {}: the fleet's sweep options are not this coretune's",
                node.display()
            )
        })
    }
}

impl SweepOptions {
    /// The target checked, the rest as given; `check_settings` has passed.
    fn from_args(args: &SweepArgs, show_output: bool) -> anyhow::Result<Self> {
        Ok(Self {
            target: target(args, show_output)?,
            axes: Axes {
                threads: args.threads.clone(),
                place: args.place.clone(),
                cpus: args.cpus.clone(),
                throttle: args.throttle.clone(),
                mem: args.mem.clone(),
                instances: args.instances.clone(),
            },
            strategy: if args.exhaustive {
                Strategy::Exhaustive
            } else {
                Strategy::Search
            },
            runs: args.runs,
            warmup: args.warmup,
            min_time: args.min_time,
            tolerance: args.tolerance / 100.0,
            // Folders from before the option say 0 (none); a new sweep makes deciding runs.
            max_runs: args.max_runs.unwrap_or(DEFAULT_MAX_RUNS),
            objectives: objectives(args, show_output)?,
            launcher: launcher(args)?,
            ignore_failure: args.ignore_failure,
        })
    }

    /// The target's `default` grid with the axes the arguments name replaced (thread lists
    /// counted on `machine`).
    pub(super) fn grid(&self, default: Grid, machine: MachineCounts) -> anyhow::Result<Grid> {
        self.axes.apply(default, machine)
    }

    /// The design that sweeps `grid`.
    pub(super) fn design(&self, grid: Grid) -> Design {
        Design {
            grid,
            strategy: self.strategy,
            runs: self.runs,
            warmup: self.warmup,
            // `--min-time`'s parser took only what a `Duration` holds.
            min_time: Duration::try_from_secs_f64(self.min_time).unwrap_or_default(),
            tolerance: self.tolerance,
            max_runs: self.max_runs,
            objectives: self.objectives.clone(),
            ignore_failure: self.ignore_failure,
            pus: Default::default(),
        }
    }
}

/// The settings that are not grid values. (The plain numbers, `--runs`, `--tolerance`,
/// `--timeout`, are checked as clap parses them: `crate::numbers`.)
fn check_settings(args: &SweepArgs) -> anyhow::Result<()> {
    launcher(args)?;
    if let Some(list) = &args.instances {
        let counts = parse_instances(list).map_err(|e| anyhow::anyhow!("--instances: {e}"))?;
        if args.server.is_some() && counts.iter().any(|&p| p > 1) {
            bail!(
                "--instances: a server cannot run as several instances: each copy would need its \
                 own port (run one sweep per instance count, or start the copies from a --server \
                 script)"
            );
        }
    }
    Ok(())
}

/// `tune --` with nothing after it (a script's `$CMD` that expanded to nothing): clap reads it as
/// no command at all, which would sweep the built-in workload instead. `raw` is the whole
/// command line as given; `--` in it, with no command parsed, can only be an empty one.
///
/// # Errors
///
/// A usage error, before anything runs.
pub(super) fn check_escape(
    args: &TuneArgs,
    raw: impl IntoIterator<Item = std::ffi::OsString>,
) -> anyhow::Result<()> {
    if args.sweep.command.is_empty() && raw.into_iter().skip(1).any(|word| word == "--") {
        bail!(
            "nothing after --: give the command to measure (coretune tune [OPTIONS] -- CMD ARGS...)"
        );
    }
    Ok(())
}

/// How each run of a new sweep is made (after `check_settings`).
fn settings(args: &SweepArgs, show_output: bool) -> anyhow::Result<RunSettings> {
    Ok(RunSettings {
        binding: args.bind,
        timeout: args
            .timeout
            .and_then(|t| Duration::try_from_secs_f64(t).ok()),
        prepare: args.prepare.clone(),
        monitor: args.monitor.map(Duration::from_millis),
        skip: args.skip,
        metrics: metrics(args, show_output)?,
        server: server(args)?,
        launcher: launcher(args)?,
    })
}

/// `--launcher`, checked against the target: a program's copies are what a launcher starts,
/// and each rank learns its rank from the launcher, not from `{instance}`.
fn launcher(args: &SweepArgs) -> anyhow::Result<Option<Launcher>> {
    let Some(name) = &args.launcher else {
        return Ok(None);
    };
    let launcher: Launcher = name
        .parse()
        .map_err(|e| anyhow::anyhow!("--launcher: {e}"))?;
    if args.command.is_empty() || args.server.is_some() {
        bail!("--launcher {launcher} starts a program: give it after --");
    }
    if args.command.iter().any(|w| w.contains("{instance}")) {
        bail!(
            "--launcher {launcher}: each rank knows its rank from the launcher \
             (OMPI_COMM_WORLD_RANK, SLURM_PROCID), not from {{instance}}"
        );
    }
    Ok(Some(launcher))
}

/// How long a server may take to be ready when `--ready-timeout` does not say.
const READY_TIMEOUT_S: f64 = 10.0;

/// `--server`'s settings, checked: `--ready` and `--client` with it, none of them without it.
fn server(args: &SweepArgs) -> anyhow::Result<Option<ServerSettings>> {
    let Some(command) = &args.server else {
        for (set, name) in [
            (args.ready.is_some(), "--ready"),
            (args.client.is_some(), "--client"),
            (args.client_cpus.is_some(), "--client-cpus"),
            (args.ready_timeout.is_some(), "--ready-timeout"),
        ] {
            if set {
                bail!("{name} goes with --server CMD, the server it is about");
            }
        }
        return Ok(None);
    };
    if command.trim().is_empty() {
        bail!("--server: the server's command is empty");
    }
    let (Some(ready), Some(client)) = (&args.ready, &args.client) else {
        bail!(
            "--server needs --ready (tcp:HOST:PORT or a command that succeeds once it serves) \
             and --client (the load generator's command)"
        );
    };
    ready
        .parse::<Ready>()
        .map_err(|e| anyhow::anyhow!("--ready '{ready}': {e}"))?;
    let ready_timeout_s = args.ready_timeout.unwrap_or(READY_TIMEOUT_S);
    if Duration::try_from_secs_f64(ready_timeout_s).map_or(true, |d| d.is_zero()) {
        bail!("--ready-timeout must be a positive number of seconds");
    }
    if let Some(expr) = &args.client_cpus {
        expr.parse::<coretune_core::CpuSetExpr>()
            .with_context(|| format!("--client-cpus '{expr}'"))?;
    }
    Ok(Some(ServerSettings {
        ready: ready.clone(),
        ready_timeout_s,
        client: client.clone(),
        client_cpus: args.client_cpus.clone(),
    }))
}

/// `--objective` resolved against `--metric`. Without `--objective` the first metric is the
/// objective (it was given to be optimised: `tune --metric eps=… -- sysbench …` recommends on
/// events per second), and wall time without metrics (an empty list: old folders say the same).
fn objectives(args: &SweepArgs, show_output: bool) -> anyhow::Result<Vec<Objective>> {
    let metrics = metrics(args, show_output)?;
    if let (Some(_), true, true) = (&args.server, metrics.is_empty(), args.objective.is_empty()) {
        // The run's time is the client's, which the client fixes itself (`wrk -d1s` takes a
        // second whatever the server does): a sweep on it would rank noise.
        bail!(
            "--server without --metric: a run's time is the client's, fixed by the client \
             (wrk -d1s takes a second whatever the server does), so it measures nothing; read \
             the client's figure with --metric (rps=Requests/sec:\\s+([0-9.]+)), or say \
             --objective time to judge the client's time"
        );
    }
    Ok(match (args.objective.is_empty(), metrics.first()) {
        (false, _) => Objective::resolve(&args.objective, &metrics)?,
        (true, Some(first)) => Objective::resolve(std::slice::from_ref(&first.name), &metrics)?,
        // Under a launcher the ranks are one job: its time, whatever the rank count.
        (true, None) if args.launcher.is_some() => vec![Objective::time()],
        (true, None) => Vec::new(),
    })
}

/// `--metric`, with `--metric-from`, `--higher-is-better` and `--unit` applied, and the
/// options that cannot go with a metric refused.
fn metrics(args: &SweepArgs, show_output: bool) -> anyhow::Result<Vec<MetricSpec>> {
    let specs = MetricSpec::from_options(
        &args.metric,
        &args.metric_from,
        &args.higher_is_better,
        &args.unit,
    )?;
    if !specs.is_empty() && args.command.is_empty() && args.server.is_none() {
        bail!(
            "--metric reads a program's output (-- CMD); a built-in workload is judged by time, \
             cpu or rss (--objective)"
        );
    }
    if !specs.is_empty() && show_output {
        bail!(
            "--show-output passes the program's output through, so no --metric can be read from \
             it: give one or the other"
        );
    }
    Ok(specs)
}

/// What the sweep measures: the built-in workload named (raymesh by default), the program, or
/// the server (`--server`, run through `sh -c`).
fn target(args: &SweepArgs, show_output: bool) -> anyhow::Result<Target> {
    if let Some(server) = &args.server {
        if !args.command.is_empty() || args.workload.is_some() {
            bail!("--server CMD is what is measured: give no workload and no -- CMD with it");
        }
        if args.shell {
            bail!("--server runs its command through sh -c already: drop --shell");
        }
        args.workload_args.check_unused()?;
        return Ok(Target::Command {
            argv: vec![server.clone()],
            shell: true,
        });
    }
    if args.command.is_empty() {
        let name = args.workload.clone().unwrap_or_else(|| "raymesh".into());
        let spec = args.workload_args.spec(&name)?;
        if show_output {
            bail!(
                "--show-output shows a program's output (-- CMD); the built-in workloads print \
                 nothing while they run"
            );
        }
        Ok(Target::Workload {
            spec: spec.for_sweep(args.workload_args.size.is_some()),
            description: String::new(),
        })
    } else {
        if args.workload.is_some() {
            bail!("give a built-in workload or a command after --, not both");
        }
        args.workload_args.check_unused()?;
        if let Some(list) = args.throttle.as_deref().filter(|t| t.trim() != "none") {
            bail!(
                "--throttle {list}: the throttle limits coretune's own pool, so it applies to \
                 the built-in workloads, not to a program (-- CMD)"
            );
        }
        Ok(Target::Command {
            argv: args.command.clone(),
            shell: args.shell,
        })
    }
}

impl Axes {
    /// `grid` with the axes the arguments name replaced.
    fn apply(&self, mut grid: Grid, machine: MachineCounts) -> anyhow::Result<Grid> {
        if let Some(spec) = &self.threads {
            grid.threads =
                parse_threads(spec, machine).map_err(|e| anyhow::anyhow!("--threads: {e}"))?;
        }
        if let Some(places) = &self.place {
            grid.places.clone_from(places);
        }
        if !self.cpus.is_empty() {
            grid.cpus = self
                .cpus
                .iter()
                .map(|e| e.parse::<Cpus>().with_context(|| format!("--cpus '{e}'")))
                .collect::<anyhow::Result<_>>()?;
        }
        if let Some(spec) = &self.throttle {
            grid.throttles =
                ThrottleSpec::parse_list(spec).map_err(|e| anyhow::anyhow!("--throttle: {e}"))?;
        }
        if let Some(list) = &self.mem {
            grid.mems = parse_mems(list).map_err(|e| anyhow::anyhow!("--mem: {e}"))?;
        }
        if let Some(list) = &self.instances {
            grid.instances =
                parse_instances(list).map_err(|e| anyhow::anyhow!("--instances: {e}"))?;
        }
        Ok(grid)
    }
}

#[cfg(test)]
mod test {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, Parser};
    use coretune_core::fleet::{FleetSpec, SlurmTarget, TargetKind};

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

    /// Every sweep option, each with a value other than its default, among options that are
    /// not the sweep's.
    const EVERY_SWEEP_OPTION: &[&str] = &[
        "sum",
        "--threads",
        "1,2",
        "--place",
        "os,compact",
        "--cpus",
        "all ~pu:0",
        "--cpus",
        "-1",
        "--throttle",
        "none,2",
        "--mem",
        "none,interleave:numa:0,1,bind",
        "--instances",
        "1,2",
        "--launcher",
        "mpirun",
        "--bind",
        "core",
        "--skip",
        "0x3",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--min-time",
        "0.5",
        "--timeout",
        "9.5",
        "-i",
        "--exhaustive",
        "--tolerance",
        "2.5",
        "--max-runs",
        "7",
        "--shell",
        "--prepare",
        "echo hi",
        "--size",
        "small",
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
        "--count",
        "99",
        "--repeat",
        "3",
        "--items",
        "1000",
        "--pool",
        "rayon",
        "--batch",
        "--monitor",
        "10",
        "--metric",
        "eps=events per second: ([0-9.]+)",
        "--metric",
        "p99=json:.lat.p99",
        "--metric-from",
        "out-{threads}.json",
        "--higher-is-better",
        "eps",
        "--unit",
        "eps=events/s",
        "--objective",
        "eps,p99,cpu",
        "--server",
        "nginx -g 'worker_processes {threads};'",
        "--ready",
        "tcp:127.0.0.1:8080",
        "--client",
        "wrk -d1s http://127.0.0.1:8080/",
        "--client-cpus",
        "pu:1",
        "--ready-timeout",
        "3.5",
        "--slurm",
        "--partition",
        "alpha",
        "--out",
        "/x",
        "-q",
        "--json",
        "--",
        "./app",
        "-t",
        "{threads}",
        "--out",
        "x",
    ];

    /// A node runs the sweep its fleet's command line gave: the options, kept in `fleet.json`
    /// by the fleet and read back by the node, are the options given. The command line sets
    /// every sweep option, and the test says which one it misses when an option is added.
    #[test]
    fn every_sweep_option_reaches_the_nodes() {
        let matches = Cli::command()
            .try_get_matches_from(std::iter::once("tune").chain(EVERY_SWEEP_OPTION.iter().copied()))
            .unwrap();
        let options = SweepArgs::augment_args(clap::Command::new("tune"));
        for arg in options.get_arguments() {
            let id = arg.get_id().as_str();
            assert_eq!(
                matches.value_source(id),
                Some(ValueSource::CommandLine),
                "give {id} in EVERY_SWEEP_OPTION, with a value other than its default"
            );
        }
        let given = Cli::from_arg_matches(&matches).unwrap().tune;

        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fleet");
        let spec = FleetSpec {
            targets: vec![SlurmTarget {
                kind: TargetKind::Partition,
                value: "alpha".into(),
            }],
            nodes: 1,
            sbatch_args: Vec::new(),
            account: None,
            time: None,
            coretune: PathBuf::from("/bin/coretune"),
            sweep: NodeSweep::Options(serde_json::to_value(&given.sweep).unwrap()),
        };
        SlurmFleet::create(&dir, spec).unwrap();
        let on_node = SweepArgs::of_fleet_node(&dir.join("alpha").join("n07")).unwrap();
        assert_eq!(format!("{on_node:?}"), format!("{:?}", given.sweep));
        // What is not the sweep's stays behind: where the results go, how they show, Slurm's.
        let kept = std::fs::read_to_string(dir.join("fleet.json")).unwrap();
        assert!(!kept.contains("/x") && !kept.contains("quiet"), "{kept}");
    }

    /// An option a fleet's `fleet.json` does not name — one added to coretune after the fleet
    /// was made — is read as not given.
    #[test]
    fn a_sweep_option_a_fleet_does_not_name_reads_as_not_given() {
        let none: SweepArgs = serde_json::from_str("{}").unwrap();
        assert_eq!(format!("{none:?}"), format!("{:?}", parse(&[]).sweep));
        assert_eq!(format!("{none:?}"), format!("{:?}", SweepArgs::default()));
        let some: SweepArgs = serde_json::from_str(r#"{"threads": "pus", "count": 9}"#).unwrap();
        assert_eq!(
            format!("{some:?}"),
            format!("{:?}", parse(&["--threads", "pus", "--count", "9"]).sweep)
        );
    }

    /// `--resume` and `--fleet-node` read their sweep from a folder: no sweep option goes with
    /// them, a new one included.
    #[test]
    fn resume_and_fleet_node_refuse_every_sweep_option() {
        let mut command = Cli::command();
        command.build();
        let sweep = SweepArgs::augment_args(clap::Command::new("tune"));
        for from_a_folder in ["resume", "fleet_node"] {
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == from_a_folder)
                .unwrap();
            let refused = command.get_arg_conflicts_with(arg);
            for option in sweep.get_arguments() {
                assert!(
                    refused.iter().any(|r| r.get_id() == option.get_id()),
                    "{from_a_folder} takes {}: add it to SWEEP_OPTIONS",
                    option.get_id()
                );
            }
        }
    }

    /// `--fleet-node` is the batch script's: the sweep comes from the fleet, so no sweep option
    /// goes with it.
    #[test]
    fn a_fleet_node_takes_no_sweep_option() {
        for extra in [
            &["--threads", "2"][..],
            &["--count", "9"],
            &["--out", "y"],
            &["sum"],
        ] {
            let line = [&["tune", "--fleet-node", "/f/a/n1"][..], extra].concat();
            assert!(Cli::try_parse_from(&line).is_err(), "{line:?}");
        }
        assert!(
            parse(&["--fleet-node", "/f/a/n1", "-q"])
                .fleet_node
                .is_some()
        );
    }
}
