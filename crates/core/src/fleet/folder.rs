//! The fleet report: the sweeps of several node types (one or more nodes each) merged into one
//! model — per type its recommendation, a configuration × node type table, and one setting for
//! the whole fleet ([`FleetReport`], the content of `fleet-summary.json`). Turning it into bytes
//! is the caller's.
//!
//! # The folder
//!
//! A fleet folder holds per-node sweep folders, one level of node types above them:
//! `DIR/TYPE/NODE/sweep.json` (what `coretune tune --slurm` writes: one subfolder per target,
//! one per node under it). A sweep folder directly under `DIR` (`DIR/NAME/sweep.json`) is a
//! type with a single node, so a handful of folders copied from different machines report too.
//! The runs of every node of a type are merged: node-to-node variation becomes part of the
//! type's run-to-run noise, as it would in production.
//!
//! # The fleet-wide setting
//!
//! For each type, each configuration's median time is divided by the type's fastest median;
//! a configuration's fleet score is the geometric mean of those ratios over the types
//! (Fleming & Wallace 1986: the mean of ratios that does not depend on which type is the
//! reference). Only configurations measured successfully on every type compete. The lowest
//! score wins, except that every configuration within the sweeps' tolerance (3%) of it ties,
//! and a tie goes to the simplest (fewer threads, no pinning, no CPU exclusion, no throttle),
//! as a single machine's recommendation does. What each type loses by using it is its ratio to
//! that type's fastest.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::grid::Config;
use crate::program::watch::CpuPlace;
use crate::sweep::{RunLine, RunView, SweepError, SweepFolder, SweepReport, SweepResults, Target};

/// Version of `fleet-summary.json`; see `docs/fleet.schema.json`.
pub const FLEET_SCHEMA: &str = "coretune-fleet/1";

/// One node's sweep in a fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// The node's name (its folder's).
    pub name: String,
    /// Its sweep folder, relative to the fleet folder.
    pub dir: String,
    /// Measured runs logged (warm-ups excluded).
    pub runs: usize,
    /// Whether its sweep is complete (continuing it would make no run).
    pub complete: bool,
    /// The Slurm job that measured it, its state and log, when the fleet's `fleet.json` knows
    /// them (filled in by the Slurm side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// One node type: its nodes and the report of their merged runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeTypeReport {
    /// The type's name (its folder's: a partition, a constraint, a node list).
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<NodeInfo>,
    /// The report of every node's runs together (the type folder's `summary.json`).
    pub report: SweepReport,
}

/// One configuration on one type.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetCell {
    /// Median wall time, seconds.
    pub median_s: f64,
    /// Bootstrap 95% interval of the median, seconds.
    pub ci_s: Option<(f64, f64)>,
    /// Median over the type's fastest median (1 = the type's fastest).
    pub ratio: f64,
}

/// One row of the configuration × node type table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetRow {
    /// The configuration.
    #[serde(flatten)]
    pub config: Config,
    /// One cell per type, in the order of [`FleetReport::types`] (`null` where the type has no
    /// successful run of it).
    pub cells: Vec<Option<FleetCell>>,
    /// Geometric mean of the cells' ratios, when every type has one.
    pub geomean: Option<f64>,
}

/// What one type gives up by using the fleet-wide setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeLoss {
    /// The type.
    pub name: String,
    /// The setting's median over the type's fastest median (1.04 = 4% slower).
    pub ratio: f64,
    /// The type's own recommendation.
    pub recommended: Option<Config>,
    /// The setting's median over that of the type's own recommendation.
    pub ratio_to_recommended: Option<f64>,
    /// The lines that apply the setting on this type (its topology, its CPU numbers).
    pub apply: Vec<String>,
}

/// The single setting for the whole fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetChoice {
    /// The setting.
    #[serde(flatten)]
    pub config: Config,
    /// Its geometric mean ratio to each type's fastest.
    pub geomean: f64,
    /// The configuration with the lowest geometric mean.
    pub best: Config,
    /// That lowest geometric mean.
    pub best_geomean: f64,
    /// Configurations measured successfully on every type (the candidates).
    pub candidates: usize,
    /// Why, in a sentence or two.
    pub reason: String,
    /// Per type, what using it costs.
    pub losses: Vec<TypeLoss>,
}

