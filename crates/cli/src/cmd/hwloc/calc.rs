//! `coretune calc`: hwloc-calc, as a drop-in. It takes hwloc-calc's command line unchanged and
//! prints what Debian's hwloc-calc 2.9 prints, with its exit status; the options hwloc added
//! later (`--cof`/`--cpuset-output-format`, `--cif`/`--cpuset-input-format`, `--oo`,
//! `--default-nodes`, `--local-memory-flags intersect`) follow hwloc's documentation. The engine is core's [`Calc`]; this file is hwloc-calc's command-line
//! grammar, parsed by hand because hwloc-calc's options, locations and `-N`-style options with a
//! value mix freely and apply in order.

use std::io::BufRead as _;
use std::process::ExitCode;

use coretune_core::Bitmap;
use coretune_core::hwloc::{
    BitmapFormat, Calc, CalcStop, LOCAL_NUMANODE_FLAGS, LocationSettings, OutputSettings,
    parse_flags,
};
use coretune_core::topology::LoadOptions;

use super::common::{
    self, CRASHED, Exit, Input, Printer, Restrict, ToolArgs, ToolResult, option_value,
};

pub(crate) type CalcArgs = ToolArgs;

fn usage() -> String {
    let head = "\
Usage: coretune calc [topology options] [options] <location> ...
 hwloc-calc's command line; <location> may be a space-separated list of cpusets or objects:
    core:2-3          the third and fourth cores
    node:1.pu:2       the third PU of the second NUMA node
    0x12345678        a CPU set given as a bitmask string
    os=eth0           the operating system device named eth0
    pci=0000:01:02.0  the PCI device with the given bus ID
  with prefix ~ to remove, ^ for xor and x for intersection
  (hwloc(7), \"Location Specification\"). Without a location, one set per line of stdin.
Topology options (first):
  --no-smt[=<N>]            Keep one PU per core (the N-th)
  --cpukind <n>|<name>=<value>
                            Keep the PUs of one CPU kind
";
    let tail = "\
Conversion options:
  [default]                 The combined locations as a CPU set
  -N --number-of <type|depth>
                            The number of objects intersecting the set
  -I --intersect <type|depth>
                            The indexes of the objects intersecting the set
  -H --hierarchical <type1>.<type2>...
                            The objects intersecting the set, as type1:i.type2:j ...
  --largest                 The largest objects making up the set
  --local-memory            The NUMA nodes local to the set
  --local-memory-flags <x>  Which nodes count as local
  --best-memattr <attr>     Only the best local node for a memory attribute
  --default-nodes           Only the default local nodes (DRAM, not HBM/NVM/GPU memory)
Formatting options:
  -l --logical / -p --physical        Logical (default) or OS indexes
  --li --logical-input / --pi --physical-input
  --lo --logical-output / --po --physical-output
  -n --nodeset / --ni --nodeset-input / --no --nodeset-output
                                      Nodesets instead of CPU sets
  --oo --object-output                Type-prefixed object indexes (Core:2)
  --sep <sep>                         Separator of the output
  --taskset                           taskset's format for CPU sets
  --cof --cpuset-output-format <hwloc|list|taskset|systemd-dbus-api>
  --cif --cpuset-input-format <hwloc|list|taskset>
  --single                            Keep one CPU
Miscellaneous options:
  -q --quiet / -v --verbose / --version / -h --help
";
    format!("{head}{}{tail}", common::input_usage(28))
}

/// hwloc-calc's topology options (accepted first only).
#[derive(Debug, Default)]
struct TopologyOptions {
    disallowed: bool,
    input: Input,
    restrict: Restrict,
    cpukind_index: Option<i32>,
    cpukind_info: Option<(String, String)>,
}

pub(crate) fn run(args: &CalcArgs) -> anyhow::Result<ExitCode> {
    Ok(common::run_tool("calc", usage, |p| calc(&args.args, p)))
}

/// Applies one location, printing hwloc-calc's messages about it.
fn apply(
    calc: &Calc<'_>,
    set: &mut Bitmap,
    location: &str,
    settings: &LocationSettings,
    p: &mut Printer,
) -> Result<(), CalcStop> {
    let mut msgs = Vec::new();
    let recognized = calc.apply(set, location, settings, &mut msgs);
    p.messages(&mut msgs);
    if !recognized? {
        p.err(&format!("ignored unrecognized argument {location}"));
    }
    Ok(())
}

/// hwloc-calc's `main`: `Err` for a usage error, `Ok(Err)` where it stops early.
fn calc(args: &[String], p: &mut Printer) -> ToolResult {
    let mut topo_opts = TopologyOptions::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        match arg {
            "--disallowed" | "--whole-system" => topo_opts.disallowed = true,
            "--restrict" => {
                let v = option_value(args, i, p)?;
                topo_opts.restrict.set_value(v, 7);
                i += 1;
            }
            "--restrict-flags" => {
                let v = option_value(args, i, p)?;
                topo_opts.restrict.flags_value(v, p);
                i += 1;
            }
            "--cpukind" => {
                let v = option_value(args, i, p)?;
                match v.split_once('=') {
                    Some((name, val)) => {
                        topo_opts.cpukind_info = Some((name.to_owned(), val.to_owned()));
                    }
                    None => topo_opts.cpukind_index = Some(coretune_core::hwloc::atoi(v)),
                }
                i += 1;
            }
            _ => match common::lookup_input_option(args, i, &mut topo_opts.input, p)? {
                Some(used) => i += used - 1,
                None => break,
            },
        }
        i += 1;
    }
    let mut topo = common::load(
        &topo_opts.input,
        &LoadOptions::hwloc_calc(topo_opts.disallowed),
        CRASHED,
        false,
        p,
    )?;
    if let Err(stop) = topo_opts.restrict.apply(&mut topo, p) {
        return Ok(Err(stop));
    }
    let mut calc = Calc::new(&topo);
    let mut msgs = Vec::new();
    if let Some(index) = topo_opts.cpukind_index {
        calc.keep_cpukind(index, &mut msgs);
    } else if let Some((name, val)) = &topo_opts.cpukind_info {
        calc.keep_cpukind_info(name, val, &mut msgs);
    }
    p.messages(&mut msgs);

    let mut loc = LocationSettings::default();
    let mut out = OutputSettings::default();
    let mut set = Bitmap::new();
    let mut locations = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg.starts_with('-') {
            // Options with a value take the next argument.
            let mut used = 1;
            match arg {
                "-h" | "--help" => {
                    p.usage_out();
                    return Err(Exit(0));
                }
                "-v" | "--verbose" => loc.verbose += 1,
                "-q" | "--quiet" => loc.verbose -= 1,
                "--disallowed" | "--whole-system" => {
                    p.err(&format!(
                        "Input option {arg} disallowed after options using the topology"
                    ));
                    return Err(Exit(1));
                }
                "--no-smt" => out.no_smt = Some(0),
                _ if arg.starts_with("--no-smt=") => {
                    out.no_smt = Some(coretune_core::hwloc::atoi(&arg[9..]));
                }
                "--number-of" | "-N" => {
                    out.number_of = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--intersect" | "-I" => {
                    out.intersect = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--hierarchical" | "-H" => {
                    out.hierarchical = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--local-memory" => out.local_memory = true,
                "--local-memory-flags" => {
                    let v = option_value(args, i, p)?;
                    out.local_memory = true;
                    let (flags, mut msgs) = parse_flags(v, LOCAL_NUMANODE_FLAGS, "local_numanode");
                    p.messages(&mut msgs);
                    out.local_memory_flags = flags;
                    used = 2;
                }
                "--default-nodes" => {
                    out.local_memory = true;
                    out.default_nodes = true;
                }
                "--best-memattr" => {
                    out.local_memory = true;
                    out.best_memattr = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                _ if arg.eq_ignore_ascii_case("--pulist") || arg == "--proclist" => {
                    out.intersect = Some("pu".to_owned());
                }
                "--nodelist" => out.intersect = Some("numa".to_owned()),
                "--largest" | "--objects" => out.largest = true,
                "--version" => {
                    p.line(&format!(
                        "coretune calc {} (hwloc-calc 2.9.0)",
                        env!("CARGO_PKG_VERSION")
                    ));
                    return Err(Exit(0));
                }
                "-l" | "--logical" => {
                    loc.logical = true;
                    out.logical = true;
                }
                "--li" | "--logical-input" => loc.logical = true,
                "--lo" | "--logical-output" => out.logical = true,
                "-p" | "--physical" => {
                    loc.logical = false;
                    out.logical = false;
                }
                "--pi" | "--physical-input" => loc.logical = false,
                "--po" | "--physical-output" => out.logical = false,
                "-n" | "--nodeset" => {
                    loc.nodeset_input = true;
                    out.nodeset = true;
                }
                "--ni" | "--nodeset-input" => loc.nodeset_input = true,
                "--no" | "--nodeset-output" => out.nodeset = true,
                "--oo" | "--object-output" => out.object_output = true,
                "--sep" => {
                    out.sep = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--single" => out.single = true,
                "--taskset" => out.format = BitmapFormat::Taskset,
                "--cpuset-output-format" | "--cof" => {
                    loc.newer_syntax = true;
                    out.newer_syntax = true;
                    let v = option_value(args, i, p)?;
                    match BitmapFormat::from_name(v) {
                        Some(f) => out.format = f,
                        None => {
                            p.err(&format!("Unrecognized {arg} argument {v}"));
                            return Err(Exit(1));
                        }
                    }
                    used = 2;
                }
                "--cpuset-input-format" | "--cif" => {
                    loc.newer_syntax = true;
                    out.newer_syntax = true;
                    let v = option_value(args, i, p)?;
                    match BitmapFormat::from_name(v) {
                        Some(BitmapFormat::SystemdDbusApi) => {
                            p.err("The systemd-dbus-api format is not supported on input");
                            return Err(Exit(1));
                        }
                        Some(f) => loc.cpuset_input = Some(f),
                        None => {
                            p.err(&format!("Unrecognized {arg} argument {v}"));
                            return Err(Exit(1));
                        }
                    }
                    used = 2;
                }
                _ => {
                    p.err(&format!("Unrecognized option: {arg}"));
                    p.usage_err();
                    return Err(Exit(1));
                }
            }
            i += used;
            continue;
        }
        locations += 1;
        let settings = LocationSettings {
            nodeset_output: out.nodeset,
            ..loc
        };
        if let Err(stop) = apply(&calc, &mut set, arg, &settings, p) {
            return Ok(Err(stop));
        }
        if out.largest && out.nodeset {
            p.err("ignoring --nodeset-output when --largest output is enabled");
            out.nodeset = false;
        }
        i += 1;
    }
    let prepared = match calc.prepare(&out, &mut msgs) {
        Ok(prepared) => prepared,
        Err(stop) => {
            p.messages(&mut msgs);
            return Ok(Err(stop));
        }
    };
    p.messages(&mut msgs);
    if locations > 0 {
        let status = calc.output(&prepared, set, &mut msgs);
        p.messages(&mut msgs);
        return Ok(status);
    }
    // No location on the command line: one set per line of standard input.
    p.line("Waiting for locations to process on stdin...");
    let stdin = std::io::stdin();
    let mut lines = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let mut set = Bitmap::new();
        let settings = LocationSettings {
            nodeset_output: out.nodeset,
            ..loc
        };
        for token in text.split([' ', '\n']).filter(|t| !t.is_empty()) {
            if let Err(stop) = apply(&calc, &mut set, token, &settings, p) {
                return Ok(Err(stop));
            }
        }
        let status = calc.output(&prepared, set, &mut msgs);
        p.messages(&mut msgs);
        if let Err(stop) = status {
            return Ok(Err(stop));
        }
    }
    Ok(Ok(0))
}
