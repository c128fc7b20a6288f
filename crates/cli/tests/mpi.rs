//! `coretune tune --launcher mpirun`: Open MPI's own command line for each configuration of
//! ranks (`--instances`) × OpenMP threads (`--threads`), run through the real `mpirun` with a
//! real `mpicc -fopenmp` program that reports, from inside each rank's threads, where it may
//! run; its apply line pasted into a shell; bad input.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod util;

use std::path::{Path, PathBuf};

/// `ranks` built from `tests/data/mpi/ranks.c` in `dir`, or `None` (with a visible message) when
/// Open MPI is not installed.
fn ranks(dir: &Path) -> Option<PathBuf> {
    if !util::installed("mpicc") || !util::installed("mpirun") {
        eprintln!(
            "skipped: Open MPI's mpicc and mpirun are not installed (scripts/setup.sh --test)"
        );
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
        eprintln!("skipped: one CPU, no two ranks of their own");
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
            .args(["--threads", threads, "--place", "os", "--cpus", "all"])
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
        assert!(
            apply.starts_with(&format!(
                "mpirun -np {instances} --map-by slot:PE={threads} --bind-to core -x OMP_NUM_THREADS={threads} -x OMP_PLACES=cores -x OMP_PROC_BIND=close "
            )),
            "{apply}"
        );
        // The table and the row in summary.json show the launcher's line that was run.
        let launch = s["configs"][0]["launch"].as_str().unwrap_or_default();
        assert!(
            !launch.is_empty() && apply.starts_with(launch),
            "{launch} / {apply}"
        );
        assert!(stdout.contains(launch), "{stdout}");
        // Pasted into a shell (with Open MPI's consent to run as root), it places the same.
        let pasted = std::process::Command::new("sh")
            .arg("-c")
            .arg(&apply)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        assert!(pasted.status.success(), "{apply}: {pasted:?}");
        assert_eq!(
            rank_lines(&String::from_utf8_lossy(&pasted.stdout)),
            expected,
            "{apply}"
        );
    }
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
