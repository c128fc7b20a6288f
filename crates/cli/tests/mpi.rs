//! `coretune tune --launcher mpirun`: Open MPI's own command line for each configuration of
//! ranks (`--instances`) × OpenMP threads (`--threads`), run through the real `mpirun` with a
//! real `mpicc -fopenmp` program that reports, from inside each rank's threads, where it may
//! run; its apply line pasted into a shell; bad input.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::{Path, PathBuf};

/// `ranks` built from `tests/data/mpi/ranks.c` in `dir`, or `None` (with a visible message) when
/// Open MPI is not installed.
fn ranks(dir: &Path) -> Option<PathBuf> {
    if !util::installed("mpicc") || !util::installed("mpirun") {
        return None;
    }
    let exe = dir.join("ranks");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpi/ranks.c");
    let status = std::process::Command::new("mpicc")
        .args(["-fopenmp", "-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "mpicc failed");
    Some(exe)
}

/// The CPUs this test may use, first and last (`0`, `1`).
fn own_cpus() -> (String, String) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_owned();
    (
        list.split(['-', ',']).next().unwrap().to_owned(),
        list.rsplit(['-', ',']).next().unwrap().to_owned(),
    )
}

/// `rank R/N thread T/M cpus LIST` lines, sorted.
fn rank_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(str::to_owned)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn mpirun_places_each_ranks_threads_as_planned() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = ranks(tmp.path()) else {
        return;
    };
    let (first, last) = own_cpus();
    if first == last {
        util::skip("one CPU, no two ranks of their own");
        return;
    }
    // Each configuration on its own, its ranks' own report of where their threads may run.
    for (instances, threads, expected) in [
        ("1", "1", vec![format!("rank 0/1 thread 0/1 cpus {first}")]),
        (
            "2",
            "1",
            vec![
                format!("rank 0/2 thread 0/1 cpus {first}"),
                format!("rank 1/2 thread 0/1 cpus {last}"),
            ],
        ),
        (
            "1",
            "2",
            vec![
                format!("rank 0/1 thread 0/2 cpus {first}"),
                format!("rank 0/1 thread 1/2 cpus {last}"),
            ],
        ),
    ] {
        let dir = tmp.path().join(format!("sweep-{instances}x{threads}"));
        let out = util::coretune()
            .args(["tune", "--launcher", "mpirun", "--instances", instances])
            .args(["--threads", threads, "--place", "cores", "--cpus", "all"])
            .args(["--runs", "1", "--warmup", "0", "--quiet", "--show-output"])
            .arg("--out")
            .arg(&dir)
            .arg("--")
            .arg(&exe)
            .output()
            .unwrap();
        util::assert_ok(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            rank_lines(&stdout),
            expected,
            "{instances}×{threads}: {stdout}"
        );
        let s = util::summary(&dir);
        util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
        // One job, judged on its time; the apply line is Open MPI's.
        assert_eq!(s["plan"]["objectives"][0]["quantity"]["kind"], "time");
        let apply = s["recommendation"]["apply"][0].as_str().unwrap().to_owned();
        let run = apply.replacen("mpirun --allow-run-as-root ", "mpirun ", 1);
        assert!(
            run.starts_with(&format!(
                "mpirun -np {instances} --map-by slot:PE={threads} --bind-to core -x OMP_NUM_THREADS={threads} -x OMP_PLACES=cores -x OMP_PROC_BIND=close "
            )),
            "{apply}"
        );
        // The table and the row in summary.json show the launcher's line that was run.
        let launch = s["configs"][0]["launch"].as_str().unwrap_or_default();
        assert!(
            !launch.is_empty() && run.starts_with(launch),
            "{launch} / {apply}"
        );
        assert!(stdout.contains(launch), "{stdout}");
        // Pasted into a shell as it is, it places the same.
        let pasted = pasted(&apply);
        assert!(pasted.status.success(), "{apply}: {pasted:?}");
        assert_eq!(
            rank_lines(&String::from_utf8_lossy(&pasted.stdout)),
            expected,
            "{apply}"
        );
    }
}

