//! What a sweep varies: one configuration ([`Config`]: a thread count and a [`Family`], one
//! value of every other axis — `Family`'s fields are the list of axes), the grid of them
//! ([`Grid`]: a list of values per axis), the typed values of the axes ([`Cpus`],
//! [`ThrottleSpec`], [`Mem`]) and the thread counts a machine suggests ([`default_threads`],
//! [`parse_threads`]). Configurations, families and grids are built from their defaults
//! ([`Config::new`], [`Family::new`], [`Grid::new`]) and the `with_*` methods, never as full
//! literals, so that a new axis is an edit here (ARCHITECTURE.md, "Adding an axis").
//!
//! Every axis value is a type that parses from and prints as the text a user writes
//! ([`Policy`], [`Cpus`], [`ThrottleSpec`], [`Mem`]); results files store that text (a throttle
//! limit as a number, no throttle as `null`), so folders written before these types existed read
//! back.

use std::fmt;
use std::str::FromStr;

use hwlocality::cpu::cpuset::CpuSet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cpuset::{CpuSetError, CpuSetExpr, ResolveOptions, Warning};
use crate::memory::{MemError, MemPolicy};
use crate::placement::{Binding, MAX_THREADS, Placement, PlacementError, Policy, plan};
use crate::topology::CpuBudget;
use crate::topology::Topology;

/// The CPU set a configuration is limited to: every CPU, or a parsed CPU-set expression (which
/// keeps its text for display and the results files).
///
/// Ordered and compared by its text, as written: `all ~pu:0` and `all ~0` are different grid
/// values even where they name the same CPUs.
#[derive(Clone, Debug, Default)]
pub enum Cpus {
    /// No limit: whatever the process may use.
    #[default]
    All,
    /// An expression, evaluated on the topology when a run starts.
    Expr(CpuSetExpr),
}

impl Cpus {
    /// Whether this is no limit at all.
    pub fn is_all(&self) -> bool {
        matches!(self, Cpus::All)
    }

    /// The text as written (`all` for no limit).
    pub fn as_str(&self) -> &str {
        match self {
            Cpus::All => "all",
            Cpus::Expr(e) => e.source(),
        }
    }

    /// The CPUs this names on `topology` that can run threads (`None` = no limit), with the
    /// expression's warnings.
    ///
    /// # Errors
    ///
    /// The expression's [`CpuSetError`] on this topology (an object it does not have, ...).
    pub fn resolve(
        &self,
        topology: &Topology,
    ) -> Result<(Option<CpuSet>, Vec<Warning>), CpuSetError> {
        match self {
            Cpus::All => Ok((None, Vec::new())),
            Cpus::Expr(e) => {
                let resolved = e.resolve(topology, &ResolveOptions::default())?;
                Ok((Some(resolved.usable(topology)), resolved.warnings))
            }
        }
    }
}

impl FromStr for Cpus {
    type Err = CpuSetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim() == "all" {
            Ok(Cpus::All)
        } else {
            s.parse().map(Cpus::Expr)
        }
    }
}

impl fmt::Display for Cpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that table columns line up.
        f.pad(self.as_str())
    }
}

impl PartialEq for Cpus {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Cpus {}

impl std::hash::Hash for Cpus {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for Cpus {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cpus {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Serialize for Cpus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How many workers may compute at once: a grid axis of its own.
///
/// Ordered none, fixed limits (ascending), `cores`, `pus`, `adaptive`. In results files `none`
/// is `null` and a fixed limit a number (as coretune 0.1 wrote them); `cores`, `pus` and
/// `adaptive` are strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThrottleSpec {
    /// No throttle.
    #[default]
    None,
    /// At most this many at once.
    Limit(usize),
    /// As many as the usable physical cores of the machine the run is on.
    Cores,
    /// As many as the usable PUs of the machine the run is on.
    Pus,
    /// A limit that adapts to measured throughput (`coretune_pool::Throttle::adaptive`),
    /// created anew for every run so that each run's time includes its settling.
    Adaptive,
}

impl ThrottleSpec {
    /// The fixed limit on `machine` (`None` for no throttle and for the adaptive one).
    pub fn fixed_limit(self, machine: MachineCounts) -> Option<usize> {
        match self {
            ThrottleSpec::None | ThrottleSpec::Adaptive => None,
            ThrottleSpec::Limit(k) => Some(k),
            ThrottleSpec::Cores => Some(machine.cores),
            ThrottleSpec::Pus => Some(machine.pus),
        }
    }

    /// A fresh throttle for one run of `threads` workers on `machine`, or `None` for no
    /// throttle. The adaptive one moves between 1 and `threads`, starting at `threads` (no
    /// limit in force; see `coretune_pool`'s throttle docs for why).
    pub fn build(self, threads: usize, machine: MachineCounts) -> Option<coretune_pool::Throttle> {
        match self {
            ThrottleSpec::Adaptive => Some(coretune_pool::Throttle::adaptive(
                coretune_pool::AdaptiveConfig {
                    min: 1,
                    max: threads.max(1),
                    initial: None,
                    ..coretune_pool::AdaptiveConfig::default()
                },
            )),
            other => other.fixed_limit(machine).map(coretune_pool::Throttle::new),
        }
    }

    /// Whether any throttle is set.
    pub fn is_set(self) -> bool {
        self != ThrottleSpec::None
    }

    /// Parses a comma-separated list (`none,2,4,cores,adaptive`), without duplicates.
    ///
    /// # Errors
    ///
    /// A message naming the item that is not a throttle value, or an empty list.
    pub fn parse_list(spec: &str) -> Result<Vec<ThrottleSpec>, String> {
        let mut out: Vec<ThrottleSpec> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let value: ThrottleSpec = item.parse()?;
            if !out.contains(&value) {
                out.push(value);
            }
        }
        if out.is_empty() {
            return Err("no values".into());
        }
        Ok(out)
    }
}

impl FromStr for ThrottleSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" => Ok(ThrottleSpec::None),
            "cores" => Ok(ThrottleSpec::Cores),
            "pus" => Ok(ThrottleSpec::Pus),
            "adaptive" => Ok(ThrottleSpec::Adaptive),
            n => match n.parse::<usize>() {
                Ok(k) if k > 0 => Ok(ThrottleSpec::Limit(k)),
                _ => Err(format!(
                    "'{s}' is not none, a positive number, cores, pus or adaptive"
                )),
            },
        }
    }
}

