//! What a sweep optimises: wall time by default, or the program's own figure read from its
//! output (`--metric`), its CPU time or its peak memory — one objective, or several with their
//! Pareto front.
//!
//! - A [`MetricSpec`] says how to read one number from a run's stdout, stderr or a file it
//!   writes: the first capture group of a regular expression (the whole match when it has
//!   none) at its *last* match, or a jq-style path into the JSON the program prints
//!   (`json:.results.rps`: the whole output when it is one document, else its last line that
//!   is one). Every run of a program records every metric in `runs.jsonl`; a run whose output
//!   lacks one fails with the reason.
//! - Outputs are read as a stream, line by line, keeping only each metric's last match: a
//!   program that logs gigabytes costs coretune no memory. A regular expression therefore
//!   matches within one line (a line longer than 1 MiB is read in pieces of 1 MiB), and a JSON
//!   document spanning lines is read whole up to 16 MiB.
//! - An [`Objective`] names what the statistics, the search, the recommendation and the reports
//!   work on, and which way is better: `time` (wall seconds), `cpu` (user + system seconds),
//!   `rss` (peak resident bytes), `throughput` (the run's work per second, all instances
//!   together: what `--instances` sweeps are judged on), or a metric by name.
//!
//! Internally every objective is turned into a *cost*, lower is better, so that one tie rule
//! serves them all: the value itself, or its reciprocal when higher is better (events/s →
//! seconds per event). The median and its bootstrap interval are taken of the values and mapped
//! through the reciprocal (the interval's ends swap): exactly what the costs' own would be for
//! order statistics, and within a hair of it where an even count averages the middle two.
//! Ratios between costs are the ratios between rates, so a 3% tolerance means 3% either way.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::search::Estimate;
use crate::measure::Summary;
use crate::workload::RunRecord;

/// Where a metric is read from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricSource {
    /// The program's standard output.
    #[default]
    Stdout,
    /// Its standard error.
    Stderr,
    /// A file it writes (`{threads}` and the other placeholders substituted), read after it ends.
    File(String),
}

impl MetricSource {
    /// The two words that are not file names, with what each means (for help and completion).
    pub const KEYWORDS: [(&'static str, &'static str); 2] = [
        ("stdout", "the program's standard output"),
        ("stderr", "its standard error"),
    ];
}

impl FromStr for MetricSource {
    type Err = MetricError;
    /// `stdout` and `stderr` are the only keywords; anything else is a file name, but for a
    /// near miss of a keyword (`STDOUT`, `sdtout`, `stdin`, `err`, `-`), which is refused: a
    /// typo must not become a file that every run fails to find (or, were it there, a file of
    /// the user's that coretune would remove). `./err` names a file called `err`.
    fn from_str(s: &str) -> Result<Self, MetricError> {
        Ok(match s {
            "stdout" => Self::Stdout,
            "stderr" => Self::Stderr,
            "" => return Err(MetricError::Source),
            name => {
                if let Some(meant) = near_keyword(name) {
                    return Err(MetricError::NearKeyword {
                        given: name.to_owned(),
                        meant,
                    });
                }
                Self::File(name.to_owned())
            }
        })
    }
}

/// The keyword `name` is a near miss of, when it is one: a word (no path separator, no
/// extension) within two edits of `stdout` or `stderr` in any case, or one of the names that
/// mean a stream elsewhere (`stdin`, `out`, `err`, `-`, `1`, `2`).
fn near_keyword(name: &str) -> Option<&'static str> {
    if name.contains(['/', '\\', '.']) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "stdin" | "in" | "out" | "-" | "1" | "0" => return Some("stdout"),
        "err" | "2" => return Some("stderr"),
        _ => {}
    }
    let (to_out, to_err) = (edits(&lower, "stdout"), edits(&lower, "stderr"));
    match to_out.min(to_err) {
        0..=2 if to_out <= to_err => Some("stdout"),
        0..=2 => Some("stderr"),
        _ => None,
    }
}

/// Levenshtein distance between two short ASCII words (also the misspelt-placeholder check's,
/// `run/placeholders.rs`).
pub(in crate::sweep) fn edits(a: &str, b: &str) -> usize {
    let b: Vec<u8> = b.bytes().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

impl fmt::Display for MetricSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdout => f.write_str("stdout"),
            Self::Stderr => f.write_str("stderr"),
            Self::File(p) => f.write_str(p),
        }
    }
}

/// How a metric's number is found in the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricRead {
    /// A regular expression: its first capture group (the whole match without one), at its
    /// last match (a program printing interim figures is judged on its final one), within one
    /// line.
    Regex(String),
    /// A jq path (`.a.b[0].c`) into the JSON document the text is (or, failing that, the last
    /// line of it that is a JSON document).
    Json(String),
}

