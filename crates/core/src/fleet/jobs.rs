//! A fleet folder and its jobs ([`SlurmFleet`]): `fleet.json` written, what to submit,
//! submitted through `sbatch`, refreshed from `squeue`/`sacct`, resumed (see the
//! [module documentation](super)).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::FleetError;
use super::folder::FleetReport;
use super::script::JobNodes;
use super::slurm::Slurm;
use super::spec::{FleetSpec, NodeSweep, TargetKind};
use crate::sweep::SweepFolder;

/// Version of `fleet.json`. Version 2 keeps the sweep's options ([`NodeSweep::Options`]);
/// version 1, still read (and written back as version 1, so the coretune that made it can
/// open it still), kept the argv its nodes repeated ([`NodeSweep::Args`]).
pub const SLURM_FLEET_SCHEMA: &str = "coretune-slurm-fleet/2";

/// `fleet.json` of fleets that keep their nodes' argv.
const SLURM_FLEET_SCHEMA_1: &str = "coretune-slurm-fleet/1";

const FLEET_FILE: &str = "fleet.json";

/// One job (or array task) submitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Slurm's id (`12`, or `12_3` for task 3 of array job 12).
    pub id: String,
    /// Its target's folder name.
    pub target: String,
    /// The node it runs or ran on (or was sent to), once known.
    pub node: Option<String>,
    /// Slurm's last reported state (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`,
    /// `TIMEOUT`, `NODE_FAIL`, ...; `UNKNOWN` once Slurm no longer knows it).
    pub state: String,
    /// Slurm's reason for the state, when it gives one.
    pub reason: Option<String>,
    /// Its output file.
    pub log: PathBuf,
    /// Its batch script.
    pub script: PathBuf,
}

impl JobRecord {
    /// Whether the job is still pending or running (any state Slurm has not finished).
    pub fn is_live(&self) -> bool {
        matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "CONFIGURING"
                | "COMPLETING"
                | "SUSPENDED"
                | "REQUEUED"
                | "REQUEUE_FED"
                | "REQUEUE_HOLD"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
                | "STOPPED"
        )
    }

    /// Whether the job ended some other way than completing (failed, cancelled, timed out, ...).
    pub fn has_failed(&self) -> bool {
        !self.is_live() && self.state != "COMPLETED" && self.state != "UNKNOWN"
    }

    /// `job 12_3 on n07: CANCELLED (log: DIR/gpu/slurm-12_3.log)`.
    pub fn describe(&self) -> String {
        let on = self
            .node
            .as_ref()
            .map_or(String::new(), |n| format!(" on {n}"));
        let reason = self
            .reason
            .as_ref()
            .map_or(String::new(), |r| format!(", {r}"));
        format!(
            "job {}{on}: {}{reason} (log: {})",
            self.id,
            self.state,
            self.log.display()
        )
    }
}

/// One submission: a batch script for a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The target's folder name.
    pub target: String,
    /// Which nodes its jobs may run on.
    pub place: JobNodes,
    /// The batch script.
    pub script: String,
}

impl Submission {
    /// How many jobs (array tasks) it makes.
    pub fn tasks(&self) -> usize {
        match &self.place {
            JobNodes::Any { tasks, .. } => *tasks,
            JobNodes::Node(_) => 1,
        }
    }
}

/// One node's sweep folder in the fleet, and how far it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeProgress {
    /// Its target's folder name.
    pub target: String,
    /// The node.
    pub node: String,
    /// Runs logged (warm-ups included).
    pub runs: usize,
    /// Whether its sweep is complete.
    pub complete: bool,
}

/// The fleet's jobs at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Waiting for a node.
    pub pending: usize,
    /// Running (or in another live state).
    pub running: usize,
    /// Completed.
    pub completed: usize,
    /// Ended otherwise (failed, cancelled, timed out, node failure, ...).
    pub failed: usize,
    /// No longer known to Slurm, state unknown.
    pub unknown: usize,
}

impl JobCounts {
    /// Whether no job is pending or running.
    pub fn is_settled(&self) -> bool {
        self.pending == 0 && self.running == 0
    }
}

/// `fleet.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FleetFile {
    schema: String,
    spec: FleetSpec,
    jobs: Vec<JobRecord>,
}

/// A fleet folder and its jobs (see the module documentation).
#[derive(Clone, Debug)]
pub struct SlurmFleet {
    dir: PathBuf,
    spec: FleetSpec,
    jobs: Vec<JobRecord>,
}

