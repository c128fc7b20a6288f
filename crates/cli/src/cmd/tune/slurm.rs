//! `coretune tune --slurm`: the options, and the command-line side of a fleet — printing the
//! batch scripts (`--dry-run`), submitting, showing the jobs' progress while waiting, and
//! reporting when they are done. Submitting, polling and the folder layout are core's
//! ([`SlurmFleet`]); the report files are `report::fleet`'s.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use coretune_core::fleet::{
    FleetSpec, JobNodes, JobRecord, NodeSweep, Slurm, SlurmFleet, SlurmTarget, Submission,
    TargetKind,
};
use coretune_core::sweep::timestamped_dir;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exit;

/// JobNodes and how the sweep runs on a Slurm cluster.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Slurm (sweeps on cluster nodes)")]
pub(crate) struct SlurmArgs {
    /// Run the sweep on cluster nodes as exclusive Slurm jobs, one per node, each writing its
    /// own folder under --out (which must be on a file system the nodes share).
    #[arg(long)]
    pub(crate) slurm: bool,
    /// A partition to measure (one node type); repeat for several.
    #[arg(long, value_name = "NAME", requires = "slurm")]
    partition: Vec<String>,
    /// Nodes to measure, one job each (a Slurm host list such as 'n[01-04]'); repeat for
    /// several node types.
    #[arg(long, value_name = "HOSTLIST", requires = "slurm")]
    nodelist: Vec<String>,
    /// Nodes with these features (sbatch --constraint) as one node type; repeat for several.
    #[arg(long, value_name = "FEATURES", requires = "slurm")]
    constraint: Vec<String>,
    /// Nodes to measure per partition or constraint (a job array of this many).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "slurm")]
    nodes: usize,
    /// An extra sbatch option for every job, e.g. --sbatch-arg=--qos=debug; repeatable.
    #[arg(
        long = "sbatch-arg",
        value_name = "OPTION",
        allow_hyphen_values = true,
        requires = "slurm"
    )]
    sbatch_arg: Vec<String>,
    /// The account the jobs are charged to (sbatch --account).
    #[arg(long, value_name = "NAME", requires = "slurm")]
    account: Option<String>,
    /// Time limit of each job, in Slurm's format (sbatch --time), e.g. 30 or 1:00:00.
    #[arg(long, value_name = "TIME", requires = "slurm")]
    time: Option<String>,
    /// Submit and return: print the job ids and the commands that follow them up.
    #[arg(long)]
    no_wait: bool,
    /// Seconds between looks at the jobs while waiting.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    poll: f64,
}

impl SlurmArgs {
    fn targets(&self) -> Vec<SlurmTarget> {
        let of = |kind: TargetKind, values: &[String]| {
            values
                .iter()
                .map(|v| SlurmTarget {
                    kind,
                    value: v.clone(),
                })
                .collect::<Vec<_>>()
        };
        let mut v = of(TargetKind::Partition, &self.partition);
        v.extend(of(TargetKind::Constraint, &self.constraint));
        v.extend(of(TargetKind::Nodelist, &self.nodelist));
        v
    }

    fn poll(&self) -> anyhow::Result<Duration> {
        Duration::try_from_secs_f64(self.poll)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--poll must be a positive number of seconds")
    }
}

/// How the fleet's progress and report are shown.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown {
    /// No progress line.
    pub(crate) quiet: bool,
    /// The report as JSON (`fleet-summary.json`'s content).
    pub(crate) json: bool,
}

