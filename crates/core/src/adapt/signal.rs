//! Where `adapt`'s figure comes from, once per interval: the program's CPU progress (CPU
//! seconds per second of its whole process tree, from `/proc`: one read of its threads per
//! interval, nothing polling beside it; of a cgroup, its usage counter: one file read), or a
//! probe command whose output holds the figure
//! (`--probe CMD`, read with `--metric NAME=RULE` as `tune` reads a program's figures, or its
//! first number).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::cgroup::usage_seconds;
use super::controller::Observation;
use super::error::AdaptError;
use crate::program::watch::Sampler;
use crate::program::{PlacedCommand, exit_code, shell_command};
use crate::sweep::MetricSpec;

/// A probe command and how its output is read.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeSpec {
    /// The command, run by the shell.
    pub command: String,
    /// The figure's metric; `None`: the first number of its standard output.
    pub figure: Option<MetricSpec>,
    /// The latency's metric, when there is a bound.
    pub latency: Option<MetricSpec>,
    /// How long it may take before it is ended and the interval skipped.
    pub timeout: Duration,
}

/// The figure's source.
#[derive(Debug)]
pub(crate) enum Signal {
    /// CPU seconds per second of the process tree: each thread's CPU time, read per interval
    /// (the sampler made at the first read when the program could not be read at the start).
    Progress {
        pid: i32,
        sampler: Option<Box<Sampler>>,
        last: BTreeMap<i32, f64>,
        at: Instant,
    },
    /// CPU seconds per second of a cgroup, from its usage counter (`cpuacct.usage`, or
    /// `cpu.stat`'s `usage_usec`).
    Usage {
        file: PathBuf,
        last: Option<f64>,
        at: Instant,
    },
    /// A probe command.
    Probe(Box<ProbeSpec>),
}

impl Signal {
    /// CPU progress of process `pid` and its descendants; reads the starting point now. A
    /// program coretune `started` that cannot be read yet (or any more) is read at the first
    /// interval, which then says why there is no figure.
    pub(crate) fn progress(pid: u32, started: bool) -> Result<Self, AdaptError> {
        let pid = i32::try_from(pid).map_err(|_| AdaptError::Invalid(format!("pid {pid}")))?;
        let (sampler, last) = match Sampler::live(Some(pid), true) {
            Ok(mut sampler) => {
                let last = cpu_times(&mut sampler)?;
                (Some(Box::new(sampler)), last)
            }
            Err(_) if started => (None, BTreeMap::new()),
            Err(e) => return Err(e.into()),
        };
        Ok(Signal::Progress {
            pid,
            sampler,
            last,
            at: Instant::now(),
        })
    }

    /// CPU progress of a cgroup, from its usage counter `file`; reads the starting point now.
    pub(crate) fn usage(file: PathBuf) -> Self {
        Signal::Usage {
            last: usage_seconds(&file).ok(),
            file,
            at: Instant::now(),
        }
    }

    /// The figure of the interval just ended, or why there is none.
    pub(crate) fn read(&mut self) -> Result<Observation, String> {
        match self {
            Signal::Usage { file, last, at } => {
                let now = usage_seconds(file)?;
                let wall = at.elapsed().as_secs_f64();
                let before = last.replace(now);
                *at = Instant::now();
                let before = before.ok_or("the first reading of the counter")?;
                if wall <= 0.0 {
                    return Err("no time elapsed".to_owned());
                }
                Ok(Observation {
                    figure: Some((now - before).max(0.0) / wall),
                    latency: None,
                })
            }
            Signal::Progress {
                pid,
                sampler,
                last,
                at,
            } => {
                if sampler.is_none() {
                    *sampler = Some(Box::new(
                        Sampler::live(Some(*pid), true).map_err(|e| e.to_string())?,
                    ));
                }
                let Some(sampler) = sampler.as_mut() else {
                    return Err("no sampler".to_owned());
                };
                let now = cpu_times(sampler).map_err(|e| e.to_string())?;
                let wall = at.elapsed().as_secs_f64();
                // A thread seen before counts what it used since; a new one all it used (it
                // began within the interval); one that ended, its last part is lost.
                let used: f64 = now
                    .iter()
                    .map(|(tid, &t)| (t - last.get(tid).copied().unwrap_or(0.0)).max(0.0))
                    .sum();
                *last = now;
                *at = Instant::now();
                if wall <= 0.0 {
                    return Err("no time elapsed".to_owned());
                }
                Ok(Observation {
                    figure: Some(used / wall),
                    latency: None,
                })
            }
            Signal::Probe(spec) => run_probe(spec),
        }
    }
}