/// `line` run by `sh` as a user pastes it: without Open MPI's consent variables, which coretune
/// sets for its own runs as root but a shell does not have.
fn pasted(line: &str) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .env_remove("OMPI_ALLOW_RUN_AS_ROOT")
        .env_remove("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
        .output()
        .unwrap()
}

/// A rank that says which row started it (`{place} {cpus} {mem}`), then the CPUs it may run on
/// and its memory policy, as it sees them itself (`/proc/self/status`, `numactl --show`).
fn rank_script(dir: &Path) -> Option<PathBuf> {
    if !util::installed("mpirun") || !util::installed("numactl") {
        return None;
    }
    let script = dir.join("rank.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho \"row $1 $2 $3 cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2) \
         $(numactl --show | grep '^policy')\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    Some(script)
}

/// Finding 7 (#35): `--cpus`, `--mem` and `--place os` never reached mpirun's line, so the rows
/// of `pu:1` ran on CPU 0, `local` rows had no policy of their own, and rows with different
/// labels ran the same command.
#[test]
fn every_row_of_an_mpirun_sweep_runs_on_its_cpus_with_its_memory_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(rank) = rank_script(tmp.path()) else {
        return;
    };
    let (first, last) = own_cpus();
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "--launcher",
            "mpirun",
            "--instances",
            "1",
            "--threads",
            "1",
        ])
        .args(["--place", "os,cores", "--cpus", "all", "--cpus"])
        .arg(format!("pu:{last}"))
        .args([
            "--mem",
            "none,local",
            "--exhaustive",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--quiet", "--show-output", "--out"])
        .arg(&dir)
        .arg("--")
        .arg(&rank)
        .args(["{place}", "{cpus}", "{mem}"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("row ")).collect();
    assert_eq!(rows.len(), 8, "{stdout}");
    for row in rows {
        let w: Vec<&str> = row.split_whitespace().collect();
        // row PLACE CPUS MEM cpus ALLOWED policy: POLICY
        let (place, cpus, mem, allowed, policy) = (w[1], w[2], w[3], w[5], w[7]);
        let want_cpus = if place == "os" {
            cpus.to_owned()
        } else {
            // Bound to the first core of the row's set.
            cpus.split(['-', ',']).next().unwrap().to_owned()
        };
        assert_eq!(allowed, want_cpus, "{row}");
        let want_policy = if mem == "local" { "local" } else { "default" };
        assert_eq!(policy, want_policy, "{row}");
        assert!(cpus == format!("{first}-{last}") || cpus == last, "{row}");
    }
    // Each row's own line, shown in its launch column.
    let s = util::summary(&dir);
    let launches: std::collections::BTreeSet<&str> = s["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["launch"].as_str().unwrap())
        .collect();
    assert_eq!(launches.len(), 8, "{launches:#?}");
    assert!(
        launches.iter().any(|l| l
            .contains(&format!("--cpu-set {last} --bind-to cpu-list:ordered"))
            && l.ends_with("numactl --localalloc --")),
        "{launches:#?}"
    );
}

/// Finding 7 (#35): `--place os,compact,spread,cores` on a machine without SMT and with one
/// NUMA node ran three identical launches under three labels.
#[test]
fn placements_that_start_the_same_ranks_are_measured_once_and_said_so() {
    let out = util::coretune()
        .args(["tune", "--dry-run", "--input", "pack:1 numa:1 core:2 pu:1"])
        .args(["--launcher", "mpirun", "--instances", "2", "--threads", "1"])
        .args([
            "--place",
            "os,compact,spread,cores",
            "--cpus",
            "all",
            "--cpus",
            "0-1",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("placements os, compact\n"), "{stdout}");
    assert!(
        stderr.contains(
            "--launcher mpirun: place spread starts every configuration's ranks as place compact does"
        ),
        "{stderr}"
    );
    // Two spellings of the same CPUs are one value before the launcher looks (Grid's merge).
    assert!(
        stderr.contains("--cpus '0-1' is the same CPUs as 'all' on this machine"),
        "{stderr}"
    );
}

/// Finding 7 (#35): what Open MPI cannot say is one line and status 2 before anything runs,
/// not a row labelled with what was never applied.
#[test]
fn a_dimension_mpirun_cannot_express_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--place", "spread", "--cpus", "pu:0", "--instances", "1"][..],
            "--launcher: mpirun cannot spread ranks inside --cpus 'pu:0'",
        ),
        (
            &["--place", "cores", "--cpus", "pu:0", "--threads", "2"],
            "--launcher: mpirun cannot bind 2 threads per rank inside --cpus 'pu:0'",
        ),
        (
            &["--place", "round-robin"],
            "--launcher: mpirun has no mapping for --place round-robin",
        ),
    ] {
        let dir = tmp.path().join("sweep");
        let out = util::coretune()
            .args([
                "tune",
                "--launcher",
                "mpirun",
                "--runs",
                "1",
                "--warmup",
                "0",
            ])
            .args(args)
            .arg("--out")
            .arg(&dir)
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!dir.exists(), "{args:?}: the sweep's folder was made");
    }
}