impl fmt::Display for ThrottleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that table columns line up.
        match self {
            ThrottleSpec::None => f.pad("none"),
            ThrottleSpec::Limit(k) => f.pad(&k.to_string()),
            ThrottleSpec::Cores => f.pad("cores"),
            ThrottleSpec::Pus => f.pad("pus"),
            ThrottleSpec::Adaptive => f.pad("adaptive"),
        }
    }
}

impl Serialize for ThrottleSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ThrottleSpec::None => s.serialize_none(),
            ThrottleSpec::Limit(k) => s.serialize_u64(*k as u64),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for ThrottleSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ThrottleSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null, a positive number, \"cores\", \"pus\" or \"adaptive\"")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<ThrottleSpec, E> {
                Ok(ThrottleSpec::None)
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<ThrottleSpec, E> {
                Ok(ThrottleSpec::None)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ThrottleSpec, E> {
                match usize::try_from(v) {
                    Ok(k) if k > 0 => Ok(ThrottleSpec::Limit(k)),
                    _ => Err(E::custom(format!("throttle {v} is not a positive limit"))),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ThrottleSpec, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("throttle {v} is not a positive limit")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ThrottleSpec, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// One point of the grid: how many threads, and the rest of the configuration ([`Family`]: every
/// other axis).
///
/// Ordered by thread count, then as its family (the order of the tables). In results files the
/// family's fields sit beside `threads` (`{"threads":2,"place":"os",...}`), as they did before
/// the family was a field of its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config {
    /// Worker threads.
    pub threads: usize,
    /// Every other axis: what a scaling curve is drawn for.
    #[serde(flatten)]
    pub family: Family,
}

impl Config {
    /// `threads` threads placed by `place`, every other axis at its default ([`Family::new`]);
    /// `Family::new(place).with_…(…).at(threads)` sets the others.
    #[must_use]
    pub fn new(threads: usize, place: Policy) -> Self {
        Family::new(place).at(threads)
    }

    /// How "simple" the configuration is, for breaking ties: fewer threads in all, then fewer
    /// instances (one process of 2 threads before 2 of 1), then no pinning, then no CPU
    /// exclusion, then no throttle, then no memory policy (DESIGN.md: a tie goes to the
    /// simplest).
    pub fn simplicity_key(&self) -> (usize, usize, bool, bool, bool, bool, Policy) {
        (
            self.threads * self.family.instances,
            self.family.instances,
            self.family.place.is_pinned(),
            !self.family.cpus.is_all(),
            self.family.throttle.is_set(),
            !self.family.mem.is_default(),
            self.family.place,
        )
    }

    /// The placement this configuration runs with on `topology`, each thread's set as wide as
    /// `binding`.
    ///
    /// # Errors
    ///
    /// The CPU-set expression does not resolve on this topology, or the placement cannot be
    /// planned (no usable CPU in the set).
    pub fn placement(
        &self,
        topology: &Topology,
        binding: Binding,
    ) -> Result<Placement, ConfigError> {
        let cpus = self.resolved_cpus(topology)?;
        plan(
            topology,
            self.threads,
            self.family.place,
            cpus.as_ref(),
            binding,
        )
        .map_err(ConfigError::Placement)
    }

    /// The configuration's CPU set on `topology` (`None`: no limit).
    fn resolved_cpus(&self, topology: &Topology) -> Result<Option<CpuSet>, ConfigError> {
        let (cpus, _) = self
            .family
            .cpus
            .resolve(topology)
            .map_err(|error| ConfigError::Cpus {
                cpus: self.family.cpus.to_string(),
                error,
            })?;
        Ok(cpus)
    }

    /// The CPUs each instance runs on: the configuration's CPU set (or every usable CPU) split
    /// in [`Family::instances`] parts as `hwloc-distrib` splits it — whole NUMA nodes, then
    /// L3 groups, then cores, then PUs — so that 2 instances on a 2-node machine get a node
    /// each. With more instances than PUs, neighbouring instances share one (as hwloc-distrib
    /// packs).
    ///
    /// # Errors
    ///
    /// As [`Config::placement`].
    pub fn parts(&self, topology: &Topology) -> Result<Vec<CpuSet>, ConfigError> {
        let cpus = self.resolved_cpus(topology)?;
        crate::placement::distribute(topology, self.family.instances.max(1), cpus.as_ref())
            .map_err(ConfigError::Placement)
    }

    /// The placement of each instance on its part ([`Config::parts`]): `threads` threads placed
    /// by the configuration's policy inside it. One instance gets [`Config::placement`]'s.
    ///
    /// # Errors
    ///
    /// As [`Config::placement`].
    pub fn placements(
        &self,
        topology: &Topology,
        binding: Binding,
    ) -> Result<Vec<Placement>, ConfigError> {
        if self.family.instances <= 1 {
            return Ok(vec![self.placement(topology, binding)?]);
        }
        self.parts(topology)?
            .iter()
            .map(|part| {
                plan(
                    topology,
                    self.threads,
                    self.family.place,
                    Some(part),
                    binding,
                )
                .map_err(ConfigError::Placement)
            })
            .collect()
    }

    /// Whether a program run in this configuration gets a process CPU set (pinned, or limited
    /// to part of the machine).
    pub fn is_restricted(&self) -> bool {
        self.family.place.is_pinned() || !self.family.cpus.is_all() || self.family.instances > 1
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.threads == 1 { "" } else { "s" };
        if self.family.instances > 1 {
            write!(f, "{} instances × ", self.family.instances)?;
        }
        write!(f, "{} thread{s}, ", self.threads)?;
        self.family.fmt_axes(f)
    }
}

/// Why a configuration cannot run on a topology.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The CPU-set expression does not resolve here. (The reason names the expression, and is
    /// not also a `source`: a chain printer would say it twice.)
    #[error("cpus {error}")]
    Cpus {
        /// The expression.
        cpus: String,
        /// Why, naming the expression.
        error: CpuSetError,
    },
    /// A server's `--client-cpus` does not resolve here.
    #[error("--client-cpus {0}")]
    ClientCpus(CpuSetError),
    /// A memory policy of the grid does not apply here (a node it names is not there or has
    /// no memory).
    #[error("{0}")]
    Mem(MemError),
    /// The placement cannot be planned.
    #[error("{0}")]
    Placement(PlacementError),
    /// `--launcher` cannot start this configuration.
    #[error("--launcher: {0}")]
    Launcher(String),
    /// `--instances` cannot be used with this target.
    #[error("--instances: {0}")]
    Instances(String),
}

/// A configuration without its thread count: one value of every other axis, what a scaling
/// curve is drawn for. Built from its placement with every other axis at its default
/// ([`Family::new`]) and the `with_*` methods, so that a new axis is a new field here and no
/// literal elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Family {
    /// Placement policy.
    pub place: Policy,
    /// CPU set the placement is limited to.
    pub cpus: Cpus,
    /// At most this many workers compute at once.
    pub throttle: ThrottleSpec,
    /// The memory policy the run starts with (`tune --mem`; absent: the OS's first touch).
    #[serde(default, skip_serializing_if = "Mem::is_default")]
    pub mem: Mem,
    /// Copies run at once, each on its own part of the CPUs with the configuration's thread
    /// count (`tune --instances`; absent: one).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub instances: usize,
}

fn one() -> usize {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_one(n: &usize) -> bool {
    *n == 1
}

impl Family {
    /// Placed by `place`, on every CPU, without throttle, with the OS's memory policy, as one
    /// instance.
    #[must_use]
    pub fn new(place: Policy) -> Self {
        Self {
            place,
            cpus: Cpus::All,
            throttle: ThrottleSpec::None,
            mem: Mem::Default,
            instances: 1,
        }
    }

    /// This family limited to `cpus`.
    #[must_use]
    pub fn with_cpus(self, cpus: Cpus) -> Self {
        Self { cpus, ..self }
    }

    /// This family with `throttle`.
    #[must_use]
    pub fn with_throttle(self, throttle: ThrottleSpec) -> Self {
        Self { throttle, ..self }
    }

    /// This family with the memory policy `mem`.
    #[must_use]
    pub fn with_mem(self, mem: Mem) -> Self {
        Self { mem, ..self }
    }

    /// This family run as `instances` copies at once.
    #[must_use]
    pub fn with_instances(self, instances: usize) -> Self {
        Self { instances, ..self }
    }

    /// The names of the family's fields in results files (`place`, `cpus`, ...), as serde
    /// reads them: what a line of recorded runs names beside a configuration's axes is
    /// something else (`tune --replay`'s metrics).
    pub fn field_names() -> &'static [&'static str] {
        /// A deserializer that only notes the field names a struct asks for.
        struct Names<'a>(&'a mut &'static [&'static str]);
        impl<'de> Deserializer<'de> for Names<'_> {
            type Error = serde::de::value::Error;
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _name: &'static str,
                fields: &'static [&'static str],
                _visitor: V,
            ) -> Result<V::Value, Self::Error> {
                *self.0 = fields;
                Err(serde::de::Error::custom(
                    "only the field names were asked for",
                ))
            }
            fn deserialize_any<V: serde::de::Visitor<'de>>(
                self,
                _visitor: V,
            ) -> Result<V::Value, Self::Error> {
                Err(serde::de::Error::custom("not a struct"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut fields: &'static [&'static str] = &[];
        // The error is the point: the fields were noted on the way.
        let _ = Family::deserialize(Names(&mut fields));
        fields
    }

    /// This family at `threads`.
    #[must_use]
    pub fn at(&self, threads: usize) -> Config {
        Config {
            threads,
            family: self.clone(),
        }
    }

    /// Everything but the instance count, as `place os, cpus '…', throttle 2, mem local`.
    fn fmt_axes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "place {}", self.place)?;
        if !self.cpus.is_all() {
            write!(f, ", cpus '{}'", self.cpus)?;
        }
        if self.throttle.is_set() {
            write!(f, ", throttle {}", self.throttle)?;
        }
        if !self.mem.is_default() {
            write!(f, ", mem {}", self.mem)?;
        }
        Ok(())
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.instances > 1 {
            write!(f, "{} instances, ", self.instances)?;
        }
        self.fmt_axes(f)
    }
}

