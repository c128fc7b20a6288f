//! A watch session (`coretune watch`): one program sampled until it ends or is stopped, and
//! what it saw kept in a folder of its own, as a sweep keeps its runs in a
//! [`SweepFolder`](super::SweepFolder):
//!
//! | file | what |
//! |---|---|
//! | `watch.jsonl` | one [`Sample`] per line, appended and flushed as it is taken (a crash loses none already taken) |
//! | `summary.json` | the [`WatchSummary`] of all of them (`docs/watch.schema.json`), written at the end |
//!
//! The plots the cli draws from the samples go beside them.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::error::SweepError;
use super::files::write_file;
use super::folder::{claim_dir, claim_timestamped_dir};
use crate::program::Placed;
use crate::program::watch::{Sample, Sampler, WatchError, WatchSummary, summarize};

/// Why a watch stopped short.
#[derive(Debug, thiserror::Error)]
pub enum WatchSessionError {
    /// The process could not be sampled.
    #[error("watching pid {pid}: {error}")]
    Watch {
        /// The process watched.
        pid: i32,
        /// Why.
        error: WatchError,
    },
    /// The folder, or a file in it, could not be made or written.
    #[error(transparent)]
    Folder(#[from] SweepError),
    /// The program started could not be waited for.
    #[error("waiting for the program: {0}")]
    Wait(std::io::Error),
}

/// What is watched: a running process (`--pid`), or a program the session started.
#[derive(Debug)]
pub enum Watched {
    /// A process already running, with its descendants.
    Pid(i32),
    /// A program started to be watched, with its descendants.
    Started(Box<Placed>),
}

/// One program sampled every interval, the samples logged as they are taken.
#[derive(Debug)]
pub struct WatchSession {
    sampler: Sampler,
    pid: i32,
    child: Option<Box<Placed>>,
    interval: Duration,
    dir: Option<PathBuf>,
    log: Option<std::io::BufWriter<std::fs::File>>,
    samples: Vec<Sample>,
}

impl WatchSession {
    /// The folder a watch keeps its files in: `out`, which must be new or empty, else a new
    /// `coretune-results/watch-<time>/`. Where that default cannot be made (a read-only working
    /// directory) there is none, with the warning to print: a watch is run for the summary it
    /// prints, which needs no folder.
    ///
    /// # Errors
    ///
    /// [`SweepError::NotEmpty`] and the other errors of [`claim_dir`] for `out`.
    pub fn claim_folder(
        out: Option<&Path>,
    ) -> Result<(Option<PathBuf>, Option<String>), SweepError> {
        if let Some(dir) = out {
            claim_dir(dir)?;
            return Ok((Some(dir.to_path_buf()), None));
        }
        match claim_timestamped_dir(Path::new("coretune-results"), "watch-") {
            Ok(dir) => Ok((Some(dir), None)),
            Err(SweepError::NoFolderHere { base, error }) => Ok((
                None,
                Some(format!(
                    "cannot create {} here: {error}; watching without keeping the samples and \
                     plots (--out DIR keeps them)",
                    base.display()
                )),
            )),
            Err(e) => Err(e),
        }
    }

    /// Starts watching `watched` (and its descendants) every `interval`, the samples going to
    /// `dir`'s `watch.jsonl` when there is a folder.
    ///
    /// # Errors
    ///
    /// [`WatchSessionError::Watch`] when the process cannot be read,
    /// [`WatchSessionError::Folder`] when the log cannot be created.
    pub fn start(
        watched: Watched,
        interval: Duration,
        dir: Option<PathBuf>,
    ) -> Result<Self, WatchSessionError> {
        let (pid, child) = match watched {
            Watched::Pid(pid) => (pid, None),
            Watched::Started(child) => (i32::try_from(child.id()).unwrap_or(i32::MAX), Some(child)),
        };
        let sampler = Sampler::live(Some(pid), true)
            .map_err(|error| WatchSessionError::Watch { pid, error })?;
        let log = match &dir {
            Some(dir) => {
                let path = dir.join("watch.jsonl");
                let file = std::fs::File::create(&path)
                    .map_err(|error| SweepError::Write { path, error })?;
                Some(std::io::BufWriter::new(file))
            }
            None => None,
        };
        Ok(Self {
            sampler,
            pid,
            child,
            interval,
            dir,
            log,
            samples: Vec::new(),
        })
    }

    /// The folder its files go to, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Samples until the program ends or `stop` is set (Ctrl-C, which the program got too: the
    /// session then waits for it); the program's exit status when the session started it.
    ///
    /// # Errors
    ///
    /// [`WatchSessionError::Watch`] when `/proc` cannot be read, [`WatchSessionError::Folder`]
    /// when a sample cannot be logged, [`WatchSessionError::Wait`].
    pub fn run(&mut self, stop: &AtomicBool) -> Result<Option<ExitStatus>, WatchSessionError> {
        let mut status = None;
        loop {
            std::thread::sleep(self.interval);
            let sample = self
                .sampler
                .sample()
                .map_err(|error| WatchSessionError::Watch {
                    pid: self.pid,
                    error,
                })?;
            self.log_sample(&sample)?;
            self.samples.push(sample);
            let ended = match self.child.as_mut() {
                Some(child) => {
                    status = child
                        .launched_mut()
                        .try_wait()
                        .map_err(WatchSessionError::Wait)?;
                    status.is_some()
                }
                None => !self.sampler.is_alive(),
            };
            if ended || stop.load(Ordering::SeqCst) {
                break;
            }
        }
        if let Some(child) = self.child.as_mut().filter(|_| status.is_none()) {
            status = child.wait().ok();
        }
        Ok(status)
    }

    fn log_sample(&mut self, sample: &Sample) -> Result<(), SweepError> {
        let (Some(log), Some(dir)) = (self.log.as_mut(), &self.dir) else {
            return Ok(());
        };
        let write = |log: &mut std::io::BufWriter<std::fs::File>| -> std::io::Result<()> {
            serde_json::to_writer(&mut *log, sample)?;
            log.write_all(b"\n")?;
            log.flush()
        };
        write(log).map_err(|error| SweepError::Write {
            path: dir.join("watch.jsonl"),
            error,
        })
    }

    /// Ends it: the summary of every sample, written to the folder's `summary.json`, and the
    /// samples.
    ///
    /// # Errors
    ///
    /// [`WatchSessionError::Folder`] when `summary.json` cannot be written.
    pub fn finish(self) -> Result<(WatchSummary, Vec<Sample>), WatchSessionError> {
        let summary = summarize(&self.samples);
        if let Some(dir) = &self.dir {
            let text = serde_json::to_vec_pretty(&summary).map_err(|e| SweepError::Write {
                path: dir.join("summary.json"),
                error: e.into(),
            })?;
            write_file(&dir.join("summary.json"), &text)?;
        }
        Ok((summary, self.samples))
    }
}
