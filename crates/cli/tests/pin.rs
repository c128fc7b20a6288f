//! Thread-by-thread placement of programs coretune did not write: the preloaded pinning library
//! under `coretune run --place`, `run --pid --place` and `tune -- prog`, checked against what
//! each thread of real programs (C on pthreads, OpenMP on libgomp and LLVM's libomp, Rust on
//! `std::thread`) reports about itself, and side by side with likwid-pin.
//!
//! The test programs are built here from `tests/data/pin/` (gcc, rustc, go). What they print,
//! one line per thread in creation order (main first; OpenMP: by thread number):
//! `thread <i> tid <tid> affinity <cpu list> seen <cpu list>`.
// Not built for Windows: the pinning library is preloaded into ELF programs (LD_PRELOAD): Linux only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};

use util::{assert_ok, pin_library, read_jsonl};

/// `coretune`, with the pinning library built beside it.
fn coretune() -> assert_cmd::Command {
    pin_library();
    util::coretune()
}

/// The test programs' sources.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pin")
        .join(name)
}

/// Runs a build command, panicking with its output when it fails.
fn build(cmd: &mut StdCommand) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `gcc -O2 ARGS SRC -o DIR/NAME`.
fn gcc(dir: &Path, src: &str, name: &str, args: &[&str]) -> PathBuf {
    let exe = dir.join(name);
    build(
        StdCommand::new("gcc")
            .args(["-O2", "-pthread"])
            .args(args)
            .arg(data(src))
            .arg("-o")
            .arg(&exe),
    );
    exe
}

