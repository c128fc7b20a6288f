//! The run log: one [`RunLine`] per run, appended to `runs.jsonl` and flushed before the next
//! run starts ([`RunLog`]), and how a run ended ([`Status`], [`Outcome`]).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::SweepError;
use crate::grid::Config;
use crate::measure::Noise;
use crate::workload::RunRecord;

/// How a run ended. Every status but [`Status::Ok`] is a failed run, treated alike: left out of
/// the statistics, and (without [`Design::ignore_failure`](super::Design::ignore_failure)) its configuration out of the
/// running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Completed and verified.
    Ok,
    /// Completed, but the result did not verify.
    Unverified,
    /// Failed or crashed.
    Failed,
    /// Exceeded the per-run timeout.
    Timeout,
    /// Completed, but coretune's audit found that it did not run as its configuration says
    /// (a thread or process off its CPUs, another memory policy, another server answering,
    /// processes left running): the error says what.
    Mismatch,
}

/// One line of `runs.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLine {
    /// Position in the log (0-based).
    pub seq: usize,
    /// The configuration.
    #[serde(flatten)]
    pub config: Config,
    /// Whether this was a warm-up run.
    pub warmup: bool,
    /// How it ended.
    pub status: Status,
    /// What went wrong, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The end of a failed program's stderr (its last 4 KiB, from a
    /// whole line), where it says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// The measurements, when the run completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RunRecord>,
    /// The machine's state around the run.
    pub noise: Noise,
    /// Unix time the run ended, in seconds.
    pub ended_at: f64,
}

impl RunLine {
    /// The last non-empty line a failed program wrote to stderr, trimmed.
    pub fn last_stderr_line(&self) -> Option<&str> {
        self.stderr_tail
            .as_deref()?
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
    }

    /// Why the run failed, in a few words (`None` for a successful run): the error, with the
    /// last line of the program's stderr in brackets when the error does not end quoting it
    /// (`./flaky.sh exited with status 134 (race detected, aborting)`, `timed out after 2.0 s`).
    pub fn failure(&self) -> Option<String> {
        if self.status == Status::Ok {
            return None;
        }
        let error = self.error.clone().unwrap_or_else(|| match self.status {
            Status::Timeout => "timed out".to_owned(),
            Status::Unverified => "its result did not verify".to_owned(),
            _ => "failed".to_owned(),
        });
        Some(match self.last_stderr_line() {
            Some(last) if !error.ends_with(last) => format!("{error} ({last})"),
            _ => error,
        })
    }

    /// Wall time in seconds of a successful run.
    pub fn wall_s(&self) -> Option<f64> {
        match (&self.status, &self.record) {
            (Status::Ok, Some(r)) => Some(r.measurement.wall.as_secs_f64()),
            _ => None,
        }
    }
}

/// How a runner's attempt ended, before it is logged.
// One per run, moved once into the log: boxing the record would save nothing measurable.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Outcome {
    /// The run completed (verified or not: the record says).
    Done(RunRecord),
    /// It failed; the message says how.
    Failed(String),
    /// The program ran and failed: how, and the end of what it wrote to stderr.
    ProgramFailed {
        /// How it ended (`sort exited with status 2`).
        error: String,
        /// The end of its stderr, if it wrote any.
        stderr_tail: Option<String>,
    },
    /// It exceeded the timeout.
    Timeout,
    /// The program was ended by SIGINT or SIGTERM: someone is stopping the sweep (Ctrl-C,
    /// `scancel`), and the run is the run in flight, not a measurement; it is not logged and the
    /// sweep stops with [`SweepError::Interrupted`] (the message says what ended).
    Stopped(String),
    /// It exceeded the timeout inside this process and cannot be stopped: logged as timed out,
    /// then the sweep stops with [`SweepError::Abandoned`] (the message says what ran).
    Abandoned(String),
}

/// The append-only run log: `runs.jsonl` of a results folder, or a log kept in memory (a
/// `coretune bench`, which writes no folder).
#[derive(Debug)]
pub struct RunLog {
    /// The file, and how many bytes of it hold whole lines (where a failed append is cut back to).
    file: Option<(PathBuf, File, u64)>,
    lines: Vec<RunLine>,
}

impl RunLog {
    /// A log kept in memory only.
    pub fn in_memory() -> Self {
        Self::of_lines(Vec::new())
    }

