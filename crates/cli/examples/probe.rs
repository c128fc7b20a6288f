//! A small program for coretune's tests to start, on Linux and on Windows alike (where `sh`,
//! `sleep` and `/proc` are not there): it reports what it sees from inside and ends as told.
//!
//! ```text
//! probe [env] [affinity] [spin MS] [sleep MS] [sleep-unless A B MS] [write FILE]
//!       [log FILE TEXT] [pid FILE] [spawn N WORD...] [fail-if A B] [exit CODE]
//! ```
//!
//! Each word is done in order:
//!
//! - `env`: prints `OMP_NUM_THREADS RAYON_NUM_THREADS GOMAXPROCS` (`-` for an unset one);
//! - `affinity`: prints `main CPUS` (the CPUs its main thread may run on) and `thread CPUS` (those
//!   of a thread it creates: what a program's own threads inherit), as CPU lists;
//! - `spin MS`: keeps a CPU busy for MS milliseconds;
//! - `sleep MS`: sleeps MS milliseconds; `sleep-unless A B MS` unless A and B are equal;
//! - `write FILE`: creates FILE (empty), to say it got this far;
//! - `log FILE TEXT`: appends a line `TEXT OMP_NUM_THREADS` to FILE;
//! - `pid FILE`: writes its process id to FILE (for `coretune run --pid`);
//! - `spawn N WORD...`: starts another probe with the next N words, does not wait for it, and
//!   goes on with the words after them (a process tree, for the tests of killing one);
//! - `fail-if A B`: exits with 1 when A and B are equal;
//! - `exit CODE`: exits with CODE at once.
//!
//! It ends with 0 otherwise; an unknown word ends it with 2.

use std::time::{Duration, Instant};

use coretune_core::cpuset::{format_list, set_to_vec};
use coretune_core::program::affinity_of;

fn cpus_of_this_thread() -> String {
    match affinity_of(0) {
        Ok(set) => format_list(&set_to_vec(&set)),
        Err(e) => format!("? ({e})"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut words = args.iter();
    let number = |w: Option<&String>| -> u64 { w.and_then(|v| v.parse().ok()).unwrap_or(0) };
    while let Some(word) = words.next() {
        match word.as_str() {
            "env" => {
                let var = |k: &str| std::env::var(k).unwrap_or_else(|_| "-".to_owned());
                println!(
                    "{} {} {}",
                    var("OMP_NUM_THREADS"),
                    var("RAYON_NUM_THREADS"),
                    var("GOMAXPROCS")
                );
            }
            "affinity" => {
                println!("main {}", cpus_of_this_thread());
                let child = std::thread::spawn(cpus_of_this_thread)
                    .join()
                    .unwrap_or_else(|_| "?".to_owned());
                println!("thread {child}");
            }
            "spin" => {
                let until = Instant::now() + Duration::from_millis(number(words.next()));
                let mut x = 1u64;
                while Instant::now() < until {
                    x = std::hint::black_box(
                        x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                    );
                }
            }
            "sleep" => std::thread::sleep(Duration::from_millis(number(words.next()))),
            "sleep-unless" => {
                let (a, b, ms) = (words.next(), words.next(), number(words.next()));
                if a != b {
                    std::thread::sleep(Duration::from_millis(ms));
                }
            }
            "log" => {
                use std::io::Write as _;
                let (Some(file), Some(text)) = (words.next(), words.next()) else {
                    eprintln!("probe: log needs FILE TEXT");
                    std::process::exit(2);
                };
                let omp = std::env::var("OMP_NUM_THREADS").unwrap_or_else(|_| "-".to_owned());
                let appended = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(file)
                    .and_then(|mut f| writeln!(f, "{text} {omp}"));
                if let Err(e) = appended {
                    eprintln!("probe: {file}: {e}");
                    std::process::exit(1);
                }
            }
            "pid" => {
                let Some(file) = words.next() else {
                    eprintln!("probe: pid needs FILE");
                    std::process::exit(2);
                };
                if let Err(e) = std::fs::write(file, std::process::id().to_string()) {
                    eprintln!("probe: {file}: {e}");
                    std::process::exit(1);
                }
            }
            "fail-if" => {
                if words.next() == words.next() {
                    std::process::exit(1);
                }
            }
            "write" => {
                if let Some(file) = words.next() {
                    if let Err(e) = std::fs::write(file, b"") {
                        eprintln!("probe: {file}: {e}");
                        std::process::exit(1);
                    }
                }
            }
            "spawn" => {
                let n = usize::try_from(number(words.next())).unwrap_or(0);
                let child: Vec<&String> = words.by_ref().take(n).collect();
                let me = std::env::current_exe().unwrap_or_else(|_| "probe".into());
                if let Err(e) = std::process::Command::new(me).args(child).spawn() {
                    eprintln!("probe: spawn: {e}");
                    std::process::exit(1);
                }
            }
            "exit" => std::process::exit(i32::try_from(number(words.next())).unwrap_or(1)),
            other => {
                eprintln!("probe: unknown word '{other}'");
                std::process::exit(2);
            }
        }
    }
}
