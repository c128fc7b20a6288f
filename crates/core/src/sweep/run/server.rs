//! One run of a server under its client: the server started by [`PlacedCommand`] with the
//! configuration and waited for until ready (the address checked free before, and answered by
//! the server after), its client run once on its own CPUs, the server stopped with everything
//! it started.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use hwlocality::cpu::cpuset::CpuSet;

use super::command::{STDERR_TAIL_BYTES, finished};
use super::placeholders::substitute;
use super::runner::{Prepared, Runner, Started};
use crate::grid::{Config, Grid};
use crate::measure::ChildProbe;
use crate::placement::Placement;
use crate::program::pin::PerThread;
use crate::program::server::{Ready, Server, file_tail};
use crate::program::{self, PlacedCommand};
use crate::sweep::Outcome;
use crate::sweep::objective::MetricSource;
use crate::sweep::target::ServerSettings;
use crate::sys::{format_list, set_to_vec};

impl Runner<'_> {
    /// One run of a server: started with the configuration (CPU set, placement, environment),
    /// waited for until ready, loaded by its client once (on the client's own CPUs), stopped.
    /// The run's time is the client's; its CPU time, context switches and peak memory are the
    /// server's, over its life (read when it is reaped: nothing samples it meanwhile); the
    /// metrics are read from the client's output. The server (its placed program, ended) goes
    /// to `started` for the audit, with who answered at its address; the client is not the
    /// configuration's program, but what it leaves running is ended and named all the same.
    pub(super) fn run_server(
        &self,
        command: &str,
        (server, ready): &(ServerSettings, Ready),
        c: &Config,
        placement: &Placement,
        per_thread: Option<&PerThread>,
        started: &mut Started,
    ) -> Outcome {
        let cpus = format_list(&set_to_vec(&placement.union()));
        let line = substitute(command, c, &cpus);
        let mem = match self.mem_plan(c, placement) {
            Ok(mem) => mem,
            Err(e) => return Outcome::Failed(e),
        };
        let cmd = PlacedCommand::new(program::shell_command(&line))
            .own_figures()
            .cpus(c.is_restricted().then(|| placement.union()))
            .threads(c.threads, Some(placement), per_thread)
            .memory(mem);
        let ready_timeout =
            Duration::try_from_secs_f64(server.ready_timeout_s).unwrap_or(Duration::from_secs(10));
        // Messages name the server's program (`nginx`), not the shell that runs its line.
        let name = line.split_whitespace().next().unwrap_or(&line);
        let running = match Server::start(cmd, name, ready, ready_timeout) {
            Ok(s) => s,
            Err(e) => {
                return Outcome::ProgramFailed {
                    stderr_tail: e.stderr_tail().map(str::to_owned),
                    error: e.to_string(),
                };
            }
        };
        // The client: on its CPUs, its output kept for the metrics and a failure's reason.
        let client_set = match self.client_cpus(server, placement) {
            Ok((set, _)) => set,
            Err(e) => return Outcome::Failed(e),
        };
        for m in &self.settings.metrics {
            if let MetricSource::File(name) = &m.from
                && let Err(e) = self.clear_metric_file(&PathBuf::from(substitute(name, c, &cpus)))
            {
                let _ = running.stop(SERVER_GRACE);
                return Outcome::Failed(e);
            }
        }
        let words = substitute(&server.client, c, &cpus);
        let mut cmd = PlacedCommand::new(program::shell_command(&words))
            .cpus(Some(client_set))
            .contained();
        let (stdout, stderr) = (tempfile::tempfile().ok(), tempfile::tempfile().ok());
        let to = |f: Option<&std::fs::File>| {
            f.and_then(|f| f.try_clone().ok())
                .map_or_else(Stdio::null, Stdio::from)
        };
        cmd.command()
            .stdin(Stdio::null())
            .stdout(to(stdout.as_ref()))
            .stderr(to(stderr.as_ref()));
        let probe = ChildProbe::start();
        let mut child = match cmd.start() {
            Ok(child) => child,
            Err(e) => return Outcome::Failed(format!("--client: {e}")),
        };
        // Blocked until the client ends or the run's time is up.
        let status = match child.wait_timeout(self.settings.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                child.kill();
                let _ = child.wait();
                let _ = running.stop(SERVER_GRACE);
                return Outcome::Timeout;
            }
            Err(e) => return Outcome::Failed(format!("waiting for the client: {e}")),
        };
        // Timed from the client's `exec`, as a program's run is.
        let wall = match child.launched().exec_ns() {
            Some(ns) => Duration::from_nanos(crate::sys::monotonic_ns().saturating_sub(ns)),
            None => probe.elapsed(),
        };
        let left = child.end_leftovers();
        if !left.is_empty() {
            started.audit.mismatches.push(format!(
                "the client left {} running after it ended: {}; stopped",
                crate::sys::counted(left.len(), "process"),
                left.join(", ")
            ));
        }
        started.audit.checked.extend(running.checked());
        let stopped = match running.stop(SERVER_GRACE) {
            Ok(stopped) => stopped,
            Err(e) => {
                return Outcome::ProgramFailed {
                    stderr_tail: e.stderr_tail().map(str::to_owned),
                    error: e.to_string(),
                };
            }
        };
        started.programs.extend(stopped.placed);
        started
            .audit
            .checked
            .push("the server alive until its client ended, nothing of it left".to_owned());
        if stopped.ended_before {
            return Outcome::ProgramFailed {
                error: format!("the server ended while its client ran ({})", stopped.status),
                stderr_tail: stopped.stderr_tail,
            };
        }
        if crate::sys::stopped_by_request(status) {
            return Outcome::Stopped(format!(
                "the client was ended by signal {}",
                program::exit_code(status) - 128
            ));
        }
        if !status.success() {
            return Outcome::ProgramFailed {
                error: format!(
                    "the client exited with status {}",
                    program::exit_code(status)
                ),
                stderr_tail: stderr.and_then(|f| file_tail(f, STDERR_TAIL_BYTES)),
            };
        }
        finished(
            ChildProbe::with_usage(wall, stopped.usage),
            self.read_metrics(c, &cpus, 0, stdout, stderr),
        )
    }

    /// The CPUs a server's client runs on for `placement`, and whether they are shared with the
    /// server: `--client-cpus`, else those the server's configuration leaves free, else all.
    pub(super) fn client_cpus(
        &self,
        server: &ServerSettings,
        placement: &Placement,
    ) -> Result<(CpuSet, bool), String> {
        let all = self.topology.cpuset();
        let set = match &server.client_cpus {
            Some(expr) => {
                let cpus: crate::grid::Cpus = expr
                    .parse()
                    .map_err(|e| format!("--client-cpus '{expr}': {e}"))?;
                let (set, _) = cpus
                    .resolve(self.topology)
                    .map_err(|e| format!("--client-cpus '{expr}': {e}"))?;
                set.unwrap_or(all)
            }
            None => {
                let mut free = all.clone();
                free -= &placement.union();
                if free.is_empty() { all } else { free }
            }
        };
        let mut shared = set.clone();
        shared &= &placement.union();
        Ok((set, !shared.is_empty()))
    }

    /// The warning to show before a server sweep whose client shares CPUs with the server in
    /// some configuration of `grid` (every CPU used by the server, or `--client-cpus` among
    /// them): the load generator then competes with what it measures.
    pub fn client_warning(&self, grid: &Grid) -> Option<String> {
        let Prepared::Command {
            server: Some(server),
            ..
        } = &self.prepared
        else {
            return None;
        };
        let server = &server.0;
        let shared: Vec<String> = grid
            .configs()
            .into_iter()
            .filter_map(|c| {
                let placement = c.placement(self.topology, self.settings.binding).ok()?;
                let (_, shared) = self.client_cpus(server, &placement).ok()?;
                shared.then(|| c.to_string())
            })
            .collect();
        let first = shared.first()?;
        Some(format!(
            "the client shares CPUs with the server in {} ({first}{}): the load generator \
             competes with what it measures; --cpus keeps some free for it, --client-cpus \
             chooses its CPUs",
            crate::sys::counted(shared.len(), "configuration"),
            if shared.len() > 1 { ", …" } else { "" }
        ))
    }
}

/// How long a server gets to end after SIGTERM before SIGKILL.
const SERVER_GRACE: Duration = Duration::from_secs(5);
