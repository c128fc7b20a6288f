//! `coretune calc` and `coretune distrib` against hwloc's own `hwloc-calc` and `hwloc-distrib`
//! (Debian's hwloc-nox 2.9): the same random command lines, on random synthetic machines and on
//! every corpus file, must give the same standard output, byte for byte, and the same exit
//! status (a tool killed by a signal counts as 128 + the signal, as a shell reports it).
//! Skipped with a note when hwloc's tools are not installed.
//!
//! The generators stay off the inputs on which hwloc-calc 2.9 loops for billions of iterations
//! (`core:9-` past the last core, `N-M` with M < N - 1, a negative width); coretune's answer to
//! those is checked in core's unit tests. Each hwloc tool runs under `timeout`, and a case it
//! does not finish is discarded rather than failed.
// Not built for Windows: the references are Debian's hwloc-calc and hwloc-distrib programs: Linux only.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use crate::util;

use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use proptest::test_runner::TestCaseError;

/// What a run printed and how it ended.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    stdout: String,
    status: i32,
}

/// Runs a program with `args` and `stdin`; `None` when it did not finish within the timeout.
fn run(program: &str, tool_args: &[&str], args: &[String], stdin: Option<&str>) -> Option<Outcome> {
    let mut cmd = Command::new("timeout");
    cmd.arg("--kill-after=5")
        .arg("30")
        .arg(program)
        .args(tool_args)
        .args(args);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("timeout(1) runs");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // The program may exit before reading everything.
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child.wait_with_output().unwrap();
    let status = match (out.status.code(), out.status.signal()) {
        (Some(124 | 137), _) => return None,
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => -1,
    };
    Some(Outcome {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        status,
    })
}

fn coretune_path() -> String {
    assert_cmd::cargo::cargo_bin("coretune")
        .to_string_lossy()
        .into_owned()
}

fn hwloc_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let ok = ["hwloc-calc", "hwloc-distrib"].iter().all(|tool| {
            Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
        if !ok {
            util::skip("hwloc-calc/hwloc-distrib (Debian hwloc-nox) not installed");
        }
        ok
    })
}

/// Runs hwloc's tool and coretune's drop-in on the same arguments and compares.
fn compare(
    tool: &str,
    sub: &str,
    args: &[String],
    stdin: Option<&str>,
) -> Result<(), TestCaseError> {
    let Some(want) = run(tool, &[], args, stdin) else {
        // hwloc's tool did not finish: nothing to compare.
        return Ok(());
    };
    if want.status == 128 + 6 {
        // hwloc's tool failed one of its own assertions (SIGABRT): nothing to compare either.
        // hwloc 2.9 does on `--restrict-flags 1` (remove CPU-less objects) with a set outside
        // every PU of a topology with disallowed PUs (`restrict_object_by_cpuset` in
        // topology.c), where without the flag it says "Invalid argument" and goes on; coretune
        // goes on in both cases.
        return Ok(());
    }
    let got = run(&coretune_path(), &[sub], args, stdin)
        .ok_or_else(|| TestCaseError::fail(format!("coretune {sub} {args:?} timed out")))?;
    if std::env::var_os("DROPINS_SHOW").is_some() {
        eprintln!("{sub} {args:?} stdin {stdin:?} -> {want:?}");
    }
    prop_assert_eq!(
        &got,
        &want,
        "coretune {} {:?} (stdin {:?})",
        sub,
        args,
        stdin
    );
    Ok(())
}

/// A topology to give `-i`: a synthetic description or a corpus file, with its size.
#[derive(Clone, Debug)]
struct Machine {
    input: String,
    /// PUs (an upper bound on OS indexes for the corpus' small files).
    pus: usize,
    /// What `--if` names for it: `synthetic` or `xml`.
    format: &'static str,
}