impl SlurmFleet {
    /// A fleet for `spec` in `dir`, in memory only (for `--dry-run`: nothing is written). `dir`
    /// is made absolute, since the jobs write there from other machines.
    ///
    /// # Errors
    ///
    /// The spec's [`FleetSpec::check`], and a `dir` that cannot be made absolute.
    pub fn new(dir: &Path, spec: FleetSpec) -> Result<Self, FleetError> {
        spec.check()?;
        let dir = std::path::absolute(dir).map_err(|e| FleetError::File {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Self {
            dir,
            spec,
            jobs: Vec::new(),
        })
    }

    /// Creates the fleet folder for `spec` and writes its `fleet.json`.
    ///
    /// # Errors
    ///
    /// As [`SlurmFleet::new`]; [`FleetError::AlreadyAFleet`] when `dir` holds a fleet already;
    /// creating the folder or the file.
    pub fn create(dir: &Path, spec: FleetSpec) -> Result<Self, FleetError> {
        let fleet = Self::new(dir, spec)?;
        if fleet.dir.join(FLEET_FILE).exists() {
            return Err(FleetError::AlreadyAFleet { dir: fleet.dir });
        }
        // Its files (fleet.json, the scripts, the fleet report) go nowhere near others'.
        crate::sweep::claim_dir(&fleet.dir)?;
        fleet.save()?;
        Ok(fleet)
    }

    /// Whether `dir` holds a fleet's `fleet.json`.
    pub fn is_fleet(dir: &Path) -> bool {
        dir.join(FLEET_FILE).is_file()
    }

    /// Opens the fleet in `dir`.
    ///
    /// # Errors
    ///
    /// `fleet.json` is missing, unreadable or not a fleet file of this version.
    pub fn open(dir: &Path) -> Result<Self, FleetError> {
        let path = dir.join(FLEET_FILE);
        let file_error = |message: String| FleetError::File {
            path: path.clone(),
            message,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| file_error(e.to_string()))?;
        let file: FleetFile = serde_json::from_str(&text).map_err(|e| file_error(e.to_string()))?;
        if file.schema != SLURM_FLEET_SCHEMA && file.schema != SLURM_FLEET_SCHEMA_1 {
            return Err(file_error(format!(
                "a '{}' file, not {SLURM_FLEET_SCHEMA}",
                file.schema
            )));
        }
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Ok(Self {
            dir,
            spec: file.spec,
            jobs: file.jobs,
        })
    }

    /// The sweep options a node runs (`coretune tune --fleet-node NODE_DIR`, from its batch
    /// script): those of the fleet `node_dir` is a node folder of. `node_dir` is
    /// `DIR/TARGET/NODE`, as the batch scripts name it, and the options are `DIR/fleet.json`'s,
    /// as the cli wrote them ([`NodeSweep::Options`]).
    ///
    /// # Errors
    ///
    /// [`FleetError::NotANode`] when `node_dir` is not in a target's folder of a fleet that
    /// keeps its options; reading `fleet.json` as [`SlurmFleet::open`].
    pub fn node_options(node_dir: &Path) -> Result<serde_json::Value, FleetError> {
        let not_a_node = |why: &str| FleetError::NotANode {
            dir: node_dir.to_path_buf(),
            why: why.to_owned(),
        };
        let target_dir = node_dir
            .parent()
            .filter(|_| node_dir.file_name().is_some())
            .ok_or_else(|| not_a_node("it is not DIR/TARGET/NODE"))?;
        let (Some(target), Some(fleet_dir)) = (target_dir.file_name(), target_dir.parent()) else {
            return Err(not_a_node("it is not DIR/TARGET/NODE"));
        };
        let fleet = Self::open(fleet_dir)?;
        if !fleet
            .spec
            .targets
            .iter()
            .any(|t| std::ffi::OsStr::new(&t.name()) == target)
        {
            return Err(not_a_node("its folder is not one of the fleet's targets"));
        }
        match &fleet.spec.sweep {
            NodeSweep::Options(options) => Ok(options.clone()),
            NodeSweep::Args(_) => Err(not_a_node(
                "the fleet's nodes repeat the arguments in their batch scripts",
            )),
        }
    }

    /// The fleet folder (absolute).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the fleet measures.
    pub fn spec(&self) -> &FleetSpec {
        &self.spec
    }

    /// Every job submitted, in order.
    pub fn jobs(&self) -> &[JobRecord] {
        &self.jobs
    }

    fn save(&self) -> Result<(), FleetError> {
        let path = self.dir.join(FLEET_FILE);
        let schema = match self.spec.sweep {
            NodeSweep::Options(_) => SLURM_FLEET_SCHEMA,
            NodeSweep::Args(_) => SLURM_FLEET_SCHEMA_1,
        };
        let file = FleetFile {
            schema: schema.into(),
            spec: self.spec.clone(),
            jobs: self.jobs.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(|e| FleetError::File {
            path: path.clone(),
            message: e.to_string(),
        })?;
        text.push('\n');
        // Written whole and renamed into place, so a reader never sees half a file.
        let tmp = self.dir.join(format!("{FLEET_FILE}.tmp"));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| FleetError::File {
                path,
                message: e.to_string(),
            })
    }

    /// Every node sweep folder of the fleet so far, with its progress.
    pub fn nodes(&self) -> Vec<NodeProgress> {
        let mut out = Vec::new();
        for target in &self.spec.targets {
            let name = target.name();
            for (node, dir) in node_dirs(&self.dir.join(&name)) {
                let (runs, complete) = match SweepFolder::read(&dir) {
                    Ok(f) => (f.lines().len(), f.is_complete()),
                    Err(_) => (0, false),
                };
                out.push(NodeProgress {
                    target: name.clone(),
                    node,
                    runs,
                    complete,
                });
            }
        }
        out
    }

    /// What to submit now: for a new fleet, every target's jobs; for one being resumed, only
    /// the nodes whose sweeps are incomplete and the nodes still to measure (see the module
    /// documentation). Targets with a live job are left alone. Node lists are expanded with
    /// `scontrol show hostnames`.
    ///
    /// # Errors
    ///
    /// A node list `scontrol` refuses.
    pub fn submissions(&self, slurm: &Slurm) -> Result<Vec<Submission>, FleetError> {
        let nodes = self.nodes();
        let mut out = Vec::new();
        for target in &self.spec.targets {
            let name = target.name();
            if self.jobs.iter().any(|j| j.target == name && j.is_live()) {
                continue;
            }
            let mine: Vec<&NodeProgress> = nodes.iter().filter(|n| n.target == name).collect();
            let complete = |node: &str| mine.iter().any(|n| n.node == node && n.complete);
            let mut places = Vec::new();
            match target.kind {
                TargetKind::Nodelist => {
                    for node in slurm.hostnames(&target.value)? {
                        if !complete(&node) {
                            places.push(JobNodes::Node(node));
                        }
                    }
                }
                TargetKind::Partition | TargetKind::Constraint => {
                    for n in mine.iter().filter(|n| !n.complete) {
                        places.push(JobNodes::Node(n.node.clone()));
                    }
                    let missing = self.spec.nodes.saturating_sub(mine.len());
                    if missing > 0 {
                        places.push(JobNodes::Any {
                            tasks: missing,
                            exclude: mine.iter().map(|n| n.node.clone()).collect(),
                        });
                    }
                }
            }
            for place in places {
                out.push(Submission {
                    target: name.clone(),
                    script: super::script::batch_script(&self.spec, &self.dir, target, &place),
                    place,
                });
            }
        }
        Ok(out)
    }

    /// Writes each submission's batch script into its target's folder, submits it with
    /// `sbatch` and records its jobs (`fleet.json` is saved after each, so a failure part-way
    /// loses no job id). Returns the jobs submitted.
    ///
    /// # Errors
    ///
    /// Writing a script or `fleet.json`, and `sbatch` refusing a script (the jobs submitted
    /// before it are recorded).
    pub fn submit(
        &mut self,
        slurm: &Slurm,
        submissions: &[Submission],
    ) -> Result<Vec<JobRecord>, FleetError> {
        let mut submitted = Vec::new();
        for sub in submissions {
            let target_dir = self.dir.join(&sub.target);
            let io = |path: &Path, e: std::io::Error| FleetError::File {
                path: path.to_path_buf(),
                message: e.to_string(),
            };
            std::fs::create_dir_all(&target_dir).map_err(|e| io(&target_dir, e))?;
            let n = (1..)
                .find(|n| !target_dir.join(format!("submit-{n}.sh")).exists())
                .unwrap_or(1);
            let script = target_dir.join(format!("submit-{n}.sh"));
            std::fs::write(&script, &sub.script).map_err(|e| io(&script, e))?;
            let id = slurm.submit(&script)?;
            let record = |id: String, node: Option<String>| JobRecord {
                log: target_dir.join(format!("slurm-{id}.log")),
                id,
                target: sub.target.clone(),
                node,
                state: "PENDING".into(),
                reason: None,
                script: script.clone(),
            };
            let jobs: Vec<JobRecord> = match &sub.place {
                JobNodes::Node(node) => vec![record(id, Some(node.clone()))],
                JobNodes::Any { tasks: 1, .. } => vec![record(id, None)],
                JobNodes::Any { tasks, .. } => (0..*tasks)
                    .map(|t| record(format!("{id}_{t}"), None))
                    .collect(),
            };
            self.jobs.extend(jobs.iter().cloned());
            submitted.extend(jobs);
            self.save()?;
        }
        Ok(submitted)
    }

    /// Asks Slurm what became of the live jobs, records it in `fleet.json` and returns the
    /// jobs that ended since the last refresh. A job `squeue` no longer lists is looked up in
    /// accounting (`sacct`), and failing that recorded as `UNKNOWN`: its node's folder then
    /// says whether its sweep completed.
    ///
    /// # Errors
    ///
    /// `squeue` failing, and writing `fleet.json`.
    pub fn refresh(&mut self, slurm: &Slurm) -> Result<Vec<JobRecord>, FleetError> {
        let live: Vec<String> = self
            .jobs
            .iter()
            .filter(|j| j.is_live())
            .map(|j| j.id.clone())
            .collect();
        if live.is_empty() {
            return Ok(Vec::new());
        }
        let mut known = slurm.queue(&live)?;
        let missing: Vec<String> = live
            .iter()
            .filter(|id| !known.iter().any(|k| &k.id == *id))
            .cloned()
            .collect();
        known.extend(slurm.accounting(&missing));
        let mut ended = Vec::new();
        for job in self.jobs.iter_mut().filter(|j| j.is_live()) {
            match known.iter().find(|k| k.id == job.id) {
                Some(k) => {
                    job.state.clone_from(&k.state);
                    job.reason.clone_from(&k.reason);
                    if k.node.is_some() {
                        job.node.clone_from(&k.node);
                    }
                }
                None => {
                    job.state = "UNKNOWN".into();
                    job.reason = Some("no longer known to Slurm".into());
                }
            }
            if !job.is_live() {
                ended.push(job.clone());
            }
        }
        self.save()?;
        Ok(ended)
    }

    /// How many jobs are in each state, by their last recorded state.
    pub fn counts(&self) -> JobCounts {
        let mut c = JobCounts::default();
        for j in &self.jobs {
            match j.state.as_str() {
                "PENDING" => c.pending += 1,
                "COMPLETED" => c.completed += 1,
                "UNKNOWN" => c.unknown += 1,
                _ if j.is_live() => c.running += 1,
                _ => c.failed += 1,
            }
        }
        c
    }

    /// The jobs still pending or running.
    pub fn live_jobs(&self) -> Vec<&JobRecord> {
        self.jobs.iter().filter(|j| j.is_live()).collect()
    }

    /// Adds each node's last job (its id, Slurm state and log) to a report of this fleet.
    pub fn annotate(&self, report: &mut FleetReport) {
        for t in &mut report.types {
            for node in &mut t.nodes {
                let job = self
                    .jobs
                    .iter()
                    .rev()
                    .find(|j| j.target == t.name && j.node.as_deref() == Some(&node.name));
                node.job = job.map(JobRecord::describe);
            }
        }
    }
}

/// The node folders (holding a `sweep.json`) of a target folder, by name.
fn node_dirs(target_dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(target_dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("sweep.json").is_file())
                .filter_map(|p| Some((p.file_name()?.to_string_lossy().into_owned(), p)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::fleet::SlurmTarget;

    fn target(kind: TargetKind, value: &str) -> SlurmTarget {
        SlurmTarget {
            kind,
            value: value.into(),
        }
    }

    fn spec(targets: Vec<SlurmTarget>) -> FleetSpec {
        FleetSpec {
            targets,
            nodes: 1,
            sbatch_args: Vec::new(),
            account: None,
            time: None,
            coretune: PathBuf::from("/bin/coretune"),
            sweep: NodeSweep::Options(serde_json::json!({"threads": "pus"})),
        }
    }

    #[test]
    fn target_folders_and_checks() {
        assert_eq!(target(TargetKind::Partition, "debug").name(), "debug");
        assert_eq!(
            target(TargetKind::Constraint, "skylake&ib").name(),
            "constraint-skylake_ib"
        );
        assert_eq!(
            target(TargetKind::Nodelist, "n[01-04]").name(),
            "nodes-n_01-04_"
        );
        assert!(spec(vec![]).check().is_err());
        let twice = spec(vec![
            target(TargetKind::Partition, "a"),
            target(TargetKind::Partition, "a"),
        ]);
        assert!(
            twice
                .check()
                .unwrap_err()
                .to_string()
                .contains("share the folder")
        );
        let mut s = spec(vec![target(TargetKind::Partition, "a")]);
        s.sbatch_args = vec!["qos=x".into()];
        assert!(s.check().unwrap_err().to_string().contains("start with -"));
        s.sbatch_args = vec!["--qos=x".into()];
        s.check().unwrap();
    }

    #[test]
    fn job_states_read_as_slurm_names_them() {
        let job = |state: &str| JobRecord {
            id: "12_1".into(),
            target: "a".into(),
            node: Some("n1".into()),
            state: state.into(),
            reason: None,
            log: PathBuf::from("/o/a/slurm-12_1.log"),
            script: PathBuf::from("/o/a/submit-1.sh"),
        };
        assert!(job("PENDING").is_live() && job("COMPLETING").is_live());
        assert!(!job("COMPLETED").is_live() && !job("COMPLETED").has_failed());
        for failed in [
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
        ] {
            assert!(job(failed).has_failed(), "{failed}");
        }
        assert!(!job("UNKNOWN").has_failed() && !job("UNKNOWN").is_live());
        assert_eq!(
            job("CANCELLED").describe(),
            "job 12_1 on n1: CANCELLED (log: /o/a/slurm-12_1.log)"
        );
    }

    #[test]
    fn a_node_folder_reads_its_fleets_sweep_options() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fleet");
        let s = spec(vec![target(TargetKind::Constraint, "skylake")]);
        SlurmFleet::create(&dir, s).unwrap();
        let text = std::fs::read_to_string(dir.join(FLEET_FILE)).unwrap();
        assert!(text.contains(SLURM_FLEET_SCHEMA), "{text}");
        let node = dir.join("constraint-skylake").join("n07");
        assert_eq!(
            SlurmFleet::node_options(&node).unwrap(),
            serde_json::json!({"threads": "pus"})
        );
        for not_a_node in [dir.join("other/n07"), dir.join("constraint-skylake")] {
            let e = SlurmFleet::node_options(&not_a_node).unwrap_err();
            assert!(
                matches!(e, FleetError::NotANode { .. } | FleetError::File { .. }),
                "{e}"
            );
        }
    }

    /// A fleet written before the options were kept (`tests/data/fleet-1`): its `fleet.json`
    /// (version 1) holds the argv its nodes repeat, which it keeps, and stays version 1 when
    /// saved again.
    #[test]
    fn a_fleet_of_version_1_keeps_its_sweep_arguments() {
        let old = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fleet-1/fleet.json"),
        )
        .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fleet");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(FLEET_FILE), &old).unwrap();
        let fleet = SlurmFleet::open(&dir).unwrap();
        let NodeSweep::Args(args) = &fleet.spec().sweep else {
            panic!("{:?}", fleet.spec().sweep);
        };
        assert_eq!(args[..2], ["sum", "--threads=1,2"]);
        let e = SlurmFleet::node_options(&dir.join("alpha/n1")).unwrap_err();
        assert!(matches!(e, FleetError::NotANode { .. }), "{e}");
        fleet.save().unwrap();
        let again: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(FLEET_FILE)).unwrap()).unwrap();
        let was: serde_json::Value = serde_json::from_str(&old).unwrap();
        assert_eq!(again, was);
    }

    #[test]
    fn fleet_json_round_trips_and_refuses_a_second_fleet() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fleet");
        let s = spec(vec![target(TargetKind::Partition, "a")]);
        let f = SlurmFleet::create(&dir, s.clone()).unwrap();
        assert!(SlurmFleet::is_fleet(&dir));
        let again = SlurmFleet::open(&dir).unwrap();
        assert_eq!(again.spec(), &s);
        assert_eq!(again.dir(), f.dir());
        assert!(matches!(
            SlurmFleet::create(&dir, s.clone()),
            Err(FleetError::AlreadyAFleet { .. })
        ));
        // A folder holding other files is not a fleet's to write in.
        let busy = tmp.path().join("busy");
        std::fs::create_dir(&busy).unwrap();
        std::fs::write(busy.join("report.html"), "mine").unwrap();
        let e = SlurmFleet::create(&busy, s).unwrap_err();
        assert!(
            e.to_string()
                .contains("is not empty: --out takes a new or empty folder"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(busy.join("report.html")).unwrap(),
            "mine"
        );
    }
}
