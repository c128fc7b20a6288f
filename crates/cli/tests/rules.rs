//! `coretune rules`: check, apply and the daemon, end to end on this machine, against the kernel's
//! own answer (`Cpus_allowed_list` of each process and thread in `/proc`).
//!
//! The daemon tests need root (the process-event connector and changing other processes); they
//! print `SKIPPED` otherwise. Every test matches programs by names only it uses (copies of
//! `sleep`, a small threaded C program), so tests running side by side never match each other's
//! processes.
// Not built for Windows: the rules daemon reads /proc and the kernel's process-event connector: Linux only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use crate::util;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use util::coretune;

/// Whether this test runs as root; prints the skip line when not.
fn root_or_skip(test: &str) -> bool {
    if !util::is_root() {
        util::skip(format!(
            "{test} needs root (the process-event connector, other processes)"
        ));
        return false;
    }
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        util::skip(format!("{test} needs 2 CPUs"));
        return false;
    }
    true
}

/// `Cpus_allowed_list` of a process or thread (`pid` or `pid/task/tid`).
fn allowed(task: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{task}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_owned())
}

/// Each thread's `Cpus_allowed_list`, by thread id.
fn thread_allowed(pid: u32) -> Vec<String> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    // In creation order: ids are handed out upwards from the main thread's (the pid) and wrap
    // past pid_max, so a thread made after a wrap has a smaller id than the main thread.
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(4_194_304);
    tids.sort_unstable_by_key(|&t| (t + pid_max - pid) % pid_max);
    tids.iter()
        .filter_map(|t| allowed(&format!("{pid}/task/{t}")))
        .collect()
}

/// Polls `cond` every 10 ms until it holds or `limit` passes.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// The daemon, stopped (SIGTERM) when dropped; its stdout lines (the JSON log) and stderr lines
/// collected as they come.
struct Daemon {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Receiver<String>,
    seen: Vec<String>,
}

impl Daemon {
    fn start(args: &[&str]) -> Self {
        Self::start_with(&assert_cmd::cargo::cargo_bin("coretune"), args)
    }