/// A new fleet: the sweep `sweep` on every target; with `dry_run` the batch scripts are printed
/// and nothing is submitted.
pub(crate) fn start(
    args: &SlurmArgs,
    sweep: NodeSweep,
    out: Option<&Path>,
    dry_run: bool,
    shown: Shown,
) -> anyhow::Result<ExitCode> {
    let poll = args.poll()?;
    let slurm = Slurm::find()?;
    let coretune = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find coretune's own executable for the jobs to run")?;
    let spec = FleetSpec {
        targets: args.targets(),
        nodes: args.nodes,
        sbatch_args: args.sbatch_arg.clone(),
        account: args.account.clone(),
        time: args.time.clone(),
        coretune,
        sweep,
    };
    let dir = out.map_or_else(
        || timestamped_dir(Path::new("coretune-results"), "fleet-"),
        Path::to_path_buf,
    );
    if dry_run {
        let fleet = SlurmFleet::new(&dir, spec)?;
        let subs = fleet.submissions(&slurm)?;
        print_scripts(&subs);
        eprintln!(
            "coretune: dry run: {} batch script(s) for {} job(s), nothing submitted",
            subs.len(),
            subs.iter().map(Submission::tasks).sum::<usize>()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut fleet = SlurmFleet::create(&dir, spec)?;
    let subs = fleet.submissions(&slurm)?;
    submit(&mut fleet, &slurm, &subs)?;
    follow(&mut fleet, &slurm, args.no_wait, poll, shown)
}

/// Continues the fleet in `dir`: records what became of its jobs, resubmits only the nodes
/// whose sweeps are incomplete and the nodes still to measure, and waits as a new fleet does.
pub(crate) fn resume(dir: &Path, args: &SlurmArgs, shown: Shown) -> anyhow::Result<ExitCode> {
    let poll = args.poll()?;
    let slurm = Slurm::find()?;
    let mut fleet = SlurmFleet::open(dir)?;
    for job in fleet.refresh(&slurm)? {
        report_ended(&job);
    }
    for job in fleet.live_jobs() {
        eprintln!(
            "coretune: {}: {} still {}; not resubmitted",
            job.target,
            job.id,
            job.state.to_lowercase()
        );
    }
    let subs = fleet.submissions(&slurm)?;
    if subs.is_empty() && fleet.live_jobs().is_empty() {
        eprintln!("coretune: every node's sweep is complete; nothing to resubmit");
    }
    submit(&mut fleet, &slurm, &subs)?;
    follow(&mut fleet, &slurm, args.no_wait, poll, shown)
}

fn print_scripts(subs: &[Submission]) {
    for (i, sub) in subs.iter().enumerate() {
        let what = match &sub.place {
            JobNodes::Any { tasks: 1, .. } => "1 job".to_owned(),
            JobNodes::Any { tasks, .. } => format!("an array of {tasks} jobs"),
            JobNodes::Node(node) => format!("1 job on {node}"),
        };
        if i > 0 {
            println!();
        }
        println!(
            "# ---- coretune: batch script {} of {}: target {}, {what} (sbatch FILE) ----",
            i + 1,
            subs.len(),
            sub.target
        );
        print!("{}", sub.script);
    }
}

fn submit(fleet: &mut SlurmFleet, slurm: &Slurm, subs: &[Submission]) -> anyhow::Result<()> {
    let jobs = fleet.submit(slurm, subs).context("submitting")?;
    for sub in subs {
        let ids: Vec<&str> = jobs
            .iter()
            .filter(|j| j.target == sub.target)
            .map(|j| j.id.as_str())
            .collect();
        if !ids.is_empty() {
            eprintln!("coretune: {}: submitted {}", sub.target, ids.join(", "));
        }
    }
    Ok(())
}

/// Waits for the jobs (unless `no_wait`), then reports the fleet.
fn follow(
    fleet: &mut SlurmFleet,
    slurm: &Slurm,
    no_wait: bool,
    poll: Duration,
    shown: Shown,
) -> anyhow::Result<ExitCode> {
    let dir = fleet.dir().to_path_buf();
    let path = dir.display();
    if no_wait {
        let ids: Vec<&str> = fleet.live_jobs().iter().map(|j| j.id.as_str()).collect();
        println!("Jobs: {}", ids.join(" "));
        println!("Follow them and resubmit what failed: coretune tune --resume {path}");
        println!("Report when they are done:            coretune report {path}");
        return Ok(ExitCode::SUCCESS);
    }
    if !wait(fleet, slurm, poll, shown.quiet)? {
        let ids: Vec<&str> = fleet.live_jobs().iter().map(|j| j.id.as_str()).collect();
        eprintln!(
            "coretune: stopped waiting; the jobs keep running: follow them with coretune tune \
             --resume {path} (it resubmits nothing while they run), or cancel them with scancel \
             {}",
            ids.join(" ")
        );
        return Ok(ExitCode::from(exit::INTERRUPTED));
    }
    if coretune_core::fleet::FleetFolder::is_fleet(&dir) {
        crate::report::fleet::report_dir(&dir, shown.json)?;
    } else {
        eprintln!("coretune: no node wrote a results folder");
    }
    let todo = fleet.submissions(slurm)?;
    if todo.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for job in fleet.jobs().iter().filter(|j| j.has_failed()) {
        eprintln!("coretune: {}: {}", job.target, job.describe());
    }
    for sub in &todo {
        let what = match &sub.place {
            JobNodes::Node(node) => format!("the sweep on {node} is incomplete"),
            JobNodes::Any { tasks, .. } => format!(
                "{tasks} more node{} to measure (a job ended before its sweep began, or Slurm \
                 ran two array tasks on one node)",
                if *tasks == 1 { "" } else { "s" }
            ),
        };
        eprintln!("coretune: {}: {what}", sub.target);
    }
    eprintln!("coretune: continue with: coretune tune --resume {path}");
    Ok(ExitCode::from(exit::FAILED))
}

/// Consecutive failed looks at the jobs after which waiting gives up (the jobs run on).
const MAX_POLL_FAILURES: u32 = 10;

/// Polls until no job is pending or running, showing how many are in each state and how many
/// runs the nodes have logged. `false` when Ctrl-C stopped the wait.
fn wait(
    fleet: &mut SlurmFleet,
    slurm: &Slurm,
    poll: Duration,
    quiet: bool,
) -> anyhow::Result<bool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    // Not fatal: without a handler Ctrl-C ends the process, and the jobs run on regardless.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} slurm [{elapsed}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut failures = 0;
    loop {
        // A busy controller times out now and then: say so and look again, up to a point.
        match fleet.refresh(slurm) {
            Ok(ended) => {
                failures = 0;
                for job in ended {
                    bar.suspend(|| report_ended(&job));
                }
            }
            Err(e) if failures < MAX_POLL_FAILURES => {
                failures += 1;
                bar.suspend(|| eprintln!("coretune: warning: {e} (looking again)"));
            }
            Err(e) => return Err(e).context("following the jobs"),
        }
        let c = fleet.counts();
        let runs: usize = fleet.nodes().iter().map(|n| n.runs).sum();
        bar.set_message(format!(
            "jobs: {} pending, {} running, {} completed, {} failed · {runs} runs logged",
            c.pending,
            c.running,
            c.completed,
            c.failed + c.unknown
        ));
        if c.is_settled() {
            bar.finish_and_clear();
            return Ok(true);
        }
        let until = std::time::Instant::now() + poll;
        while std::time::Instant::now() < until {
            if stop.load(Ordering::SeqCst) {
                bar.finish_and_clear();
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn report_ended(job: &JobRecord) {
    let level = if job.has_failed() { "warning: " } else { "" };
    eprintln!("coretune: {level}{}: {}", job.target, job.describe());
}