/// One metric of a program's output: `--metric NAME=REGEX` or `--metric NAME=json:.path`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Its name (`eps`, `rps`, `p99`).
    pub name: String,
    /// How it is found.
    pub read: MetricRead,
    /// Where (`--metric-from`).
    #[serde(default)]
    pub from: MetricSource,
    /// Whether a higher value is better (`--higher-is-better NAME`; lower by default).
    #[serde(default)]
    pub higher_is_better: bool,
    /// The unit shown beside its values (`--unit NAME=UNIT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// A metric or objective given wrong; every message is one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// `--metric` without `NAME=`.
    #[error("--metric '{0}': expected NAME=REGEX or NAME=json:.path")]
    Form(String),
    /// A name that is not a word, or one of the built-in objectives.
    #[error(
        "--metric name '{0}': use letters, digits, '_' or '-', and not time, wall, cpu, rss or throughput (built in)"
    )]
    Name(String),
    /// The same name twice.
    #[error("--metric '{0}' is given twice")]
    Twice(String),
    /// A regular expression that does not compile.
    #[error("--metric {name}: the regular expression does not compile: {error}")]
    Regex {
        /// The metric.
        name: String,
        /// The regex crate's message, on one line.
        error: String,
    },
    /// A JSON path that is not `.a.b[0]`.
    #[error("--metric {name}: '{path}' is not a jq path such as .results.rps or .runs[0].time")]
    JsonPath {
        /// The metric.
        name: String,
        /// The path given.
        path: String,
    },
    /// An empty `--metric-from`.
    #[error("--metric-from: expected stdout, stderr or a file name")]
    Source,
    /// `--metric-from` a near miss of `stdout` or `stderr` (`stdin`, `STDOUT`, `sdtout`).
    #[error(
        "--metric-from '{given}': did you mean {meant}? (only stdout and stderr are read as \
         streams; a file of that name is ./{given})"
    )]
    NearKeyword {
        /// The name given.
        given: String,
        /// The keyword it is closest to.
        meant: &'static str,
    },
    /// `--higher-is-better` or `--unit` naming no metric.
    #[error("{option} {name}: no --metric of that name (metrics: {known})")]
    UnknownMetric {
        /// The option.
        option: &'static str,
        /// The name given.
        name: String,
        /// The metrics there are.
        known: String,
    },
    /// `--unit` not `NAME=UNIT`.
    #[error("--unit '{0}': expected NAME=UNIT (rps=req/s)")]
    UnitForm(String),
    /// `--objective` naming nothing known.
    #[error("--objective {name}: not time, cpu, rss or a --metric name{known}")]
    UnknownObjective {
        /// The name given.
        name: String,
        /// The metrics there are, when any.
        known: String,
    },
    /// `--objective` naming one thing twice.
    #[error("--objective names {0} twice")]
    ObjectiveTwice(String),
}

/// The built-in objectives' names (`wall` is read as `time`).
pub const BUILTIN_OBJECTIVES: [&str; 5] = ["time", "wall", "cpu", "rss", "throughput"];

