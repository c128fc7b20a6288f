//! `adapt`'s JSON-lines log (`--log FILE`): one line per interval, written and flushed as it
//! ends, so the log is whole up to the last interval whatever ends coretune.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::controller::Decision;
use super::error::AdaptError;
use super::setting::Setting;

/// One interval: when it ended, the setting it was measured under, its figure, and what was
/// decided after it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogLine {
    /// Seconds since `adapt` began, at the end of the interval.
    pub t_s: f64,
    /// The setting applied during the interval.
    pub setting: Setting,
    /// Its figure (`null` when there was none: `decision` is then `skip`, or a rollback).
    pub figure: Option<f64>,
    /// The latency the bound applies to, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// What was decided.
    pub decision: Decision,
    /// Why.
    pub reason: String,
    /// The setting applied next, when it changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Setting>,
    /// The best setting known after the decision.
    pub incumbent: Setting,
}

/// The log file, or nowhere.
#[derive(Debug)]
pub struct AdaptLog {
    file: Option<(PathBuf, File)>,
}

impl AdaptLog {
    /// A log written to `path` (a new file: an existing one is not overwritten), or none.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Log`]: the file exists or cannot be made.
    pub fn create(path: Option<&Path>) -> Result<Self, AdaptError> {
        let file = match path {
            Some(path) => Some((
                path.to_path_buf(),
                File::options()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .map_err(|error| AdaptError::Log {
                        path: path.to_path_buf(),
                        error,
                    })?,
            )),
            None => None,
        };
        Ok(Self { file })
    }

    /// Appends `line`.
    ///
    /// # Errors
    ///
    /// [`AdaptError::Log`].
    pub fn write(&mut self, line: &LogLine) -> Result<(), AdaptError> {
        let Some((path, file)) = &mut self.file else {
            return Ok(());
        };
        let mut text = serde_json::to_string(line).map_err(|e| AdaptError::Log {
            path: path.clone(),
            error: std::io::Error::other(e),
        })?;
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|error| AdaptError::Log {
                path: path.clone(),
                error,
            })
    }
}