/// A memory policy of the grid (`tune --mem`): the OS's default — pages on the node of the CPU
/// that first touches them, written `none` — or a policy as `run --mem` takes it, kept in its
/// own words (`interleave`, `bind:numa:1`) and resolved per run near the configuration's CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mem {
    /// No policy set: the OS's first touch.
    #[default]
    Default,
    /// A policy, as [`MemPolicy`] writes it.
    Policy(String),
}

impl Mem {
    /// Whether no policy is set.
    pub fn is_default(&self) -> bool {
        *self == Mem::Default
    }

    /// The policy, when one is set.
    pub fn policy(&self) -> Option<MemPolicy> {
        match self {
            Mem::Default => None,
            Mem::Policy(text) => text.parse().ok(),
        }
    }
}

impl FromStr for Mem {
    type Err = MemError;

    fn from_str(s: &str) -> Result<Self, MemError> {
        match s.trim() {
            "none" | "default" => Ok(Mem::Default),
            text => Ok(Mem::Policy(text.parse::<MemPolicy>()?.to_string())),
        }
    }
}

impl fmt::Display for Mem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mem::Default => f.write_str("none"),
            Mem::Policy(text) => f.write_str(text),
        }
    }
}

impl Serialize for Mem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// `tune --mem`'s list: policies separated by commas, where a comma inside a policy's node
/// list stays there (`none,interleave:numa:0,2,bind` is three; `interleave:0,1` one). A word
/// after a policy without nodes (`local,bogus`) is a policy of its own, and the error names it.
///
/// # Errors
///
/// The first policy that is not one.
pub fn parse_mems(list: &str) -> Result<Vec<Mem>, MemError> {
    let starts_policy = |word: &str| {
        let name = word.split(':').next().unwrap_or("").trim();
        matches!(
            name,
            "none"
                | "default"
                | "local"
                | "localalloc"
                | "interleave"
                | "bind"
                | "membind"
                | "preferred"
        )
    };
    let mut parts: Vec<String> = Vec::new();
    for word in list.split(',') {
        match parts.last_mut() {
            Some(last) if !starts_policy(word) && last.contains(':') => {
                last.push(',');
                last.push_str(word);
            }
            _ => parts.push(word.to_owned()),
        }
    }
    let mut out: Vec<Mem> = Vec::new();
    for part in parts {
        let mem: Mem = part.parse()?;
        if !out.contains(&mem) {
            out.push(mem);
        }
    }
    Ok(out)
}