/// The topology input in one of hwloc's spellings (`-i`, `--input`), with `--if`/`--input-format`
/// sometimes, and sometimes the wrong format (hwloc's tools fail on it, status 1).
fn input_args() -> impl Strategy<Value = (u8, bool)> {
    (0u8..6, proptest::bool::weighted(0.1))
}

fn spell_input(m: &Machine, (style, wrong): (u8, bool)) -> Vec<String> {
    let format = match (m.format, wrong) {
        ("xml", true) => "synthetic",
        (_, true) => "xml",
        (f, false) => f,
    };
    let mut args = Vec::new();
    match style {
        3 => args.extend(["--if".to_owned(), format.to_owned()]),
        4 => args.extend(["--input-format".to_owned(), format.to_owned()]),
        _ => {}
    }
    let flag = if style % 2 == 0 { "-i" } else { "--input" };
    args.extend([flag.to_owned(), m.input.clone()]);
    args
}

fn synthetic() -> impl Strategy<Value = Machine> {
    (
        proptest::option::of(1usize..=2),
        proptest::option::weighted(0.2, 1usize..=2),
        proptest::option::weighted(0.2, 1usize..=2),
        proptest::option::of(1usize..=2),
        proptest::option::weighted(0.4, 1usize..=2),
        proptest::option::weighted(0.3, 1usize..=2),
        (1usize..=4, 1usize..=2),
        (0usize..3, any::<bool>()),
    )
        .prop_map(
            |(pack, group, die, numa, l3, l2, (core, pu), (memory_nodes, interleave))| {
                let mut parts = Vec::new();
                let mut pus = core * pu;
                for (name, n) in [
                    ("pack", pack),
                    ("group", group),
                    ("die", die),
                    ("numa", numa),
                    ("l3", l3),
                    ("l2", l2),
                ] {
                    if let Some(n) = n {
                        parts.push(format!("{name}:{n}"));
                        pus *= n;
                    }
                    // Extra NUMA nodes of different sizes attached to each package.
                    if name == "pack" && n.is_some() && numa.is_none() {
                        for k in 0..memory_nodes {
                            parts.push(format!("[numa(memory={})]", 1 << (20 + k)));
                        }
                    }
                }
                parts.push(format!("core:{core}"));
                if interleave && pack.is_some() {
                    parts.push(format!("pu:{pu}(indexes=pack:core)"));
                } else {
                    parts.push(format!("pu:{pu}"));
                }
                Machine {
                    input: parts.join(" "),
                    pus,
                    format: "synthetic",
                }
            },
        )
}

fn corpus() -> impl Strategy<Value = Machine> {
    let files: Vec<Machine> = util::corpus_files()
        .into_iter()
        .map(|f| Machine {
            input: util::fixture(&f),
            pus: 512,
            format: "xml",
        })
        .collect();
    proptest::sample::select(files)
}

/// The corpus files with PCI and OS devices (`tests/data/topologies/io/`).
fn with_devices() -> impl Strategy<Value = Machine> {
    proptest::sample::select(util::io_files()).prop_map(|input| Machine {
        input,
        pus: 128,
        format: "xml",
    })
}

fn machine() -> impl Strategy<Value = Machine> {
    prop_oneof![6 => synthetic(), 4 => corpus(), 1 => with_devices()]
}

/// Device locations, most naming devices of the corpus files that have them.
const DEVICES: &[&str] = &[
    "os=eth0",
    "os=eth5",
    "os=sdc",
    "os=sr0",
    "os=nvml1",
    "os=cuda3",
    "os=opencl0d2",
    "os=bogus",
    "pci=0000:02:00.0",
    "pci=02:00.1",
    "pci=0002:01:00.0",
    "pci=0000:34:00.0",
    "pci=zz",
    "pci[8086:]:0",
    "pci[10de:]:1-2",
    "pci[:15f9]:0",
    "pci[10de:*]:0",
    "pci[14e4:164c]:all",
    "pci[8086",
    "osdev[gpu]:0",
    "osdev[net]:1",
    "osdev[coproc]:all",
    "osdev[foo]:0",
    "gpu:0",
    "net:1",
    "block:0-",
    "osdev:3",
    "osdev:2:3",
    "pci:odd",
    "bridge:0",
    "pcidev:2:3",
    "pci[8086:]",
    "osdev[block]",
    "misc=x",
    "os=eth0.pu:0",
];