    /// `program ARGS` (a wrapper that runs coretune).
    fn start_with(program: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&stdout);
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let (tx, rx) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdout,
            stderr: rx,
            seen: Vec::new(),
        }
    }

    /// Waits for a stderr line containing `text` (30 s at most) and returns it.
    fn expect_stderr(&mut self, text: &str) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
            return line.clone();
        }
        let end = Instant::now() + Duration::from_secs(30);
        while let Ok(line) = self
            .stderr
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line.clone());
            if line.contains(text) {
                return line;
            }
        }
        panic!("no stderr line with '{text}'; got {:?}", self.seen);
    }

    fn signal(&self, name: &str) {
        // The shell's own `kill`: procps may not be installed.
        let ok = Command::new("sh")
            .args(["-c", &format!("kill -{name} {}", self.child.id())])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    /// The JSON log lines so far.
    fn log(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// Log lines about process `pid`.
    fn log_of(&self, pid: u32) -> Vec<serde_json::Value> {
        self.log().into_iter().filter(|l| l["pid"] == pid).collect()
    }

    /// Stops it with SIGTERM and expects a clean exit.
    fn stop(mut self) -> Vec<String> {
        self.signal("TERM");
        let status = self.child.wait().unwrap();
        self.expect_stderr("stopping (signal 15)");
        assert!(status.success(), "{status}: {:?}", self.seen);
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Children killed when dropped.
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, program: &Path, args: &[&str]) -> u32 {
        // A program this test process has just written may be "busy" for a moment: another
        // test thread's fork, not yet exec'd, still holds the write descriptor (ETXTBSY).
        let mut tries = 0;
        let child = loop {
            match Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .spawn()
            {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other.unwrap(),
            }
        };
        let pid = child.id();
        self.0.push(child);
        pid
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A folder for one test: programs copied under names only that test uses, and its rules file.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A copy of `sleep` named `name` (a copy, not a link: `/proc/PID/exe` names the file).
    fn sleeper(&self, name: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::copy(which("sleep"), &path).unwrap();
        path
    }

    /// A C program named `name` (arguments: `threads delay_ms [nice]`) that, given `nice`, first
    /// waits (up to 20 s) until its nice value is that — the sign that a daemon has handled its
    /// exec —, then waits `delay_ms`, starts `threads` threads, and sleeps; `None` (and a note)
    /// without gcc.
    fn threaded(&self, name: &str) -> Option<PathBuf> {
        let src = self.path("threads.c");
        std::fs::write(
            &src,
            "#include <pthread.h>\n#include <stdlib.h>\n#include <sys/resource.h>\n\
             #include <unistd.h>\n\
             static void *idle(void *a) { (void)a; sleep(60); return 0; }\n\
             int main(int argc, char **argv) {\n\
               int n = atoi(argv[1]);\n\
               for (int i = 0; argc > 3 && i < 2000; i++) {\n\
                 if (getpriority(PRIO_PROCESS, 0) == atoi(argv[3])) break;\n\
                 usleep(10000);\n  }\n\
               usleep(atoi(argv[2]) * 1000);\n\
               for (int i = 0; i < n; i++) { pthread_t t; pthread_create(&t, 0, idle, 0); }\n\
               sleep(60);\n  return 0;\n}\n",
        )
        .unwrap();
        let out = self.path(name);
        match Command::new("gcc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&out)
            .arg(&src)
            .output()
        {
            Ok(o) if o.status.success() => Some(out),
            Ok(o) => {
                util::skip(format!(
                    "gcc failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                None
            }
            Err(e) => {
                util::skip(format!(
                    "gcc not found ({e}): scripts/setup.sh --test installs it"
                ));
                None
            }
        }
    }

    /// Writes the rules file (mode 644, replaced atomically) and returns its path.
    fn rules(&self, text: &str) -> String {
        let path = self.path("rules.toml");
        let tmp = self.path("rules.toml.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path.to_string_lossy().into_owned()
    }
}

fn which(program: &str) -> PathBuf {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(program))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{program} not found"))
}

/// This test process's own CPUs: what an untouched child keeps.
fn own_allowed() -> String {
    allowed("self").unwrap()
}

/// The end-to-end check of one daemon: matching and non-matching programs, one creating threads
/// after it started; each one's `Cpus_allowed_list` and each thread's.
fn daemon_end_to_end(test: &str, extra: &[&str], source: &str) {
    if !root_or_skip(test) {
        return;
    }
    let setup = Setup::new();
    let matching = setup.sleeper(&format!("ct-{test}-match"));
    let other = setup.sleeper(&format!("ct-{test}-other"));
    let Some(threads) = setup.threaded(&format!("ct-{test}-threads")) else {
        return;
    };
    let rules = setup.rules(&format!(
        "[[rule]]\nname = \"to CPU 1\"\nexe = \"ct-{test}-match\"\ncpus = \"pu:1\"\n\n\
         [[rule]]\nname = \"one CPU per thread\"\nexe = \"ct-{test}-threads\"\ncpus = \"all\"\n\
         policy = \"compact\"\nnice = 2\n"
    ));
    let mut args = vec!["rules", "watch", &rules];
    args.extend_from_slice(extra);
    let mut daemon = Daemon::start(&args);
    daemon.expect_stderr(&format!(
        "2 rules from {rules}; watching process starts {source}"
    ));
    let mut procs = Procs(Vec::new());
    let before = own_allowed();
    let m = procs.spawn(&matching, &["60"]);
    let o = procs.spawn(&other, &["60"]);
    // The threads start once the daemon has handled the exec (the rule's nice is in force), so
    // that they are new threads to it however late a loaded machine lets it run.
    let t = procs.spawn(&threads, &["3", "100", "2"]);
    assert!(
        wait_until(Duration::from_secs(20), || allowed(&m.to_string())
            .as_deref()
            == Some("1")),
        "the matching program was not moved to CPU 1: {:?}; log {:?}",
        allowed(&m.to_string()),
        daemon.log()
    );
    // compact over CPUs 0-1, one CPU per thread in creation order: 0, 1, 0, 1.
    let want = ["0", "1", "0", "1"];
    assert!(
        wait_until(Duration::from_secs(20), || thread_allowed(t) == want),
        "threads of the threaded program: {:?}; log {:?}",
        thread_allowed(t),
        daemon.log()
    );
    assert_eq!(nice_of(&t.to_string()).as_deref(), Some("2"));
    assert_eq!(allowed(&o.to_string()), Some(before.clone()));
    assert_eq!(thread_allowed(o), [before]);

    assert!(wait_until(Duration::from_secs(10), || !daemon
        .log_of(m)
        .is_empty()));
    let log = daemon.log_of(m);
    assert_eq!(log.len(), 1, "{log:?}");
    let line = &log[0];
    for key in [
        "time", "event", "pid", "exe", "rule", "old_cpus", "new_cpus",
    ] {
        assert!(!line[key].is_null(), "no {key} in {line}");
    }
    assert_eq!(line["rule"], "to CPU 1");
    assert_eq!(line["new_cpus"], "1");
    assert_eq!(line["result"], "applied");
    assert!(
        line["exe"]
            .as_str()
            .unwrap()
            .ends_with(&format!("ct-{test}-match"))
    );
    assert!(daemon.log_of(o).is_empty());
    // The daemon logs after it acts: the lines may follow the change by a moment.
    let thread_lines = || {
        daemon
            .log_of(t)
            .iter()
            .filter(|l| l["event"] == "thread")
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(10), || thread_lines() >= 2),
        "{:?}",
        daemon.log_of(t)
    );
    drop(procs);
    daemon.stop();
}

#[test]
fn daemon_on_the_process_event_connector() {
    daemon_end_to_end("conn", &[], "through the kernel's process-event connector");
}

#[test]
fn daemon_polling_proc() {
    daemon_end_to_end(
        "poll",
        &["--poll", "--interval", "50"],
        "by polling /proc every 50 ms",
    );
}

#[test]
fn sighup_reads_the_file_again_and_a_bad_file_keeps_the_rules() {
    if !root_or_skip("sighup_reads_the_file_again") {
        return;
    }
    let setup = Setup::new();
    let prog = setup.sleeper("ct-hup");
    let rule = |cpu: u32| format!("[[rule]]\nexe = \"ct-hup\"\ncpus = \"pu:{cpu}\"\n");
    let rules = setup.rules(&rule(1));
    let mut daemon = Daemon::start(&["rules", "watch", &rules]);
    daemon.expect_stderr("watching process starts");
    let mut procs = Procs(Vec::new());
    let first = procs.spawn(&prog, &["60"]);
    assert!(wait_until(Duration::from_secs(20), || {
        allowed(&first.to_string()).as_deref() == Some("1")
    }));
    setup.rules(&rule(0));
    daemon.signal("HUP");
    daemon.expect_stderr("SIGHUP: 1 rule from");
    // The new rules apply to running processes and to new ones.
    assert!(
        wait_until(Duration::from_secs(20), || {
            allowed(&first.to_string()).as_deref() == Some("0")
        }),
        "{:?}",
        daemon.log()
    );
    let second = procs.spawn(&prog, &["60"]);
    assert!(wait_until(Duration::from_secs(20), || {
        allowed(&second.to_string()).as_deref() == Some("0")
    }));
    assert!(wait_until(Duration::from_secs(10), || {
        daemon.log_of(first).iter().any(|l| l["event"] == "reload")
    }));
    // A broken file: the rules in force stay.
    setup.rules("[[rule]]\nexe = \"ct-hup\"\ncpus = \"pu:1\"\nbogus = 1\n");
    daemon.signal("HUP");
    let line = daemon.expect_stderr("SIGHUP: keeping the rules in force");
    assert!(
        line.contains("rules.toml:4:1: unknown field `bogus`"),
        "{line}"
    );
    let third = procs.spawn(&prog, &["60"]);
    assert!(wait_until(Duration::from_secs(20), || {
        allowed(&third.to_string()).as_deref() == Some("0")
    }));
    drop(procs);
    daemon.stop();
}

/// The nice value of a process (`self` for this one), from `/proc/PID/stat`.
fn nice_of(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(16)
        .map(str::to_owned)
}

#[test]
fn dry_run_changes_nothing() {
    if !root_or_skip("dry_run_changes_nothing") {
        return;
    }
    let setup = Setup::new();
    let prog = setup.sleeper("ct-dry");
    let rules = setup.rules("[[rule]]\nexe = \"ct-dry\"\ncpus = \"pu:1\"\nnice = 5\n");
    let before = own_allowed();
    let mut procs = Procs(Vec::new());
    let running = procs.spawn(&prog, &["60"]);
    let mut daemon = Daemon::start(&["rules", "watch", &rules, "--dry-run"]);
    daemon.expect_stderr("(dry run); watching process starts");
    let started = procs.spawn(&prog, &["60"]);
    for pid in [running, started] {
        assert!(
            wait_until(Duration::from_secs(20), || {
                daemon.log_of(pid).iter().any(|l| l["result"] == "dry-run")
            }),
            "{:?}",
            daemon.log()
        );
        assert_eq!(allowed(&pid.to_string()), Some(before.clone()));
        // Unchanged: what it inherited from this test (0, or more under `nice cargo test`).
        assert_eq!(nice_of(&pid.to_string()), nice_of("self"));
    }
    let line = &daemon.log_of(started)[0];
    assert_eq!(
        (line["new_cpus"].as_str(), line["new_nice"].as_i64()),
        (Some("1"), Some(5))
    );
    daemon.stop();
    // `apply --dry-run` and `check` change nothing either.
    let out = coretune()
        .args(["rules", "apply", "--dry-run", &rules])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""result":"dry-run""#));
    let out = coretune()
        .args(["rules", "check", &rules])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("pid {running:>7}")), "{text}");
    assert!(text.contains(&format!("CPUs {before} → 1")), "{text}");
    assert!(text.contains("would change"), "{text}");
    assert_eq!(allowed(&running.to_string()), Some(before.clone()));
    // `apply` applies once.
    let out = coretune()
        .args(["rules", "apply", &rules])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert_eq!(allowed(&running.to_string()).as_deref(), Some("1"));
    assert_eq!(allowed(&started.to_string()).as_deref(), Some("1"));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["result"] == "applied" && l["event"] == "start")
    );
}