/// Everything `fleet-summary.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// [`FLEET_SCHEMA`].
    pub schema: String,
    /// coretune's version.
    pub tool_version: String,
    /// Unix time the report was made, seconds.
    pub created_at: f64,
    /// What was measured (the first type's target).
    pub target: Target,
    /// The node types, by name.
    pub types: Vec<NodeTypeReport>,
    /// Every configuration measured on any type, in configuration order.
    pub configs: Vec<FleetRow>,
    /// The fleet-wide setting, when some configuration was measured on every type.
    pub fleet: Option<FleetChoice>,
    /// Caveats: incomplete nodes, types measuring different things, no common configuration.
    pub warnings: Vec<String>,
}

/// A fleet folder read from disk: its node types and their nodes' sweep folders.
#[derive(Debug)]
pub struct FleetFolder {
    dir: PathBuf,
    types: Vec<TypeDir<SweepFolder>>,
}

/// One node type's folder and its nodes (name, and their folder or its path).
#[derive(Debug)]
struct TypeDir<T> {
    name: String,
    dir: PathBuf,
    nodes: Vec<(String, T)>,
}

/// The files `coretune report` writes into a fleet folder (`report::fleet` in the cli).
const FLEET_REPORT_FILES: [&str; 4] = [
    "report.html",
    "fleet.md",
    "fleet-summary.json",
    "fleet-speedup.svg",
];

impl FleetFolder {
    /// Whether `dir` is a fleet folder: not a sweep folder itself, with a sweep folder one or
    /// two levels below it, and either `tune --slurm`'s `fleet.json` or nothing beside those
    /// folders but a fleet report's own files. A folder that also holds other things (`/tmp`,
    /// a home folder with a sweep in it) is not one: `coretune report` writes its files into
    /// a fleet folder and into every sweep folder it merges.
    pub fn is_fleet(dir: &Path) -> bool {
        if dir.join("sweep.json").exists() {
            return false;
        }
        let found = sweep_dirs(dir);
        if found.is_empty() {
            return false;
        }
        if dir.join("fleet.json").is_file() {
            return true;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.filter_map(Result::ok).all(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with('.')
                || FLEET_REPORT_FILES.contains(&name.as_ref())
                || found.iter().any(|t| t.dir == e.path())
        })
    }

    /// Reads the fleet in `dir` (see the module documentation for the layout) without changing
    /// anything there.
    ///
    /// # Errors
    ///
    /// [`SweepError::NotAFleet`] when `dir` holds no sweep folder at either level, and the
    /// errors of reading a node's sweep folder.
    pub fn read(dir: &Path) -> Result<Self, SweepError> {
        let found = sweep_dirs(dir);
        if found.is_empty() {
            return Err(SweepError::NotAFleet {
                dir: dir.to_path_buf(),
            });
        }
        let mut types = Vec::new();
        for t in found {
            let nodes = t
                .nodes
                .into_iter()
                .map(|(node, path)| Ok((node, SweepFolder::read(&path)?)))
                .collect::<Result<Vec<_>, SweepError>>()?;
            types.push(TypeDir {
                name: t.name,
                dir: t.dir,
                nodes,
            });
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            types,
        })
    }

    /// The fleet folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder of type `i` (where its merged report files go).
    pub fn type_dir(&self, i: usize) -> Option<&Path> {
        self.types.get(i).map(|t| t.dir.as_path())
    }

    /// What the per-run plots of type `i` draw: a run of its first node ([`RunView::choose`]
    /// on that node's runs, for the type's `report`).
    pub fn run_view(&self, i: usize, report: &SweepReport, places: &[CpuPlace]) -> RunView {
        self.first_node(i)
            .map(|f| f.results().run_view(report, places))
            .unwrap_or_default()
    }

    /// The first node's folder of type `i` (its `topology.xml` groups the per-CPU plots).
    pub fn first_node(&self, i: usize) -> Option<&SweepFolder> {
        self.types
            .get(i)
            .and_then(|t| t.nodes.first())
            .map(|(_, f)| f)
    }

    /// The fleet report. Each type's report is built from its nodes' runs together, with the
    /// apply lines of its first node's topology (kept from that node's `summary.json` when it
    /// recommends the same configuration).
    ///
    /// # Errors
    ///
    /// A node folder without a readable `machine.json`.
    pub fn report(&self) -> Result<FleetReport, SweepError> {
        let mut types = Vec::new();
        let mut warnings = Vec::new();
        for TypeDir { name, nodes, .. } in &self.types {
            let Some((_, first)) = nodes.first() else {
                continue;
            };
            let mut lines: Vec<RunLine> = Vec::new();
            let mut infos = Vec::new();
            for (node, folder) in nodes {
                if folder.spec().design != first.spec().design
                    || folder.spec().target.label() != first.spec().target.label()
                {
                    warnings.push(format!(
                        "{name}/{node}: its sweep's grid or target differs from {name}'s first \
                         node's; its runs are merged all the same"
                    ));
                }
                let complete = folder.is_complete();
                if !complete {
                    warnings.push(format!(
                        "{name}/{node}: the sweep is incomplete (continue it with \
                         coretune tune --resume)"
                    ));
                }
                infos.push(NodeInfo {
                    name: node.clone(),
                    dir: folder
                        .dir()
                        .strip_prefix(&self.dir)
                        .unwrap_or(folder.dir())
                        .display()
                        .to_string(),
                    runs: folder.lines().iter().filter(|l| !l.warmup).count(),
                    complete,
                    job: None,
                });
                lines.extend(folder.lines().iter().cloned());
            }
            for (i, line) in lines.iter_mut().enumerate() {
                line.seq = i;
            }
            let results = SweepResults {
                dir: first.dir(),
                spec: first.spec(),
                lines: &lines,
            };
            let previous = first.previous_report();
            let report = results.report(first.machine()?, None, previous.as_ref());
            types.push(NodeTypeReport {
                name: name.clone(),
                nodes: infos,
                report,
            });
        }
        Ok(FleetReport::build(types, warnings, &|i, c| {
            self.first_node(i)
                .and_then(SweepFolder::topology)
                .map(|t| {
                    let spec = self.types[i].nodes[0].1.spec();
                    crate::sweep::apply_lines_for(&t, &spec.target, c, &spec.settings)
                })
                .unwrap_or_default()
        }))
    }
}