/// Type names as hwloc's tools read them, valid and not.
const TYPES: &[&str] = &[
    "pu", "PU", "core", "co", "Core", "pack", "package", "socket", "sock", "pa", "numa", "node",
    "NUMANode", "nu", "l3", "l3cache", "L3", "l3u", "l2", "l2d", "l1", "l1d", "l1i", "die",
    "group", "group0", "group1", "machine", "ma", "osdev", "pci", "block", "misc", "memcache",
    "bridge", "hbm", "mcdram", "cpukind", "foo", "0", "2", "core2", "l9",
];

fn type_name() -> impl Strategy<Value = String> {
    proptest::sample::select(TYPES).prop_map(str::to_owned)
}

/// An index range hwloc-calc finishes: `N`, `N-M` with M >= N - 1, `N-` from 0 or 1 (0 when
/// nested), `N:W` with W >= 1, `all`, `odd`, `even`, and a few that do not parse.
fn range(nested: bool) -> impl Strategy<Value = String> {
    let open = if nested { 0..1usize } else { 0..2usize };
    prop_oneof![
        4 => (0usize..10).prop_map(|n| n.to_string()),
        3 => (0usize..10, 0usize..4).prop_map(|(n, k)| format!("{n}-{}", (n + k).saturating_sub(1))),
        1 => open.prop_map(|n| format!("{n}-")),
        2 => (0usize..10, 1usize..5).prop_map(|(n, w)| format!("{n}:{w}")),
        2 => proptest::sample::select(vec!["all", "odd", "even"]).prop_map(str::to_owned),
        1 => proptest::sample::select(vec!["x", "", "1-x", "2:", "alle", "-1"]).prop_map(str::to_owned),
    ]
}

/// A bitmap as hwloc-calc reads it: hwloc's or taskset's format, with an infinite prefix
/// sometimes, and upper-case digits.
fn bitmap(pus: usize) -> impl Strategy<Value = String> {
    let max = pus.clamp(1, 200) + 8;
    (proptest::collection::btree_set(0..max, 0..12), 0usize..6).prop_map(|(bits, style)| {
        let mut words = vec![0u32; bits.iter().max().map_or(1, |&b| b / 32 + 1)];
        for b in &bits {
            words[b / 32] |= 1 << (b % 32);
        }
        let hwloc: Vec<String> = words
            .iter()
            .rev()
            .map(|&w| {
                if w == 0 {
                    String::new()
                } else {
                    format!("0x{w:08x}")
                }
            })
            .collect();
        let hwloc = hwloc.join(",");
        let hwloc = if hwloc.is_empty() {
            "0x0".to_owned()
        } else {
            hwloc
        };
        let taskset = {
            let hex: String = words.iter().rev().map(|w| format!("{w:08x}")).collect();
            let trimmed = hex.trim_start_matches('0');
            format!("0x{}", if trimmed.is_empty() { "0" } else { trimmed })
        };
        match style {
            0 => hwloc,
            1 => taskset,
            2 => format!(
                "0xf...f,{}",
                hwloc.trim_start_matches("0x0").trim_start_matches(',')
            ),
            3 => taskset.to_uppercase().replace("0X", "0x"),
            4 => hwloc.replace("0x", ""),
            _ => format!("{},", hwloc),
        }
    })
}