/// 10,000 process starts; every 20th is a matching program that stays alive until the test has
/// seen its CPUs (each lives far longer than 10 ms), the others exit at once. Every matching one
/// must get its rule: none is lost, whatever the kernel's event queue did.
#[test]
fn a_storm_of_process_starts_loses_no_matching_process() {
    if !root_or_skip("a_storm_of_process_starts") {
        return;
    }
    const STARTS: usize = 10_000;
    const EVERY: usize = 20;
    let setup = Setup::new();
    let matching = setup.sleeper("ct-storm-match");
    let other = setup.path("ct-storm-other");
    std::fs::copy(which("true"), &other).unwrap();
    let rules = setup.rules("[[rule]]\nexe = \"ct-storm-match\"\ncpus = \"pu:1\"\n");
    let mut daemon = Daemon::start(&["rules", "watch", &rules]);
    daemon.expect_stderr("watching process starts");
    let started = Instant::now();
    let spawner = |share: usize| {
        let (matching, other) = (matching.clone(), other.clone());
        std::thread::spawn(move || {
            let mut kept = Procs(Vec::new());
            for i in (share..STARTS).step_by(2) {
                if i % EVERY == 0 {
                    kept.spawn(&matching, &["120"]);
                } else {
                    Command::new(&other).status().unwrap();
                }
            }
            kept
        })
    };
    let halves = [spawner(0), spawner(1)];
    let mut kept = Procs(Vec::new());
    for h in halves {
        kept.0.append(&mut h.join().unwrap().0);
    }
    let storm = started.elapsed();
    assert_eq!(kept.0.len(), STARTS / EVERY);
    let pids: Vec<u32> = kept.0.iter().map(Child::id).collect();
    let all_moved = wait_until(Duration::from_secs(30), || {
        pids.iter()
            .all(|p| allowed(&p.to_string()).as_deref() == Some("1"))
    });
    let lost: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|p| allowed(&p.to_string()).as_deref() != Some("1"))
        .collect();
    eprintln!(
        "storm: {STARTS} starts in {:.1} s, {} matching, {} without their rule",
        storm.as_secs_f64(),
        pids.len(),
        lost.len()
    );
    assert!(all_moved && lost.is_empty(), "lost: {lost:?}");
    drop(kept);
    daemon.stop();
}

