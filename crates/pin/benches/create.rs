//! What the pinning library adds to each thread creation.
//!
//! The bench re-runs itself as a child that creates and joins N threads one after another
//! (raw `pthread_create` + `pthread_join`, an empty start routine) and prints the mean time per
//! thread. The child runs in four set-ups, interleaved round by round so that drift hits all
//! alike, and the median of the rounds is reported:
//!
//! - `plain, 1 CPU` and `pinned, 1 CPU`: the child and all its threads on one CPU (the last
//!   this process may use), without the library and with it (a plan whose every place is that
//!   CPU): the same placement both ways, so the difference is what the wrapper itself costs —
//!   copying the attributes, the CPU set in them, glibc's stopped start and its
//!   `sched_setaffinity` (**the figure the ≤ 5 µs target is about**);
//! - `plain` and `pinned`: the child on every CPU, without the library and with a plan of one
//!   place per CPU: the difference adds what placement itself costs, each new thread starting
//!   on another CPU than its creator (a wake-up across CPUs, and on a busy machine a wait for
//!   that CPU);
//! - `preloaded, no plan`: the library without `CORETUNE_PIN` (every call passed through);
//! - `likwid-pin's library`: `liblikwidpin.so` with the same CPUs (`LIKWID_PIN`), where it is
//!   installed, as the peer (it runs `nm` through `system()` on every call, so it gets 1% of
//!   the threads).
//!
//! `cargo bench -p coretune-pin --bench create` runs N = 2000 threads, 9 rounds. Without
//! `--bench` (as under `cargo test --benches`) it is a smoke run: N = 50, 1 round.

