//! Slurm's client commands, run as child processes: `sbatch` submits, `squeue` (and `sacct`
//! where accounting is on) says what became of a job, `scontrol show hostnames` expands a node
//! list. Nothing here schedules: Slurm does.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::FleetError;
use crate::program::find_program;

/// A job's state as `squeue` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueEntry {
    /// The job's id (`12`, or `12_3` for task 3 of array job 12).
    pub id: String,
    /// Slurm's state (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, ...).
    pub state: String,
    /// Why it is in that state (`Resources`, `NonZeroExitCode`; `None` for Slurm's "None").
    pub reason: Option<String>,
    /// The node it runs or ran on, once it has one.
    pub node: Option<String>,
}

/// Slurm's client commands, found on `PATH`.
#[derive(Clone, Debug)]
pub struct Slurm {
    sbatch: PathBuf,
    squeue: PathBuf,
    scontrol: PathBuf,
    sacct: Option<PathBuf>,
}

impl Slurm {
    /// Finds `sbatch`, `squeue` and `scontrol` (and `sacct`, which is optional) on `PATH`.
    ///
    /// # Errors
    ///
    /// [`FleetError::NoSlurm`] naming the first command that is missing.
    pub fn find() -> Result<Self, FleetError> {
        let find = |name: &'static str| {
            find_program(name).map_err(|_| FleetError::NoSlurm { program: name })
        };
        Ok(Self {
            sbatch: find("sbatch")?,
            squeue: find("squeue")?,
            scontrol: find("scontrol")?,
            sacct: find_program("sacct").ok(),
        })
    }

    /// Where the commands are, one line (`sbatch, squeue, scontrol, sacct in /usr/bin`).
    pub fn describe(&self) -> String {
        let mut dirs: Vec<String> = [&self.sbatch, &self.squeue, &self.scontrol]
            .into_iter()
            .chain(&self.sacct)
            .filter_map(|p| p.parent().map(|d| d.display().to_string()))
            .collect();
        dirs.dedup();
        let sacct = if self.sacct.is_some() {
            ", sacct"
        } else {
            " (no sacct: a job squeue no longer lists is UNKNOWN, told by its results folder)"
        };
        format!("sbatch, squeue, scontrol{sacct} in {}", dirs.join(", "))
    }

    /// Whether a controller answers (`scontrol ping`, given at most `timeout`): its line
    /// (`Slurmctld(primary) at head is UP`), or why not in one line — Slurm's own last message
    /// (`Could not establish a configuration source` where no `slurm.conf` names one), a
    /// controller that is `DOWN`, or no answer in time. Finding the commands on `PATH` says
    /// nothing of whether a job can be submitted.
    ///
    /// # Errors
    ///
    /// The reason, one line, naming `scontrol ping`.
    pub fn ping(&self, timeout: std::time::Duration) -> Result<String, String> {
        use std::process::Stdio;
        let mut child = Command::new(&self.scontrol)
            .arg("ping")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("scontrol ping: {e}"))?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "scontrol ping: no answer within {} s",
                        timeout.as_secs_f64()
                    ));
                }
                Err(e) => return Err(format!("scontrol ping: {e}")),
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("scontrol ping: {e}"))?;
        let last = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .map(str::to_owned)
        };
        let answer = last(&out.stdout);
        match answer {
            Some(line) if out.status.success() && !line.contains("DOWN") => Ok(line),
            Some(line) if line.contains("DOWN") => Err(format!("scontrol ping: {line}")),
            _ => {
                let why = last(&out.stderr).unwrap_or_else(|| format!("{}", out.status));
                // `scontrol: fatal: Could not …`: the message without the program's prefixes.
                let why = why
                    .trim_start_matches("scontrol: ")
                    .trim_start_matches("fatal: ")
                    .trim_start_matches("error: ")
                    .to_owned();
                Err(format!("scontrol ping: {why}"))
            }
        }
    }

    /// Submits the batch script at `script`; returns the job id.
    ///
    /// # Errors
    ///
    /// `sbatch` cannot be run or refuses the script (its message is kept).
    pub fn submit(&self, script: &Path) -> Result<String, FleetError> {
        let out = run(Command::new(&self.sbatch).arg("--parsable").arg(script))?;
        parse_sbatch(&out).ok_or_else(|| FleetError::Parse {
            command: "sbatch --parsable".into(),
            output: out,
        })
    }

    /// The state of every job or array task of `ids` that the controller still knows (jobs
    /// leave `squeue` some minutes after they end: `MinJobAge`). Array tasks are listed one by
    /// one.
    ///
    /// # Errors
    ///
    /// `squeue` cannot be run or fails for another reason than not knowing the jobs.
    pub fn queue(&self, ids: &[String]) -> Result<Vec<QueueEntry>, FleetError> {
        let mut jobs: Vec<&str> = ids.iter().map(|id| base_id(id)).collect();
        jobs.sort_unstable();
        jobs.dedup();
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = Command::new(&self.squeue);
        cmd.args([
            "--noheader",
            "--array",
            "--states=all",
            "--format=%i|%T|%r|%N",
        ])
        .arg(format!("--jobs={}", jobs.join(",")));
        match run(&mut cmd) {
            Ok(out) => Ok(parse_squeue(&out)),
            // Every id unknown: squeue says "Invalid job id specified" and exits 1.
            Err(FleetError::Command { stderr, .. }) if stderr.contains("Invalid job id") => {
                Ok(Vec::new())
            }
            Err(e) => Err(e),
        }
    }

    /// What accounting recorded for `ids`, when `sacct` is there and accounting is on (empty
    /// otherwise): for jobs that have left the controller's memory.
    pub fn accounting(&self, ids: &[String]) -> Vec<QueueEntry> {
        let Some(sacct) = &self.sacct else {
            return Vec::new();
        };
        if ids.is_empty() {
            return Vec::new();
        }
        let out = run(Command::new(sacct)
            .args(["--noheader", "--parsable2", "--allocations"])
            .args(["--format=JobID,State,Reason,NodeList"])
            .arg(format!("--jobs={}", ids.join(","))));
        out.map(|o| parse_squeue(&o)).unwrap_or_default()
    }

    /// The node names a Slurm host list names (`n[01-03],m1` → n01, n02, n03, m1).
    ///
    /// # Errors
    ///
    /// `scontrol` cannot be run or refuses the list.
    pub fn hostnames(&self, list: &str) -> Result<Vec<String>, FleetError> {
        let out = run(Command::new(&self.scontrol).args(["show", "hostnames", list]))?;
        Ok(out.split_whitespace().map(str::to_owned).collect())
    }
}