fn cpu_times(sampler: &mut Sampler) -> Result<BTreeMap<i32, f64>, AdaptError> {
    Ok(sampler
        .sample()?
        .threads
        .iter()
        .filter_map(|t| Some((t.tid, t.cpu_time_s?)))
        .collect())
}

/// Runs the probe command once (contained, its output to a file), and reads its figure.
fn run_probe(spec: &ProbeSpec) -> Result<Observation, String> {
    let out = tempfile::tempfile().map_err(|e| format!("a file for its output: {e}"))?;
    let reader = out.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = shell_command(&spec.command);
    cmd.stdout(Stdio::from(out)).stdin(Stdio::null());
    let mut placed = PlacedCommand::new(cmd)
        .contained()
        .start()
        .map_err(|e| e.to_string())?;
    let status = match placed.wait_timeout(Some(spec.timeout)) {
        Ok(Some(status)) => status,
        Ok(None) => {
            placed.kill();
            let _ = placed.wait();
            return Err(format!(
                "it did not end within {:.1} s",
                spec.timeout.as_secs_f64()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !status.success() {
        return Err(format!("it exited with status {}", exit_code(status)));
    }
    let text = {
        use std::io::{Read as _, Seek as _};
        let mut reader = reader;
        let mut text = String::new();
        reader
            .rewind()
            .and_then(|()| reader.read_to_string(&mut text))
            .map_err(|e| format!("reading its output: {e}"))?;
        text
    };
    let figure = match &spec.figure {
        Some(metric) => metric.read_from(&text)?,
        None => first_number(&text).ok_or("its output holds no number")?,
    };
    let latency = match &spec.latency {
        Some(metric) => Some(metric.read_from(&text)?),
        None => None,
    };
    Ok(Observation {
        figure: Some(figure),
        latency,
    })
}

/// The first number in `text` (`12`, `-3.5`, `1e6`), as a word or a word's start (`12ms`).
fn first_number(text: &str) -> Option<f64> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '=' | ':' | '(' | ')'))
        .find_map(|word| {
            let end = word
                .char_indices()
                .take_while(|&(i, c)| {
                    c.is_ascii_digit() || c == '.' || (i == 0 && matches!(c, '-' | '+'))
                })
                .map(|(i, c)| i + c.len_utf8())
                .last()?;
            let mut number = &word[..end];
            // An exponent: `1e6`, `2.5E-3`.
            let rest = &word[end..];
            if let Some(exp) = rest.strip_prefix(['e', 'E']) {
                let digits = exp
                    .strip_prefix(['-', '+'])
                    .map_or(exp, |d| d)
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .count();
                if digits > 0 {
                    let sign = usize::from(exp.starts_with(['-', '+']));
                    number = &word[..end + 1 + sign + digits];
                }
            }
            number.parse().ok()
        })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_first_number_of_a_probes_output_is_its_figure() {
        assert_eq!(first_number("rps 1234.5 p99 3"), Some(1234.5));
        assert_eq!(first_number("latency=12ms"), Some(12.0));
        assert_eq!(first_number("x -3 y"), Some(-3.0));
        assert_eq!(first_number("1e3 requests"), Some(1000.0));
        assert_eq!(first_number("2.5E-1"), Some(0.25));
        assert_eq!(first_number("no figures - here"), None);
        assert_eq!(first_number(""), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_probe_command_gives_its_figure_or_why_not() {
        let spec = |command: &str| ProbeSpec {
            command: command.to_owned(),
            figure: None,
            latency: None,
            timeout: Duration::from_secs(10),
        };
        let got = run_probe(&spec("echo 42.5")).unwrap();
        assert_eq!(got.figure, Some(42.5));
        let err = run_probe(&spec("exit 3")).unwrap_err();
        assert_eq!(err, "it exited with status 3");
        let err = run_probe(&spec("echo none")).unwrap_err();
        assert_eq!(err, "its output holds no number");
        let with_metric = ProbeSpec {
            figure: Some(MetricSpec::parse(r"rps=rps (\d+)").unwrap()),
            latency: Some(MetricSpec::parse(r"p99=p99 (\d+)").unwrap()),
            ..spec("echo 'p99 7 rps 900'")
        };
        let got = run_probe(&with_metric).unwrap();
        assert_eq!((got.figure, got.latency), (Some(900.0), Some(7.0)));
    }
}