/// One location argument, with an operator prefix sometimes.
fn location(pus: usize) -> impl Strategy<Value = String> {
    let single = (type_name(), range(false)).prop_map(|(t, r)| format!("{t}:{r}"));
    let nested = (type_name(), range(false), type_name(), range(true))
        .prop_map(|(t, r, u, q)| format!("{t}:{r}.{u}:{q}"));
    let equal = (type_name(), 0usize..4).prop_map(|(t, n)| format!("{t}={n}"));
    let odd = proptest::sample::select(vec![
        "all",
        "root",
        "0-3",
        "foo",
        "core",
        "os=eth0",
        "pci=0000:00:02.0",
        "pci[8086:]:0",
        "osdev[block]:0",
        "misc=x",
        "pu:1.",
        "core:0.pu",
        "hbm:0",
        "all.pu:0",
        "3",
    ])
    .prop_map(str::to_owned);
    let device = proptest::sample::select(DEVICES).prop_map(str::to_owned);
    let atom = prop_oneof![
        5 => single,
        3 => nested,
        3 => bitmap(pus),
        1 => equal,
        1 => odd,
        2 => device,
    ];
    (
        proptest::sample::select(vec!["", "", "", "~", "x", "^"]),
        atom,
    )
        .prop_map(|(op, atom)| format!("{op}{atom}"))
}

/// hwloc-calc's options after the topology options, each as its arguments.
fn calc_option() -> impl Strategy<Value = Vec<String>> {
    let flag = proptest::sample::select(vec![
        "-l",
        "-p",
        "--li",
        "--lo",
        "--pi",
        "--po",
        "-n",
        "--ni",
        "--no",
        "--single",
        "--taskset",
        "--no-smt",
        "--no-smt=1",
        "--largest",
        "--local-memory",
        "-q",
        "-v",
        "--pulist",
        "--nodelist",
        "--objects",
        "--logical",
        "--physical-output",
    ])
    .prop_map(|f| vec![f.to_owned()]);
    let with_type = (
        proptest::sample::select(vec!["-N", "-I", "--number-of", "--intersect"]),
        type_name(),
    )
        .prop_map(|(o, t)| vec![o.to_owned(), t]);
    let hier =
        (type_name(), type_name()).prop_map(|(a, b)| vec!["-H".to_owned(), format!("{a}.{b}")]);
    let valued = prop_oneof![
        proptest::sample::select(vec![
            "0",
            "1",
            "2",
            "3",
            "4",
            "7",
            "smaller",
            "larger,smaller",
            "all",
            "foo",
            "0x3"
        ])
        .prop_map(|v| vec!["--local-memory-flags".to_owned(), v.to_owned()]),
        proptest::sample::select(vec![
            "capacity",
            "Locality",
            "bandwidth",
            "latency",
            "0",
            "1",
            "9",
            "foo"
        ])
        .prop_map(|v| vec!["--best-memattr".to_owned(), v.to_owned()]),
        proptest::sample::select(vec![":", "", " + "])
            .prop_map(|v| vec!["--sep".to_owned(), v.to_owned()]),
    ];
    prop_oneof![5 => flag, 3 => with_type, 1 => hier, 2 => valued]
}

/// hwloc-calc's topology options (first on the command line).
fn calc_topology_options(pus: usize) -> impl Strategy<Value = Vec<String>> {
    let one = prop_oneof![
        3 => Just(vec!["--disallowed".to_owned()]),
        3 => bitmap(pus).prop_map(|b| vec!["--restrict".to_owned(), b]),
        1 => bitmap(pus).prop_map(|b| vec!["--restrict".to_owned(), format!("nodeset={b}")]),
        1 => proptest::sample::select(vec!["0", "3", "bynodeset", "cpuless,io", "misc", "foo"])
            .prop_map(|f| vec!["--restrict-flags".to_owned(), f.to_owned()]),
        1 => (0usize..3).prop_map(|k| vec!["--cpukind".to_owned(), k.to_string()]),
        1 => proptest::sample::select(vec!["CoreType=IntelAtom", "FrequencyMaxMHz=3900", "x=y"])
            .prop_map(|k| vec!["--cpukind".to_owned(), k.to_owned()]),
    ];
    proptest::collection::vec(one, 0..3).prop_map(|v| v.concat())
}