/// The sweep folders under `dir`, grouped by type, by name.
fn sweep_dirs(dir: &Path) -> Vec<TypeDir<PathBuf>> {
    let subdirs = |d: &Path| -> Vec<(String, PathBuf)> {
        let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(d)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().is_dir())
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let is_sweep = |d: &Path| d.join("sweep.json").is_file();
    let mut out = Vec::new();
    for (name, path) in subdirs(dir) {
        if is_sweep(&path) {
            out.push(TypeDir {
                name: name.clone(),
                dir: path.clone(),
                nodes: vec![(name, path)],
            });
            continue;
        }
        let nodes: Vec<(String, PathBuf)> = subdirs(&path)
            .into_iter()
            .filter(|(_, p)| is_sweep(p))
            .collect();
        if !nodes.is_empty() {
            out.push(TypeDir {
                name,
                dir: path,
                nodes,
            });
        }
    }
    out
}

impl FleetReport {
    /// Builds the fleet model from the types' reports: the table, and the fleet-wide setting
    /// with what each type loses by it; `apply(i, config)` gives the lines that apply `config`
    /// on type `i`.
    pub fn build(
        types: Vec<NodeTypeReport>,
        mut warnings: Vec<String>,
        apply: &dyn Fn(usize, &Config) -> Vec<String>,
    ) -> Self {
        let target = types.first().map_or(
            Target::Command {
                argv: Vec::new(),
                shell: false,
            },
            |t| t.report.target.clone(),
        );
        for t in &types {
            if t.report.target.label() != target.label() {
                warnings.push(format!(
                    "{} measured '{}', not '{}': the fleet-wide comparison mixes targets",
                    t.name,
                    t.report.target.label(),
                    target.label()
                ));
            }
        }
        let fastest: Vec<Option<f64>> = types
            .iter()
            .map(|t| {
                t.report
                    .configs
                    .iter()
                    .filter_map(|c| c.median_s)
                    .min_by(f64::total_cmp)
            })
            .collect();
        let all: BTreeSet<&Config> = types
            .iter()
            .flat_map(|t| t.report.configs.iter().map(|c| &c.config))
            .collect();
        let configs: Vec<FleetRow> = all
            .into_iter()
            .map(|config| {
                let cells: Vec<Option<FleetCell>> = types
                    .iter()
                    .zip(&fastest)
                    .map(|(t, best)| {
                        let row = t.report.configs.iter().find(|c| &c.config == config)?;
                        let median_s = row.median_s?;
                        Some(FleetCell {
                            median_s,
                            ci_s: row.ci_s,
                            ratio: median_s / (*best)?,
                        })
                    })
                    .collect();
                #[allow(clippy::cast_precision_loss)]
                let geomean = (!cells.is_empty() && cells.iter().all(Option::is_some)).then(|| {
                    let logs: f64 = cells.iter().flatten().map(|c| c.ratio.ln()).sum();
                    (logs / cells.len() as f64).exp()
                });
                FleetRow {
                    config: config.clone(),
                    cells,
                    geomean,
                }
            })
            .collect();
        let tolerance = types
            .first()
            .map_or(crate::sweep::DEFAULT_TOLERANCE_PCT / 100.0, |t| {
                t.report.design.tolerance
            });
        let fleet = choose(&types, &configs, tolerance, apply);
        if fleet.is_none() && types.len() > 1 {
            warnings.push(
                "no configuration was measured successfully on every node type, so there is no \
                 fleet-wide setting: sweep every type over the same grid with --exhaustive"
                    .into(),
            );
        }
        Self {
            schema: FLEET_SCHEMA.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_at: crate::sys::since_epoch().as_secs_f64(),
            target,
            types,
            configs,
            fleet,
            warnings,
        }
    }

