//! One run of a program: a copy per instance, each started by [`PlacedCommand`] on its part
//! of the CPUs, waited for together, its figures read from its output, what it left running
//! ended.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::placeholders::substitute_copy;
use super::runner::{Runner, Started};
use crate::grid::Config;
use crate::measure::ChildProbe;
use crate::placement::Placement;
use crate::program::pin::PerThread;
use crate::program::server::file_tail;
use crate::program::{self, Placed, PlacedCommand};
use crate::sweep::Outcome;
use crate::sweep::objective::{MetricSource, read_metrics};
use crate::sys::{format_list, set_to_vec};
use crate::workload::{RunRecord, Unit, Work};

impl Runner<'_> {
    /// One run of a program: a copy per instance, each started on its part (its placement,
    /// environment, memory policy, `{instance}` and `{cpus}`), all at once, and waited for
    /// together. The run's time is the slowest copy's; its CPU time and counters are the copies'
    /// added up, its peak memory the largest copy's; a copy that fails fails the run (the
    /// copies not yet waited for are stopped). Each copy, once it has ended, is added to
    /// `started` for the audit, and what it left running is ended and named there.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_command(
        &self,
        argv: &[String],
        shell: bool,
        prepare: Option<&str>,
        c: &Config,
        placements: &[Placement],
        per_thread: &[Option<PerThread>],
        started: &mut Started,
    ) -> Outcome {
        if let Some(prep) = prepare {
            match program::shell_command(prep).status() {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    return Outcome::Failed(format!(
                        "--prepare '{prep}' failed with status {}",
                        program::exit_code(s)
                    ));
                }
                Err(e) => return Outcome::Failed(format!("--prepare '{prep}': {e}")),
            }
        }
        let several = placements.len() > 1;
        // "copy 2: " before what is said of one copy, when there are several.
        let copy = |k: usize| {
            if several {
                format!("copy {k}: ")
            } else {
                String::new()
            }
        };
        let metrics = &self.settings.metrics;
        let mut copies = Vec::with_capacity(placements.len());
        for (k, (placement, per_thread)) in placements.iter().zip(per_thread).enumerate() {
            let cpus = format_list(&set_to_vec(&placement.union()));
            let words: Vec<String> = argv
                .iter()
                .map(|a| substitute_copy(a, c, &cpus, k))
                .collect();
            let cmd = if shell {
                program::shell_command(&words.join(" "))
            } else {
                let mut cmd = Command::new(PathBuf::from(&words[0]));
                cmd.args(&words[1..]);
                cmd
            };
            // Through coretune-exec, so that its peak memory is its own (before the stdio is
            // set: the command is rebuilt around the helper).
            let mut placed = PlacedCommand::new(cmd).own_figures();
            let cmd = placed.command();
            // stderr goes to an unnamed file, read only after the program has ended (the end
            // of it for a failed run, all of it for a metric read there); stdout too when a
            // metric is read there: nothing of coretune reads beside the program while it runs
            // (a pipe would need a reader).
            let stderr_file = if self.show_output {
                None
            } else {
                tempfile::tempfile().ok()
            };
            let stdout_file = if !self.show_output
                && metrics.iter().any(|m| m.from == MetricSource::Stdout)
            {
                match tempfile::tempfile() {
                    Ok(f) => Some(f),
                    Err(e) => {
                        return Outcome::Failed(format!("cannot keep the program's stdout: {e}"));
                    }
                }
            } else {
                None
            };
            // A metric file left by an earlier run must not pass for this run's figure; only a
            // file an earlier run of this sweep wrote is removed.
            for m in metrics {
                if let MetricSource::File(name) = &m.from {
                    let path = PathBuf::from(substitute_copy(name, c, &cpus, k));
                    if let Err(e) = self.clear_metric_file(&path) {
                        return Outcome::Failed(e);
                    }
                }
            }
            cmd.stdin(Stdio::null());
            if self.show_output {
                cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
            } else {
                let to = |f: Option<&std::fs::File>| {
                    f.and_then(|f| f.try_clone().ok())
                        .map_or_else(Stdio::null, Stdio::from)
                };
                cmd.stdout(to(stdout_file.as_ref()))
                    .stderr(to(stderr_file.as_ref()));
            }
            if let Some(launcher) = self.settings.launcher {
                cmd.envs(launcher.env());
            }
            let mem = match self.mem_plan(c, placement) {
                Ok(mem) => mem,
                Err(e) => return Outcome::Failed(format!("{}{e}", copy(k))),
            };
            let mut placed = placed
                .cpus(c.is_restricted().then(|| placement.union()))
                .threads(c.threads, Some(placement), per_thread.as_ref())
                .memory(mem)
                .contained();
            if self.settings.launcher.is_some() {
                // What the launcher gives each rank, logged as the rank starts.
                placed = placed.log_starts();
            }
            copies.push((placed, words, cpus, stdout_file, stderr_file));
        }
        let probe = ChildProbe::start();
        let mut running = Vec::with_capacity(copies.len());
        for (k, (placed, words, cpus, stdout_file, stderr_file)) in copies.into_iter().enumerate() {
            match placed.start() {
                Ok(child) => running.push(Running {
                    child,
                    words,
                    cpus,
                    stdout: stdout_file,
                    stderr: stderr_file,
                }),
                Err(e) => {
                    stop_all(&mut running);
                    return Outcome::Failed(format!("{}{e}", copy(k)));
                }
            }
        }
        // Blocked until each copy ends or the run's time is up: nothing of coretune runs
        // beside them. The copies are waited for in turn; one that ends early waits, reaped,
        // for its turn.
        let mut statuses = Vec::with_capacity(running.len());
        for k in 0..running.len() {
            let left = self
                .settings
                .timeout
                .map(|t| t.saturating_sub(probe.elapsed()));
            match running[k].child.wait_timeout(left) {
                Ok(Some(status)) => statuses.push(status),
                Ok(None) => {
                    stop_all(&mut running);
                    return Outcome::Timeout;
                }
                Err(e) => {
                    stop_all(&mut running);
                    return Outcome::Failed(format!("{}waiting for the program: {e}", copy(k)));
                }
            }
            let status = statuses[k];
            if !status.success() {
                // One copy failed: the run has; the others are not waited for.
                stop_all(&mut running[k + 1..]);
                break;
            }
        }
        let usage = running
            .iter()
            .map(|r| r.child.usage())
            .reduce(|a, b| Some(a?.plus(b?)))
            .flatten();
        // Timed from the first copy's `exec`: not what coretune did to start it.
        let exec_ns = running
            .iter()
            .map(|r| r.child.exec_ns())
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| v.into_iter().min());
        let measurement = probe.finish_from(exec_ns, usage);
        // What each copy left running once it ended: ended here, and a mismatch of the run.
        for (k, r) in running.iter_mut().enumerate() {
            let left = r.child.end_leftovers();
            if !left.is_empty() {
                started.audit.mismatches.push(format!(
                    "{}{} left {} running after it ended: {}; stopped",
                    copy(k),
                    r.words[0],
                    crate::sys::counted(left.len(), "process"),
                    left.join(", ")
                ));
            }
        }
        started.audit.checked.push(format!(
            "nothing left running{}",
            if running.iter().all(|r| r.child.launched().catches_daemons()) {
                " (daemons included: each run in a cgroup of its own)"
            } else {
                " (its process group and the orphans handed to coretune)"
            }
        ));
        let mut read = Vec::with_capacity(running.len());
        for (k, (copy_run, status)) in running.into_iter().zip(statuses).enumerate() {
            let Running {
                child,
                words,
                cpus,
                stdout: stdout_file,
                stderr: stderr_file,
            } = copy_run;
            started.programs.push(child);
            if crate::sys::stopped_by_request(status) {
                return Outcome::Stopped(format!(
                    "{}{} was ended by signal {}",
                    copy(k),
                    words[0],
                    program::exit_code(status) - 128
                ));
            }
            if !status.success() {
                return Outcome::ProgramFailed {
                    error: format!(
                        "{}{} exited with status {}",
                        copy(k),
                        words[0],
                        program::exit_code(status)
                    ),
                    stderr_tail: stderr_file.and_then(|f| file_tail(f, STDERR_TAIL_BYTES)),
                };
            }
            if metrics.is_empty() {
                continue;
            }
            match self.read_metrics(c, &cpus, k, stdout_file, stderr_file) {
                Ok(m) => read.push(m),
                Err((error, stderr_tail)) => {
                    return Outcome::ProgramFailed {
                        error: format!("{}{error}", copy(k)),
                        stderr_tail,
                    };
                }
            }
        }
        let metrics = aggregate_metrics(metrics, read);
        let mut outcome = finished(measurement, Ok(metrics));
        if let Outcome::Done(record) = &mut outcome {
            // The figure of P copies: P runs over the slowest one's time.
            #[allow(clippy::cast_precision_loss)]
            let work = Work {
                amount: placements.len() as f64,
                unit: Unit::RunsPerSec,
                kernel_time: None,
            };
            record.throughput = work.throughput(record.measurement.wall);
        }
        outcome
    }

    /// The metrics of a finished copy from its outputs (the unnamed files its stdout and
    /// stderr went to, read as streams; `cpus`: its CPU list and `instance` its index, for a
    /// `--metric-from` file's placeholders), or why one is missing, with the end of its stderr.
    pub(super) fn read_metrics(
        &self,
        c: &Config,
        cpus: &str,
        instance: usize,
        stdout: Option<std::fs::File>,
        stderr: Option<std::fs::File>,
    ) -> Result<BTreeMap<String, f64>, (String, Option<String>)> {
        use std::io::{Read, Seek as _, SeekFrom};
        // The program wrote through a copy of each file's descriptor, which shares its offset.
        let from_start = |f: Option<std::fs::File>| -> Box<dyn Read> {
            match f.and_then(|mut f| f.seek(SeekFrom::Start(0)).is_ok().then_some(f)) {
                Some(f) => Box::new(f),
                None => Box::new(std::io::empty()),
            }
        };
        let tail = stderr
            .as_ref()
            .and_then(|f| f.try_clone().ok())
            .and_then(|f| file_tail(f, STDERR_TAIL_BYTES));
        read_metrics(
            &self.settings.metrics,
            &mut from_start(stdout),
            &mut from_start(stderr),
            &|name| {
                let path = substitute_copy(name, c, cpus, instance);
                std::fs::File::open(&path)
                    .map(|f| Box::new(f) as Box<dyn Read>)
                    .map_err(|e| format!("--metric-from {path}: {e}"))
            },
        )
        .map_err(|error| (error, tail))
    }
}

