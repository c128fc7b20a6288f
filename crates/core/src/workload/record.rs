//! The record of one measured, verified run ([`RunRecord`]), of a built-in workload or a
//! program, and an adaptive throttle's samples ([`ThrottleSample`]).

use serde::{Deserialize, Serialize};

use super::api::Throughput;
use crate::measure::Measurement;

/// One measured, verified run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// What it cost.
    #[serde(flatten)]
    pub measurement: Measurement,
    /// The workload's own figure.
    pub throughput: Throughput,
    /// Whether verification passed.
    pub verified: bool,
    /// Why verification failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_error: Option<String>,
    /// The result checksum, for workloads that have one. Written as a decimal string: it
    /// exceeds 2^53, which jq and JavaScript round (read back from a number too, as coretune
    /// 0.1.0 wrote it).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "checksum_text"
    )]
    pub checksum: Option<u64>,
    /// An adaptive throttle's samples during the run (empty for no or a fixed throttle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle_trace: Vec<ThrottleSample>,
    /// How a pinned placement reached an external program's threads, and whether any was seen
    /// outside its place (absent for built-in workloads, unpinned runs and older folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Box<crate::program::pin::PinRecord>>,
    /// What coretune checked about the run against its configuration, and what did not match
    /// (absent in older folders): a run with a mismatch does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<Box<crate::program::Audit>>,
    /// The program's own figures read from its output (`tune --metric`), by name (empty for
    /// built-in workloads and sweeps without metrics).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// What the sampler beside the run cost (`--monitor`, or the check of a pinned program's
    /// threads; absent when none ran, and in older folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<crate::program::watch::SamplerCost>,
}

impl RunRecord {
    /// A verified run: what it cost, its throughput and the program's own figures, with
    /// nothing else recorded yet (no checksum, throttle trace, pinning or audit).
    pub fn verified(
        measurement: Measurement,
        throughput: Throughput,
        metrics: std::collections::BTreeMap<String, f64>,
    ) -> Self {
        Self {
            measurement,
            throughput,
            verified: true,
            verify_error: None,
            checksum: None,
            throttle_trace: Vec::new(),
            pinning: None,
            audit: None,
            metrics,
            sampler: None,
        }
    }
}

/// One sample of an adaptive throttle: the limit in force and the throughput measured under it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThrottleSample {
    /// Seconds since the run's throttle was created.
    pub t_s: f64,
    /// The limit in force during the sample.
    pub limit: usize,
    /// Completions (work units) per second during the sample.
    pub throughput: f64,
}

impl From<coretune_pool::TraceSample> for ThrottleSample {
    fn from(s: coretune_pool::TraceSample) -> Self {
        Self {
            t_s: s.at.as_secs_f64(),
            limit: s.limit,
            throughput: s.throughput,
        }
    }
}

/// `Option<u64>` as a decimal string, read from a string or a number.
mod checksum_text {
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` passes a reference to the field
    pub(super) fn serialize<S: Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.serialize_str(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Option::<Either>::deserialize(d)? {
            None => Ok(None),
            Some(Either::Number(n)) => Ok(Some(n)),
            Some(Either::Text(t)) => t.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }

    #[cfg(test)]
    mod test {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct R {
            #[serde(default, with = "super")]
            checksum: Option<u64>,
        }

        #[test]
        fn written_as_text_read_from_either() {
            let big = R {
                checksum: Some(15_639_989_007_075_704_049),
            };
            let text = serde_json::to_string(&big).unwrap();
            assert_eq!(text, r#"{"checksum":"15639989007075704049"}"#);
            assert_eq!(serde_json::from_str::<R>(&text).unwrap(), big);
            let old = r#"{"checksum":15639989007075704049}"#;
            assert_eq!(serde_json::from_str::<R>(old).unwrap(), big);
            assert_eq!(
                serde_json::from_str::<R>("{}").unwrap(),
                R { checksum: None }
            );
        }
    }
}