/// Runs a command to its end; its stdout, or [`FleetError::Command`] with its stderr.
fn run(cmd: &mut Command) -> Result<String, FleetError> {
    let shown = format!(
        "{} {}",
        Path::new(cmd.get_program())
            .file_name()
            .unwrap_or_default()
            .to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = cmd.output().map_err(|error| FleetError::Spawn {
        command: shown.clone(),
        error,
    })?;
    if !out.status.success() {
        return Err(FleetError::Command {
            command: shown,
            status: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The array job of an array task's id (`12_3` → `12`), or the id itself.
pub(super) fn base_id(id: &str) -> &str {
    id.split_once('_').map_or(id, |(base, _)| base)
}

/// `sbatch --parsable` prints `ID` or `ID;CLUSTER`.
fn parse_sbatch(out: &str) -> Option<String> {
    let id = out.trim().split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_owned())
}

/// Lines of `ID|STATE|REASON|NODES` (squeue's format above, sacct's `--parsable2`). A state
/// such as sacct's `CANCELLED by 0` keeps its first word; `None`, `(null)` and empty fields are
/// absent.
fn parse_squeue(out: &str) -> Vec<QueueEntry> {
    let field = |s: Option<&str>| {
        s.map(str::trim)
            .filter(|s| !s.is_empty() && *s != "None" && *s != "(null)" && *s != "None assigned")
            .map(str::to_owned)
    };
    out.lines()
        .filter_map(|line| {
            let mut parts = line.split('|');
            let id = parts.next()?.trim();
            let state = parts
                .next()?
                .split_whitespace()
                .next()?
                .trim_end_matches('+');
            if id.is_empty() || id.contains('.') {
                // sacct's job steps (12.batch) are not jobs.
                return None;
            }
            Some(QueueEntry {
                id: id.to_owned(),
                state: state.to_owned(),
                reason: field(parts.next()),
                node: field(parts.next()),
            })
        })
        .collect()
}

#[cfg(test)]
mod test {

    /// A controller that does not answer in time is said so, and `ping` does not wait for it.
    #[cfg(unix)]
    #[test]
    fn a_controller_that_does_not_answer_in_time_is_not_waited_for() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let scontrol = dir.path().join("scontrol");
        std::fs::write(&scontrol, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&scontrol, std::fs::Permissions::from_mode(0o755)).unwrap();
        let slurm = Slurm {
            sbatch: scontrol.clone(),
            squeue: scontrol.clone(),
            scontrol,
            sacct: None,
        };
        let started = std::time::Instant::now();
        let err = slurm
            .ping(std::time::Duration::from_millis(200))
            .unwrap_err();
        assert_eq!(err, "scontrol ping: no answer within 0.2 s");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
    use super::*;

    #[test]
    fn sbatch_parsable_output_gives_the_job_id() {
        assert_eq!(parse_sbatch("12\n").as_deref(), Some("12"));
        assert_eq!(parse_sbatch("12;cluster\n").as_deref(), Some("12"));
        assert_eq!(parse_sbatch("Submitted batch job 12\n"), None);
        assert_eq!(parse_sbatch(""), None);
    }

    #[test]
    fn squeue_and_sacct_lines() {
        // As Slurm 22.05 prints them (squeue --array --states=all --format=%i|%T|%r|%N).
        let out = "2|COMPLETED|None|localhost\n3_1|PENDING|Resources|\n3_0|RUNNING|None|localhost\n\
                   3_2|FAILED|NonZeroExitCode|localhost\n";
        let e = parse_squeue(out);
        assert_eq!(e.len(), 4);
        assert_eq!(
            e[1],
            QueueEntry {
                id: "3_1".into(),
                state: "PENDING".into(),
                reason: Some("Resources".into()),
                node: None
            }
        );
        assert_eq!(e[2].node.as_deref(), Some("localhost"));
        assert_eq!(e[0].reason, None);
        // sacct --parsable2: steps skipped, "CANCELLED by 0" is CANCELLED.
        let out = "7|CANCELLED by 0||n01\n7.batch|CANCELLED||n01\n8|TIMEOUT|None|n02\n";
        let e = parse_squeue(out);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].state, "CANCELLED");
        assert_eq!(e[1].state, "TIMEOUT");
        assert_eq!(base_id("3_1"), "3");
        assert_eq!(base_id("12"), "12");
    }
}
