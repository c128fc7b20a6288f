//! `coretune distrib`: hwloc-distrib, as a drop-in. It takes hwloc-distrib's command line
//! unchanged and prints what Debian's hwloc-distrib 2.9 prints, with its exit status
//! (`--cof`/`--cpuset-output-format` from hwloc 2.11 as documented). The split itself is core's
//! [`hwloc_distrib`]; this file is hwloc-distrib's command-line grammar.

use std::process::ExitCode;

use clap::Args;
use coretune_core::{
    Bitmap, CalcStop, CpusetFormat, DistribError, DistribOptions, LoadOptions, c_atol,
    hwloc_distrib,
};

use crate::hwloc_tool::{self, CRASHED, Exit, Input, Printer, Restrict};

#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub(crate) struct DistribArgs {
    /// hwloc-distrib's arguments, unchanged: options and the number of sets (see
    /// `coretune distrib --help`).
    #[arg(
        num_args = 0..,
        allow_hyphen_values = true,
        trailing_var_arg = true,
        value_name = "ARGS"
    )]
    args: Vec<String>,
}

/// The most sets coretune distributes: hwloc-distrib allocates one bitmap per set up front.
const MAX_SETS: i64 = 1 << 24;

fn usage() -> String {
    "\
Usage: coretune distrib [options] number
 hwloc-distrib's command line: <number> CPU sets spread over the machine, one per line.
Distribution options:
  --ignore <type>  Ignore objects of the given type
  --from <type>    Distribute starting from objects of the given type
  --to <type>      Distribute down to objects of the given type
  --at <type>      Distribute among objects of the given type
  --reverse        Distribute by starting from last objects
Input topology options:
  --restrict [nodeset=]<bitmap>
                   Restrict the topology to some processors or NUMA nodes
  --restrict-flags <flags>  Flags for the restriction
  --disallowed     Include objects disallowed by administrative limitations
  -i --input <XML file|directory|\"synthetic description\">
                   Read the topology from there instead of this machine
  --if --input-format <xml|fsroot|cpuid|synthetic>
Formatting options:
  --single         Singlify each output to a single CPU
  --taskset        Show taskset-specific cpuset strings
  --cof --cpuset-output-format <hwloc|list|taskset>
Miscellaneous options:
  -v --verbose / --version / -h --help
"
    .to_owned()
}

pub(crate) fn run(args: &DistribArgs) -> anyhow::Result<ExitCode> {
    let mut p = Printer::new(usage);
    Ok(match distrib(&args.args, &mut p) {
        Ok(Ok(status)) => p.finish(status),
        Ok(Err(stop)) => p.stop(stop, "distrib"),
        Err(Exit(status)) => p.finish(status),
    })
}

fn value<'a>(args: &'a [String], i: usize, p: &mut Printer) -> Result<&'a str, Exit> {
    match args.get(i + 1) {
        Some(v) => Ok(v),
        None => {
            p.usage_err();
            Err(Exit(1))
        }
    }
}

/// hwloc-distrib's `main`.
fn distrib(args: &[String], p: &mut Printer) -> Result<Result<u8, CalcStop>, Exit> {
    let mut n: i64 = -1;
    let mut input = Input::default();
    let mut load = LoadOptions::hwloc_distrib();
    let mut restrict = Restrict::default();
    let mut options = DistribOptions::default();
    let mut single = false;
    let mut format = CpusetFormat::Hwloc;
    let mut verbose = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "--" {
            break;
        }
        let mut used = 1;
        if arg.starts_with('-') {
            match arg {
                "--single" => single = true,
                "--taskset" => format = CpusetFormat::Taskset,
                "-v" | "--verbose" => verbose = true,
                "--disallowed" | "--whole-system" => load = load.include_disallowed(true),
                "-h" | "--help" => {
                    p.usage_out();
                    return Err(Exit(0));
                }
                "--ignore" => {
                    let v = value(args, i, p)?;
                    if !load.ignore(v) {
                        p.err(&format!(
                            "Unsupported type `{v}' passed to --ignore, ignoring."
                        ));
                    }
                    used = 2;
                }
                "--from" => {
                    options.from = Some(value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--to" => {
                    options.to = Some(value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--at" => {
                    let v = value(args, i, p)?;
                    options.from = Some(v.to_owned());
                    options.to = Some(v.to_owned());
                    used = 2;
                }
                "--reverse" => options.reverse = true,
                "--restrict" => {
                    restrict.set_value(value(args, i, p)?, 8);
                    used = 2;
                }
                "--restrict-flags" => {
                    let v = value(args, i, p)?;
                    restrict.flags_value(v, p);
                    used = 2;
                }
                "--cpuset-output-format" | "--cof" => {
                    let v = value(args, i, p)?;
                    match CpusetFormat::from_name(v) {
                        Some(f) if f != CpusetFormat::SystemdDbusApi => format = f,
                        _ => {
                            p.err(&format!("Unrecognized {arg} argument {v}"));
                            return Err(Exit(1));
                        }
                    }
                    used = 2;
                }
                "--version" => {
                    p.line(&format!(
                        "coretune distrib {} (hwloc-distrib 2.9.0)",
                        env!("CARGO_PKG_VERSION")
                    ));
                    return Err(Exit(0));
                }
                _ => match hwloc_tool::lookup_input_option(args, i, &mut input, p)? {
                    Some(u) => used = u,
                    None => {
                        p.err(&format!("Unrecognized option: {arg}"));
                        p.usage_err();
                        return Err(Exit(1));
                    }
                },
            }
        } else {
            if n != -1 {
                p.err("duplicate number");
                p.usage_err();
                return Err(Exit(1));
            }
            n = c_atol(arg);
        }
        i += used;
    }
    if n == -1 {
        p.err("need a number");
        p.usage_err();
        return Err(Exit(1));
    }
    if verbose {
        p.err(&format!("distributing {n}"));
    }
    if n < 0 {
        // hwloc-distrib allocates a negative count of bitmaps and crashes.
        p.err(&format!(
            "coretune distrib: {n} sets (hwloc-distrib 2.9 crashes on a negative count)"
        ));
        return Err(Exit(CRASHED));
    }
    if n > MAX_SETS {
        p.err(&format!(
            "coretune distrib: {n} sets is more than coretune distributes ({MAX_SETS})"
        ));
        return Err(Exit(1));
    }
    let mut topo = hwloc_tool::load(&input, &load, 1, verbose, p)?;
    if let Err(stop) = restrict.apply(&mut topo, p) {
        return Ok(Err(stop));
    }
    let sets = match hwloc_distrib(&topo, n as usize, &options) {
        Ok(sets) => sets,
        Err(DistribError::NoItems) => {
            return Ok(Err(CalcStop::Abort(DistribError::NoItems.to_string())));
        }
        Err(e) => {
            p.err(&e.to_string());
            return Err(Exit(1));
        }
    };
    for set in sets {
        let mut set: Bitmap = set.into();
        if single {
            if options.reverse {
                if let Some(last) = set.last_set() {
                    set = Bitmap::new();
                    set.set(last);
                }
            } else {
                set.singlify();
            }
        }
        let text = format.render(&set).unwrap_or_default();
        p.line(&text);
    }
    Ok(Ok(0))
}
