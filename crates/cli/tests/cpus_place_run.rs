//! `coretune cpus`, `place` and `run` from the command line, including a real OpenMP program run
//! through `coretune run` whose threads land where `coretune place` planned them.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns, where clippy.toml does not reach

use crate::util;

use std::process::Command as StdCommand;

use util::coretune;

const SYNTH: &str = "pack:2 numa:1 core:4 pu:2";

fn stdout(args: &[&str]) -> String {
    let out = coretune().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "coretune {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cpus_prints_one_line_per_format() {
    let cases = [
        (vec!["all", "~pu:0"], "hwloc", "0x0000fffe\n"),
        (vec!["all ~pu:0"], "taskset", "0xfffe\n"),
        (vec!["numa:1.core:0-1", "0"], "list", "0,8-11\n"),
        // What `start /affinity` takes.
        (vec!["core:0-3"], "windows", "FF\n"),
        (vec!["all ~pu:0"], "windows", "FFFE\n"),
        (vec!["core:0"], "binary", "0b11\n"),
    ];
    for (expr, to, want) in cases {
        let mut args = vec!["cpus", "--input", SYNTH, "--to", to];
        args.extend(expr.iter().copied());
        assert_eq!(stdout(&args), want, "{expr:?} --to {to}");
    }
    assert_eq!(
        stdout(&["cpus", "--input", SYNTH, "--objects", "core", "1-4"]),
        "0,1,2\n"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&[
        "cpus", "--input", SYNTH, "--json", "pu:0", "pu:8",
    ]))
    .unwrap();
    assert_eq!(json["pus"], serde_json::json!([0, 8]));
    assert_eq!(json["windows"], "101");
    assert_eq!(json["hwloc"], "0x00000101");
    assert!(json["warnings"].as_array().unwrap().len() >= 2, "{json}");
    // Every format --to knows, each as --to writes it.
    let formats = json["formats"].as_object().unwrap();
    assert_eq!(formats.len(), 13, "{json}");
    for (name, value) in formats {
        let to = stdout(&["cpus", "--input", SYNTH, "--to", name, "pu:0", "pu:8"]);
        assert_eq!(value.as_str(), Some(to.trim_end()), "{name}");
    }
}