/// `tune --instances`'s list, written as thread counts are ([`parse_threads`]'s numbers, ranges
/// `1-4`, `1..4` and steps `1-8:2`, without the `cores`/`pus` tokens): instance counts, ascending
/// and without duplicates, each from 1 to [`MAX_THREADS`] (the thread cap: every copy is at
/// least one thread).
///
/// # Errors
///
/// A message naming the first item that is not a positive count, or an empty list.
pub fn parse_instances(list: &str) -> Result<Vec<usize>, String> {
    parse_counts(list, None, "instance")
}

/// The grid: every combination of its axes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// Thread counts, ascending, distinct.
    pub threads: Vec<usize>,
    /// Placement policies.
    pub places: Vec<Policy>,
    /// CPU sets.
    pub cpus: Vec<Cpus>,
    /// Throttles.
    pub throttles: Vec<ThrottleSpec>,
    /// Memory policies (absent in sweeps without `--mem`: the OS's default alone).
    #[serde(default = "default_mems", skip_serializing_if = "only_default_mem")]
    pub mems: Vec<Mem>,
    /// Instance counts (absent in sweeps without `--instances`: one).
    #[serde(
        default = "default_instances",
        skip_serializing_if = "only_one_instance"
    )]
    pub instances: Vec<usize>,
}

fn default_instances() -> Vec<usize> {
    vec![1]
}

#[allow(clippy::ptr_arg)] // serde's skip_serializing_if passes the field by reference
fn only_one_instance(instances: &Vec<usize>) -> bool {
    *instances == default_instances()
}

fn default_mems() -> Vec<Mem> {
    vec![Mem::Default]
}

#[allow(clippy::ptr_arg)] // serde's skip_serializing_if passes the field by reference
fn only_default_mem(mems: &Vec<Mem>) -> bool {
    *mems == default_mems()
}

impl Grid {
    /// `threads` × `places`, every other axis at its one default value (as [`Family::new`]);
    /// the `with_*` methods set the others.
    #[must_use]
    pub fn new(threads: Vec<usize>, places: Vec<Policy>) -> Self {
        Self {
            threads,
            places,
            cpus: vec![Cpus::All],
            throttles: vec![ThrottleSpec::None],
            mems: default_mems(),
            instances: default_instances(),
        }
    }

    /// This grid over the CPU sets `cpus`.
    #[must_use]
    pub fn with_cpus(self, cpus: Vec<Cpus>) -> Self {
        Self { cpus, ..self }
    }

    /// This grid over the throttles `throttles`.
    #[must_use]
    pub fn with_throttles(self, throttles: Vec<ThrottleSpec>) -> Self {
        Self { throttles, ..self }
    }

    /// This grid over the memory policies `mems`.
    #[must_use]
    pub fn with_mems(self, mems: Vec<Mem>) -> Self {
        Self { mems, ..self }
    }

    /// This grid over the instance counts `instances`.
    #[must_use]
    pub fn with_instances(self, instances: Vec<usize>) -> Self {
        Self { instances, ..self }
    }