/// Runs `coretune ARGS` on a bad file: exit status 2, one line on stderr containing `want`,
/// nothing on stdout.
fn refused(args: &[&str], want: &str) {
    let out = coretune().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(want), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_rules_files_are_one_line_exit_2_and_nothing_applied() {
    let setup = Setup::new();
    let prog = setup.sleeper("ct-bad");
    let mut procs = Procs(Vec::new());
    let pid = procs.spawn(&prog, &["60"]);
    let before = allowed(&pid.to_string());
    // The first rule is fine and would match: a bad rule anywhere means nothing is applied.
    let good = "[[rule]]\nexe = \"ct-bad\"\ncpus = \"pu:1\"\n\n";
    let cases = [
        ("[[rule]\nexe = 1\n", "rules.toml:5:"),
        (
            "[[rule]]\nexe = \"x\"\ncpus = \"all\"\ncolour = \"red\"\n",
            "rules.toml:8:1: unknown field `colour`",
        ),
        (
            "[[rule]]\nexe = \"x\"\ncpus = \"all ~zz:0\"\n",
            "rules.toml:7:13: cpus: '~zz:0': unknown object type 'zz'",
        ),
        (
            "[[rule]]\nexe = \"x\"\ncmdline = \"(\"\ncpus = \"all\"\n",
            "rules.toml:7:11: cmdline:",
        ),
    ];
    for (bad, want) in cases {
        let rules = setup.rules(&format!("{good}{bad}"));
        for command in ["check", "apply", "watch"] {
            refused(&["rules", command, &rules], want);
        }
    }
    assert_eq!(allowed(&pid.to_string()), before);
    // An expression that is only invalid here is a warning: the other rules apply.
    let rules = setup.rules(&format!(
        "[[rule]]\nname = \"needs 2 NUMA nodes\"\nexe = \"x\"\ncpus = \"numa:1\"\n\n{good}"
    ));
    let out = coretune()
        .args(["rules", "apply", "--dry-run", &rules])
        .output()
        .unwrap();
    util::assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "rules.toml:1: rule 'needs 2 NUMA nodes' skipped on this machine: cpus 'numa:1':"
        ),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("\"pid\":{pid}")));

    if !root_or_skip("bad_rules_files (the root-only checks)") {
        return;
    }
    // Root refuses a file others can write, and a link.
    let rules = setup.rules(good);
    std::fs::set_permissions(&rules, std::fs::Permissions::from_mode(0o666)).unwrap();
    for command in ["check", "apply", "watch"] {
        refused(
            &["rules", command, &rules],
            "refused: the file is writable by every user",
        );
    }
    std::fs::set_permissions(&rules, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = setup.path("link.toml");
    std::os::unix::fs::symlink(&rules, &link).unwrap();
    refused(
        &["rules", "watch", link.to_str().unwrap()],
        "refused: a symbolic link",
    );
    std::fs::set_permissions(setup.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    refused(&["rules", "apply", &rules], "is writable by every user");
    std::fs::set_permissions(setup.dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(allowed(&pid.to_string()), before);
}

/// Unprivileged, the daemon says which event source it has, and changes only its own user's
/// processes.
#[test]
fn a_normal_user_polls_and_touches_only_its_own_processes() {
    if !root_or_skip("a_normal_user_polls") {
        return;
    }
    let setup = Setup::new();
    std::fs::set_permissions(setup.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = setup.sleeper("ct-user");
    let rules = setup.rules("[[rule]]\nexe = \"ct-user\"\ncpus = \"pu:1\"\n");
    let bin = assert_cmd::cargo::cargo_bin("coretune");
    let nobody = ["--reuid", "65534", "--regid", "65534", "--clear-groups"];
    let usable = Command::new("setpriv")
        .args(nobody)
        .arg(&bin)
        .arg("--version")
        .output();
    if !usable.is_ok_and(|o| o.status.success()) {
        util::skip("a_normal_user_polls: setpriv cannot run coretune as nobody here");
        return;
    }
    let bin_text = bin.to_string_lossy().into_owned();
    let mut args: Vec<&str> = nobody.to_vec();
    args.extend([bin_text.as_str(), "rules", "watch", &rules]);
    let mut daemon = Daemon::start_with(Path::new("setpriv"), &args);
    // Linux 6.6 and later let any user listen to process events; earlier kernels need
    // CAP_NET_ADMIN, and the daemon polls: either way it says which.
    let line = daemon.expect_stderr("watching process starts");
    assert!(
        line.ends_with("through the kernel's process-event connector")
            || line.contains(
                "by polling /proc every 100 ms (the process-event connector is unavailable: "
            ),
        "{line}"
    );
    daemon.expect_stderr("not root: only processes of uid 65534 (yours)");
    let before = own_allowed();
    let mut procs = Procs(Vec::new());
    let mine = procs.spawn(&prog, &["60"]);
    let theirs = {
        let child = Command::new("setpriv")
            .args(nobody)
            .arg(&prog)
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        procs.0.push(child);
        pid
    };
    assert!(
        wait_until(Duration::from_secs(20), || {
            allowed(&theirs.to_string()).as_deref() == Some("1")
        }),
        "{:?} {:?}",
        daemon.log(),
        daemon.seen
    );
    // The root-owned process matched the rule too, but is not the daemon's user's.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(allowed(&mine.to_string()), Some(before));
    assert!(daemon.log_of(mine).is_empty());
    // setpriv execs, so the daemon's pid is the coretune process.
    drop(procs);
    daemon.stop();
}

/// In a PID namespace of its own (a container), the connector does not answer (older kernels) or
/// names processes by the host's pids (newer ones): the daemon falls back to polling its
/// `/proc`, says why, and still applies the rules.
#[test]
fn in_a_pid_namespace_the_daemon_polls() {
    if !root_or_skip("in_a_pid_namespace_the_daemon_polls") {
        return;
    }
    let setup = Setup::new();
    let prog = setup.sleeper("ct-ns-match");
    let rules = setup.rules("[[rule]]\nexe = \"ct-ns-match\"\ncpus = \"pu:1\"\n");
    let bin = assert_cmd::cargo::cargo_bin("coretune");
    let script = format!(
        "'{}' rules watch '{rules}' --interval 20 2> '{err}' & d=$!\n\
         while ! grep -q 'watching process' '{err}' 2>/dev/null; do sleep 0.05; done\n\
         '{}' 60 & p=$!\n\
         for i in $(seq 200); do grep -q '^Cpus_allowed_list:.1$' /proc/$p/status && break; sleep 0.05; done\n\
         grep Cpus_allowed_list /proc/$p/status\nkill $p; kill $d; wait $d\n",
        bin.display(),
        prog.display(),
        err = setup.path("err").display()
    );
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .output();
    let out = match out {
        Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("unshare failed") => o,
        _ => {
            util::skip("in_a_pid_namespace_the_daemon_polls: unshare --pid is not available");
            return;
        }
    };
    let err = std::fs::read_to_string(setup.path("err")).unwrap_or_default();
    // Older kernels do not answer there; newer ones send pids of the initial namespace.
    assert!(
        err.contains(
            "by polling /proc every 20 ms (the process-event connector is unavailable: \
             PROC_CN_MCAST_LISTEN: "
        ),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Cpus_allowed_list:\t1"), "{stdout} {err}");
    assert!(stdout.contains(r#""event":"poll""#), "{stdout}");
}

/// `rules apply` with a policy pins the threads a process already has, one CPU each in thread
/// order.
#[test]
fn apply_pins_existing_threads() {
    if !root_or_skip("apply_pins_existing_threads") {
        return;
    }
    let setup = Setup::new();
    let Some(threads) = setup.threaded("ct-apply-threads") else {
        return;
    };
    let rules =
        setup.rules("[[rule]]\nexe = \"ct-apply-threads\"\ncpus = \"all\"\npolicy = \"compact\"\n");
    let mut procs = Procs(Vec::new());
    let t = procs.spawn(&threads, &["3", "0"]);
    assert!(wait_until(Duration::from_secs(20), || thread_allowed(t)
        .len()
        == 4));
    let out = coretune()
        .args(["rules", "apply", &rules])
        .output()
        .unwrap();
    util::assert_ok(&out);
    assert_eq!(thread_allowed(t), ["0", "1", "0", "1"]);
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(
        (line["threads"].as_u64(), line["result"].as_str()),
        (Some(4), Some("applied"))
    );
}