/// A whole hwloc-calc command line, and the lines of standard input when it has no location.
fn calc_case() -> impl Strategy<Value = (Vec<String>, Option<String>)> {
    machine().prop_flat_map(|m| {
        let pus = m.pus;
        (
            Just(m),
            input_args(),
            calc_topology_options(pus),
            proptest::collection::vec(calc_option(), 0..3),
            proptest::collection::vec(location(pus), 0..4),
            any::<u8>(),
            proptest::collection::vec(proptest::collection::vec(location(pus), 0..3), 1..4),
        )
            .prop_map(|(m, spelling, topo, options, locations, shuffle, lines)| {
                let mut args = spell_input(&m, spelling);
                args.extend(topo);
                let mut items: Vec<Vec<String>> = options;
                items.extend(locations.iter().map(|l| vec![l.clone()]));
                // Options and locations interleave: rotate by a random amount.
                if !items.is_empty() {
                    let k = usize::from(shuffle) % items.len();
                    items.rotate_left(k);
                }
                args.extend(items.concat());
                let stdin = locations.is_empty().then(|| {
                    lines
                        .iter()
                        .map(|l| l.join(" "))
                        .collect::<Vec<_>>()
                        .join("\n")
                        + "\n"
                });
                (args, stdin)
            })
    })
}

const DISTRIB_TYPES: &[&str] = &[
    "pack", "core", "pu", "numa", "l3", "l2", "l1", "die", "group", "machine", "foo", "l1i",
];

fn distrib_case() -> impl Strategy<Value = Vec<String>> {
    machine().prop_flat_map(|m| {
        let pus = m.pus.min(64);
        let option = prop_oneof![
            proptest::sample::select(vec![
                "--single",
                "--reverse",
                "--taskset",
                "-v",
                "--disallowed"
            ])
            .prop_map(|f| vec![f.to_owned()]),
            proptest::sample::select(vec!["0", "1", "3", "bynodeset", "foo"])
                .prop_map(|f| vec!["--restrict-flags".to_owned(), f.to_owned()]),
            bitmap(pus).prop_map(|b| vec!["--restrict".to_owned(), format!("nodeset={b}")]),
            (
                proptest::sample::select(vec!["--from", "--to", "--at", "--ignore"]),
                proptest::sample::select(DISTRIB_TYPES)
            )
                .prop_map(|(o, t)| vec![o.to_owned(), t.to_owned()]),
            bitmap(pus).prop_map(|b| vec!["--restrict".to_owned(), b]),
        ];
        let number = prop_oneof![
            8 => (0..=2 * pus + 3).prop_map(|n| vec![n.to_string()]),
            1 => proptest::sample::select(vec!["abc", "-- 3", "2 3", "--foo 2", ""])
                .prop_map(|s| s.split(' ').filter(|w| !w.is_empty()).map(str::to_owned).collect()),
        ];
        (
            Just(m),
            input_args(),
            proptest::collection::vec(option, 0..4),
            number,
            any::<u8>(),
        )
            .prop_map(|(m, spelling, options, number, at)| {
                let mut items: Vec<Vec<String>> = options;
                let k = usize::from(at) % (items.len() + 1);
                items.insert(k, number);
                let mut args = spell_input(&m, spelling);
                args.extend(items.concat());
                args
            })
    })
}