    /// A log kept in memory that starts with `lines` (a copy of another's, to play a plan on).
    pub(crate) fn of_lines(lines: Vec<RunLine>) -> Self {
        Self { file: None, lines }
    }

    /// Opens (creating if needed) the log at `path` and reads the runs already in it. A last
    /// line cut short by a crash is dropped (and overwritten by the next run).
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`]/[`SweepError::Write`] naming the file, and
    /// [`SweepError::Malformed`] for a malformed line other than the last.
    pub fn open(path: &Path) -> Result<Self, SweepError> {
        let (lines, good_bytes) = if path.exists() {
            Self::parse(path)?
        } else {
            (Vec::new(), 0)
        };
        let write_error = |error| SweepError::Write {
            path: path.to_path_buf(),
            error,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(write_error)?;
        // Drop a torn last line so the next append starts on a fresh line.
        file.set_len(good_bytes).map_err(write_error)?;
        Ok(Self {
            file: Some((path.to_path_buf(), file, good_bytes)),
            lines,
        })
    }

    /// Reads the log at `path` without changing the file (a torn last line is skipped); runs
    /// appended afterwards stay in memory.
    ///
    /// # Errors
    ///
    /// As [`RunLog::open`].
    pub fn read(path: &Path) -> Result<Self, SweepError> {
        let (lines, _) = Self::parse(path)?;
        Ok(Self { file: None, lines })
    }

    /// The runs in the file and how many bytes of it hold whole lines.
    fn parse(path: &Path) -> Result<(Vec<RunLine>, u64), SweepError> {
        let (mut lines, good_bytes) = Self::read_lines::<RunLine>(path)?;
        for (i, line) in lines.iter_mut().enumerate() {
            line.seq = i;
        }
        Ok((lines, good_bytes))
    }

    /// Reads a JSON-lines file (`runs.jsonl`, monitor samples) without changing it; a last line
    /// cut short by a crash is skipped.
    ///
    /// # Errors
    ///
    /// [`SweepError::Read`] naming the file, [`SweepError::Malformed`] naming a malformed line
    /// other than the last.
    pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, SweepError> {
        Self::read_lines(path).map(|(v, _)| v)
    }

    fn read_lines<T: serde::de::DeserializeOwned>(
        path: &Path,
    ) -> Result<(Vec<T>, u64), SweepError> {
        let read_error = |error| SweepError::Read {
            path: path.to_path_buf(),
            error,
        };
        let reader = BufReader::new(File::open(path).map_err(read_error)?);
        let raw: Vec<String> = reader
            .lines()
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        let last = raw.len().saturating_sub(1);
        let mut out = Vec::new();
        let mut good_bytes = 0u64;
        for (i, line) in raw.iter().enumerate() {
            if line.trim().is_empty() {
                good_bytes += line.len() as u64 + 1;
                continue;
            }
            match serde_json::from_str::<T>(line) {
                Ok(value) => {
                    out.push(value);
                    good_bytes += line.len() as u64 + 1;
                }
                Err(_) if i == last => break,
                Err(e) => {
                    return Err(SweepError::Malformed {
                        path: path.to_path_buf(),
                        line: i + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok((out, good_bytes))
    }

    /// The runs logged so far.
    pub fn lines(&self) -> &[RunLine] {
        &self.lines
    }

    /// Appends a run and flushes it to the operating system. An append that fails (a full
    /// disk) is cut back off the file, so that no torn line is left behind, and the run is not
    /// kept: the log holds what the file holds.
    ///
    /// # Errors
    ///
    /// [`SweepError::Write`] naming the file.
    pub fn append(&mut self, mut line: RunLine) -> Result<(), SweepError> {
        line.seq = self.lines.len();
        if let Some((path, file, good_bytes)) = &mut self.file {
            let write_error = |error| SweepError::Write {
                path: path.clone(),
                error,
            };
            let mut text =
                serde_json::to_string(&line).map_err(|e| write_error(std::io::Error::other(e)))?;
            text.push('\n');
            if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
                // Part of the line may be in the file: cut it off (shrinking needs no space).
                let _ = file.set_len(*good_bytes);
                return Err(write_error(e));
            }
            *good_bytes += text.len() as u64;
        }
        self.lines.push(line);
        Ok(())
    }
}