    /// The smallest grid holding every configuration of `configs`: on each axis the values they
    /// take, thread counts ascending and the others in the order first met.
    pub fn spanning<'a>(configs: impl IntoIterator<Item = &'a Config>) -> Self {
        fn add<T: PartialEq>(values: &mut Vec<T>, value: T) {
            if !values.contains(&value) {
                values.push(value);
            }
        }
        let mut grid = Self::new(Vec::new(), Vec::new())
            .with_cpus(Vec::new())
            .with_throttles(Vec::new())
            .with_mems(Vec::new())
            .with_instances(Vec::new());
        for c in configs {
            add(&mut grid.threads, c.threads);
            add(&mut grid.places, c.family.place);
            add(&mut grid.cpus, c.family.cpus.clone());
            add(&mut grid.throttles, c.family.throttle);
            add(&mut grid.mems, c.family.mem.clone());
            add(&mut grid.instances, c.family.instances);
        }
        grid.threads.sort_unstable();
        grid
    }

    /// The default grid for a workload that has no defaults of its own, and for programs: thread
    /// counts from [`default_threads`], the placements `os`, `compact`, `spread` and `cores`,
    /// every CPU and — on machines with more than 2 PUs — every CPU but CPU 0 (the articles'
    /// "keep CPU 0 free"), no throttle.
    pub fn default_for(machine: MachineCounts) -> Self {
        let mut cpus = vec![Cpus::All];
        if machine.pus > 2 {
            cpus.push("all ~pu:0".parse().expect("a valid expression"));
        }
        Self::new(
            default_threads(machine),
            vec![Policy::Os, Policy::Compact, Policy::Spread, Policy::Cores],
        )
        .with_cpus(cpus)
    }

    /// Whether any configuration runs more than one instance.
    pub fn has_instances(&self) -> bool {
        self.instances.iter().any(|&p| p > 1)
    }

    /// Every family of the grid, in axis order.
    pub fn families(&self) -> Vec<Family> {
        let mut out = Vec::new();
        for &place in &self.places {
            for cpus in &self.cpus {
                for &throttle in &self.throttles {
                    for mem in &self.mems {
                        for &instances in &self.instances {
                            out.push(
                                Family::new(place)
                                    .with_cpus(cpus.clone())
                                    .with_throttle(throttle)
                                    .with_mem(mem.clone())
                                    .with_instances(instances),
                            );
                        }
                    }
                }
            }
        }
        out
    }

    /// Every configuration of the grid.
    pub fn configs(&self) -> Vec<Config> {
        self.families()
            .iter()
            .flat_map(|f| self.threads.iter().map(move |&t| f.at(t)))
            .collect()
    }

    /// Measures once what is given twice: a placement named twice (`--place os,os`), and CPU
    /// sets that name the same CPUs on `topology` (`all` and `0-1` on a 2-CPU machine,
    /// `all ~pu:0` and `all ~0`), keeping the first spelling. Returns one line per value
    /// merged away, saying into which. A CPU set that does not resolve here is kept, for
    /// [`Grid::check`] to refuse.
    pub fn merge_duplicates(&mut self, topology: &Topology) -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        let mut note = |line: String| {
            if !notes.contains(&line) {
                notes.push(line);
            }
        };
        let mut places: Vec<Policy> = Vec::new();
        for &place in &self.places {
            if places.contains(&place) {
                note(format!("--place {place} is given twice: measured once"));
            } else {
                places.push(place);
            }
        }
        self.places = places;
        let mut kept: Vec<(Cpus, Option<CpuSet>)> = Vec::new();
        for cpus in std::mem::take(&mut self.cpus) {
            let set = match cpus.resolve(topology) {
                Ok((set, _)) => Some(set.unwrap_or_else(|| topology.cpuset())),
                Err(_) => None,
            };
            let same = kept
                .iter()
                .find(|(k, s)| *k == cpus || (set.is_some() && *s == set));
            match (same, &set) {
                (Some((first, _)), _) if *first == cpus => {
                    note(format!("--cpus '{cpus}' is given twice: measured once"));
                }
                (Some((first, _)), Some(set)) => note(format!(
                    "--cpus '{cpus}' is the same CPUs as '{first}' on this machine ({}): \
                     measured once, as '{first}'",
                    crate::sys::format_list(&crate::sys::set_to_vec(set))
                )),
                _ => kept.push((cpus, set)),
            }
        }
        self.cpus = kept.into_iter().map(|(cpus, _)| cpus).collect();
        notes
    }

    /// Checks every CPU set and memory policy of the grid on `topology` before anything runs,
    /// as a run would use them, and returns the warnings each CPU set raises (CPU 0 included,
    /// SMT siblings split, ...) with its text. The sweep ([`crate::Runner::check`]) and
    /// `--dry-run` both check through this.
    ///
    /// # Errors
    ///
    /// The first CPU set that does not resolve here, or the first memory policy that does not
    /// apply here (a node it names is not there, `preferred` over several nodes).
    pub fn check(&self, topology: &Topology) -> Result<Vec<(String, Warning)>, ConfigError> {
        let mut warnings = Vec::new();
        for cpus in &self.cpus {
            let (_, w) = cpus.resolve(topology).map_err(|error| ConfigError::Cpus {
                cpus: cpus.to_string(),
                error,
            })?;
            warnings.extend(w.into_iter().map(|w| (cpus.to_string(), w)));
        }
        for mem in &self.mems {
            if let Some(policy) = mem.policy() {
                policy
                    .plan(topology, &topology.cpuset(), false)
                    .map_err(ConfigError::Mem)?;
            }
        }
        Ok(warnings)
    }

    /// What to say before a sweep about how its instances split the CPUs on `topology`: for
    /// each instance count and CPU set, more copies than PUs (`3 instances on 2 PUs:
    /// oversubscribed, copies share PUs: CPUs 0 | 0 | 1`, as `run` says of threads) or parts of
    /// different sizes (`3 instances on 4 PUs: uneven split: CPUs 0-1 | 2 | 3`). A CPU set that
    /// does not resolve says nothing here ([`Grid::check`] refuses it).
    pub fn instance_warnings(&self, topology: &Topology) -> Vec<String> {
        /// Parts listed before the rest are counted (65536 copies stay one line).
        const SHOWN: usize = 8;
        let mut out = Vec::new();
        for cpus in &self.cpus {
            for &instances in self.instances.iter().filter(|&&n| n > 1) {
                let config = Family::new(Policy::Os)
                    .with_cpus(cpus.clone())
                    .with_instances(instances)
                    .at(1);
                let Ok(parts) = config.parts(topology) else {
                    continue;
                };
                let mut union = CpuSet::new();
                for part in &parts {
                    union |= part;
                }
                let pus = union.weight().unwrap_or(0);
                let sizes: Vec<usize> = parts.iter().filter_map(CpuSet::weight).collect();
                let oversubscribed = instances > pus;
                let uneven = sizes.iter().min() != sizes.iter().max();
                if !oversubscribed && !uneven {
                    continue;
                }
                let mut lists: Vec<String> = parts
                    .iter()
                    .take(SHOWN)
                    .map(|p| crate::sys::format_list(&crate::sys::set_to_vec(p)))
                    .collect();
                if parts.len() > SHOWN {
                    lists.push(format!("… ({} parts)", parts.len()));
                }
                let within = if cpus.is_all() {
                    String::new()
                } else {
                    format!(" of --cpus '{cpus}'")
                };
                let how = if oversubscribed {
                    "oversubscribed, copies share PUs"
                } else {
                    "uneven split"
                };
                out.push(format!(
                    "{instances} instances on {}{within}: {how}: CPUs {}",
                    crate::sys::counted(pus, "PU"),
                    lists.join(" | ")
                ));
            }
        }
        out
    }
}

/// What thread-count tokens (`cores`, `pus`) and throttle values mean on a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineCounts {
    /// Physical cores usable.
    pub cores: usize,
    /// PUs usable.
    pub pus: usize,
}