impl MetricSpec {
    /// Reads `NAME=REGEX` or `NAME=json:.path`, from stdout and lower-is-better until told.
    ///
    /// # Errors
    ///
    /// [`MetricError::Form`], [`MetricError::Name`], [`MetricError::Regex`],
    /// [`MetricError::JsonPath`].
    pub fn parse(text: &str) -> Result<Self, MetricError> {
        let (name, rule) = text
            .split_once('=')
            .filter(|(n, r)| !n.is_empty() && !r.is_empty())
            .ok_or_else(|| MetricError::Form(text.to_owned()))?;
        let word = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !word || BUILTIN_OBJECTIVES.contains(&name) {
            return Err(MetricError::Name(name.to_owned()));
        }
        let read = match rule.strip_prefix("json:") {
            Some(path) => {
                json_path(path).ok_or_else(|| MetricError::JsonPath {
                    name: name.to_owned(),
                    path: path.to_owned(),
                })?;
                MetricRead::Json(path.to_owned())
            }
            None => {
                regex::Regex::new(rule).map_err(|e| MetricError::Regex {
                    name: name.to_owned(),
                    error: e
                        .to_string()
                        .replace('\n', " ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                })?;
                MetricRead::Regex(rule.to_owned())
            }
        };
        Ok(Self {
            name: name.to_owned(),
            read,
            from: MetricSource::Stdout,
            higher_is_better: false,
            unit: None,
        })
    }

    /// The metrics a sweep reads, from its options as a user gives them: each `--metric`
    /// (`NAME=REGEX` or `NAME=json:.path`), all read from `from` (`--metric-from`), those named
    /// by `higher_is_better` (`--higher-is-better NAME`) maximised, and `units`
    /// (`--unit NAME=UNIT`) applied.
    ///
    /// # Errors
    ///
    /// What [`MetricSpec::parse`] and [`MetricSource`]'s parsing return,
    /// [`MetricError::Twice`], [`MetricError::UnitForm`], and
    /// [`MetricError::UnknownMetric`] for a `--higher-is-better` or `--unit` that names no
    /// metric.
    pub fn from_options(
        metrics: &[String],
        from: &str,
        higher_is_better: &[String],
        units: &[String],
    ) -> Result<Vec<Self>, MetricError> {
        let from: MetricSource = from.parse()?;
        let mut specs: Vec<Self> = Vec::new();
        for text in metrics {
            let mut spec = Self::parse(text)?;
            if specs.iter().any(|s| s.name == spec.name) {
                return Err(MetricError::Twice(spec.name));
            }
            spec.from = from.clone();
            specs.push(spec);
        }
        let known = if specs.is_empty() {
            "none".to_owned()
        } else {
            specs
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let named = |specs: &[Self], option: &'static str, name: &str| {
            specs
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| MetricError::UnknownMetric {
                    option,
                    name: name.to_owned(),
                    known: known.clone(),
                })
        };
        for name in higher_is_better {
            let i = named(&specs, "--higher-is-better", name)?;
            specs[i].higher_is_better = true;
        }
        for pair in units {
            let (name, unit) = pair
                .split_once('=')
                .filter(|(n, u)| !n.is_empty() && !u.is_empty())
                .ok_or_else(|| MetricError::UnitForm(pair.clone()))?;
            let i = named(&specs, "--unit", name)?;
            specs[i].unit = Some(unit.to_owned());
        }
        Ok(specs)
    }

    /// The metric's value in `text`, or why there is none (one line, naming the metric and
    /// where it looked): `text` read as a run's output is, line by line.
    ///
    /// # Errors
    ///
    /// No match, or a match that is not a number.
    pub fn read_from(&self, text: &str) -> Result<f64, String> {
        let mut scan = MetricScan::new([self]);
        scan.text(text);
        scan.finish()
            .pop()
            .map_or_else(|| Err(self.missing("no match")), |(_, v)| v)
    }

    /// The one-line reason the metric has no value here.
    fn missing(&self, what: &str) -> String {
        format!("metric {} not found in {}: {what}", self.name, self.from)
    }

    /// The metric's value from the text of its match (a regex's group, a JSON string).
    fn number(&self, s: &str) -> Result<f64, String> {
        let t = s.trim().replace(',', "");
        t.parse::<f64>()
            .ok()
            .or_else(|| self.duration(&t))
            .filter(|v| v.is_finite())
            .ok_or_else(|| match self.unit_needed(&t) {
                // Found, but a duration coretune was not told how to read.
                Some(advice) => format!(
                    "metric {} in {}: '{}' has a unit: {advice}",
                    self.name,
                    self.from,
                    s.trim()
                ),
                None => self.missing(&format!("'{}' is not a number", s.trim())),
            })
    }

    /// The metric's value in a JSON document.
    fn in_json(&self, path: &str, doc: &serde_json::Value) -> Result<f64, String> {
        let pointer = json_path(path).unwrap_or_default();
        let value = doc
            .pointer(&pointer)
            .ok_or_else(|| self.missing(&format!("no {path} in the JSON")))?;
        match value {
            serde_json::Value::Number(n) => n
                .as_f64()
                .ok_or_else(|| self.missing(&format!("{path} is out of range"))),
            serde_json::Value::String(s) => self.number(s),
            other => Err(self.missing(&format!("{path} is {other}, not a number"))),
        }
    }
}

/// The longest line a regular expression is matched on whole (1 MiB, far beyond any figure a
/// program prints): a longer line is read in pieces of this size, so that one endless line
/// cannot hold coretune's memory either.
pub(crate) const LINE_MAX: usize = 1 << 20;

/// The largest output a `json:` metric reads as one document (16 MiB: a benchmark's report of
/// every iteration fits); a longer output is read for its last line that is a JSON document.
pub(crate) const JSON_DOC_MAX: usize = 16 << 20;

/// What is kept of one output while it is read for its metrics: each metric's last match (a
/// regular expression's captured text, a `json:` metric's last line that is a document) and,
/// while it is short enough, the whole text for the `json:` metrics.
struct MetricScan<'a> {
    specs: Vec<(&'a MetricSpec, Option<regex::Regex>)>,
    last: Vec<Option<String>>,
    /// The text so far, for a JSON document spanning lines (`None` when no `json:` metric
    /// reads here, or the text outgrew [`JSON_DOC_MAX`]).
    whole: Option<String>,
    /// A compile error of a regex (checked when the metric was given: not expected here).
    error: Option<String>,
}

impl<'a> MetricScan<'a> {
    fn new(specs: impl IntoIterator<Item = &'a MetricSpec>) -> Self {
        let mut error = None;
        let specs: Vec<(&MetricSpec, Option<regex::Regex>)> = specs
            .into_iter()
            .map(|spec| {
                let re = match &spec.read {
                    MetricRead::Regex(re) => regex::Regex::new(re)
                        .map_err(|e| error.get_or_insert(e.to_string()).clone())
                        .ok(),
                    MetricRead::Json(_) => None,
                };
                (spec, re)
            })
            .collect();
        let json = specs
            .iter()
            .any(|(s, _)| matches!(s.read, MetricRead::Json(_)));
        Self {
            last: vec![None; specs.len()],
            specs,
            whole: json.then(String::new),
            error,
        }
    }

    /// One line of the output (without its newline).
    fn line(&mut self, line: &str) {
        if let Some(whole) = &mut self.whole {
            if whole.len() + line.len() < JSON_DOC_MAX {
                whole.push_str(line);
                whole.push('\n');
            } else {
                self.whole = None;
            }
        }
        for ((spec, re), last) in self.specs.iter().zip(&mut self.last) {
            match (re, &spec.read) {
                (Some(re), _) => {
                    if let Some(caps) = re.captures_iter(line).last() {
                        let m = caps
                            .get(1)
                            .or_else(|| caps.get(0))
                            .expect("a match has group 0");
                        *last = Some(m.as_str().to_owned());
                    }
                }
                (None, MetricRead::Json(_)) => {
                    let trimmed = line.trim();
                    if trimmed.starts_with(['{', '['])
                        && serde_json::from_str::<serde_json::Value>(trimmed).is_ok()
                    {
                        *last = Some(trimmed.to_owned());
                    }
                }
                (None, MetricRead::Regex(_)) => {}
            }
        }
    }

    /// A whole text, line by line.
    fn text(&mut self, text: &str) {
        for line in text.lines() {
            self.line(line);
        }
    }

    /// Everything `reader` gives, line by line, each at most [`LINE_MAX`] bytes (a longer one
    /// in pieces), decoded lossily: only a line at a time is held.
    fn read(&mut self, reader: impl std::io::Read) -> std::io::Result<()> {
        use std::io::BufRead as _;
        let mut reader = std::io::BufReader::with_capacity(64 << 10, reader);
        let mut line: Vec<u8> = Vec::new();
        loop {
            let buf = reader.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let chunk = &buf[..newline.unwrap_or(buf.len())];
            let used = chunk.len().min(LINE_MAX - line.len());
            line.extend_from_slice(&chunk[..used]);
            let ended = newline.is_some() && used == chunk.len();
            reader.consume(used + usize::from(ended));
            if ended || line.len() >= LINE_MAX {
                let text = String::from_utf8_lossy(&line);
                self.line(text.strip_suffix('\r').unwrap_or(&text));
                line.clear();
            }
        }
        if !line.is_empty() {
            self.line(&String::from_utf8_lossy(&line));
        }
        Ok(())
    }

    /// Each metric's value, or why it has none.
    fn finish(self) -> Vec<(&'a MetricSpec, Result<f64, String>)> {
        let whole = self
            .whole
            .and_then(|w| serde_json::from_str::<serde_json::Value>(&w).ok());
        let error = self.error;
        self.specs
            .into_iter()
            .zip(self.last)
            .map(|((spec, re), last)| {
                let value = match (&spec.read, re) {
                    (MetricRead::Regex(_), None) => Err(error.clone().unwrap_or_default()),
                    (MetricRead::Regex(text), Some(_)) => match last {
                        Some(m) => spec.number(&m),
                        None => Err(spec.missing(&format!("no match for /{text}/"))),
                    },
                    (MetricRead::Json(path), _) => {
                        let line = last.and_then(|l| serde_json::from_str(&l).ok());
                        match whole.as_ref().or(line.as_ref()) {
                            Some(doc) => spec.in_json(path, doc),
                            None => Err(spec.missing("the output is not JSON")),
                        }
                    }
                };
                (spec, value)
            })
            .collect()
    }
}

impl MetricSpec {
    /// A duration with its unit (`850.00us`, `1.44ms`, `2.1s`: wrk writes each latency in the
    /// unit that suits it) in this metric's time `--unit`; `None` when the metric has no time
    /// unit or the text is not one.
    fn duration(&self, text: &str) -> Option<f64> {
        let to = time_scale(self.unit.as_deref()?)?;
        let (value, unit) = split_duration(text)?;
        Some(value * time_scale(unit)? / to)
    }

    /// What to add when `text` is a duration (`850.00us`) this metric cannot read because its
    /// `--unit` is missing or is not a time unit: `add --unit p99=ms`.
    fn unit_needed(&self, text: &str) -> Option<String> {
        let (_, unit) = split_duration(text)?;
        time_scale(unit)?;
        Some(match &self.unit {
            None => format!(
                "add --unit {}=ms (or us, s: the unit its values are shown in)",
                self.name
            ),
            Some(own) => format!(
                "--unit {}={own} is not a time unit to convert it to (ns, us, ms, s, min, h)",
                self.name
            ),
        })
    }
}

/// Seconds in a time unit (`ms`: 0.001); `None` for anything else.
fn time_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    })
}