/// The number of cases: `default`, or `DROPINS_CASES` for a longer search.
fn cases(default: u32) -> u32 {
    std::env::var("DROPINS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    // Each case runs two processes per tool (a few ms each; up to ~50 ms for the biggest
    // corpus files in a debug build). 300 + 200 cases keep this test near 30 s on 2 loaded
    // cores.
    #![proptest_config(ProptestConfig {
        cases: cases(300),
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn calc_prints_what_hwloc_calc_prints((args, stdin) in calc_case()) {
        if !hwloc_installed() {
            return Ok(());
        }
        compare("hwloc-calc", "calc", &args, stdin.as_deref())?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(200),
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn distrib_prints_what_hwloc_distrib_prints(args in distrib_case()) {
        if !hwloc_installed() {
            return Ok(());
        }
        compare("hwloc-distrib", "distrib", &args, None)?;
    }
}

/// hwloc-calc's `-H` output read back: what `hwloc-calc -H a.b LOC` prints
/// (`Package:0.Core:1 ...`) given back as locations, on the command line and on standard input,
/// with another `-H` or `-I` sometimes.
fn hierarchical_case() -> impl Strategy<Value = (String, Vec<String>, Vec<String>)> {
    let levels = proptest::sample::select(vec![
        "pack.core",
        "package.numa.core",
        "core.pu",
        "l3.core.pu",
        "group.pu",
        "die.l2",
        "numa.pu",
        "pack.l1i",
    ]);
    let output = proptest::sample::select(vec![
        vec![],
        vec!["-H".to_owned(), "core.pu".to_owned()],
        vec!["-I".to_owned(), "pu".to_owned()],
        vec!["--taskset".to_owned()],
    ]);
    machine().prop_flat_map(move |m| {
        let pus = m.pus;
        (
            Just(m.input),
            levels.clone(),
            proptest::collection::vec(
                prop_oneof![
                    2 => bitmap(pus),
                    2 => (proptest::sample::select(vec!["pu", "core", "l2", "numa"]), range(false))
                        .prop_map(|(t, r)| format!("{t}:{r}")),
                    1 => location(pus),
                ],
                1..3,
            ),
            output.clone(),
        )
            .prop_map(|(input, levels, locations, output)| {
                let mut first = vec!["-H".to_owned(), levels.to_owned()];
                first.extend(locations);
                (input, first, output)
            })
    })
}

proptest! {
    // Each case runs hwloc-calc once, then both tools twice when it printed objects (about a
    // third of the cases): 100 cases, a few seconds.
    #![proptest_config(ProptestConfig {
        cases: cases(100),
        // The regressions file beside this one (tests/ has no lib.rs for SourceParallel).
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn calc_reads_back_what_hwloc_calc_h_prints((input, first, output) in hierarchical_case()) {
        if !hwloc_installed() {
            return Ok(());
        }
        let mut args = vec!["-i".to_owned(), input.clone()];
        args.extend(first);
        let Some(printed) = run("hwloc-calc", &[], &args, None) else {
            return Ok(());
        };
        let words: Vec<String> = printed.stdout.split_whitespace().map(str::to_owned).collect();
        if printed.status != 0 || words.is_empty() {
            return Ok(());
        }
        let mut again = vec!["-i".to_owned(), input];
        again.extend(output);
        let stdin = format!("{}\n", words.join(" "));
        compare("hwloc-calc", "calc", &again, Some(&stdin))?;
        again.extend(words);
        compare("hwloc-calc", "calc", &again, None)?;
    }
}

/// The options hwloc added after 2.9 (`--cpuset-output-format`/`--cof`,
/// `--cpuset-input-format`/`--cif`, the `systemd-dbus-api` format) against hwloc's own test
/// suite for them (`utils/hwloc/test-hwloc-calc.sh.in` and `.output` in hwloc 2.12): the same
/// command lines, the same output, byte for byte. Debian's 2.9 cannot run them, so the expected
/// lines are hwloc's file's.
#[test]
fn options_after_2_9_match_hwlocs_own_test_cases() {
    const SYNTH: &str = "node:4 core:4 pu:4";
    let cases: &[(&[&str], &str)] = &[
        (
            &["root", "--cpuset-output-format", "hwloc"],
            "0xffffffff,0xffffffff",
        ),
        (&["all", "--cof", "list"], "0-63"),
        (
            &["all", "--cpuset-output-format", "taskset"],
            "0xffffffffffffffff",
        ),
        (
            &["--cpuset-output-format", "taskset", "0xf,0xf0,f00f"],
            "0xf000000f00000f00f",
        ),
        (
            &[
                "--cpuset-output-format",
                "taskset",
                "--cpuset-input-format",
                "hwloc",
                "1,3,5",
            ],
            "0x10000000300000005",
        ),
        (
            &["--cpuset-output-format", "taskset", "1,3,5"],
            "0x10000000300000005",
        ),
        (
            &[
                "--cpuset-output-format",
                "taskset",
                "--cif",
                "hwloc",
                "0xf...f",
            ],
            "0xf...f",
        ),
        (&["--cof", "taskset", "0xf...f,0x1"], "0xf...f00000001"),
        (
            &["--cpuset-output-format", "hwloc", "3-"],
            "0xf...f,0xfffffff8",
        ),
        (
            &["--cpuset-output-format", "hwloc", "3-4,7-34,62,66"],
            "0x00000004,0x40000007,0xffffff98",
        ),
        (
            &[
                "--cpuset-output-format",
                "hwloc",
                "--cpuset-input-format",
                "list",
                "7",
            ],
            "0x00000080",
        ),
        (&["--cof", "hwloc", "--cif", "list", "1,3,5"], "0x0000002a"),
        (
            &["--cpuset-output-format", "list", "0xf000000f00000f00f"],
            "0-3,12-15,36-39,64-67",
        ),
        (
            &[
                "--cpuset-output-format",
                "list",
                "--cif",
                "taskset",
                "0x1234567",
            ],
            "0-2,5-6,8,10,14,16-17,21,24",
        ),
        (&["--cof", "list", "0xf...f00"], "8-"),
        (
            &["--cpuset-output-format", "systemd-dbus-api", "0x01"],
            "ay 0x0001 0x01",
        ),
        (
            &["--cpuset-output-format", "systemd-dbus-api", "0x80000001"],
            "ay 0x0004 0x01 0x00 0x00 0x80",
        ),
        (
            &[
                "--cpuset-output-format",
                "systemd-dbus-api",
                "0x8000000080000001",
            ],
            "ay 0x0008 0x01 0x00 0x00 0x80 0x00 0x00 0x00 0x80",
        ),
        (
            &[
                "--cpuset-output-format",
                "systemd-dbus-api",
                "0xf000000f00000f00f",
            ],
            "ay 0x0009 0x0f 0xf0 0x00 0x00 0xf0 0x00 0x00 0x00 0x0f",
        ),
        (
            &["--no", "--cof", "systemd-dbus-api", "node:0", "node:2"],
            "ay 0x0001 0x05",
        ),
    ];
    for (args, want) in cases {
        let out = util::coretune()
            .args(["calc", "--if", "synthetic", "--input", SYNTH])
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{want}\n"),
            "{args:?}"
        );
    }
    // What hwloc's script expects to fail: an empty set, an infinite one, systemd's format read.
    for args in [
        &["--cpuset-output-format", "systemd-dbus-api", ""][..],
        &["--cpuset-output-format", "systemd-dbus-api", "0xf...f"],
        &[
            "--cpuset-output-format",
            "systemd-dbus-api",
            "--cpuset-input-format",
            "systemd-dbus-api",
            "foo bar",
        ],
    ] {
        let out = util::coretune()
            .args(["calc", "--if", "synthetic", "--input", SYNTH])
            .args(args)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?}");
    }
    // Infinite sets read from stdin and written in taskset's format.
    let mut child = util::coretune_std()
        .args(["calc", "--if", "synthetic", "--input", SYNTH])
        .args(["--cpuset-output-format", "taskset"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"  0xf...f\n0xf...f,abcd00\n0xf...f,abcd,ef00\n0xf...ff00\n0xf...fff0000ffff0000\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("0x"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines,
        [
            "0xf...f",
            "0xf...f00abcd00",
            "0xf...f0000abcd0000ef00",
            "0xf...fffffff00",
            "0xf...fffff0000ffff0000"
        ]
    );
}