impl MachineCounts {
    /// The cores and PUs this process may use on the machine it runs on (its CPU budget: the
    /// affinity mask and cgroup cpuset applied), at least 1 each.
    pub fn live(topology: &Topology) -> Self {
        let budget = CpuBudget::live(topology);
        Self {
            cores: budget.usable_cores.max(1),
            pus: budget.usable.len().max(1),
        }
    }

    /// The cores and PUs of `topology` as described (for planning on a machine this is not:
    /// an XML or synthetic topology), at least 1 each.
    pub fn of(topology: &Topology) -> Self {
        let counts = topology.counts();
        Self {
            cores: counts.cores.max(1),
            pus: counts.pus.max(1),
        }
    }
}

/// Parses a thread-count list: numbers, ranges `a-b` or `a..b` (inclusive), ranges with a step
/// `a-b:s`, and the tokens `cores`, `pus` and `K*cores` / `K*pus`, comma-separated
/// (`1-4,6,8,cores,2*pus`). The result is sorted and without duplicates, each count from 1 to
/// [`MAX_THREADS`] (what a placement plans for).
///
/// # Errors
///
/// A message naming the offending item.
pub fn parse_threads(spec: &str, machine: MachineCounts) -> Result<Vec<usize>, String> {
    parse_counts(spec, Some(machine), "thread")
}

