//! `coretune tune --server … --ready … --client …`: real servers under real load generators —
//! nginx under wrk, redis-server under redis-benchmark — each run a server started with the
//! configuration, ready, loaded, stopped; the figures read from the client; nothing left behind.

#![cfg(target_os = "linux")] // process groups, /proc, the servers' Debian packages
#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use crate::util;

use std::net::TcpListener;
use std::path::Path;

/// Whether every program is on PATH (the test is skipped otherwise, saying which is not).
fn have(programs: &[&str]) -> bool {
    programs.iter().all(|p| util::installed(p))
}

/// Nothing of the server is left: no process, and its port can be bound again.
fn assert_all_gone(needle: &str, port: u16) {
    assert_eq!(
        util::processes_with(needle),
        Vec::<String>::new(),
        "left running"
    );
    TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| panic!("port {port}: {e}"));
}

/// An nginx.conf in `dir` serving `hello` on `port` (also `adapt`'s server test).
pub(crate) fn nginx_conf(dir: &Path, port: u16) {
    std::fs::write(
        dir.join("nginx.conf"),
        format!(
            "daemon off;\npid nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n\
             access_log off;\nclient_body_temp_path body;\nproxy_temp_path proxy;\n\
             fastcgi_temp_path fastcgi;\nuwsgi_temp_path uwsgi;\nscgi_temp_path scgi;\n\
             server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"hello\\n\"; }} }}\n}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn nginx_under_wrk_is_tuned_on_requests_per_second_and_p99() {
    if !have(&["nginx", "wrk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    nginx_conf(tmp.path(), port);
    let dir = tmp.path().join("sweep");
    let prefix = tmp.path().to_str().unwrap();
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os,compact",
            "--exhaustive",
        ])
        .args(["--runs", "2", "--warmup", "0", "--quiet"])
        .arg("--server")
        .arg(format!(
            "nginx -p {prefix} -c nginx.conf -g 'worker_processes {{threads}};'"
        ))
        .arg("--ready")
        .arg(format!("tcp:127.0.0.1:{port}"))
        .arg("--client")
        .arg(format!(
            "wrk -t1 -c8 -d1s --latency http://127.0.0.1:{port}/"
        ))
        .args([
            "--metric",
            r"rps=Requests/sec:\s+([0-9.]+)",
            "--higher-is-better",
            "rps",
        ])
        .args([
            "--metric",
            r"p99=\s99%\s+(\S+)",
            "--unit",
            "rps=req/s",
            "--unit",
            "p99=ms",
        ])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    util::assert_valid(&util::schema("summary.schema.json"), &s, "summary.json");
    assert!(
        s["recommendation"]["reason"]
            .as_str()
            .unwrap()
            // Best, or the simplest of those that tie with the best.
            .contains(" is best on rps"),
        "{s:#}"
    );
    // Every run: the client's figures, the server's own CPU time.
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs.len(), 8);
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r}");
        let m = &r["record"]["metrics"];
        assert!(m["rps"].as_f64().unwrap() > 100.0, "{r}");
        // In ms whatever unit wrk chose (us, ms or s).
        assert!(m["p99"].as_f64().unwrap() > 0.0 && m["p99"].as_f64().unwrap() < 1000.0);
        assert!(
            r["record"]["user_s"].as_f64().unwrap() + r["record"]["sys_s"].as_f64().unwrap() > 0.0
        );
        // The pinning check looks at the server's threads only, not at wrk's.
        assert!(r["record"]["pinning"]["off_place"].is_null(), "{r}");
    }
    // The report shows both per configuration; the apply lines speak nginx.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| rps req/s ↑ | p99 ms ↓ |"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"plot-objective\""));
    let apply = s["recommendation"]["apply"].to_string();
    assert!(apply.contains("nginx.conf: worker_processes"), "{apply}");
    assert_all_gone(prefix, port);
}