/// Windows masks on a big machine are that machine's processor groups (modelled from the Linux
/// XML: what Windows would make of it), and read back with the `win:` prefix.
#[test]
fn windows_masks_follow_the_machine_s_processor_groups() {
    let epyc = util::fixture("amd-epyc-9654-zen4-2p-2numa-24l3-384pu.xml");
    let numa1 = stdout(&["cpus", "--input", &epyc, "--to", "windows", "numa:1"]);
    assert_eq!(
        numa1,
        "3:FFFFFFFFFFFFFFFF,4:FFFFFFFFFFFFFFFF,5:FFFFFFFFFFFFFFFF\n"
    );
    let back = stdout(&["cpus", "--input", &epyc, &format!("win:{}", numa1.trim())]);
    assert_eq!(back, stdout(&["cpus", "--input", &epyc, "numa:1"]));
    // Linux numbers the first core's SMT siblings 0 and 192; Windows puts them on bits 0 and 1.
    assert_eq!(
        stdout(&["cpus", "--input", &epyc, "--to", "windows", "core:0"]),
        "3\n"
    );
    let out = coretune()
        .args(["cpus", "--input", &epyc, "--to", "powershell", "numa:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("only the CPUs of processor group 0"), "{err}");
    // The same set's warning names the same groups.
    let out = coretune()
        .args(["cpus", "--input", &epyc, "numa:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("crosses Windows processor groups (group 3: 96-127,288-319; group 4"),
        "{err}"
    );
}

#[test]
fn cpus_matches_hwloc_calc_on_the_corpus() {
    let expected = util::expected();
    for file in util::corpus_files() {
        let path = util::fixture(&file);
        let want = expected[&file]["queries"]["all ~pu:0"]["cpuset"]
            .as_str()
            .unwrap();
        let got = stdout(&["cpus", "--input", &path, "--to", "hwloc", "all", "~pu:0"]);
        assert_eq!(got.trim_end(), want, "{file}");
    }
}

#[test]
fn bad_input_is_one_line_and_fails() {
    let cases = [
        (
            vec!["cpus", "--input", SYNTH, "numa:7"],
            "'numa:7': index 7 past the last numa (there are 2)",
        ),
        (
            vec!["cpus", "--input", SYNTH, "bogus:1"],
            "unknown object type 'bogus'",
        ),
        (
            vec!["cpus", "--input", SYNTH, "99"],
            "CPU 99 does not exist",
        ),
        (
            vec!["cpus", "--input", SYNTH, "0-3", "~0-3"],
            "the result is empty",
        ),
        (
            vec!["run", "--", "coretune-no-such-command"],
            "'coretune-no-such-command': command not found",
        ),
        (
            vec!["run", "--pid", "4000000", "--cpus", "all"],
            "no process with pid 4000000",
        ),
        (
            vec![
                "place",
                "--input",
                SYNTH,
                "--threads",
                "0",
                "--policy",
                "spread",
            ],
            "at least 1 thread",
        ),
        (
            vec![
                "place",
                "--input",
                SYNTH,
                "--threads",
                "2",
                "--policy",
                "sideways",
            ],
            "unknown placement 'sideways'",
        ),
    ];
    for (args, want) in cases {
        let out = coretune().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning:")).collect();
        assert!(
            errors.iter().any(|l| l.contains(want)),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn place_json_lists_threads_in_order() {
    let json: serde_json::Value = serde_json::from_str(&stdout(&[
        "place",
        "--input",
        SYNTH,
        "--threads",
        "4",
        "--policy",
        "spread",
        "--cpus",
        "all ~pu:0",
        "--json",
    ]))
    .unwrap();
    let pus: Vec<serde_json::Value> = json["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pus"].clone())
        .collect();
    // hwloc-distrib --single 4 on the machine without PU 0: core 0 keeps only PU 1.
    assert_eq!(
        pus,
        serde_json::json!([[1], [4], [8], [12]])
            .as_array()
            .unwrap()
            .clone()
    );
    assert_eq!(json["omp_places"], "{1},{4},{8},{12}");
    let text = stdout(&[
        "place",
        "--input",
        SYNTH,
        "--threads",
        "2",
        "--policy",
        "cores",
    ]);
    assert!(
        text.contains("OMP_PLACES='{0},{2}' OMP_PROC_BIND=close"),
        "{text}"
    );
    assert!(text.contains("taskset -c 0,2"), "{text}");
    assert!(text.contains("likwid-pin -c 0,2"), "{text}");
    // The line that applies it thread by thread; `--place` is run's name for the policy.
    let text = stdout(&[
        "place",
        "--input",
        SYNTH,
        "--threads",
        "2",
        "--place",
        "cores",
        "--bind",
        "core",
    ]);
    assert!(
        text.contains("coretune:   coretune run --threads 2 --place cores --bind core -- CMD"),
        "{text}"
    );
}

/// The program sees the thread-count variables, runs on the CPU set (its main thread and a
/// thread it creates, asked from inside), and its exit status is coretune's.
#[test]
fn run_passes_exit_status_env_and_cpu_set() {
    let out = coretune()
        .args(["run", "--cpus", "1", "--threads", "3", "--"])
        .arg(util::probe())
        .args(["env", "affinity", "exit", "7"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(text, "3 3 3\nmain 1\nthread 1\n");
    // Without `--`, as taskset and numactl take it: the command's own options stay its own.
    let out = coretune()
        .args(["run", "--cpus", "1", "--threads", "2"])
        .arg(util::probe())
        .args(["env", "--bogus"])
        .output()
        .unwrap();
    // `--bogus` reached the probe, which ends with 2 on a word it does not know.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("probe: unknown word '--bogus'"));
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert_eq!(text, "2 2 2\n");
}

/// `--timeout` kills the program and what it started (a process group on Linux, the job object
/// on Windows) and exits 124, as GNU timeout does.
#[test]
fn run_timeout_kills_the_whole_tree_and_exits_124() {
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("late");
    let start = std::time::Instant::now();
    let out = coretune()
        .args(["run", "--timeout", "1", "--"])
        .arg(util::probe())
        .args(["spawn", "4", "sleep", "3000", "write"])
        .arg(&late)
        .args(["sleep", "30000"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(124),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("killed after the timeout (1.0 s)"), "{err}");
    // The grandchild would have written its file after 3 s.
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(!late.exists(), "the grandchild outlived the timeout");
}

/// gcc with OpenMP, statically linked (so that the pinning library cannot reach it and OpenMP's
/// own places do the placing; `tests/pin.rs` covers the dynamically linked case), or `None`
/// (and a note) when this machine cannot build OpenMP programs.
fn build_openmp(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = dir.join("omp.c");
    std::fs::write(
        &src,
        "#include <omp.h>\nint main(void) {\n#pragma omp parallel\n{ volatile int t = omp_get_thread_num(); (void)t; }\nreturn 0;\n}\n",
    )
    .unwrap();
    let exe = dir.join("omp");
    let built = StdCommand::new("gcc")
        .args(["-fopenmp", "-static"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output();
    match built {
        Ok(o) if o.status.success() => Some(exe),
        Ok(o) => {
            util::skip(format!(
                "gcc -fopenmp failed (libgomp missing?): {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            None
        }
        Err(e) => {
            util::skip(format!("gcc not found ({e}): the OpenMP test needs it"));
            None
        }
    }
}

#[test]
fn openmp_threads_land_where_place_planned() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build_openmp(dir.path()) else {
        return;
    };
    for policy in ["cores", "compact", "spread"] {
        let plan: serde_json::Value = serde_json::from_str(&stdout(&[
            "place",
            "--threads",
            "2",
            "--policy",
            policy,
            "--json",
        ]))
        .unwrap();
        let planned: Vec<String> = plan["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let pus: Vec<String> = t["pus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                pus.join(",")
            })
            .collect();
        let out = coretune()
            .args(["run", "--threads", "2", "--place", policy, "--"])
            .arg(&exe)
            .env("OMP_DISPLAY_AFFINITY", "TRUE")
            .env("OMP_AFFINITY_FORMAT", "omp-thread %n affinity %A")
            .output()
            .unwrap();
        util::assert_ok(&out);
        // libgomp prints the display on stderr, one line per thread, in any order, after
        // coretune's warning that the library cannot reach a static program.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("OpenMP's places pin its OpenMP threads"),
            "{stderr}"
        );
        let mut reported: Vec<(usize, String)> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("omp-thread "))
            .map(|l| {
                let (n, aff) = l.split_once(" affinity ").unwrap();
                (n.parse().unwrap(), aff.trim().to_owned())
            })
            .collect();
        reported.sort();
        let reported: Vec<String> = reported.into_iter().map(|(_, a)| a).collect();
        assert_eq!(reported, planned, "{policy}: libgomp says {stderr}");
    }
}

/// A CPU set that does not resolve is one line naming the expression and the reason once, in
/// every command that takes one (it was said twice through the error chain).
#[test]
fn an_unresolvable_cpu_set_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "[[rule]]\nexe = \"x\"\ncpus = \"numa:5\"\n").unwrap();
    let rules = rules.to_str().unwrap();
    let out_dir = dir.path().join("sweep");
    let mut commands = vec![
        vec!["cpus", "numa:5"],
        vec!["bench", "raymesh", "--cpus", "numa:5"],
        vec![
            "tune",
            "--cpus",
            "numa:5",
            "--dry-run",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        vec!["run", "--cpus", "numa:5", "--", "true"],
    ];
    if cfg!(target_os = "linux") {
        // The rules daemon is Linux's.
        commands.push(vec!["rules", "check", rules]);
    }
    for args in commands {
        let out = coretune().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let reason = "index 5 past the last numa";
        assert_eq!(stderr.matches(reason).count(), 1, "{args:?}: {stderr}");
        assert_eq!(stderr.matches("'numa:5'").count(), 1, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// More threads than PUs is said, once, before the program runs; as many is not.
#[test]
fn oversubscription_is_a_warning() {
    let out = coretune()
        .args(["run", "--cpus", "1", "--threads", "3", "--"])
        .arg(util::probe())
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "coretune: warning: 3 threads on 1 PU: oversubscribed, threads share PUs"
    );
    let out = coretune()
        .args(["run", "--cpus", "1", "--threads", "1", "--"])
        .arg(util::probe())
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `run --pid PID` alone shows the binding, as `taskset -p` and `hwloc-bind --get` do; with
/// `--threads`, each thread's.
#[cfg(target_os = "linux")]
#[test]
fn run_pid_alone_shows_the_binding() {
    // CPU 1 where this process may use it (a 2-CPU machine), else CPU 0.
    let cpu = if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        "1"
    } else {
        "0"
    };
    let mut child = std::process::Command::new("taskset")
        .args(["-c", cpu, "sleep", "30"])
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    // taskset execs sleep in the same process; wait until it has.
    let comm = format!("/proc/{pid}/comm");
    for _ in 0..200 {
        if std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() == "sleep") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let show = |extra: &[&str]| {
        let out = coretune()
            .args(["run", "--pid", &pid])
            .args(extra)
            .output()
            .unwrap();
        util::assert_ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(show(&[]), format!("pid {pid}: {cpu}\n"));
    assert_eq!(show(&["--threads", "1"]), format!("thread {pid}: {cpu}\n"));
    let _ = child.kill();
    let _ = child.wait();
}

/// likwid-pin's `-c` syntax is a CPU-set expression too, read as likwid reads it: a domain's
/// threads physical cores first, `E:` over the processor list, scatter, `@`.
#[test]
fn likwid_domain_expressions_are_cpu_sets() {
    let smt = "pack:2 core:2 pu:2";
    for (expr, want) in [
        ("N:0-3", "0,2,4,6"),
        ("S1:0-1", "4,6"),
        ("S0:0-1@S1:0-1", "0,2,4,6"),
        ("E:N:4:1:2", "0,2,4,6"),
        ("E:S0:2", "0-1"),
        ("S:scatter:2", "0,4"),
        ("M0:0", "0"),
    ] {
        assert_eq!(
            stdout(&["cpus", "--input", smt, expr]).trim_end(),
            want,
            "{expr}"
        );
    }
    let out = coretune()
        .args(["cpus", "--input", smt, "S2:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no likwid domain S2 on this machine"), "{err}");
}

/// `place --mem` plans the memory policy beside the CPUs: numactl's options for it, the run
/// line that applies both, the nodes in JSON; one line for a bad node set; "no effect" on a
/// machine with one node.
#[test]
fn place_plans_memory_with_the_cpus() {
    let two = "numa:2 core:2 pu:1";
    let text = stdout(&[
        "place", "--input", two, "-t", "2", "--place", "compact", "--mem", "bind",
    ]);
    // compact fills node 0 first: `bind` without nodes is the node near its CPUs.
    assert!(
        text.contains("memory:     numactl --physcpubind=0-1 --membind=0 CMD"),
        "{text}"
    );
    assert!(
        text.contains("coretune run --threads 2 --place compact --mem bind -- CMD"),
        "{text}"
    );
    let json = util::json(&[
        "place",
        "--input",
        two,
        "-t",
        "4",
        "--place",
        "spread",
        "--mem",
        "interleave",
        "--json",
    ]);
    assert_eq!(json["mem"]["nodes"], serde_json::json!([0, 1]));
    assert_eq!(json["mem"]["numactl"], "--interleave=0-1");
    assert_eq!(
        json["numactl"],
        "numactl --physcpubind=0-3 --interleave=0-1"
    );
    // Left to the OS: no CPU binding, the memory policy alone.
    let text = stdout(&[
        "place", "--input", two, "-t", "2", "--place", "os", "--mem", "local",
    ]);
    assert!(
        text.contains("memory:     numactl --localalloc CMD"),
        "{text}"
    );

    let out = coretune()
        .args([
            "place",
            "--input",
            two,
            "-t",
            "2",
            "--mem",
            "preferred:numa:0-1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = coretune()
        .args([
            "place",
            "--input",
            "core:2 pu:1",
            "-t",
            "2",
            "--mem",
            "interleave",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no effect"));
}

/// `--place` takes what likwid-pin's `-c` takes: an ordered list, thread k on its k-th CPU, in
/// `place` (planned) and `run` (applied: the main thread is thread 0).
#[test]
fn place_takes_an_ordered_cpu_list_as_likwid_pin_does() {
    let smt = "pack:2 core:2 pu:2";
    let pus = |place: &str, threads: &str| -> Vec<Vec<usize>> {
        util::thread_pus(&util::json(&[
            "place", "--input", smt, "-t", threads, "--place", place, "--json",
        ]))
    };
    // likwid order: socket 1 first here, physical cores before SMT siblings; the list wraps.
    assert_eq!(
        pus("S1:0-1@S0:0-1", "5"),
        [[4], [6], [0], [2], [4]].map(Vec::from)
    );
    // A plain list keeps the order written; a hwloc location goes in ascending order.
    assert_eq!(pus("5,1,3", "3"), [[5], [1], [3]].map(Vec::from));
    assert_eq!(pus("E:N:4:1:2", "4"), [[0], [2], [4], [6]].map(Vec::from));
    assert_eq!(pus("pack:1", "2"), [[4], [5]].map(Vec::from));
    let text = stdout(&["place", "--input", smt, "-t", "2", "--place", "S1:0-1"]);
    assert!(
        text.contains("policy round-robin over the list S1:0-1"),
        "{text}"
    );
    assert!(
        text.contains("coretune run --threads 2 --place 'S1:0-1' -- CMD"),
        "{text}"
    );
    assert!(text.contains("likwid-pin -c 4,6 CMD"), "{text}");

    // A typo is neither a policy nor a list: one line that says what is accepted.
    let out = coretune()
        .args(["place", "--input", smt, "-t", "2", "--place", "compcat"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown placement 'compcat'") && err.contains("likwid-pin's -c"),
        "{err}"
    );

    // Applied: the program's main thread is on the list's first CPU.
    if cfg!(target_os = "linux") && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
    {
        let allowed = stdout(&[
            "run",
            "-t",
            "2",
            "--place",
            "1,0",
            "--",
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status",
        ]);
        assert!(allowed.trim_end().ends_with("\t1"), "{allowed}");
    }
}

/// `run --mem` sets the program's memory policy before `exec`, as numactl does: the kernel shows
/// it on each of the program's mappings in /proc/PID/numa_maps (this machine has one node, so it
/// also says the policy changes nothing). Bad policies are one line.
#[cfg(target_os = "linux")]
#[test]
fn run_mem_sets_the_memory_policy_the_program_starts_with() {
    for (policy, shown) in [
        ("interleave", " interleave:0 "),
        ("bind", " bind:0 "),
        ("bind:numa:0", " bind:0 "),
        ("preferred:numa:0", " prefer:0 "),
        ("local", " local "),
    ] {
        let out = coretune()
            .args(["run", "--mem", policy, "--", "cat", "/proc/self/numa_maps"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{policy}: {out:?}");
        let maps = String::from_utf8_lossy(&out.stdout);
        assert!(maps.lines().any(|l| l.contains(shown)), "{policy}: {maps}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if std::path::Path::new("/sys/devices/system/node/node1").exists() {
            continue;
        }
        assert!(
            stderr.contains("one NUMA node") && stderr.contains("no effect"),
            "{stderr}"
        );
    }
    for (policy, want) in [
        ("bind:numa:5", "--mem 'bind:numa:5': 'numa:5'"),
        ("sideways", "unknown memory policy 'sideways'"),
        ("preferred", "unknown memory policy 'preferred'"),
    ] {
        let out = coretune()
            .args(["run", "--mem", policy, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{policy}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{policy}: {stderr}");
        let lines = stderr
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
            .count();
        assert_eq!(lines, 1, "{stderr}");
    }
}

/// Finding 9: a likwid list inside a domain keeps the order written (`S0:1,0` is 1,0 as
/// `likwid-pin -p` prints it, not 0,1), across `@` too; a descending range counts down; every
/// domain `likwid-pin -p` lists exists (`D0` included); the printed likwid-pin equivalent is the
/// same list; a malformed placement names what is wrong with it.
#[test]
fn likwid_lists_inside_a_domain_keep_the_order_likwid_pin_prints() {
    if !util::installed("likwid-pin") {
        return;
    }
    let likwid = |args: &[&str]| {
        let out = StdCommand::new("likwid-pin").args(args).output().unwrap();
        assert!(out.status.success(), "likwid-pin {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    // Every domain likwid-pin knows on this machine, as coretune must know it.
    let listing = likwid(&["-p"]);
    let domains: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.strip_prefix("Domain ")?.strip_suffix(':'))
        .collect();
    assert!(domains.contains(&"D0"), "{listing}");
    let mut cases: Vec<String> = ["S0:1,0", "N:1,0@N:1", "C0:1,0", "N:1-0", "D0:0-1", "M0:1,0"]
        .map(String::from)
        .to_vec();
    cases.extend(domains.iter().map(|d| format!("{d}:0")));
    for expr in &cases {
        let theirs = likwid(&["-p", "-c", expr]);
        let theirs = theirs.lines().last().unwrap_or_default().trim().to_owned();
        let want: Vec<Vec<usize>> = theirs
            .split(',')
            .map(|c| vec![c.parse::<usize>().unwrap()])
            .collect();
        let threads = want.len().to_string();
        let plan = util::json(&["place", "-t", &threads, "--place", expr, "--json"]);
        assert_eq!(util::thread_pus(&plan), want, "--place {expr}");
        let text = stdout(&["place", "-t", &threads, "--place", expr]);
        assert!(
            text.contains(&format!("likwid-pin: likwid-pin -c {theirs} CMD")),
            "{expr}: {text}"
        );
    }
    // Wrong: one line that says what is wrong with the list, then what --place takes.
    let out = coretune()
        .args(["place", "-t", "2", "--place", "N:1-x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown placement 'N:1-x': likwid expression 'N:1-x': '1-x' is not a list")
            && err.contains("likwid-pin's -c"),
        "{err}"
    );
}

/// Finding 25: `run --threads 0` exported OMP_NUM_THREADS=0 (libgomp refuses it, tokio panics on
/// TOKIO_WORKER_THREADS=0) and `--threads 1000000000` was accepted; both are refused before the
/// program starts, as `place` and `tune` refuse them.
#[test]
fn run_refuses_zero_threads_and_more_than_the_thread_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    for threads in ["0", "65537", "1000000000", "-1"] {
        let out = coretune()
            .args(["run", "--threads", threads, "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--threads {threads}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            format!("coretune: --threads {threads}: give a whole number from 1 to 65536\n"),
            "{threads}"
        );
        assert!(!marker.exists(), "--threads {threads} started the program");
    }
    let out = coretune()
        .args(["run", "--threads", "65536", "--"])
        .arg(util::nothing())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Finding 22: `--mem preferred:0` (numactl's way to name node 0) was "'0' is not a location",
/// and a node that is not there leaked hwloc's internals ("object #1 depth -3 below cpuset …");
/// node numbers are NUMA nodes by OS index, as numactl takes them, and a missing node is said
/// as `coretune cpus` says it. In `tune --mem` a bad item is named alone.
#[cfg(target_os = "linux")]
#[test]
fn mem_takes_numactl_s_node_numbers_and_a_missing_node_reads_as_cpus_says() {
    for (policy, shown) in [
        ("preferred:0", " prefer:0 "),
        ("interleave:0", " interleave:0 "),
        ("bind:0", " bind:0 "),
    ] {
        let out = coretune()
            .args(["run", "--mem", policy, "--", "cat", "/proc/self/numa_maps"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{policy}: {out:?}");
        let maps = String::from_utf8_lossy(&out.stdout);
        assert!(maps.lines().any(|l| l.contains(shown)), "{policy}: {maps}");
    }
    // On a 2-node machine described by hwloc, the numbers are the nodes numactl would use.
    let two = "numa:2 core:2 pu:1";
    for (policy, numactl) in [
        ("interleave:0,1", "--interleave=0-1"),
        ("bind:0-1", "--membind=0-1"),
        ("preferred:1", "--preferred=1"),
    ] {
        let json = util::json(&[
            "place", "--input", two, "-t", "2", "--mem", policy, "--json",
        ]);
        assert_eq!(json["mem"]["numactl"], numactl, "{policy}");
    }

    // Nodes that are not there: the words `coretune cpus` uses, one line, status 2.
    // One past the machine's nodes (as the kernel lists them).
    let last = std::fs::read_dir("/sys/devices/system/node")
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("node")
                .is_some_and(|n| n.parse::<usize>().is_ok())
        })
        .count();
    let missing = format!("numa:{last}");
    let cpus_says =
        String::from_utf8(coretune().args(["cpus", &missing]).output().unwrap().stderr).unwrap();
    let cpus_says = cpus_says
        .trim()
        .strip_prefix("coretune: cpus: ")
        .unwrap()
        .to_owned();
    for (args, says) in [
        (
            vec!["run", "--mem", &*format!("bind:{missing}"), "--", "true"],
            cpus_says.clone(),
        ),
        (
            vec!["run", "--mem", &*format!("preferred:{last}"), "--", "true"],
            format!("'{last}': no numa has OS index {last}"),
        ),
        (
            vec![
                "tune",
                "--dry-run",
                "--mem",
                &*format!("local,bind:{missing}"),
                "--",
                "true",
            ],
            cpus_says.clone(),
        ),
        (
            vec!["tune", "--dry-run", "--mem", "local,bogus", "--", "true"],
            "--mem: unknown memory policy 'bogus' (".to_owned(),
        ),
    ] {
        let out = coretune().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&says), "{args:?}: {err} (wanted {says})");
        assert!(!err.contains("depth") && !err.contains("nodeset"), "{err}");
    }
}

/// Finding 35: `place --threads 2 --policy 0,1 --cpus pu:1` put both threads on CPU 1 without a
/// word, though the user named CPU 0 in the list; it now warns which CPUs `--cpus` left out.
#[test]
fn cpus_that_leave_out_cpus_of_an_explicit_list_are_warned_about() {
    let smt = "pack:2 core:2 pu:2";
    let place = |list: &str, cpus: &str| {
        let out = coretune()
            .args([
                "place", "--input", smt, "-t", "4", "--place", list, "--cpus", cpus, "--json",
            ])
            .output()
            .unwrap();
        util::assert_ok(&out);
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            util::thread_pus(&plan),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (pus, err) = place("0,1,5,4", "pack:1");
    assert_eq!(pus, [[5], [4], [5], [4]].map(Vec::from));
    assert!(
        err.contains(
            "coretune: warning: --cpus 'pack:1' leaves out CPUs 0-1 of --place '0,1,5,4': the \
             threads written for them go round-robin over the rest of the list\n"
        ),
        "{err}"
    );
    // Nothing left out, nothing said.
    let (_, err) = place("5,4", "pack:1");
    assert!(!err.contains("leaves out"), "{err}");
    // A policy is limited by --cpus by design.
    let out = coretune()
        .args([
            "place", "--input", smt, "-t", "2", "--place", "compact", "--cpus", "pack:1",
        ])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("leaves out"));
    // `run` says it too (here, where the machine has CPUs 0 and 1 at least).
    let (first, last) = first_and_last_cpu();
    if first != last {
        let list = format!("{first},{last}");
        let out = coretune()
            .args(["run", "-t", "2", "--place", &list, "--cpus"])
            .arg(format!("pu:{last}"))
            .arg("--")
            .arg(util::nothing())
            .output()
            .unwrap();
        util::assert_ok(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("leaves out CPU {first} of --place '{list}'")),
            "{err}"
        );
    }
}

/// The first and last CPU this process may use.
fn first_and_last_cpu() -> (usize, usize) {
    let set = coretune_core::program::affinity_of(0).unwrap();
    let cpus = coretune_core::cpuset::set_to_vec(&set);
    (cpus[0], cpus[cpus.len() - 1])
}

/// Finding 35: `run --cpus 0` warned that the set "includes CPU 0" though CPU 0 was what the
/// user asked for by name. The warning stays for sets that merely contain it.
#[test]
fn cpu_0_named_by_the_user_is_not_warned_about() {
    let says_cpu0 = |args: &[&str]| {
        let out = coretune().args(args).output().unwrap();
        util::assert_ok(&out);
        String::from_utf8_lossy(&out.stderr).contains("includes CPU 0")
    };
    for expr in ["0", "pu:0", "0,9", "5,0"] {
        assert!(!says_cpu0(&["cpus", "--input", SYNTH, expr]), "{expr}");
    }
    for expr in ["0-3", "numa:0", "core:0", "pack:0"] {
        assert!(says_cpu0(&["cpus", "--input", SYNTH, expr]), "{expr}");
    }
    // And where it started: `run`, on this machine.
    if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        let nothing = util::nothing();
        assert!(!says_cpu0(&["run", "--cpus", "0", "--", &nothing]));
    }
}