    /// The speedup curves to draw on one plot: per type, (label, [(threads, speedup)]) of the
    /// fleet-wide setting's family (its configuration but the thread count) where the type
    /// measured it, else of its own recommendation's family.
    pub fn speedup_curves(&self) -> Vec<(String, Vec<(usize, f64)>)> {
        let fleet_family = self.fleet.as_ref().map(|f| &f.config.family);
        self.types
            .iter()
            .filter_map(|t| {
                let has = |fam: &crate::grid::Family| {
                    t.report
                        .configs
                        .iter()
                        .any(|c| &c.config.family == fam && c.speedup.is_some())
                };
                let family = fleet_family
                    .filter(|f| has(f))
                    .or_else(|| t.report.recommendation.as_ref().map(|r| &r.config.family))?;
                let mut points: Vec<(usize, f64)> = t
                    .report
                    .configs
                    .iter()
                    .filter(|c| c.config.family == *family)
                    .filter_map(|c| Some((c.config.threads, c.speedup?)))
                    .collect();
                points.sort_by_key(|p| p.0);
                Some((format!("{}: {family}", t.name), points))
            })
            .collect()
    }
}

/// The fleet-wide setting (see the module documentation).
fn choose(
    types: &[NodeTypeReport],
    rows: &[FleetRow],
    tolerance: f64,
    apply: &dyn Fn(usize, &Config) -> Vec<String>,
) -> Option<FleetChoice> {
    let candidates: Vec<(&FleetRow, f64)> =
        rows.iter().filter_map(|r| Some((r, r.geomean?))).collect();
    let &(best, best_g) = candidates.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let &(chosen, g) = candidates
        .iter()
        .filter(|(_, g)| *g <= best_g * (1.0 + tolerance))
        .min_by_key(|(r, _)| r.config.simplicity_key())?;
    let losses: Vec<TypeLoss> = types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ratio = chosen.cells[i].map_or(f64::NAN, |c| c.ratio);
            let recommended = t.report.recommendation.as_ref().map(|r| r.config.clone());
            let own = t.report.recommended_row().and_then(|r| r.median_s);
            let ratio_to_recommended = own.zip(chosen.cells[i]).map(|(own, c)| c.median_s / own);
            TypeLoss {
                name: t.name.clone(),
                ratio,
                recommended,
                ratio_to_recommended,
                apply: apply(i, &chosen.config),
            }
        })
        .collect();
    let per_type: Vec<String> = losses
        .iter()
        .map(|l| format!("{} {}", l.name, pct(l.ratio)))
        .collect();
    let mut reason = format!(
        "{} is {:.3}× each type's fastest on geometric mean over {} node types ({}; {} \
         configurations measured on every type).",
        chosen.config,
        g,
        types.len(),
        per_type.join(", "),
        candidates.len()
    );
    if chosen.config != best.config {
        reason.push_str(&format!(
            " {} has the lowest geometric mean ({best_g:.3}×), within the {:.0}% tolerance: the \
             simpler one is recommended.",
            best.config,
            tolerance * 100.0
        ));
    }
    let gives_up: Vec<String> = losses
        .iter()
        .filter_map(|l| {
            let r = l.ratio_to_recommended?;
            let own = l.recommended.as_ref()?;
            (own != &chosen.config && r > 1.0).then(|| {
                format!(
                    "{} gives up {:.1}% against its own recommendation ({own})",
                    l.name,
                    (r - 1.0) * 100.0
                )
            })
        })
        .collect();
    if !gives_up.is_empty() {
        reason.push_str(&format!(" {}.", gives_up.join("; ")));
    }
    Some(FleetChoice {
        config: chosen.config.clone(),
        geomean: g,
        best: best.config.clone(),
        best_geomean: best_g,
        candidates: candidates.len(),
        reason,
        losses,
    })
}

/// A ratio as a signed percentage: `+4.1%`, `-2.0%`, `+0.0%`.
fn pct(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

#[cfg(test)]
mod test;