/// The OpenMP program linked against LLVM's libomp (Debian `libomp-dev`), which implements
/// libgomp's `GOMP_*` entry points; `None` when libomp is not installed.
fn omp_llvm(dir: &Path) -> Option<PathBuf> {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libomp.so.5").exists()
        && !std::fs::read_dir("/usr/lib")
            .unwrap()
            .flatten()
            .any(|e| e.path().join("lib/libomp.so.5").exists())
    {
        util::skip("LLVM's libomp is not installed (apt-get install libomp-dev)");
        return None;
    }
    let obj = dir.join("omp.o");
    build(
        StdCommand::new("gcc")
            .args(["-O2", "-fopenmp", "-c"])
            .arg(data("omp.c"))
            .arg("-o")
            .arg(&obj),
    );
    let exe = dir.join("omp-llvm");
    let mut link = StdCommand::new("gcc");
    link.arg(&obj).arg("-o").arg(&exe);
    // Debian puts libomp.so.5 in /usr/lib/llvm-N/lib with a link in the multiarch folder.
    for entry in std::fs::read_dir("/usr/lib").unwrap().flatten() {
        let lib = entry.path().join("lib");
        if lib.join("libomp.so.5").exists() {
            link.arg(format!("-L{}", lib.display()))
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
    }
    build(link.args(["-l:libomp.so.5", "-pthread"]));
    Some(exe)
}

/// A CPU list (`0-2,5`).
fn cpus(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// One reported thread: its affinity and the CPUs it was seen on.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    affinity: Vec<usize>,
    seen: Vec<usize>,
}

/// The program's per-thread lines, in thread order.
fn reports(out: &Output) -> Vec<Report> {
    assert_ok(out);
    let text = String::from_utf8_lossy(&out.stdout);
    let reports: Vec<Report> = text
        .lines()
        .filter(|l| l.starts_with("thread "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(words.len(), 8, "{l}");
            Report {
                affinity: cpus(words[5]),
                seen: cpus(words[7]),
            }
        })
        .collect();
    assert!(!reports.is_empty(), "no thread reported: {text}");
    reports
}

/// What `coretune place` plans: each thread's CPUs.
fn planned(threads: usize, policy: &str) -> Vec<Vec<usize>> {
    util::planned_bound(threads, policy, "pu")
}

/// likwid-pin's assignment, written out independently of coretune's code: the main thread on
/// place 0, then for each `pthread_create` call i, skipped when bit i of `skip` is set
/// (getting `all`), else the next place round robin.
fn expected(threads: usize, places: &[Vec<usize>], skip: u64, all: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![places[0].clone()];
    let mut next = 1;
    for call in 1..threads {
        if call - 1 < 64 && skip >> (call - 1) & 1 == 1 {
            out.push(all.to_vec());
        } else {
            out.push(places[next % places.len()].clone());
            next += 1;
        }
    }
    out
}

/// The PUs this machine has.
fn pus() -> usize {
    let out = coretune()
        .args(["cpus", "all", "--to", "count"])
        .output()
        .unwrap();
    assert_ok(&out);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// `coretune run --threads N --place POLICY [EXTRA] -- PROG ARGS`, with OpenMP's binding
/// variables unset as a user's shell would have them.
fn run_placed(threads: usize, policy: &str, extra: &[&str], prog: &Path, args: &[&str]) -> Output {
    coretune()
        .args(["run", "--threads", &threads.to_string(), "--place", policy])
        .args(extra)
        .arg("--")
        .arg(prog)
        .args(args)
        .env_remove("OMP_PROC_BIND")
        .env_remove("OMP_PLACES")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap()
}

/// coretune's stderr without the oversubscription warning (more threads than PUs, which these
/// tests ask for on purpose to see the places wrap around).
fn other_messages(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !(l.starts_with("coretune: warning: ") && l.contains(": oversubscribed")))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Every reported thread has exactly its expected affinity and was seen only there.
fn assert_placed(what: &str, got: &[Report], want: &[Vec<usize>]) {
    let affinities: Vec<&Vec<usize>> = got.iter().map(|r| &r.affinity).collect();
    let want: Vec<&Vec<usize>> = want.iter().collect();
    assert_eq!(affinities, want, "{what}: affinity per thread");
    for (i, r) in got.iter().enumerate() {
        assert!(
            r.seen.iter().all(|c| r.affinity.contains(c)),
            "{what}: thread {i} seen on {:?} outside {:?}",
            r.seen,
            r.affinity
        );
    }
}

#[test]
fn c_threads_get_their_places_below_at_and_above_the_pus() {
    let dir = tempfile::tempdir().unwrap();
    let exe = gcc(dir.path(), "threads.c", "threads", &[]);
    let p = pus();
    for policy in ["compact", "spread", "cores"] {
        for n in [1, p, p + 1, 2 * p + 1] {
            let out = run_placed(n, policy, &[], &exe, &[&n.to_string(), "100"]);
            assert_placed(
                &format!("{policy} {n}"),
                &reports(&out),
                &planned(n, policy),
            );
            // Silent, but for more threads than PUs.
            let stderr = String::from_utf8_lossy(&out.stderr);
            if n > p {
                assert_eq!(
                    stderr.trim_end(),
                    format!(
                        "coretune: warning: {n} threads on {p} PU{}: oversubscribed, threads \
                         share PUs (the places wrap around)",
                        if p == 1 { "" } else { "s" }
                    ),
                    "{policy} {n}"
                );
            } else {
                assert!(stderr.is_empty(), "silent: {stderr}");
            }
        }
    }
    // The program makes more threads than planned: they wrap around the places.
    let out = run_placed(2, "compact", &[], &exe, &["5", "50"]);
    let places = planned(2, "compact");
    let want: Vec<Vec<usize>> = (0..5).map(|i| places[i % 2].clone()).collect();
    assert_placed("5 threads on 2 places", &reports(&out), &want);
    // --bind core: each thread gets its PU's whole core.
    let out = coretune()
        .args([
            "run",
            "--threads",
            "2",
            "--place",
            "cores",
            "--bind",
            "core",
            "--",
        ])
        .arg(&exe)
        .args(["2", "50"])
        .output()
        .unwrap();
    let want = util::planned_bound(2, "cores", "core");
    assert_placed("--bind core", &reports(&out), &want);
}

#[test]
fn openmp_runtimes_with_and_without_a_skip_mask() {
    let dir = tempfile::tempdir().unwrap();
    let mut programs = vec![(
        "libgomp",
        gcc(dir.path(), "omp.c", "omp-gnu", &["-fopenmp"]),
    )];
    if let Some(llvm) = omp_llvm(dir.path()) {
        programs.push(("libomp", llvm));
    }
    let p = pus();
    for (runtime, exe) in &programs {
        for n in [1, p, p + 1] {
            for policy in ["compact", "spread"] {
                let places = planned(n, policy);
                let all: Vec<usize> = (0..p).collect();
                let out = run_placed(n, policy, &[], exe, &["100"]);
                assert_placed(
                    &format!("{runtime} {policy} {n}"),
                    &reports(&out),
                    &expected(n, &places, 0, &all),
                );
                let stderr = other_messages(&out);
                assert!(stderr.is_empty(), "{stderr}");
                // Skipping the first created thread: it keeps the process's CPUs (the union
                // of the places), the next ones move up a place.
                let out = run_placed(n, policy, &["--skip", "0x1"], exe, &["100"]);
                let union: Vec<usize> = {
                    let mut u: Vec<usize> = places.iter().flatten().copied().collect();
                    u.sort_unstable();
                    u.dedup();
                    u
                };
                assert_placed(
                    &format!("{runtime} {policy} {n} --skip 0x1"),
                    &reports(&out),
                    &expected(n, &places, 1, &union),
                );
            }
        }
    }
}

#[test]
fn rust_std_threads_get_their_places() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("rthreads");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    build(
        StdCommand::new(rustc)
            .args(["-O", "--edition", "2024", "-o"])
            .arg(&exe)
            .arg(data("threads.rs")),
    );
    let p = pus();
    for n in [1, p, p + 1] {
        let out = run_placed(n, "cores", &[], &exe, &[&n.to_string(), "100"]);
        assert_placed(
            &format!("std::thread cores {n}"),
            &reports(&out),
            &planned(n, "cores"),
        );
    }
}

#[test]
fn the_library_places_threads_as_likwid_pin_does() {
    if StdCommand::new("likwid-pin").arg("-v").output().is_err() {
        util::skip("likwid-pin is not installed (apt-get install likwid)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let threads = gcc(dir.path(), "threads.c", "threads", &[]);
    let omp = gcc(dir.path(), "omp.c", "omp-gnu", &["-fopenmp"]);
    let lib = pin_library();
    let p = pus();
    let ascending: Vec<String> = (0..p).map(|c| c.to_string()).collect();
    let descending: Vec<String> = (0..p).rev().map(|c| c.to_string()).collect();
    for list in [ascending.clone(), descending.clone()] {
        for skip in ["0x0", "0x1", "0x2", "0x5"] {
            for (prog, args, omp_threads) in [
                (&threads, vec!["4", "50"], None),
                (&threads, vec!["2", "50"], None),
                (&omp, vec!["50"], Some("3")),
            ] {
                let what = format!(
                    "{} -c {} -s {skip} {args:?}",
                    prog.display(),
                    list.join(",")
                );
                let mut likwid = StdCommand::new("likwid-pin");
                likwid
                    .args(["-q", "-c", &list.join(","), "-s", skip])
                    .arg(prog)
                    .args(&args);
                let mut ours = StdCommand::new(prog);
                ours.args(&args).env("LD_PRELOAD", &lib).env(
                    "CORETUNE_PIN",
                    format!("places={} skip={skip}", list.join("/")),
                );
                for cmd in [&mut likwid, &mut ours] {
                    cmd.env_remove("OMP_PROC_BIND").env_remove("OMP_PLACES");
                    if let Some(n) = omp_threads {
                        cmd.env("OMP_NUM_THREADS", n);
                    }
                }
                let theirs: Vec<Vec<usize>> = reports(&likwid.output().unwrap())
                    .into_iter()
                    .map(|r| r.affinity)
                    .collect();
                let mine: Vec<Vec<usize>> = reports(&ours.output().unwrap())
                    .into_iter()
                    .map(|r| r.affinity)
                    .collect();
                assert_eq!(mine, theirs, "{what}");
            }
        }
    }
    // The one difference: a program that never creates a thread. The library pins the main
    // thread as the program starts, likwid's only at the first pthread_create.
    let single =
        |cmd: &mut StdCommand| reports(&cmd.arg(&threads).args(["1", "50"]).output().unwrap());
    let mine = single(
        StdCommand::new("env")
            .arg(format!("LD_PRELOAD={}", lib.display()))
            .arg(format!("CORETUNE_PIN=places={}", descending.join("/"))),
    );
    assert_eq!(mine[0].affinity, [p - 1]);
    let theirs = single(StdCommand::new("likwid-pin").args(["-q", "-c", &descending.join(",")]));
    assert_eq!(theirs[0].affinity, (0..p).collect::<Vec<_>>());
    // The same through coretune: round-robin over every PU is likwid-pin -c 0,1,...
    for skip in ["0x0", "0x2"] {
        let mine = reports(&run_placed(
            p,
            "round-robin",
            &["--skip", skip],
            &threads,
            &["4", "50"],
        ));
        let theirs = reports(
            &StdCommand::new("likwid-pin")
                .args(["-q", "-c", &ascending.join(","), "-s", skip])
                .arg(&threads)
                .args(["4", "50"])
                .output()
                .unwrap(),
        );
        let affinity = |r: &[Report]| r.iter().map(|r| r.affinity.clone()).collect::<Vec<_>>();
        assert_eq!(
            affinity(&mine),
            affinity(&theirs),
            "coretune run vs likwid-pin, -s {skip}"
        );
    }
}

#[test]
fn pid_repins_a_running_program_thread_by_thread() {
    let dir = tempfile::tempdir().unwrap();
    let exe = gcc(dir.path(), "threads.c", "threads", &[]);
    let p = pus();
    let n = p + 1;
    // Spins long enough to be re-pinned; reports its affinity as it ends.
    let child = StdCommand::new(&exe)
        .args([&n.to_string(), "3000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let task = PathBuf::from(format!("/proc/{pid}/task"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_dir(&task).map_or(0, Iterator::count) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the threads never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = coretune()
        .args(["run", "--pid", &pid.to_string(), "--place", "compact"])
        .output()
        .unwrap();
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{n} threads pinned one by one")),
        "{stderr}"
    );
    let got = reports(&child.wait_with_output().unwrap());
    let affinities: Vec<Vec<usize>> = got.into_iter().map(|r| r.affinity).collect();
    assert_eq!(affinities, planned(n, "compact"), "{stderr}");
}

/// `go build` of a tiny program, with or without cgo; `None` when Go is not installed.
fn go_build(dir: &Path, cgo: bool) -> Option<PathBuf> {
    let src = dir.join(if cgo { "cgo" } else { "nocgo" });
    std::fs::create_dir_all(&src).unwrap();
    let import_c = if cgo { "import \"C\"\n" } else { "" };
    std::fs::write(
        src.join("main.go"),
        format!(
            "package main\n\n{import_c}import \"sync\"\n\nfunc main() {{\n\tvar wg sync.WaitGroup\n\
             \tfor i := 0; i < 4; i++ {{\n\t\twg.Add(1)\n\t\tgo func() {{ defer wg.Done(); s := 0; \
             for j := 0; j < 1000000; j++ {{ s += j }}; _ = s }}()\n\t}}\n\twg.Wait()\n}}\n"
        ),
    )
    .unwrap();
    let exe = dir.join(if cgo { "go-cgo" } else { "go-nocgo" });
    let out = StdCommand::new("go")
        .args(["build", "-o"])
        .arg(&exe)
        .arg("main.go")
        .current_dir(&src)
        .env("CGO_ENABLED", if cgo { "1" } else { "0" })
        .env("GOCACHE", dir.join("gocache"))
        .env("GOPATH", dir.join("gopath"))
        .env("HOME", dir)
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "off")
        .output();
    match out {
        Err(_) => {
            util::skip("Go is not installed (apt-get install golang-go)");
            None
        }
        Ok(o) => {
            assert!(
                o.status.success(),
                "go build: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(exe)
        }
    }
}

#[test]
fn programs_out_of_the_librarys_reach_are_named_and_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = pus();
    let all: Vec<Vec<usize>> = vec![(0..p).collect(); p + 1];
    // Static: one warning line, the process CPU set, the run completes.
    let exe = gcc(dir.path(), "threads.c", "threads-static", &["-static"]);
    let out = run_placed(p + 1, "compact", &[], &exe, &[&(p + 1).to_string(), "50"]);
    let stderr = other_messages(&out);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("threads-static: it is statically linked")
            && stderr.contains("the process CPU set"),
        "{stderr}"
    );
    assert_placed("static", &reports(&out), &all);
    // Static OpenMP: its runtime's own places pin the threads.
    let exe = gcc(dir.path(), "omp.c", "omp-static", &["-static", "-fopenmp"]);
    let out = run_placed(p, "compact", &[], &exe, &["50"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OpenMP's places pin its OpenMP threads"),
        "{stderr}"
    );
    assert_placed("static OpenMP", &reports(&out), &planned(p, "compact"));
    // Set-user-ID to another user: the loader would ignore LD_PRELOAD.
    if util::is_root() {
        let exe = gcc(dir.path(), "threads.c", "threads-setuid", &[]);
        build(StdCommand::new("chown").arg("nobody").arg(&exe));
        build(StdCommand::new("chmod").arg("u+s").arg(&exe));
        let out = run_placed(p, "compact", &[], &exe, &[&p.to_string(), "50"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("threads-setuid: it is set-user-ID"),
            "{stderr}"
        );
        assert_placed("setuid", &reports(&out), &all[..p]);
    } else {
        util::skip("the set-user-ID check needs root (chown nobody)");
    }
    // Go without cgo: warned; with cgo: its threads come from pthread_create, so preloaded.
    if let Some(exe) = go_build(dir.path(), false) {
        let out = run_placed(2, "compact", &[], &exe, &[]);
        assert_ok(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("go-nocgo: it is a Go program built without cgo"),
            "{stderr}"
        );
        let cgo = go_build(dir.path(), true).unwrap();
        let out = coretune()
            .args(["run", "--threads", "2", "--place", "compact", "--"])
            .arg(&cgo)
            .env("CORETUNE_PIN_DEBUG", "1")
            .output()
            .unwrap();
        assert_ok(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("warning"), "{stderr}");
        assert!(stderr.contains("pthread_create #0 -> place 1"), "{stderr}");
    }
}

#[test]
fn tune_records_the_mechanism_and_flags_nothing_when_threads_stay() {
    let dir = tempfile::tempdir().unwrap();
    let exe = gcc(dir.path(), "threads.c", "threads", &[]);
    let out_dir = dir.path().join("sweep");
    let out = coretune()
        .args([
            "tune",
            "-q",
            "--threads",
            "1,2,3",
            "--place",
            "os,compact,spread,cores",
        ])
        .args(["--runs", "1", "--warmup", "0", "--exhaustive", "--out"])
        .arg(&out_dir)
        .arg("--")
        .arg(&exe)
        .args(["{threads}", "200"])
        .env_remove("OMP_PROC_BIND")
        .output()
        .unwrap();
    assert_ok(&out);
    let runs = read_jsonl(&out_dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 12);
    for run in &runs {
        let pinning = &run["record"]["pinning"];
        if run["place"] == "os" {
            assert!(pinning.is_null(), "{run}");
            continue;
        }
        assert_eq!(pinning["mechanism"], "preload", "{run}");
        assert_eq!(pinning["skip"], "0x0", "{run}");
        assert!(pinning["threads_seen"].as_u64().unwrap() >= 1, "{run}");
        assert!(pinning.get("off_place").is_none(), "flagged: {run}");
    }
    let summary = util::summary(&out_dir);
    for c in summary["configs"].as_array().unwrap() {
        assert!(c.get("off_place_runs").is_none(), "{c}");
        if c["place"] != "os" {
            assert_eq!(c["pinning"], "preload", "{c}");
        }
    }
    // A static program: said before the sweep, recorded as the process CPU set.
    let exe = gcc(dir.path(), "threads.c", "threads-static", &["-static"]);
    let out_dir = dir.path().join("static");
    let out = coretune()
        .args(["tune", "-q", "--threads", "2", "--place", "compact"])
        .args(["--runs", "1", "--warmup", "0", "--out"])
        .arg(&out_dir)
        .arg("--")
        .arg(&exe)
        .args(["{threads}", "100"])
        .output()
        .unwrap();
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("it is statically linked"), "{stderr}");
    let runs = read_jsonl(&out_dir.join("runs.jsonl"));
    assert!(
        runs.iter()
            .all(|r| r["record"]["pinning"]["mechanism"] == "process-set"),
        "{runs:?}"
    );
}

/// `cargo install --path crates/cli` into an empty root, then the installed binary alone (no
/// library beside it, none named by `CORETUNE_PIN_LIB`, a new user's empty home) places each
/// thread: it writes the library it carries to `~/.cache/coretune/` and preloads that.
/// The install reuses this build's target folder and profile (`--debug` when this build is not
/// optimised), and builds nothing: the features the test build's dev-dependencies turn on are
/// named in the cli's Cargo.toml, so that the install's units are the test build's (checked
/// here: when they drift apart, the install compiled core and the cli again, 3 CPU-minutes).
#[test]
fn cargo_install_gives_per_thread_placement_with_no_extra_step() {
    let exe = assert_cmd::cargo::cargo_bin("coretune");
    // target/debug/coretune → target
    let target = exe.parent().unwrap().parent().unwrap();
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut install = StdCommand::new(cargo);
    install
        .args(["install", "--verbose", "--locked", "--offline"])
        .args(cfg!(not(optimized)).then_some("--debug"))
        .arg("--path")
        .arg(manifest)
        .arg("--root")
        .arg(root.path())
        .env("CARGO_TARGET_DIR", target)
        .env_remove("CORETUNE_EMBED_PIN");
    let out = install
        .output()
        .unwrap_or_else(|e| panic!("{install:?}: {e}"));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{install:?}: {log}");
    let compiled: Vec<&str> = log
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling "))
        .collect();
    assert!(
        compiled.is_empty(),
        "cargo install built units the test build has not (a feature the dev-dependencies turn \
         on is missing from crates/cli/Cargo.toml; `cargo tree -e features -i NAME`): {compiled:?}"
    );
    let installed = root.path().join("bin/coretune");
    let files: Vec<_> = std::fs::read_dir(root.path().join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        files,
        ["coretune"],
        "cargo install installs the binary alone"
    );

    let dir = tempfile::tempdir().unwrap();
    let prog = gcc(dir.path(), "threads.c", "threads", &[]);
    let run = |args: &[&str]| {
        StdCommand::new(&installed)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let out = run(&[
        "run",
        "--threads",
        "2",
        "--place",
        "compact",
        "--",
        prog.to_str().unwrap(),
        "2",
        "50",
    ]);
    assert_placed("cargo install", &reports(&out), &planned(2, "compact"));
    assert!(
        out.stderr.is_empty(),
        "no warning: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What it preloaded is the copy in the cache folder, and doctor says so.
    let cache = home.path().join(".cache/coretune");
    let out = run(&[
        "run",
        "--threads",
        "2",
        "--place",
        "compact",
        "--",
        "sh",
        "-c",
        "echo $LD_PRELOAD",
    ]);
    assert_ok(&out);
    let preloaded = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        Path::new(&preloaded).starts_with(&cache) && Path::new(&preloaded).is_file(),
        "{preloaded} is not in {}",
        cache.display()
    );
    let doctor = run(&["doctor"]);
    assert_ok(&doctor);
    assert!(
        String::from_utf8_lossy(&doctor.stdout)
            .contains(&format!("ok       pinning library          {preloaded}")),
        "{}",
        String::from_utf8_lossy(&doctor.stdout)
    );
}

/// The pool crate's example built on `ThreadPoolBuilder::from_env`, built now with this
/// test's profile (as [`pin_library`] builds the library).
fn pool_program() -> PathBuf {
    let exe = assert_cmd::cargo::cargo_bin("coretune");
    let dir = exe.parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = StdCommand::new(cargo);
    // `--workspace`, not `-p coretune-pool`: the pool with the features the whole workspace's
    // test build gives it, so that under `cargo test --workspace` (make test) the example built
    // with the tests is found built, instead of the pool and the example built again.
    cmd.args(["build", "--quiet", "--workspace", "--example", "placed"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if dir.ends_with("release") {
        cmd.arg("--release");
    }
    build(&mut cmd);
    let program = dir.join("examples/placed");
    assert!(program.is_file(), "{} was not built", program.display());
    program
}

/// A program built on coretune-pool under `coretune run --threads N --place`: its main thread
/// and each worker on the place coretune planned for them (the main thread first, worker i on
/// place i + 1), with the pinning library and without it (the pool then reads OMP_PLACES),
/// and when the program made a thread of its own before the pool (which shifts the library's
/// count: the pool has the last word for its workers). coretune says who pinned what.
#[test]
fn a_program_on_coretune_pool_has_its_main_thread_and_each_worker_on_its_place() {
    let prog = pool_program();
    let p = pus();
    for (library, says) in [
        (
            true,
            "the pool pins its workers (places 1, 2, …), the pinning library its main thread",
        ),
        (
            false,
            "its coretune-pool pins its workers and the thread that builds it from OMP_PLACES",
        ),
    ] {
        for n in [2, p + 1] {
            for early in [false, true] {
                let what = format!("library {library}, {n} threads, early thread {early}");
                let mut extra: Vec<&str> = vec!["50"];
                if early {
                    extra.push("early");
                }
                let out = coretune()
                    .args([
                        "run",
                        "--threads",
                        &n.to_string(),
                        "--place",
                        "compact",
                        "--",
                    ])
                    .arg(&prog)
                    .args(&extra)
                    .env_remove("OMP_PLACES")
                    .env_remove("OMP_PROC_BIND")
                    .env_remove("LD_PRELOAD")
                    .envs(
                        (!library)
                            .then_some(("CORETUNE_PIN_LIB", "/nonexistent/libcoretune_pin.so")),
                    )
                    .output()
                    .unwrap();
                let got = reports(&out);
                // N threads in all: the main thread and N - 1 workers.
                assert_eq!(got.len(), n, "{what}");
                assert_placed(&what, &got, &planned(n, "compact"));
                let stderr = other_messages(&out);
                assert!(stderr.contains(says), "{what}: {stderr}");
                assert!(!stderr.contains("warning"), "{what}: {stderr}");
            }
        }
    }
    // A program that links coretune-pool (through coretune-core) but never calls from_env
    // carries no marker, and coretune says nothing of a pool.
    let out = run_placed(2, "compact", &[], &util::probe(), &[]);
    assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("coretune-pool"), "{stderr}");
}

/// The workers a pre-forking program forks, one line each in fork order: their affinity and
/// the CPUs they were seen on.
fn workers(out: &Output) -> Vec<(usize, Report)> {
    assert_ok(out);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut workers: Vec<(usize, Report)> = text
        .lines()
        .filter(|l| l.starts_with("worker "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(words.len(), 8, "{l}");
            (
                words[1].parse().unwrap(),
                Report {
                    affinity: cpus(words[5]),
                    seen: cpus(words[7]),
                },
            )
        })
        .collect();
    workers.sort_by_key(|(k, _)| *k);
    workers
}

/// Finding 2 of the first afternoon: `run --place compact` of a pre-forking program put every
/// forked worker on the master's place 0. Process k in fork order now gets place k (wrapping
/// around), as thread k does.
#[test]
fn forked_worker_processes_each_get_their_own_place() {
    let dir = tempfile::tempdir().unwrap();
    let exe = gcc(dir.path(), "forker.c", "forker", &[]);
    let n = pus();
    for policy in ["compact", "spread", "cores"] {
        let places = planned(n, policy);
        let out = coretune()
            .args(["run", "--threads", &n.to_string(), "--place", policy, "--"])
            .arg(&exe)
            .args([&(n + 1).to_string(), "100"])
            .output()
            .unwrap();
        let got = workers(&out);
        assert_eq!(got.len(), n + 1, "{policy}");
        for (k, report) in &got {
            let place = &places[k % places.len()];
            assert_eq!(&report.affinity, place, "{policy}: worker {k}");
            assert!(
                report.seen.iter().all(|c| place.contains(c)),
                "{policy}: worker {k} seen on {:?}, planned {place:?}",
                report.seen
            );
        }
    }
}

/// The audit of a sweep's run knows each forked process's place (the library logs it) and
/// fails a run in which a worker left its place: it is a mismatch with the reason, not a
/// measurement; the same program keeping its places passes.
#[test]
fn a_forked_worker_that_leaves_its_place_fails_the_run_as_a_mismatch() {
    if pus() < 2 {
        util::skip("needs 2 CPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = gcc(dir.path(), "forker.c", "forker", &[]);
    let sweep = |name: &str, args: &[&str]| {
        let out_dir = dir.path().join(name);
        let out = coretune()
            .args(["tune", "-q", "--threads", "2", "--place", "compact"])
            .args(["--runs", "1", "--warmup", "0", "--out"])
            .arg(&out_dir)
            .arg("--")
            .arg(&exe)
            .args(args)
            .output()
            .unwrap();
        (out, read_jsonl(&out_dir.join("runs.jsonl")))
    };
    // Both workers keep their places (0 and 1): checked, and clean.
    let (out, runs) = sweep("kept", &["2", "400"]);
    assert_ok(&out);
    let audit = &runs[0]["record"]["audit"];
    assert_eq!(runs[0]["status"], "ok", "{}", runs[0]);
    let checked = audit["checked"].to_string();
    assert!(
        checked.contains("each thread on its place")
            && checked.contains("placed by the pinning library"),
        "{audit}"
    );
    assert!(audit.get("mismatches").is_none(), "{audit}");
    // Worker 1 (planned on place 1, CPU 1) moves itself to CPU 0.
    let (out, runs) = sweep("moved", &["2", "400", "1:0"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs[0]["status"], "mismatch", "{}", runs[0]);
    let error = runs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("ran on CPU 0, outside its place (CPUs 1)"),
        "{error}"
    );
}