/// A number followed by a unit (`850.00us`: 850.0 and `us`).
fn split_duration(text: &str) -> Option<(f64, &str)> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (value, unit) = text.split_at(split);
    Some((value.parse::<f64>().ok()?, unit.trim()))
}

/// A jq path (`.`, `.a`, `.a.b`, `.a[0].b`, `."odd key"`) as a JSON pointer; `None` when it is
/// not one.
fn json_path(path: &str) -> Option<String> {
    let mut rest = path.strip_prefix('.')?;
    let mut pointer = String::new();
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let (index, tail) = after.split_once(']')?;
            index.parse::<usize>().ok()?;
            pointer.push('/');
            pointer.push_str(index);
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('"') {
            let (key, tail) = after.split_once('"')?;
            pointer.push('/');
            pointer.push_str(&escape(key));
            rest = tail;
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return None;
            }
            pointer.push('/');
            pointer.push_str(&escape(key));
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if rest.starts_with('.') {
            return None;
        }
    }
    Some(pointer)
}

/// Opens a `--metric-from` file by its name for [`read_metrics`], or says why it cannot.
pub(crate) type OpenFile<'a> = dyn Fn(&str) -> Result<Box<dyn std::io::Read>, String> + 'a;

/// Reads every metric of a finished run from its outputs, each output once and as a stream
/// (only the outputs some metric reads; `file` opens a `--metric-from` file by its name,
/// placeholders already substituted). A metric's value is its last match; the first metric
/// in `specs` without one is the error.
///
/// # Errors
///
/// One line naming the first metric not found and why, or an output that cannot be read.
pub(crate) fn read_metrics(
    specs: &[MetricSpec],
    stdout: &mut dyn std::io::Read,
    stderr: &mut dyn std::io::Read,
    file: &OpenFile<'_>,
) -> Result<BTreeMap<String, f64>, String> {
    let mut values: BTreeMap<&str, Result<f64, String>> = BTreeMap::new();
    let mut sources: Vec<&MetricSource> = Vec::new();
    for spec in specs {
        if !sources.contains(&&spec.from) {
            sources.push(&spec.from);
        }
    }
    for source in sources {
        let mut scan = MetricScan::new(specs.iter().filter(|s| s.from == *source));
        let read = match source {
            MetricSource::Stdout => scan.read(&mut *stdout),
            MetricSource::Stderr => scan.read(&mut *stderr),
            MetricSource::File(name) => scan.read(file(name)?),
        };
        read.map_err(|e| format!("reading the program's {source}: {e}"))?;
        for (spec, value) in scan.finish() {
            values.insert(&spec.name, value);
        }
    }
    let mut out = BTreeMap::new();
    for spec in specs {
        let value = values
            .remove(spec.name.as_str())
            .unwrap_or_else(|| Err(spec.missing("no match")))?;
        out.insert(spec.name.clone(), value);
    }
    Ok(out)
}