#[test]
fn redis_under_redis_benchmark_gives_a_pareto_front_of_two_objectives() {
    if !have(&["redis-server", "redis-cli", "redis-benchmark"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    let dir = tmp.path().join("sweep");
    let data = tmp.path().to_str().unwrap();
    let out = util::coretune()
        .args([
            "tune",
            "--threads",
            "1,2",
            "--place",
            "os",
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .arg("--quiet")
        .arg("--server")
        .arg(format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --io-threads {{threads}} --dir {data}"
        ))
        .arg("--ready")
        .arg(format!("redis-cli -p {port} ping | grep -q PONG"))
        .arg("--client")
        .arg(format!(
            "redis-benchmark -p {port} -n 20000 -c 8 -t get --csv"
        ))
        .args([
            "--metric",
            r#"rps="GET","([0-9.]+)""#,
            "--higher-is-better",
            "rps",
        ])
        .args([
            "--metric",
            r#"p50="GET"(?:,"[0-9.]+"){3},"([0-9.]+)""#,
            "--unit",
            "p50=ms",
        ])
        .args(["--metric", r#"p99="GET"(?:,"[0-9.]+"){5},"([0-9.]+)""#])
        .args(["--unit", "p99=ms", "--objective", "rps,p99"])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
    let s = util::summary(&dir);
    let configs = s["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert!(
            c["metrics"]["rps"]["median"].as_f64().unwrap() > 100.0,
            "{c}"
        );
        let (p50, p99) = (
            c["metrics"]["p50"]["median"].as_f64().unwrap(),
            c["metrics"]["p99"]["median"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{c}");
    }
    assert!(configs.iter().any(|c| c["pareto"] == true), "{s:#}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Pareto front of rps and p99"), "{stdout}");
    assert!(dir.join("pareto.svg").is_file());
    assert_all_gone(&format!("--port {port}"), port);
}

#[test]
fn a_server_that_dies_or_never_gets_ready_fails_its_runs_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    let sweep = |name: &str, server: &str| {
        let dir = tmp.path().join(name);
        let out = util::coretune()
            .args([
                "tune",
                "--threads",
                "1",
                "--place",
                "os",
                "--runs",
                "1",
                "--warmup",
                "0",
            ])
            .args(["--quiet", "--ready-timeout", "0.5", "--server", server])
            .arg("--ready")
            .arg(format!("tcp:127.0.0.1:{port}"))
            // Judged on the client's time, said explicitly (no metric to read).
            .args(["--client", "true", "--objective", "time", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        (out, dir)
    };
    let (out, dir) = sweep("dies", "echo 'bind: address in use' >&2; exit 4");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("ended before it was ready") && stderr.contains("bind: address in use"),
        "{stderr}"
    );
    // The reason is quoted once in each line that says it (at once, and in the verdict).
    for line in stderr.lines() {
        assert!(
            line.matches("bind: address in use").count() <= 1,
            "{stderr}"
        );
    }
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    assert_eq!(runs[0]["stderr_tail"], "bind: address in use\n");

    let (out, _) = sweep("silent", "exec sleep 29.75");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    // The time it waited, said as measured: 0.5 s, or a little more on a loaded machine.
    assert!(
        stderr.contains("not ready after 0.") && stderr.contains(" s: tcp:127.0.0.1:"),
        "{stderr}"
    );
    // A needle no other process on a shared machine has (a "sleep 300" would match "sleep 30").
    assert_all_gone("sleep 29.75", port);
}

/// Finding 13: a server sweep without `--metric` was judged on the client's time, which the
/// client fixes (`wrk -d1s` takes a second whatever the server does), and recommended from
/// that noise. It is refused before anything runs, unless `--objective time` says so.
#[test]
fn a_server_sweep_without_a_metric_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let base = [
        "tune",
        "--threads",
        "1",
        "--place",
        "os",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--quiet",
        // A needle no other process on a shared machine has.
        "--server",
        "sleep 31.4159",
        "--ready",
        "true",
        "--client",
        "true",
    ];
    for extra in [&[][..], &["--dry-run"]] {
        let out = util::coretune()
            .args(base)
            .args(extra)
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(
                "--server without --metric: a run's time is the client's, fixed by the client"
            ) && stderr.contains("or say --objective time"),
            "{stderr}"
        );
        assert!(!dir.exists());
    }
    assert_eq!(
        util::processes_with("sleep 31.4159"),
        Vec::<String>::new(),
        "started"
    );
    // Said explicitly, the client's time is the objective.
    let out = util::coretune()
        .args(base)
        .args(["--objective", "time", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    util::assert_ok(&out);
}

#[test]
fn bad_server_arguments_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("x");
    let out_dir = out_dir.to_str().unwrap();
    for (args, message) in [
        (
            vec!["--ready", "tcp:127.0.0.1:80", "--", "true"],
            "--ready goes with --server CMD",
        ),
        (
            vec!["--server", "true", "--ready", "tcp:127.0.0.1:80"],
            "--server needs --ready",
        ),
        (
            vec![
                "--server", "true", "--ready", "tcp:host", "--client", "true",
            ],
            "--ready 'tcp:host': ",
        ),
        (
            vec![
                "--server", "true", "--ready", "true", "--client", "true", "--", "x",
            ],
            "--server CMD is what is measured",
        ),
        (
            vec![
                "--server",
                "true",
                "--ready",
                "true",
                "--client",
                "true",
                "--ready-timeout",
                "0",
            ],
            "--ready-timeout must be a positive number of seconds",
        ),
        (
            vec![
                "--server",
                "true",
                "--ready",
                "true",
                "--client",
                "true",
                "--client-cpus",
                "numa:9",
                "--objective",
                "time",
            ],
            "--client-cpus 'numa:9'",
        ),
    ] {
        let out = util::coretune()
            .args(["tune", "--out", out_dir])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// `tune` with nginx on `port` (from `dir`'s `nginx.conf`, or `conf`), one run per
/// configuration, with `extra` arguments; its output and its folder.
fn nginx_sweep(
    dir: &Path,
    conf: &str,
    port: u16,
    extra: &[&str],
) -> (std::process::Output, std::path::PathBuf) {
    let out_dir = dir.join(format!(
        "sweep-{}",
        extra.join("-").replace(['/', ' '], "_")
    ));
    let out = util::coretune()
        .args(["tune", "--runs", "1", "--warmup", "0", "--exhaustive"])
        .args(extra)
        .arg("--server")
        .arg(format!(
            "nginx -p {} -c {conf} -g 'worker_processes {{threads}};'",
            dir.display()
        ))
        .arg("--ready")
        .arg(format!("tcp:127.0.0.1:{port}"))
        .args(["--client"])
        .arg(format!("wrk -t1 -c4 -d1s http://127.0.0.1:{port}/"))
        .args([
            "--metric",
            r"rps=Requests/sec:\s+([0-9.]+)",
            "--higher-is-better",
            "rps",
        ])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    (out, out_dir)
}

/// Finding 2 of the first afternoon: nginx's worker processes, forked by its master, all ran
/// on the master's CPU under every pinned placement, and nothing said so. Now each worker
/// process has its own place, the run's audit checked it, and the apply line's
/// `worker_cpu_affinity` is what was measured.
#[test]
fn nginx_workers_get_a_place_each_and_the_audit_checks_it() {
    if !have(&["nginx", "wrk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    nginx_conf(tmp.path(), port);
    let (out, dir) = nginx_sweep(
        tmp.path(),
        "nginx.conf",
        port,
        &["--threads", "2", "--place", "compact,cores"],
    );
    util::assert_ok(&out);
    for run in util::read_jsonl(&dir.join("runs.jsonl")) {
        assert_eq!(run["status"], "ok", "{run}");
        let checked = run["record"]["audit"]["checked"].to_string();
        assert!(
            checked.contains("placed by the pinning library")
                && checked.contains(&format!("tcp:127.0.0.1:{port} answered by the server")),
            "{run}"
        );
        let pinning = &run["record"]["pinning"];
        // The master, its 2 workers, and the shell that started it.
        assert!(pinning["processes_seen"].as_u64().unwrap() >= 3, "{run}");
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("worker_processes 2; worker_cpu_affinity 01 10;"),
        "{stdout}"
    );
    assert_all_gone(&tmp.path().display().to_string(), port);
}

/// Finding 3 of the first afternoon: `--ready tcp:` was satisfied by another server already on
/// the port, and the sweep measured that one. A port that already answers is refused before
/// anything runs, naming who holds it.
#[test]
fn a_port_that_already_answers_is_refused_before_the_sweep() {
    if !have(&["nginx", "wrk", "python3"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    nginx_conf(tmp.path(), port);
    let mut squatter = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed().as_secs() < 10,
            "python3's server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (out, dir) = nginx_sweep(
        tmp.path(),
        "nginx.conf",
        port,
        &["--threads", "1", "--place", "os"],
    );
    squatter.kill().unwrap();
    squatter.wait().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "tcp:127.0.0.1:{port} already accepts connections before the server starts"
        )) && stderr.contains("http.server"),
        "{stderr}"
    );
    assert!(!dir.exists(), "no folder for a sweep that cannot run");
}

/// Finding 4 of the first afternoon: plain `nginx` (which daemonizes) was left running after
/// the sweep, with a cryptic "No child processes". Each run now fails saying that the server
/// daemonized and how to keep it in the foreground, and everything it started is stopped.
#[test]
fn a_server_that_daemonizes_fails_with_how_to_keep_it_in_the_foreground_and_is_stopped() {
    if !have(&["nginx", "wrk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    nginx_conf(tmp.path(), port);
    let conf = std::fs::read_to_string(tmp.path().join("nginx.conf")).unwrap();
    std::fs::write(
        tmp.path().join("daemon.conf"),
        conf.replace("daemon off;", "daemon on;"),
    )
    .unwrap();
    let (out, dir) = nginx_sweep(
        tmp.path(),
        "daemon.conf",
        port,
        &["--threads", "1", "--place", "os"],
    );
    assert_eq!(out.status.code(), Some(1));
    let runs = util::read_jsonl(&dir.join("runs.jsonl"));
    let error = runs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("server 'nginx' daemonized")
            && error.contains("-g 'daemon off;'")
            // Named by its command line: "nginx: master process …" once nginx has renamed it.
            && error.contains(") running in the background"),
        "{error}"
    );
    assert_all_gone(&tmp.path().display().to_string(), port);
    // Another kind of daemon: a shell script that leaves its server in the background with
    // setsid, ready by a command.
    let flag = tmp.path().join("up");
    let out = util::coretune()
        .args(["tune", "--runs", "1", "--warmup", "0", "--threads", "1"])
        .args(["--place", "os", "--objective", "time", "--server"])
        .arg(format!(
            "setsid sh -c 'sleep 0.3; touch {0}; exec sleep 29.5' &",
            flag.display()
        ))
        .arg("--ready")
        .arg(format!("test -e {}", flag.display()))
        .args(["--client", "true", "--out"])
        .arg(tmp.path().join("script"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let runs = util::read_jsonl(&tmp.path().join("script/runs.jsonl"));
    let error = runs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("daemonized") && error.contains("sleep 29.5"),
        "{error}"
    );
    assert_eq!(util::processes_with("sleep 29.5"), Vec::<String>::new());
}

/// Finding 5 of the first afternoon: a second Ctrl-C quit with the server and its load
/// generator still running (parent 1). Now it ends them, then exits 130.
#[test]
fn a_second_ctrl_c_ends_the_server_and_its_client_before_coretune_exits() {
    if !have(&["nginx", "wrk"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let port = util::free_port();
    nginx_conf(tmp.path(), port);
    let child = util::coretune_std()
        .args(["tune", "--runs", "2", "--warmup", "0", "--threads", "1"])
        .args(["--place", "os", "--server"])
        .arg(format!(
            "nginx -p {} -c nginx.conf -g 'worker_processes {{threads}};'",
            tmp.path().display()
        ))
        .arg("--ready")
        .arg(format!("tcp:127.0.0.1:{port}"))
        .arg("--client")
        .arg(format!("wrk -t1 -c4 -d6s http://127.0.0.1:{port}/"))
        .args(["--metric", r"rps=Requests/sec:\s+([0-9.]+)", "--out"])
        .arg(tmp.path().join("sweep"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The client is running.
    let start = std::time::Instant::now();
    while util::processes_with(&format!("127.0.0.1:{port}")).is_empty() {
        assert!(start.elapsed().as_secs() < 10, "wrk did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    for _ in 0..2 {
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("quitting now, after ending"), "{stderr}");
    assert_all_gone(&tmp.path().display().to_string(), port);
    assert_all_gone(&format!("127.0.0.1:{port}"), port);
}
