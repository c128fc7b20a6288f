//! `coretune tune --slurm` against a real Slurm: a one-node cluster on 127.0.0.1 (slurmctld,
//! slurmd and munge from Debian, started by `scripts/slurm/local-start.sh` on free ports) with two
//! partitions over the node standing for two node types. The scenarios share one cluster and run
//! in order in one test (dry run first, while the queue is empty). Needs root; skipped with a
//! note otherwise, or when Slurm is not installed (`scripts/setup.sh --test` installs it).
// Not built for Windows: a real Slurm cluster of Debian's daemons on this host: Linux only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// A running one-node cluster, stopped when dropped.
struct Cluster {
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts the cluster, or says why it cannot be started here.
    fn start() -> Result<Self, String> {
        let uid = Command::new("id").arg("-u").output().unwrap();
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not root (slurmd runs jobs as root here)".into());
        }
        for p in [
            "slurmctld",
            "slurmd",
            "munged",
            "sbatch",
            "squeue",
            "scontrol",
        ] {
            if !on_path(p) {
                return Err(format!(
                    "{p} is not installed (scripts/setup.sh --test installs Slurm)"
                ));
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let (ctld, slurmd) = (util::free_port(), util::free_port());
        let out = Command::new(scripts().join("local-start.sh"))
            .arg(dir.path())
            .args([ctld.to_string(), slurmd.to_string()])
            .output()
            .unwrap();
        let cluster = Self { dir };
        assert!(
            out.status.success(),
            "local-start.sh failed: {}{}",
            String::from_utf8_lossy(&out.stderr),
            cluster.logs()
        );
        Ok(cluster)
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for f in ["slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"] {
            let text =
                std::fs::read_to_string(self.dir.path().join("log").join(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s.push_str(&format!(
                "\n--- {f} (last lines, newest first):\n{}",
                tail.join("\n")
            ));
        }
        s
    }

    /// A Slurm client command for this cluster.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }

    /// `coretune ARGS` for this cluster, expected to exit with `status`.
    fn coretune(&self, args: &[&str], status: i32) -> Output {
        let out = util::coretune()
            .env("SLURM_CONF", self.conf())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(status),
            "coretune {args:?}: {}{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        out
    }

    /// The job ids in the queue (pending or running).
    fn queue(&self) -> String {
        let out = self
            .cmd("squeue")
            .args(["-h", "-o", "%i"])
            .output()
            .unwrap();
        util::assert_ok(&out);
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(scripts().join("local-stop.sh"))
            .arg(self.dir.path())
            .status();
    }
}

/// Both partitions as node types, looked at every second, quietly.
const TWO_TYPES: [&str; 8] = [
    "--slurm",
    "--partition",
    "alpha",
    "--partition",
    "beta",
    "--poll",
    "1",
    "--quiet",
];

/// The tiny built-in sweep the fleet scenarios run (4 configurations × 2 runs, milliseconds
/// each) on both types, with `extra` before `--out DIR`.
fn sum_sweep<'a>(extra: &[&'a str], out: &'a str) -> Vec<&'a str> {
    let mut v = vec![
        "tune",
        "sum",
        "--size",
        "small",
        "--threads",
        "1,2",
        "--place",
        "os,compact",
        "--throttle",
        "none",
        "--runs",
        "2",
        // No deciding runs: the run counts below are --runs per configuration.
        "--max-runs",
        "2",
        "--warmup",
        "0",
        "--exhaustive",
    ];
    v.extend(TWO_TYPES);
    v.extend_from_slice(extra);
    v.extend(["--out", out]);
    v
}

#[test]
fn without_sbatch_on_path_one_line_and_status_2() {
    let empty = tempfile::tempdir().unwrap();
    let out = util::coretune()
        .env("PATH", empty.path())
        .args([
            "tune",
            "sum",
            "--slurm",
            "--partition",
            "alpha",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("coretune: sbatch is not on PATH: --slurm needs Slurm's client"),
        "{stderr}"
    );
}

#[test]
fn fleets_on_a_real_slurm_cluster() {
    let cluster = match Cluster::start() {
        Ok(c) => c,
        Err(why) => {
            util::skip(format!("the Slurm tests need a local cluster: {why}"));
            return;
        }
    };
    let started = Instant::now();
    type Part = (&'static str, fn(&Cluster));
    let parts: [Part; 7] = [
        (
            "dry run",
            dry_run_submits_nothing_and_sbatch_accepts_its_scripts,
        ),
        (
            "fleet",
            two_partitions_make_one_report_with_a_fleet_wide_setting,
        ),
        ("job array", an_array_task_on_a_measured_node_adds_nothing),
        ("srun binding", srun_lines_bind_where_they_say),
        (
            "srun launcher",
            a_sweep_inside_an_allocation_launches_its_ranks_with_srun,
        ),
        (
            "cancel and resume",
            a_cancelled_job_is_recorded_and_resume_measures_only_what_is_missing,
        ),
        (
            "fleet folder of version 1",
            a_fleet_folder_of_version_1_runs_its_sweep_arguments_when_resumed,
        ),
    ];
    for (name, part) in parts {
        let t = Instant::now();
        part(&cluster);
        eprintln!("{name}: {:.1} s", t.elapsed().as_secs_f64());
    }
    eprintln!(
        "Slurm tests: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}

fn dry_run_submits_nothing_and_sbatch_accepts_its_scripts(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let dir_s = dir.to_str().unwrap();
    let args = sum_sweep(
        &[
            "--nodelist",
            "localhost",
            "--dry-run",
            "--time",
            "5",
            "--sbatch-arg=--comment=coretune-test",
        ],
        dir_s,
    );
    let out = c.coretune(&args, 0);
    assert!(!dir.exists(), "a dry run made the fleet folder");
    assert_eq!(c.queue(), "", "a dry run submitted a job");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let scripts: Vec<String> = stdout
        .split("#!/bin/bash")
        .skip(1)
        .map(|s| format!("#!/bin/bash{s}"))
        .collect();
    assert_eq!(scripts.len(), 3, "{stdout}");
    let targets = [
        "#SBATCH --partition=alpha",
        "#SBATCH --partition=beta",
        "#SBATCH --nodelist=localhost",
    ];
    for (i, (script, target)) in scripts.iter().zip(targets).enumerate() {
        for line in [
            target,
            "#SBATCH --exclusive",
            "#SBATCH --time=5",
            "#SBATCH --comment=coretune-test",
        ] {
            assert!(
                script.lines().any(|l| l == line),
                "{line} missing:\n{script}"
            );
        }
        let file = tmp.path().join(format!("{i}.sh"));
        std::fs::write(&file, script).unwrap();
        let test = c
            .cmd("sbatch")
            .arg("--test-only")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            test.status.success(),
            "sbatch --test-only refused:\n{script}\n{}",
            String::from_utf8_lossy(&test.stderr)
        );
        assert!(
            String::from_utf8_lossy(&test.stderr).contains("to start at"),
            "{}",
            String::from_utf8_lossy(&test.stderr)
        );
    }
    assert_eq!(c.queue(), "", "sbatch --test-only submitted a job");
}

fn two_partitions_make_one_report_with_a_fleet_wide_setting(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let dir_s = dir.to_str().unwrap();
    // Submitted without waiting; `--resume` then follows the jobs (resubmitting nothing while
    // they run) and reports.
    let out = c.coretune(&sum_sweep(&["--no-wait"], dir_s), 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("Jobs: "), "{stdout}");
    assert!(
        stdout.contains(&format!("coretune report {dir_s}")),
        "{stdout}"
    );
    let out = c.coretune(&["tune", "--resume", dir_s, "--poll", "1", "--quiet"], 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Fleet-wide setting: "), "{stdout}");
    let fleet = util::read_json(&dir.join("fleet.json"));
    let jobs = fleet["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for job in jobs {
        assert_eq!(job["state"], "COMPLETED", "{job}");
        assert_eq!(job["node"], "localhost");
        assert!(Path::new(job["log"].as_str().unwrap()).is_file(), "{job}");
    }
    // The nodes read the sweep's options, as given, from fleet.json; the scripts name none.
    assert_eq!(fleet["schema"], "coretune-slurm-fleet/2");
    let options = &fleet["spec"]["sweep"];
    assert_eq!(options["threads"], "1,2", "{options}");
    assert_eq!(options["place"], serde_json::json!(["os", "compact"]));
    assert_eq!(options["exhaustive"], true);
    let script = std::fs::read_to_string(jobs[0]["script"].as_str().unwrap()).unwrap();
    assert!(
        script.contains(" tune --quiet --fleet-node \"$dir\"\n"),
        "{script}"
    );
    assert!(!script.contains("--threads"), "{script}");
    let report = util::read_json(&dir.join("fleet-summary.json"));
    util::assert_valid(
        &util::schema("fleet.schema.json"),
        &report,
        "fleet-summary.json",
    );
    let names: Vec<&str> = report["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    for t in report["types"].as_array().unwrap() {
        let nodes = t["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0]["complete"], true);
        assert_eq!(nodes[0]["runs"], 8);
        assert!(nodes[0]["job"].as_str().unwrap().contains("COMPLETED"));
        let rec = &t["report"]["recommendation"];
        assert!(rec["threads"].as_u64().is_some(), "{rec}");
        assert!(!rec["reason"].as_str().unwrap().is_empty());
        // The type's merged report sits in its folder, as a sweep's would.
        let own = util::summary(&dir.join(t["name"].as_str().unwrap()));
        util::assert_valid(&util::schema("summary.schema.json"), &own, "type summary");
    }
    assert_eq!(report["configs"].as_array().unwrap().len(), 4);
    for row in report["configs"].as_array().unwrap() {
        assert_eq!(row["cells"].as_array().unwrap().len(), 2);
        assert!(row["geomean"].as_f64().unwrap() >= 1.0);
    }
    let f = &report["fleet"];
    assert_eq!(f["candidates"], 4);
    let losses = f["losses"].as_array().unwrap();
    assert_eq!(losses.len(), 2);
    for l in losses {
        assert!(l["ratio"].as_f64().unwrap() >= 1.0);
        let apply: Vec<&str> = l["apply"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            apply.iter().any(|a| a.starts_with("#SBATCH --nodes=1")),
            "{apply:?}"
        );
        assert!(apply.iter().any(|a| a.starts_with("srun ")), "{apply:?}");
    }
    // The geometric mean of the setting's ratios, recomputed.
    let g: f64 = losses
        .iter()
        .map(|l| l["ratio"].as_f64().unwrap().ln())
        .sum::<f64>()
        / 2.0;
    assert!((g.exp() - f["geomean"].as_f64().unwrap()).abs() < 1e-9);
    for file in ["report.html", "fleet.md", "fleet-speedup.svg"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let svg = std::fs::read_to_string(dir.join("fleet-speedup.svg")).unwrap();
    assert!(
        svg.contains("alpha: place") && svg.contains("beta: place"),
        "{svg}"
    );
    // `coretune report` rebuilds the same fleet; `compare` works between node types.
    let again = c.coretune(&["report", "--json", dir.to_str().unwrap()], 0);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["fleet"]["threads"], f["threads"]);
    let cmp = c.coretune(
        &[
            "compare",
            dir.join("alpha").to_str().unwrap(),
            dir.join("beta").to_str().unwrap(),
        ],
        0,
    );
    let cmp = String::from_utf8(cmp.stdout).unwrap();
    assert!(cmp.contains("over 4 configurations"), "{cmp}");
}

/// `--nodes 2` on a one-node partition: a job array of two, whose tasks Slurm runs one after
/// the other on the same node; the second finds the node's sweep complete and measures nothing,
/// and coretune says one more node is wanted (exit status 1).
fn an_array_task_on_a_measured_node_adds_nothing(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let dir_s = dir.to_str().unwrap();
    let out = c.coretune(
        &[
            "tune",
            "sum",
            "--size",
            "small",
            "--threads",
            "1",
            "--place",
            "os",
            "--throttle",
            "none",
            "--runs",
            "2",
            // No deciding runs: the run counts below are --runs per configuration.
            "--max-runs",
            "2",
            "--warmup",
            "0",
            "--slurm",
            "--partition",
            "alpha",
            "--nodes",
            "2",
            "--poll",
            "1",
            "--quiet",
            "--out",
            dir_s,
        ],
        1,
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("alpha: 1 more node to measure"), "{stderr}");
    let fleet = util::read_json(&dir.join("fleet.json"));
    let jobs = fleet["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let id = jobs[0]["id"].as_str().unwrap().strip_suffix("_0").unwrap();
    assert_eq!(jobs[1]["id"], format!("{id}_1"));
    for job in jobs {
        assert_eq!(job["state"], "COMPLETED", "{job}");
        assert_eq!(job["node"], "localhost", "{job}");
        assert!(Path::new(job["log"].as_str().unwrap()).is_file(), "{job}");
    }
    let script = std::fs::read_to_string(jobs[0]["script"].as_str().unwrap()).unwrap();
    assert!(script.contains("#SBATCH --array=0-1\n"), "{script}");
    // One node, measured once: 1 configuration × 2 runs.
    let runs = util::read_jsonl(&dir.join("alpha/localhost/runs.jsonl"));
    assert_eq!(runs.len(), 2);
}

/// Runs one batch script: `sbatch_line`, then each `srun` line with its command replaced by a
/// look at the task's own CPU affinity; returns, per line, each task's `Cpus_allowed_list`,
/// sorted.
fn cpus_under(c: &Cluster, dir: &Path, sbatch_line: &str, sruns: &[&String]) -> Vec<Vec<String>> {
    let log = dir.join("bind.log");
    let mut script = format!(
        "#!/bin/bash\n{sbatch_line}\n#SBATCH --output={}\n",
        log.display()
    );
    for (i, line) in sruns.iter().enumerate() {
        let srun: Vec<&str> = line
            .split_whitespace()
            .take_while(|w| *w == "srun" || w.starts_with("--"))
            .collect();
        script.push_str(&format!(
            "echo '== {i}'\n{} grep Cpus_allowed_list /proc/self/status\n",
            srun.join(" ")
        ));
    }
    let file = dir.join("bind.sh");
    std::fs::write(&file, &script).unwrap();
    let out = c.cmd("sbatch").arg("--wait").arg(&file).output().unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        out.status.success(),
        "{script}\n{}{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut per_line: Vec<Vec<String>> = vec![Vec::new(); sruns.len()];
    let mut at = None;
    for l in text.lines() {
        if let Some(i) = l.strip_prefix("== ") {
            at = i.parse::<usize>().ok();
        } else if let (Some(i), Some(cpus)) = (at, l.strip_prefix("Cpus_allowed_list:")) {
            per_line[i].push(cpus.trim().to_owned());
        }
    }
    for v in &mut per_line {
        v.sort();
    }
    assert!(per_line.iter().all(|v| !v.is_empty()), "{script}\n{text}");
    per_line
}

fn srun_lines_bind_where_they_say(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    // One configuration per sweep, so it is the recommendation; its apply lines are run, and
    // each srun line must give every task the CPUs it names.
    let cases: [(&[&str], &[&[&str]]); 4] = [
        // Two threads pinned to CPU 1: one process masked to it; no line of one rank per
        // thread, which would ask for more CPUs than the job's --cpus-per-task=1.
        (
            &["--threads", "2", "--place", "compact", "--cpus", "pu:1"],
            &[&["1"]],
        ),
        // One thread per CPU: the process gets both, task i of the per-thread line thread i's.
        (
            &["--threads", "2", "--place", "compact"],
            &[&["0-1"], &["0", "1"]],
        ),
        // Left to the OS: one CPU for one thread, bound to its core (whichever Slurm gives).
        (&["--threads", "1", "--place", "os"], &[&["?"]]),
        // Two instances of one thread: two tasks, each masked to its part (a CPU each).
        (
            &[
                "--instances",
                "2",
                "--threads",
                "1",
                "--place",
                "os",
                "--cpus",
                "all",
            ],
            &[&["0", "1"]],
        ),
    ];
    let binds = ["mask_cpu:0x2", "map_cpu:0,1", "cores", "mask_cpu:0x1,0x2"];
    for (i, ((grid, want), bind)) in cases.iter().zip(binds).enumerate() {
        let dir = tmp.path().join(format!("sweep-{i}"));
        let mut args = vec![
            "tune",
            "sum",
            "--size",
            "small",
            "--throttle",
            "none",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--quiet",
            "--out",
        ];
        args.push(dir.to_str().unwrap());
        args.extend_from_slice(grid);
        c.coretune(&args, 0);
        let s = util::summary(&dir);
        let apply: Vec<String> = s["recommendation"]["apply"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect();
        let sbatch = apply.iter().find(|l| l.starts_with("#SBATCH")).unwrap();
        let sruns: Vec<&String> = apply.iter().filter(|l| l.starts_with("srun ")).collect();
        assert_eq!(sruns.len(), want.len(), "{apply:?}");
        assert!(
            sruns
                .iter()
                .any(|l| l.contains(&format!("--cpu-bind={bind} "))),
            "{bind} missing: {apply:?}"
        );
        let got = cpus_under(c, &dir, sbatch, &sruns);
        for ((line, got), want) in sruns.iter().zip(&got).zip(want.iter()) {
            if want == &["?"] {
                // --cpu-bind=cores with --cpus-per-task=1: exactly one CPU.
                assert!(
                    got.len() == 1 && got[0].parse::<usize>().is_ok(),
                    "{line}: {got:?}"
                );
            } else {
                assert_eq!(got, want, "{line}");
            }
        }
    }
}

/// `tune --launcher srun` inside a batch job: each configuration's tasks are started by srun
/// with its options (`--place cores`: `--cpu-bind=cores`), each task on its own CPU, reporting
/// where it may run.
fn a_sweep_inside_an_allocation_launches_its_ranks_with_srun(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("job.log");
    let dir = tmp.path().join("sweep");
    let script = format!(
        "#!/bin/bash\n#SBATCH --nodes=1 --ntasks=2 --cpus-per-task=1 --exclusive\n\
         #SBATCH --output={}\n{} tune --launcher srun --instances 1,2 --threads 1 --place cores \
         --cpus all --exhaustive --runs 1 --warmup 0 --quiet --show-output --out {} -- \
         grep Cpus_allowed_list /proc/self/status\n",
        log.display(),
        assert_cmd::cargo::cargo_bin("coretune").display(),
        dir.display()
    );
    let file = tmp.path().join("tune.sh");
    std::fs::write(&file, &script).unwrap();
    let out = c.cmd("sbatch").arg("--wait").arg(&file).output().unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        out.status.success(),
        "{script}\n{}{text}{}",
        String::from_utf8_lossy(&out.stderr),
        c.logs()
    );
    // 1 task, then 2: three lines, the two of the second run on a CPU each.
    let mut cpus: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim)
        .collect();
    assert_eq!(cpus.len(), 3, "{text}");
    cpus.sort_unstable();
    assert!(cpus.contains(&"0") && cpus.contains(&"1"), "{text}");
    let s = util::summary(&dir);
    assert_eq!(s["runs"]["ok"], 2, "{s:#}");
    let apply: Vec<&str> = s["recommendation"]["apply"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        apply[0].starts_with("#SBATCH --nodes=1 --ntasks="),
        "{apply:?}"
    );
    assert!(apply[1].starts_with("srun --ntasks="), "{apply:?}");
}

fn a_cancelled_job_is_recorded_and_resume_measures_only_what_is_missing(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let dir_s = dir.to_str().unwrap();
    // A program that takes 0.3 s a run: 2 configurations × 4 runs per node, about 2.4 s.
    let child = util::coretune_std()
        .env("SLURM_CONF", c.conf())
        .args([
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os",
            "--runs",
            "4",
            // No deciding runs: the run counts below are --runs per configuration.
            "--max-runs",
            "4",
            "--warmup",
            "0",
            "--exhaustive",
        ])
        .args(TWO_TYPES)
        .args(["--out", dir_s, "--", "sleep", "0.3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Cancel whichever node's sweep starts first, once it has logged a run.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (target, job) = loop {
        assert!(Instant::now() < deadline, "no sweep started{}", c.logs());
        let started = ["alpha", "beta"].into_iter().find(|t| {
            let runs = dir.join(t).join("localhost/runs.jsonl");
            std::fs::read_to_string(runs).is_ok_and(|r| r.lines().count() >= 1)
        });
        if let Some(t) = started {
            let fleet = util::read_json(&dir.join("fleet.json"));
            let job = fleet["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["target"] == t)
                .unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned();
            break (t, job);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let other = if target == "alpha" { "beta" } else { "alpha" };
    let out = c.cmd("scancel").arg(&job).output().unwrap();
    util::assert_ok(&out);
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}{}", c.logs());
    assert!(stderr.contains("CANCELLED"), "{stderr}");
    assert!(
        stderr.contains(&format!("coretune tune --resume {dir_s}")),
        "{stderr}"
    );
    let fleet = util::read_json(&dir.join("fleet.json"));
    let state = |t: &str| -> Vec<String> {
        fleet["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["target"] == t)
            .map(|j| j["state"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(state(target), ["CANCELLED"]);
    assert_eq!(state(other), ["COMPLETED"]);
    let cancelled = fleet["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["target"] == target)
        .unwrap();
    assert!(Path::new(cancelled["log"].as_str().unwrap()).is_file());
    let runs = dir.join(target).join("localhost/runs.jsonl");
    let before = std::fs::read_to_string(&runs).unwrap();
    let n = before.lines().count();
    assert!(
        (1..8).contains(&n),
        "the job was cancelled after {n} of 8 runs: not mid-sweep"
    );
    let other_runs = std::fs::read_to_string(dir.join(other).join("localhost/runs.jsonl")).unwrap();

    // Resume: only the cancelled node is resubmitted, and its sweep continues.
    c.coretune(&["tune", "--resume", dir_s, "--poll", "1", "--quiet"], 0);
    let fleet = util::read_json(&dir.join("fleet.json"));
    let jobs: Vec<&Value> = fleet["jobs"].as_array().unwrap().iter().collect();
    assert_eq!(jobs.iter().filter(|j| j["target"] == other).count(), 1);
    let resubmitted: Vec<&&Value> = jobs.iter().filter(|j| j["target"] == target).collect();
    assert_eq!(resubmitted.len(), 2);
    assert_eq!(resubmitted[1]["state"], "COMPLETED");
    assert_eq!(resubmitted[1]["node"], "localhost");
    let script = std::fs::read_to_string(resubmitted[1]["script"].as_str().unwrap()).unwrap();
    assert!(script.contains("#SBATCH --nodelist=localhost"), "{script}");
    let after = std::fs::read_to_string(&runs).unwrap();
    assert!(
        after.starts_with(&before),
        "runs measured before the cancel changed"
    );
    assert_eq!(
        after.lines().count(),
        8,
        "runs repeated or missing:\n{after}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(other).join("localhost/runs.jsonl")).unwrap(),
        other_runs,
        "the completed node was measured again"
    );
    // The resumed sweep's summary has the same runs as the uninterrupted one's.
    let set = |t: &str| -> BTreeSet<(u64, String, u64, u64)> {
        util::summary(&dir.join(t).join("localhost"))["configs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["threads"].as_u64().unwrap(),
                    c["place"].as_str().unwrap().to_owned(),
                    c["runs"].as_u64().unwrap(),
                    c["failed"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(set(target), set(other));
    assert_eq!(set(target).len(), 2);
    assert!(
        set(target)
            .iter()
            .all(|(_, _, runs, failed)| (*runs, *failed) == (4, 0))
    );
}

/// A fleet folder made before the sweep's options were kept (`tests/data/fleet-1`): its
/// `fleet.json` (version 1) holds the arguments its nodes repeat. Resumed, its new jobs run
/// those arguments, as its first jobs did, and the file stays version 1.
fn a_fleet_folder_of_version_1_runs_its_sweep_arguments_when_resumed(c: &Cluster) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir(&dir).unwrap();
    let mut old = util::read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fleet-1/fleet.json"),
    );
    old["spec"]["coretune"] = serde_json::json!(assert_cmd::cargo::cargo_bin("coretune"));
    let sweep_args: Vec<String> = old["spec"]["sweep_args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    std::fs::write(dir.join("fleet.json"), old.to_string()).unwrap();
    let dir_s = dir.to_str().unwrap();
    c.coretune(&["tune", "--resume", dir_s, "--poll", "1", "--quiet"], 0);
    let fleet = util::read_json(&dir.join("fleet.json"));
    assert_eq!(fleet["schema"], "coretune-slurm-fleet/1");
    assert_eq!(fleet["spec"], old["spec"]);
    let jobs = fleet["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["state"], "COMPLETED", "{}", jobs[0]);
    let script = std::fs::read_to_string(jobs[0]["script"].as_str().unwrap()).unwrap();
    assert!(
        script.contains(&format!(
            " tune --quiet --out \"$dir\" {}\n",
            sweep_args.join(" ")
        )),
        "{script}"
    );
    // Its sum sweep: 2 configurations × 2 runs.
    let runs = util::read_jsonl(&dir.join("alpha/localhost/runs.jsonl"));
    assert_eq!(runs.len(), 4);
}