/// Finding 26 (#35): the mpirun apply line printed to root failed when pasted ("mpirun has
/// detected an attempt to run as root").
#[test]
fn an_mpirun_apply_line_pasted_as_root_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = ranks(tmp.path()) else {
        return;
    };
    let dir = tmp.path().join("sweep");
    let out = util::coretune()
        .args([
            "tune",
            "--launcher",
            "mpirun",
            "--instances",
            "1",
            "--threads",
            "1",
        ])
        .args([
            "--place", "os", "--runs", "1", "--warmup", "0", "--quiet", "--out",
        ])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    let apply = s["recommendation"]["apply"][0].as_str().unwrap();
    assert_eq!(
        apply.starts_with("mpirun --allow-run-as-root "),
        util::is_root(),
        "{apply}"
    );
    let pasted = pasted(apply);
    assert!(pasted.status.success(), "{apply}: {pasted:?}");
    assert_eq!(
        rank_lines(&String::from_utf8_lossy(&pasted.stdout)).len(),
        1,
        "{pasted:?}"
    );
}

/// Finding 27 (#35): outside an allocation every configuration of an srun sweep failed with
/// "srun: fatal: Could not establish a configuration source"; now nothing runs, and
/// `--dry-run` still plans.
#[test]
fn srun_outside_a_slurm_allocation_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let tune = || {
        let mut cmd = util::coretune();
        cmd.args([
            "tune",
            "--launcher",
            "srun",
            "--instances",
            "1,2",
            "--threads",
            "1",
        ])
        .args(["--place", "os", "--runs", "1", "--warmup", "0"])
        .env_remove("SLURM_JOB_ID");
        cmd
    };
    let out = tune()
        .arg("--out")
        .arg(&dir)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        "coretune: --launcher: srun runs inside a Slurm allocation (no SLURM_JOB_ID): run \
         coretune inside salloc or sbatch"
    );
    assert!(!dir.exists(), "the sweep's folder was made");
    let out = tune().args(["--dry-run", "--", "true"]).output().unwrap();
    util::assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("instances  1, 2"));
}

#[test]
fn more_ranks_than_cores_fail_with_mpiruns_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = ranks(tmp.path()) else {
        return;
    };
    let dir = tmp.path().join("sweep");
    let cores = std::thread::available_parallelism().unwrap().get();
    let too_many = (cores + 1).to_string();
    let out = util::coretune()
        .args(["tune", "--launcher", "mpirun", "--instances", &too_many])
        .args(["--threads", "1", "--place", "os", "--cpus", "all"])
        .args(["--runs", "1", "--warmup", "0", "--quiet"])
        .arg("--out")
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["status"], "failed", "{:#}", runs[0]);
    let tail = runs[0]["stderr_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("slots") || tail.contains("bind"), "{tail}");
}