/// What an objective measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "name")]
pub enum Quantity {
    /// Wall time of the run, seconds.
    Time,
    /// User + system CPU time, seconds.
    Cpu,
    /// Peak resident memory, bytes.
    Rss,
    /// The run's figure, higher is better: a built-in workload's work per second (a workload
    /// measured in ns per item, its items per second), a program's runs per second — with
    /// `--instances`, all copies' work over the slowest copy's time.
    Throughput,
    /// A metric of the program's output, by name.
    Metric(String),
}

/// One objective of a sweep: what, which way is better, and its unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Objective {
    /// What it measures.
    pub quantity: Quantity,
    /// Whether higher values are better.
    pub higher_is_better: bool,
    /// The unit its values are shown in (`s`, `B`, or a metric's `--unit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Objective {
    /// The objectives every run has, by the names `--objective` takes, with what each is (for
    /// help and completion); a `--metric`'s name is an objective too.
    pub const BUILT_IN: [(&'static str, &'static str); 4] = [
        ("time", "wall time, lower is better"),
        ("cpu", "user + system CPU seconds, lower is better"),
        ("rss", "peak memory, lower is better"),
        (
            "throughput",
            "work (or runs) per second, all instances together, higher is better",
        ),
    ];

    /// Wall time, the default objective.
    pub fn time() -> Self {
        Self {
            quantity: Quantity::Time,
            higher_is_better: false,
            unit: Some("s".into()),
        }
    }

    /// The run's throughput, all instances together: the default objective of a sweep with
    /// `--instances` (copies of a program finish P runs in the slowest one's time).
    pub fn throughput() -> Self {
        Self {
            quantity: Quantity::Throughput,
            higher_is_better: true,
            unit: None,
        }
    }

    /// Whether this is wall time (reports then say "time" and seconds as before).
    pub fn is_time(&self) -> bool {
        self.quantity == Quantity::Time
    }

    /// Its name: `time`, `cpu`, `rss` or the metric's.
    pub fn name(&self) -> &str {
        match &self.quantity {
            Quantity::Time => "time",
            Quantity::Cpu => "cpu",
            Quantity::Rss => "rss",
            Quantity::Throughput => "throughput",
            Quantity::Metric(n) => n,
        }
    }

    /// Resolves `--objective` names against the metrics; no names = time alone.
    ///
    /// # Errors
    ///
    /// [`MetricError::UnknownObjective`], [`MetricError::ObjectiveTwice`].
    pub fn resolve(names: &[String], metrics: &[MetricSpec]) -> Result<Vec<Self>, MetricError> {
        let mut out: Vec<Self> = Vec::new();
        for name in names {
            let o = match name.as_str() {
                "time" | "wall" => Self::time(),
                "cpu" => Self {
                    quantity: Quantity::Cpu,
                    higher_is_better: false,
                    unit: Some("s".into()),
                },
                "rss" => Self {
                    quantity: Quantity::Rss,
                    higher_is_better: false,
                    unit: Some("B".into()),
                },
                "throughput" => Self::throughput(),
                other => {
                    let m = metrics.iter().find(|m| m.name == other).ok_or_else(|| {
                        MetricError::UnknownObjective {
                            name: other.to_owned(),
                            known: if metrics.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    " (metrics: {})",
                                    metrics
                                        .iter()
                                        .map(|m| m.name.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            },
                        }
                    })?;
                    Self {
                        quantity: Quantity::Metric(m.name.clone()),
                        higher_is_better: m.higher_is_better,
                        unit: m.unit.clone(),
                    }
                }
            };
            if out.iter().any(|p| p.quantity == o.quantity) {
                return Err(MetricError::ObjectiveTwice(o.name().to_owned()));
            }
            out.push(o);
        }
        if out.is_empty() {
            out.push(Self::time());
        }
        Ok(out)
    }

    /// This objective's value for one run's record (`None` when the run lacks it).
    #[allow(clippy::cast_precision_loss)]
    pub fn value(&self, r: &RunRecord) -> Option<f64> {
        let m = &r.measurement;
        match &self.quantity {
            Quantity::Time => Some(m.wall.as_secs_f64()),
            Quantity::Cpu => Some(m.user?.as_secs_f64() + m.sys?.as_secs_f64()),
            Quantity::Rss => m.peak_rss_bytes.map(|b| b as f64),
            Quantity::Throughput => Some(match r.throughput.unit {
                crate::workload::Unit::NsPerItem => 1e9 / r.throughput.value.max(1e-9),
                _ => r.throughput.value,
            }),
            Quantity::Metric(n) => r.metrics.get(n).copied(),
        }
    }

    /// A value as a cost, lower is better.
    pub fn cost(&self, value: f64) -> f64 {
        if self.higher_is_better {
            if value > 0.0 {
                1.0 / value
            } else {
                f64::INFINITY
            }
        } else {
            value
        }
    }

    /// A summary of values as the cost estimate the tie rule and the search compare.
    pub fn estimate(&self, s: &Summary) -> Estimate {
        let (lo, hi) = (self.cost(s.ci.0), self.cost(s.ci.1));
        // The spread relative to the median is the same for a value and its inverse (to first
        // order), so a rate's is its cost's.
        let spread = if s.n > 1 && s.median.abs() > 0.0 {
            (1.4826 * s.mad).max(s.stddev) / s.median.abs()
        } else {
            0.0
        };
        Estimate {
            median: self.cost(s.median),
            ci: (lo.min(hi), lo.max(hi)),
            n: s.n,
            spread,
        }
    }

    /// How much better `a` is than `b`, in percent of `b`'s value (positive = better).
    pub fn gain_pct(&self, a: f64, b: f64) -> f64 {
        (self.cost(b) / self.cost(a) - 1.0) * 100.0
    }

    /// A value with its unit, to the precision a report shows (`1.234 s`, `12.3 MiB`,
    /// `18345 events/s`).
    pub fn show(&self, v: f64) -> String {
        match self.quantity {
            Quantity::Time | Quantity::Cpu => format!("{v:.3} s"),
            Quantity::Rss => format!("{:.1} MiB", v / f64::from(1u32 << 20)),
            Quantity::Metric(_) | Quantity::Throughput => {
                let digits = if v.abs() >= 100.0 {
                    0
                } else if v.abs() >= 1.0 {
                    2
                } else {
                    4
                };
                match &self.unit {
                    Some(u) => format!("{v:.digits$} {u}"),
                    None => format!("{v:.digits$}"),
                }
            }
        }
    }

    /// The objective as a column heading: `eps (events/s, higher is better)`.
    pub fn heading(&self) -> String {
        let way = if self.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        match &self.unit {
            Some(u) if !self.is_time() => format!("{} ({u}, {way} is better)", self.name()),
            _ => format!("{} ({way} is better)", self.name()),
        }
    }
}