/// [`parse_threads`] and [`parse_instances`]: counts of `noun`s, with the machine's `cores`
/// and `pus` tokens when `machine` is given.
fn parse_counts(
    spec: &str,
    machine: Option<MachineCounts>,
    noun: &str,
) -> Result<Vec<usize>, String> {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    let tokens = if machine.is_some() {
        ", cores or pus"
    } else {
        ""
    };
    let token = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        let (k, name) = match (t.split_once('*'), machine) {
            (Some((k, name)), Some(_)) => (
                k.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("'{t}': expected K*cores or K*pus"))?,
                name.trim(),
            ),
            _ => (1, t),
        };
        let base = match (name, machine) {
            ("cores", Some(m)) => m.cores,
            ("pus", Some(m)) => m.pus,
            (n, _) => {
                if machine.is_some() && (k != 1 || t.contains('*')) {
                    return Err(format!("'{t}': expected K*cores or K*pus"));
                }
                n.parse::<usize>()
                    .map_err(|_| format!("'{t}': not {article} {noun} count, range{tokens}"))?
            }
        };
        let n = k.saturating_mul(base);
        if n > MAX_THREADS {
            let value = if t == n.to_string() {
                String::new()
            } else {
                format!(" ({n})")
            };
            return Err(format!(
                "'{t}'{value} is more than coretune plans for ({MAX_THREADS} {noun}s)"
            ));
        }
        Ok(n)
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // `-1` reads as a range without its start; it is a negative number.
        if item
            .strip_prefix('-')
            .is_some_and(|n| n.parse::<usize>().is_ok())
        {
            return Err(format!("'{item}': {noun} counts must be at least 1"));
        }
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (
                r,
                s.parse::<usize>()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("'{item}': step must be a positive number"))?,
            ),
            None => (item, 1),
        };
        let bounds = range.split_once("..").or_else(|| range.split_once('-'));
        match bounds {
            Some((a, b)) => {
                if a.trim().is_empty() || b.trim().is_empty() {
                    return Err(format!(
                        "'{item}': a range needs both ends (e.g. 1-8{})",
                        if machine.is_some() { ", 2-pus" } else { "" }
                    ));
                }
                let (a, b) = (token(a)?, token(b)?);
                if b < a {
                    return Err(format!("'{item}': range ends before it starts"));
                }
                out.extend((a..=b).step_by(step));
            }
            None => out.push(token(range)?),
        }
    }
    if out.contains(&0) {
        return Err(format!("{noun} counts must be at least 1"));
    }
    if out.is_empty() {
        return Err(format!("'{spec}': no {noun} counts"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The default thread counts: a ladder of roughly ×1.5 steps from 1 to well past the PU count
/// (4 × PUs, at least 8: the article's renderer was fastest at 18 threads on 4 cores), plus the
/// core and PU counts themselves.
pub fn default_threads(machine: MachineCounts) -> Vec<usize> {
    let top = (4 * machine.pus).max(8);
    let mut out = vec![machine.cores.max(1), machine.pus.max(1)];
    let mut p = 1;
    while p <= top {
        out.push(p);
        if p * 3 / 2 <= top && p >= 2 {
            out.push(p * 3 / 2);
        }
        p *= 2;
    }
    out.push(top);
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn memory_policy_lists_keep_commas_inside_node_lists() {
        let mems = parse_mems("none,interleave:numa:0,2,bind,local,none").unwrap();
        let text: Vec<String> = mems.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["none", "interleave:numa:0,2", "bind", "local"]);
        let text: Vec<String> = parse_mems("interleave:0,1,bind:0-1,preferred:0")
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(text, ["interleave:0,1", "bind:0-1", "preferred:0"]);
        assert!(parse_mems("none,bogus").is_err());
        // The bad item alone, not the list it is in.
        let err = parse_mems("local,bogus").unwrap_err().to_string();
        assert!(err.starts_with("unknown memory policy 'bogus' ("), "{err}");
        // Old configurations (no `mem`) read back as the OS's default, and write no `mem`.
        let c: Config =
            serde_json::from_str(r#"{"threads":2,"place":"os","cpus":"all","throttle":null}"#)
                .unwrap();
        assert!(c.family.mem.is_default());
        assert!(!serde_json::to_string(&c).unwrap().contains("mem"));
        let c = c.family.with_mem("interleave".parse().unwrap()).at(2);
        assert_eq!(c.to_string(), "2 threads, place os, mem interleave");
        assert!(
            serde_json::to_string(&c)
                .unwrap()
                .contains(r#""mem":"interleave""#)
        );
    }

    const LAPTOP: MachineCounts = MachineCounts { cores: 4, pus: 8 };

    #[test]
    fn instances_split_the_cpus_as_hwloc_distrib_does() {
        assert_eq!(parse_instances("4,1,2,2").unwrap(), [1, 2, 4]);
        for bad in ["0", "x", "", "1,-2", "pus", "70000"] {
            assert!(parse_instances(bad).is_err(), "{bad}");
        }
        let t = Topology::load(&crate::topology::TopologySource::Synthetic(
            "pack:2 numa:2 l3:1 core:2 pu:2".into(),
        ))
        .unwrap();
        let part_lists = |instances: usize, cpus: &str| {
            let c = Family::new(Policy::Compact)
                .with_cpus(cpus.parse().unwrap())
                .with_instances(instances)
                .at(2);
            let placements = c.placements(&t, Binding::Pu).unwrap();
            let parts = c.parts(&t).unwrap();
            assert_eq!(placements.len(), instances);
            placements
                .iter()
                .zip(&parts)
                .map(|(p, part)| {
                    // Every thread inside its instance's part, packed from its start.
                    assert!(
                        p.threads
                            .iter()
                            .all(|th| th.pus.iter().all(|&pu| part.is_set(pu)))
                    );
                    assert_eq!(p.threads[0].pus[0], part.first_set().unwrap());
                    crate::sys::format_list(&crate::sys::set_to_vec(part))
                })
                .collect::<Vec<_>>()
        };
        // 4 NUMA nodes of 4 PUs: one instance each, then two per node's cores.
        assert_eq!(part_lists(4, "all"), ["0-3", "4-7", "8-11", "12-15"]);
        assert_eq!(part_lists(2, "all"), ["0-7", "8-15"]);
        assert_eq!(part_lists(8, "all")[..2], ["0-1", "2-3"]);
        // Within a CPU set: the set is what is split.
        assert_eq!(part_lists(2, "numa:1-2"), ["4-7", "8-11"]);
        let c = Family::new(Policy::Os).with_instances(4).at(2);
        assert_eq!(c.to_string(), "4 instances × 2 threads, place os");
        assert_eq!(c.family.to_string(), "4 instances, place os");
        assert!(c.is_restricted());
        let one = c.family.clone().with_instances(1).at(8);
        // A tie goes to one process of 8 threads before 4 of 2.
        assert!(one.simplicity_key() < c.simplicity_key());
        // Old folders have no instance count: one.
        let read: Config =
            serde_json::from_str(r#"{"threads":2,"place":"os","cpus":"all","throttle":null}"#)
                .unwrap();
        assert_eq!(read.family.instances, 1);
        assert!(!serde_json::to_string(&read).unwrap().contains("instances"));
    }

    #[test]
    fn instance_counts_take_ranges_as_thread_counts_do() {
        assert_eq!(parse_instances("1-4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(parse_instances("1,2,4").unwrap(), [1, 2, 4]);
        assert_eq!(parse_instances("2..8:2").unwrap(), [2, 4, 6, 8]);
        assert_eq!(parse_instances("65536").unwrap(), [65536]);
        for (bad, msg) in [
            (
                "1-70000",
                "'70000' is more than coretune plans for (65536 instances)",
            ),
            ("-2", "'-2': instance counts must be at least 1"),
            ("cores", "'cores': not an instance count, range"),
            ("2*pus", "'2*pus': not an instance count"),
        ] {
            let err = parse_instances(bad).unwrap_err();
            assert!(err.contains(msg), "{bad}: {err}");
        }
    }

    #[test]
    fn duplicates_merge_into_their_first_spelling_and_splits_are_judged() {
        let two = Topology::load(&crate::topology::TopologySource::Synthetic(
            "core:2 pu:1".into(),
        ))
        .unwrap();
        let mut grid = Grid::default_for(MachineCounts { cores: 2, pus: 2 });
        grid.places = vec![Policy::Os, Policy::Compact, Policy::Os, Policy::Os];
        grid.cpus = ["all", "0-1", "pu:1", "all ~pu:0", "numa:7"]
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        let notes = grid.merge_duplicates(&two);
        assert_eq!(
            notes,
            [
                "--place os is given twice: measured once",
                "--cpus '0-1' is the same CPUs as 'all' on this machine (0-1): measured once, \
                 as 'all'",
                "--cpus 'all ~pu:0' is the same CPUs as 'pu:1' on this machine (1): measured \
                 once, as 'pu:1'",
            ]
        );
        assert_eq!(grid.places, [Policy::Os, Policy::Compact]);
        let cpus: Vec<&str> = grid.cpus.iter().map(Cpus::as_str).collect();
        // What does not resolve stays, for `check` to refuse.
        assert_eq!(cpus, ["all", "pu:1", "numa:7"]);
        assert!(grid.check(&two).is_err());
        grid.cpus.pop();
        assert!(grid.check(&two).is_ok());

        grid.instances = vec![1, 2, 3];
        assert_eq!(
            grid.instance_warnings(&two),
            [
                "3 instances on 2 PUs: oversubscribed, copies share PUs: CPUs 0 | 0 | 1",
                "2 instances on 1 PU of --cpus 'pu:1': oversubscribed, copies share PUs: CPUs \
                 1 | 1",
                "3 instances on 1 PU of --cpus 'pu:1': oversubscribed, copies share PUs: CPUs \
                 1 | 1 | 1",
            ]
        );
    }

    #[test]
    fn thread_lists_take_ranges_and_machine_words() {
        assert_eq!(
            parse_threads("1-4,6,8", LAPTOP).unwrap(),
            vec![1, 2, 3, 4, 6, 8]
        );
        assert_eq!(
            parse_threads("cores,pus,2*pus", LAPTOP).unwrap(),
            vec![4, 8, 16]
        );
        assert_eq!(parse_threads("1..3", LAPTOP).unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_threads("2-10:4", LAPTOP).unwrap(), vec![2, 6, 10]);
        assert_eq!(parse_threads("1-cores", LAPTOP).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_threads("4,4,1", LAPTOP).unwrap(), vec![1, 4]);
        for (bad, msg) in [
            ("0", "at least 1"),
            ("x", "'x': not a thread count"),
            ("3-1", "ends before"),
            ("2*banana", "K*cores or K*pus"),
            ("1-4:0", "step must be"),
            ("", "no thread counts"),
            ("1-", "'1-': a range needs both ends"),
            ("-4", "'-4': thread counts must be at least 1"),
            ("-1-4", "'-1-4': a range needs both ends"),
            (
                "70000",
                "'70000' is more than coretune plans for (65536 threads)",
            ),
            ("1-4000000000", "more than coretune plans for"),
        ] {
            let err = parse_threads(bad, LAPTOP).unwrap_err();
            assert!(err.contains(msg), "{bad}: {err}");
        }
    }

    #[test]
    fn default_ladder_goes_past_the_pu_count() {
        assert_eq!(
            default_threads(MachineCounts { cores: 2, pus: 2 }),
            vec![1, 2, 3, 4, 6, 8]
        );
        assert_eq!(
            default_threads(LAPTOP),
            vec![1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
        );
    }

    #[test]
    fn a_family_names_its_fields_and_a_grid_spans_its_configurations() {
        assert_eq!(
            Family::field_names(),
            ["place", "cpus", "throttle", "mem", "instances"]
        );
        // Every field a family writes is one it names.
        let full = Family::new(Policy::Spread)
            .with_cpus("all ~pu:0".parse().unwrap())
            .with_throttle(ThrottleSpec::Limit(2))
            .with_mem("local".parse().unwrap())
            .with_instances(2);
        let serde_json::Value::Object(written) = serde_json::to_value(&full).unwrap() else {
            panic!("a family writes an object");
        };
        let written: Vec<&str> = written.keys().map(String::as_str).collect();
        let mut named = Family::field_names().to_vec();
        named.sort_unstable();
        assert_eq!(written, named);
        // A configuration writes its family's fields beside `threads`, in this order.
        assert_eq!(
            serde_json::to_string(&full.at(4)).unwrap(),
            r#"{"threads":4,"place":"spread","cpus":"all ~pu:0","throttle":2,"mem":"local","instances":2}"#
        );
        let configs = [
            Config::new(4, Policy::Os),
            full.at(1),
            Config::new(2, Policy::Os),
        ];
        let grid = Grid::spanning(&configs);
        assert_eq!(grid.threads, [1, 2, 4]);
        assert_eq!(grid.places, [Policy::Os, Policy::Spread]);
        assert_eq!(grid.instances, [1, 2]);
        assert!(configs.iter().all(|c| grid.configs().contains(c)));
        assert_eq!(
            Grid::spanning([&configs[0]]).configs(),
            [configs[0].clone()]
        );
    }

    #[test]
    fn grid_and_simplicity() {
        let grid = Grid::new(vec![1, 2], vec![Policy::Os, Policy::Spread]);
        assert_eq!(grid.configs().len(), 4);
        let mut configs = grid.configs();
        configs.sort_by_key(Config::simplicity_key);
        assert_eq!(configs[0].to_string(), "1 thread, place os");
        assert_eq!(configs[1].to_string(), "1 thread, place spread");
    }

    #[test]
    fn values_read_and_write_as_coretune_0_1_did() {
        // A runs.jsonl line's configuration from coretune 0.1, read back and written again.
        let old = r#"{"threads":2,"place":"spread","cpus":"all ~pu:0","throttle":2}"#;
        let c: Config = serde_json::from_str(old).unwrap();
        assert_eq!(c.family.place, Policy::Spread);
        assert_eq!(c.family.cpus.as_str(), "all ~pu:0");
        assert_eq!(c.family.throttle, ThrottleSpec::Limit(2));
        assert_eq!(serde_json::to_string(&c).unwrap(), old);
        let none: Config =
            serde_json::from_str(r#"{"threads":1,"place":"os","cpus":"all","throttle":null}"#)
                .unwrap();
        assert!(none.family.cpus.is_all() && none.family.throttle == ThrottleSpec::None);
        assert_eq!(none.to_string(), "1 thread, place os");
        let adaptive = none.family.with_throttle(ThrottleSpec::Adaptive).at(1);
        let text = serde_json::to_string(&adaptive).unwrap();
        assert!(text.contains(r#""throttle":"adaptive""#), "{text}");
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), adaptive);
        assert_eq!(
            adaptive.to_string(),
            "1 thread, place os, throttle adaptive"
        );
    }

    #[test]
    fn throttle_lists_and_order() {
        assert_eq!(
            ThrottleSpec::parse_list("none,2,cores,2,adaptive").unwrap(),
            vec![
                ThrottleSpec::None,
                ThrottleSpec::Limit(2),
                ThrottleSpec::Cores,
                ThrottleSpec::Adaptive
            ]
        );
        assert!(ThrottleSpec::parse_list("0").unwrap_err().contains("'0'"));
        assert!(ThrottleSpec::parse_list(",").is_err());
        assert!(ThrottleSpec::None < ThrottleSpec::Limit(1));
        assert!(ThrottleSpec::Limit(64) < ThrottleSpec::Cores);
        assert_eq!(ThrottleSpec::Cores.fixed_limit(LAPTOP), Some(4));
        assert_eq!(ThrottleSpec::Adaptive.fixed_limit(LAPTOP), None);
        assert!(ThrottleSpec::Adaptive.build(8, LAPTOP).is_some());
    }

    #[test]
    fn configs_order_as_their_text() {
        let c =
            |place: Policy, cpus: &str| Family::new(place).with_cpus(cpus.parse().unwrap()).at(2);
        let mut v = [
            c(Policy::Spread, "all"),
            c(Policy::Os, "all ~pu:0"),
            c(Policy::Os, "all"),
            c(Policy::Compact, "all"),
        ];
        v.sort();
        let names: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "2 threads, place compact",
                "2 threads, place os",
                "2 threads, place os, cpus 'all ~pu:0'",
                "2 threads, place spread"
            ]
        );
    }
}