// The pinning library is Linux-only (LD_PRELOAD, glibc's pthread_create): elsewhere the bench
// has nothing to measure.
#[cfg(not(target_os = "linux"))]
fn main() {
    println!("coretune-pin: the pinning library is Linux-only; nothing to measure here");
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::c_void;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Instant;

    /// Set in the child: how many threads to create.
    const CHILD: &str = "CORETUNE_PIN_BENCH_CHILD";
    /// Set in the child: the one CPU it runs on, with every thread it creates.
    const ONE_CPU: &str = "CORETUNE_PIN_BENCH_CPU";
    /// The index of likwid-pin's set-up in the list.
    const LIKWID: usize = 5;

    extern "C" fn empty(_: *mut c_void) -> *mut c_void {
        std::ptr::null_mut()
    }

    /// The child: creates and joins `n` threads, prints the mean nanoseconds per thread.
    fn child(n: usize) {
        if let Some(cpu) = std::env::var(ONE_CPU)
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
        {
            // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET and sched_setaffinity only read
            // and write that local.
            unsafe {
                let mut set = std::mem::zeroed::<libc::cpu_set_t>();
                libc::CPU_SET(cpu, &mut set);
                assert_eq!(libc::sched_setaffinity(0, size_of_val(&set), &set), 0);
            }
        }
        let start = Instant::now();
        for _ in 0..n {
            let mut thread = std::mem::MaybeUninit::<libc::pthread_t>::uninit();
            // SAFETY: `thread` is writable, null attributes are the defaults, `empty` is a valid
            // start routine that ignores its argument.
            let rc = unsafe {
                libc::pthread_create(
                    thread.as_mut_ptr(),
                    std::ptr::null(),
                    empty,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(rc, 0, "pthread_create");
            // SAFETY: pthread_create succeeded, so `thread` is initialised and joinable.
            let rc = unsafe { libc::pthread_join(thread.assume_init(), std::ptr::null_mut()) };
            assert_eq!(rc, 0, "pthread_join");
        }
        #[allow(clippy::cast_precision_loss)]
        let per = start.elapsed().as_nanos() as f64 / n as f64;
        println!("{per}");
    }

    /// The CPUs this process may use, from `/proc/self/status`.
    fn allowed_cpus() -> Vec<String> {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or("0")
            .trim();
        let mut out = Vec::new();
        for part in list.split(',') {
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
                    out.extend((a..=b).map(|c| c.to_string()));
                }
                None => out.push(part.to_owned()),
            }
        }
        out
    }

    /// The library, built now with the bench's own profile (`cargo bench` and `cargo test` build
    /// the bench but not its package's `cdylib`; cargo does not hold its lock while benches run):
    /// `target/<profile>/libcoretune_pin.so`, the bench being `target/<profile>/deps/create-<hash>`.
    fn library() -> PathBuf {
        let exe = std::env::current_exe().expect("the bench's own path");
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "-p", "coretune-pin"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match profile.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(other) => {
                build.args(["--profile", other]);
            }
            None => {}
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building coretune-pin failed");
        let lib = profile.join("libcoretune_pin.so");
        assert!(lib.is_file(), "{} is not built", lib.display());
        lib
    }

    pub(crate) fn main() {
        if let Ok(n) = std::env::var(CHILD) {
            child(n.parse().expect("a thread count"));
            return;
        }
        let full = std::env::args().any(|a| a == "--bench");
        let (threads, rounds) = if full { (2000, 9) } else { (50, 1) };
        let lib = library();
        let cpus = allowed_cpus();
        let likwid = Path::new("/usr/lib/x86_64-linux-gnu/liblikwidpin.so");
        let exe = std::env::current_exe().expect("the bench's own path");
        let last = cpus.last().cloned().unwrap_or_else(|| "0".into());
        let preload = ("LD_PRELOAD", lib.display().to_string());
        let mut setups: Vec<(&str, Vec<(&str, String)>)> = vec![
            ("plain, 1 CPU", vec![(ONE_CPU, last.clone())]),
            (
                "pinned, 1 CPU",
                vec![
                    (ONE_CPU, last.clone()),
                    preload.clone(),
                    ("CORETUNE_PIN", format!("places={last}")),
                ],
            ),
            ("plain", vec![]),
            (
                "pinned",
                vec![
                    preload.clone(),
                    ("CORETUNE_PIN", format!("places={}", cpus.join("/"))),
                ],
            ),
            ("preloaded, no plan", vec![preload.clone()]),
        ];
        if likwid.is_file() {
            // likwid-pin's own set-up: the list rotated so that its last entry is the main thread's.
            let mut list = cpus.clone();
            list.rotate_left(1);
            setups.push((
                "likwid-pin's library",
                vec![
                    ("LD_PRELOAD", likwid.display().to_string()),
                    ("LIKWID_PIN", list.join(",")),
                    ("LIKWID_SILENT", "1".into()),
                ],
            ));
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
        for _ in 0..rounds {
            for (i, (_, env)) in setups.iter().enumerate() {
                // likwid's library runs `nm` through system() on every call (~0.1 s): far fewer
                // threads.
                let n = if i == LIKWID {
                    threads / 100 + 1
                } else {
                    threads
                };
                let out = Command::new(&exe)
                    .env(CHILD, n.to_string())
                    .env_remove("LD_PRELOAD")
                    .env_remove("CORETUNE_PIN")
                    .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                    .output()
                    .expect("the bench runs itself");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let text = String::from_utf8_lossy(&out.stdout);
                let ns: f64 = text
                    .lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .next_back()
                    .expect("the child prints its time");
                times[i].push(ns);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let medians: Vec<f64> = times.iter_mut().map(median).collect();
        println!(
            "thread creation + join, {threads} threads a run, median of {rounds} round{} (CPUs {}):",
            if rounds == 1 { "" } else { "s" },
            cpus.join(",")
        );
        for ((name, _), m) in setups.iter().zip(&medians) {
            println!("  {name:<22} {:>9.2} µs per thread", m / 1000.0);
        }
        println!(
            "  added by the wrapper   {:>9.2} µs per thread (pinned − plain on 1 CPU; target ≤ 5 µs)",
            (medians[1] - medians[0]) / 1000.0
        );
        println!(
            "  added with placement   {:>9.2} µs per thread (pinned − plain on every CPU)",
            (medians[3] - medians[2]) / 1000.0
        );
    }
}