#[test]
fn a_launcher_takes_a_program_and_no_instance_placeholder() {
    for (args, says) in [
        (
            &["--launcher", "mpiexec", "--", "true"][..],
            "invalid value 'mpiexec' for '--launcher",
        ),
        (
            &["--launcher", "mpirun", "--", "app", "{instance}"][..],
            "--launcher mpirun: each rank knows its rank from the launcher",
        ),
        (
            &["--launcher", "srun"][..],
            "--launcher srun starts a program",
        ),
    ] {
        let out = util::coretune()
            .args(["tune", "--dry-run", "--threads", "1"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The audit of a run under `mpirun` knows each rank from the pinning library's start log (the
/// rank in its environment, the CPUs it may run on as its image starts, before `MPI_Init` moves
/// anything) and checks them against the plan: a rank whose image starts off its CPUs, or a
/// launcher that leaves the ranks unbound, fails the run as a mismatch naming the rank; ranks
/// that start on their CPUs pass, the check said in the record.
#[test]
fn a_rank_that_leaves_its_cpus_under_mpirun_fails_the_run_as_a_mismatch() {
    if !util::installed("mpirun") || !util::installed("taskset") {
        return;
    }
    let (first, last) = own_cpus();
    if first == last {
        util::skip("needs 2 CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("rank.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && [ \"$1\" = move ]; then \
             exec taskset -c {first} sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; \
             fi\nsleep 0.4\n"
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    // A site's `mpirun` wrapper that drops the binding coretune asks for, as a launcher that
    // "knows better" does: first in PATH.
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v mpirun"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wrapper = tmp.path().join("bin");
    std::fs::create_dir(&wrapper).unwrap();
    std::fs::write(
        wrapper.join("mpirun"),
        format!(
            "#!/bin/sh\nskip=\nfor a; do shift\n  if [ -n \"$skip\" ]; then skip=; continue; fi\n  \
             case \"$a\" in --bind-to|--map-by|--cpu-set) skip=1; continue;; esac\n  \
             set -- \"$@\" \"$a\"\ndone\nexec {} --bind-to none \"$@\"\n",
            real.trim()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(wrapper.join("mpirun"))
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        wrapper.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sweep = |name: &str, arg: &str, unbound: bool| {
        let dir = tmp.path().join(name);
        let mut cmd = util::coretune();
        if unbound {
            cmd.env("PATH", &path);
        }
        let out = cmd
            .args(["tune", "--launcher", "mpirun", "--instances", "2"])
            .args(["--threads", "1", "--place", "cores", "--runs", "1"])
            .args(["--warmup", "0", "--quiet", "--out"])
            .arg(&dir)
            .arg("--")
            .arg(&script)
            .arg(arg)
            .output()
            .unwrap();
        (out, util::read_jsonl(&dir.join("runs.jsonl")))
    };
    let (out, runs) = sweep("stay", "stay", false);
    util::assert_ok(&out);
    let checked = runs[0]["record"]["audit"]["checked"].to_string();
    assert!(
        checked.contains(&format!(
            "each rank started on its CPUs (rank 0: {first}, rank 1: {last}; 2 of 2 seen start)"
        )),
        "{}",
        runs[0]
    );
    let mismatch = |name: &str, arg: &str, unbound: bool| {
        let (out, runs) = sweep(name, arg, unbound);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(runs[0]["status"], "mismatch", "{}", runs[0]);
        runs[0]["error"].as_str().unwrap().to_owned()
    };
    // Rank 1 moves itself (its next image starts on another CPU).
    let error = mismatch("move", "move", false);
    assert!(
        error.contains("rank 1 (pid ")
            && error.contains(&format!(
                "started on CPUs {first}, not bound to its CPUs {last}"
            )),
        "{error}"
    );
    // The launcher left the ranks unbound.
    let error = mismatch("unbound", "stay", true);
    assert!(
        error.contains("rank 0 (pid ")
            && error.contains(&format!(
                "started on CPUs {first}-{last}, not bound to its CPUs {first}"
            )),
        "{error}"
    );
}