/// One started copy of a program's run: the copy, its words, its CPU list, and the unnamed
/// files its stdout (when a metric is read there) and stderr go to.
struct Running {
    child: Placed,
    words: Vec<String>,
    cpus: String,
    stdout: Option<std::fs::File>,
    stderr: Option<std::fs::File>,
}

/// Kills what still runs of `copies` and reaps it.
fn stop_all(copies: &mut [Running]) {
    for c in copies.iter_mut() {
        if matches!(c.child.launched_mut().try_wait(), Ok(None)) {
            c.child.kill();
        }
        let _ = c.child.wait();
    }
}

/// One run's metrics from its copies' (one copy: its own). A figure where higher is better —
/// a rate: requests, events or bytes per second — is summed over the copies, the machine's
/// aggregate; one where lower is better — a latency, a time — is the worst copy's.
pub(super) fn aggregate_metrics(
    specs: &[crate::sweep::objective::MetricSpec],
    mut copies: Vec<BTreeMap<String, f64>>,
) -> BTreeMap<String, f64> {
    if copies.len() <= 1 {
        return copies.pop().unwrap_or_default();
    }
    specs
        .iter()
        .filter_map(|spec| {
            let values = copies.iter().map(|m| m.get(&spec.name).copied());
            let value = if spec.higher_is_better {
                values.sum::<Option<f64>>()?
            } else {
                values
                    .collect::<Option<Vec<f64>>>()?
                    .into_iter()
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            Some((spec.name.clone(), value))
        })
        .collect()
}

/// A program's completed run: its measurement and metrics (or, failing a metric, the failed
/// run with why and the end of its stderr). Its result is not checked by coretune: it ran to a
/// zero exit, and that is its verification.
pub(super) fn finished(
    measurement: crate::measure::Measurement,
    metrics: Result<BTreeMap<String, f64>, (String, Option<String>)>,
) -> Outcome {
    let metrics = match metrics {
        Ok(m) => m,
        Err((error, stderr_tail)) => return Outcome::ProgramFailed { error, stderr_tail },
    };
    let work = Work {
        amount: 1.0,
        unit: Unit::RunsPerSec,
        kernel_time: None,
    };
    let throughput = work.throughput(measurement.wall);
    Outcome::Done(RunRecord::verified(measurement, throughput, metrics))
}

/// How much of a failed run's stderr `runs.jsonl` keeps: its end, where the reason usually is.
pub(crate) const STDERR_TAIL_BYTES: u64 = 4096;

#[cfg(test)]
mod test {
    use super::*;
    use crate::sweep::objective::MetricSpec;

    #[test]
    fn copies_add_up_rates_and_keep_the_worst_latency() {
        let rps = MetricSpec::parse("rps=([0-9]+)").map(|mut m| {
            m.higher_is_better = true;
            m
        });
        let p99 = MetricSpec::parse("p99=([0-9]+)").unwrap();
        let specs = [rps.unwrap(), p99];
        let copy =
            |rps: f64, p99: f64| BTreeMap::from([("rps".to_owned(), rps), ("p99".to_owned(), p99)]);
        let m = aggregate_metrics(&specs, vec![copy(100.0, 2.0), copy(150.0, 5.0)]);
        assert_eq!(m["rps"], 250.0);
        assert_eq!(m["p99"], 5.0);
        // One copy: its own figures.
        assert_eq!(
            aggregate_metrics(&specs, vec![copy(1.0, 2.0)]),
            copy(1.0, 2.0)
        );
    }
}