/// The indexes of the points no other point beats on every objective (each point a cost per
/// objective, lower is better; a point with a missing cost is never on the front). Equal
/// points are all kept.
pub fn pareto_front(points: &[Vec<Option<f64>>]) -> Vec<usize> {
    let full: Vec<(usize, Vec<f64>)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.iter().copied().collect::<Option<Vec<f64>>>()?)))
        .collect();
    let dominates = |a: &[f64], b: &[f64]| {
        a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
    };
    full.iter()
        .filter(|(_, p)| !full.iter().any(|(_, q)| dominates(q, p)))
        .map(|(i, _)| *i)
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    fn spec(text: &str) -> MetricSpec {
        MetricSpec::parse(text).unwrap()
    }

    #[test]
    fn options_name_each_metric_its_source_direction_and_unit() {
        let texts = [
            r"rps=([0-9.]+) req/s".to_owned(),
            "p99=json:.p99".to_owned(),
        ];
        let specs = MetricSpec::from_options(
            &texts,
            "stderr",
            &["rps".to_owned()],
            &["p99=ms".to_owned()],
        )
        .unwrap();
        let got: Vec<_> = specs
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.from.to_string(),
                    s.higher_is_better,
                    s.unit.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("rps", "stderr".to_owned(), true, None),
                ("p99", "stderr".to_owned(), false, Some("ms"))
            ]
        );
        let twice = ["a=x".to_owned(), "a=y".to_owned()];
        let err = |m: &[String], h: &[&str], u: &[&str]| {
            let h: Vec<String> = h.iter().map(|s| (*s).to_owned()).collect();
            let u: Vec<String> = u.iter().map(|s| (*s).to_owned()).collect();
            MetricSpec::from_options(m, "stdout", &h, &u)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&twice, &[], &[]), "--metric 'a' is given twice");
        assert_eq!(
            err(&texts, &["p50"], &[]),
            "--higher-is-better p50: no --metric of that name (metrics: rps, p99)"
        );
        assert_eq!(
            err(&[], &[], &["p99=ms"]),
            "--unit p99: no --metric of that name (metrics: none)"
        );
        assert_eq!(
            err(&texts, &[], &["p99"]),
            "--unit 'p99': expected NAME=UNIT (rps=req/s)"
        );
    }

    #[test]
    fn a_regex_reads_its_first_group_or_its_whole_match() {
        let out = "General statistics:\n    events per second:  1834.71\n";
        let eps = spec(r"eps=events per second:\s+([0-9.]+)");
        assert_eq!(eps.read_from(out), Ok(1834.71));
        assert_eq!(spec(r"n=[0-9]+\.[0-9]+").read_from(out), Ok(1834.71));
        // wrk writes thousands with commas nowhere, but others do.
        assert_eq!(
            spec(r"rps=rps ([0-9,.]+)").read_from("rps 12,345.5"),
            Ok(12345.5)
        );
        let e = eps.read_from("nothing here").unwrap_err();
        assert!(
            e.contains("metric eps not found in stdout: no match"),
            "{e}"
        );
        let e = spec(r"x=x=(\w+)").read_from("x=abc").unwrap_err();
        assert!(e.contains("'abc' is not a number"), "{e}");
    }

    /// Finding 17 (#35): a progress-printing benchmark was judged on its warm-up figure.
    #[test]
    fn a_regex_metric_printed_several_times_is_judged_on_its_last_match() {
        let rate = spec(r"rate=rate: ([0-9.]+)");
        let out = "rate: 10 (warming up)\nrate: 20\nrate: 999 (final)\n";
        assert_eq!(rate.read_from(out), Ok(999.0));
        // Within a line too, and a later line without a match changes nothing.
        assert_eq!(rate.read_from("rate: 1 rate: 2\ndone\n"), Ok(2.0));
        // As the JSON metrics already were: the last JSON line.
        let json = "{\"rps\": 1}\nlog\n{\"rps\": 3}\n";
        assert_eq!(spec("rps=json:.rps").read_from(json), Ok(3.0));
        // A multi-line document is still read whole.
        let doc = "{\n  \"a\": {\n    \"b\": 4.5\n  }\n}\n";
        assert_eq!(spec("b=json:.a.b").read_from(doc), Ok(4.5));
    }

    /// Finding 16 (#35): the whole output was held in memory (twice) to read a metric.
    #[test]
    fn an_output_is_read_a_line_at_a_time_however_long_it_is() {
        let specs = [
            spec(r"v=val=(\d+)"),
            spec(r"w=^w=(\d+)$"),
            MetricSpec {
                from: MetricSource::Stderr,
                ..spec(r"e=err=(\d+)")
            },
        ];
        // 8 MiB of log lines, one line longer than LINE_MAX, a CRLF line, no final newline.
        let mut out = "log line\n".repeat(1 << 20).into_bytes();
        out.extend(std::iter::repeat_n(b'x', LINE_MAX * 2 + 5));
        out.extend(b"\nval=7\r\nw=9\r\nval=8");
        let mut stdout: &[u8] = &out;
        let mut stderr: &[u8] = b"err=1\nerr=2";
        let no_file = |name: &str| -> Result<Box<dyn std::io::Read>, String> { Err(name.into()) };
        let m = read_metrics(&specs, &mut stdout, &mut stderr, &no_file).unwrap();
        assert_eq!((m["v"], m["w"], m["e"]), (8.0, 9.0, 2.0));
        // A metric not found names itself and where it looked.
        let (mut empty, mut none): (&[u8], &[u8]) = (b"", b"");
        let err = read_metrics(&specs[..1], &mut empty, &mut none, &no_file).unwrap_err();
        assert!(
            err.contains("metric v not found in stdout: no match"),
            "{err}"
        );
    }

    #[test]
    fn a_latency_with_its_unit_is_read_in_the_metrics_time_unit() {
        let mut p99 = spec(r"p99=99%\s+(\S+)");
        // Without a time unit the text must be a number.
        assert!(p99.read_from("99%  850.00us").is_err());
        assert!(p99.read_from("99%  850.00us ok").is_err());
        p99.unit = Some("ms".into());
        for (text, ms) in [
            ("99%  850.00us", 0.85),
            ("99%  1.44ms", 1.44),
            ("99%  2.10s", 2100.0),
        ] {
            let got = p99.read_from(text).unwrap();
            assert!((got - ms).abs() < 1e-9, "{text}: {got}");
        }
        assert_eq!(p99.read_from("99%  7"), Ok(7.0));
        let e = p99.read_from("99%  3.0MB").unwrap_err();
        assert!(e.contains("'3.0MB' is not a number"), "{e}");
    }

    #[test]
    fn a_duration_without_a_time_unit_says_to_add_one_not_that_it_is_missing() {
        let mut p99 = spec(r"p99=99%\s+(\S+)");
        assert_eq!(
            p99.read_from("     99%  850.00us").unwrap_err(),
            "metric p99 in stdout: '850.00us' has a unit: add --unit p99=ms (or us, s: the unit \
             its values are shown in)"
        );
        p99.unit = Some("req/s".into());
        let e = p99.read_from("99%  1.2s").unwrap_err();
        assert!(
            e.contains("'1.2s' has a unit: --unit p99=req/s is not a time unit"),
            "{e}"
        );
        // Not a duration: still not a number.
        p99.unit = None;
        let e = p99.read_from("99%  3.0MB").unwrap_err();
        assert!(
            e.contains("not found in stdout: '3.0MB' is not a number"),
            "{e}"
        );
    }

    #[test]
    fn a_json_path_reads_as_jq_does() {
        let doc = r#"{"results": {"rps": 812.5, "lat": [1, 2.5]}, "odd key": "7"}"#;
        assert_eq!(spec("rps=json:.results.rps").read_from(doc), Ok(812.5));
        assert_eq!(spec("l=json:.results.lat[1]").read_from(doc), Ok(2.5));
        assert_eq!(spec(r#"k=json:."odd key""#).read_from(doc), Ok(7.0));
        // The last JSON line of mixed output.
        let mixed = format!("warming up\n{doc}\n");
        assert_eq!(spec("rps=json:.results.rps").read_from(&mixed), Ok(812.5));
        let e = spec("rps=json:.results.nope").read_from(doc).unwrap_err();
        assert!(e.contains("no .results.nope in the JSON"), "{e}");
        let e = spec("rps=json:.results").read_from(doc).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        for bad in [
            "x=json:results",
            "x=json:.a..b",
            "x=json:.a[x]",
            "x=json:.a b",
        ] {
            assert!(
                matches!(MetricSpec::parse(bad), Err(MetricError::JsonPath { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn only_stdout_and_stderr_are_keywords_and_a_near_miss_is_refused() {
        for (given, meant) in [
            ("stdin", "stdout"),
            ("STDOUT", "stdout"),
            ("sdtout", "stdout"),
            ("Stderr", "stderr"),
            ("stder", "stderr"),
            ("err", "stderr"),
            ("out", "stdout"),
            ("-", "stdout"),
        ] {
            let e = given.parse::<MetricSource>().unwrap_err();
            assert_eq!(
                e,
                MetricError::NearKeyword {
                    given: given.into(),
                    meant
                },
                "{given}"
            );
            assert!(e.to_string().contains(&format!("did you mean {meant}?")));
        }
        for file in [
            "./err",
            "results.txt",
            "out-{threads}.json",
            "/tmp/stdin",
            "latency",
        ] {
            assert_eq!(
                file.parse::<MetricSource>(),
                Ok(MetricSource::File(file.into())),
                "{file}"
            );
        }
        assert_eq!("stderr".parse::<MetricSource>(), Ok(MetricSource::Stderr));
    }

    #[test]
    fn bad_metric_forms_are_one_line_errors() {
        for (bad, want) in [
            ("eps", "expected NAME=REGEX"),
            ("=x", "expected NAME=REGEX"),
            ("time=x", "not time, wall, cpu, rss or throughput"),
            ("a b=x", "use letters"),
            ("eps=([0-9]", "does not compile"),
        ] {
            let e = MetricSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn objectives_resolve_with_their_direction() {
        let mut eps = spec("eps=x([0-9]+)");
        eps.higher_is_better = true;
        eps.unit = Some("events/s".into());
        let metrics = vec![eps];
        let got = Objective::resolve(&["eps".into(), "cpu".into()], &metrics).unwrap();
        assert!(got[0].higher_is_better && !got[1].higher_is_better);
        assert_eq!(got[0].heading(), "eps (events/s, higher is better)");
        assert_eq!(
            Objective::resolve(&[], &metrics).unwrap(),
            vec![Objective::time()]
        );
        let e = Objective::resolve(&["p99".into()], &metrics).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--objective p99: not time, cpu, rss or a --metric name (metrics: eps)"
        );
        assert!(Objective::resolve(&["time".into(), "wall".into()], &metrics).is_err());
        // Higher is better: the cost is the reciprocal and the interval's ends swap.
        let s = Summary::of(&[100.0, 200.0, 400.0]).unwrap();
        let est = got[0].estimate(&s);
        assert!((est.median - 1.0 / 200.0).abs() < 1e-12);
        assert!(est.ci.0 <= est.median && est.median <= est.ci.1);
        assert!((got[0].gain_pct(220.0, 200.0) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn the_pareto_front_keeps_what_nothing_beats_on_every_objective() {
        let p = |a: f64, b: f64| vec![Some(a), Some(b)];
        let points = vec![
            p(1.0, 9.0), // best on the first
            p(2.0, 2.0), // a trade-off
            p(3.0, 3.0), // beaten by the one above
            p(9.0, 1.0), // best on the second
            vec![Some(0.5), None],
            p(2.0, 2.0), // equal to a front point: kept
        ];
        assert_eq!(pareto_front(&points), vec![0, 1, 3, 5]);
    }
}
