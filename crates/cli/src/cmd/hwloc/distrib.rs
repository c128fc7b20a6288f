//! `coretune distrib`: hwloc-distrib, as a drop-in. It takes hwloc-distrib's command line
//! unchanged and prints what Debian's hwloc-distrib 2.9 prints, with its exit status
//! (`--cof`/`--cpuset-output-format` from hwloc 2.11 as documented). The split itself is core's
//! [`hwloc_distrib`]; this file is hwloc-distrib's command-line grammar.

use std::process::ExitCode;

use coretune_core::hwloc::{BitmapFormat, CalcStop, DistribError, DistribOptions, hwloc_distrib};
use coretune_core::topology::LoadOptions;
use coretune_core::{Bitmap, hwloc};

use super::common::{
    self, CRASHED, Exit, Input, Printer, Restrict, ToolArgs, ToolResult, option_value,
};

pub(crate) type DistribArgs = ToolArgs;

/// The most sets coretune distributes: hwloc-distrib allocates one bitmap per set up front.
const MAX_SETS: i64 = 1 << 24;

fn usage() -> String {
    let head = "\
Usage: coretune distrib [options] number
 hwloc-distrib's command line: <number> CPU sets spread over the machine, one per line.
Distribution options:
  --ignore <type>  Ignore objects of the given type
  --from <type>    Distribute starting from objects of the given type
  --to <type>      Distribute down to objects of the given type
  --at <type>      Distribute among objects of the given type
  --reverse        Distribute by starting from last objects
Input topology options:
";
    let tail = "\
Formatting options:
  --single         Singlify each output to a single CPU
  --taskset        Show taskset-specific cpuset strings
  --cof --cpuset-output-format <hwloc|list|taskset>
Miscellaneous options:
  -v --verbose / --version / -h --help
";
    format!("{head}{}{tail}", common::input_usage(19))
}

pub(crate) fn run(args: &DistribArgs) -> anyhow::Result<ExitCode> {
    Ok(common::run_tool("distrib", usage, |p| {
        distrib(&args.args, p)
    }))
}

/// hwloc-distrib's `main`.
fn distrib(args: &[String], p: &mut Printer) -> ToolResult {
    let mut n: i64 = -1;
    let mut input = Input::default();
    let mut load = LoadOptions::hwloc_distrib();
    let mut restrict = Restrict::default();
    let mut options = DistribOptions::default();
    let mut single = false;
    let mut format = BitmapFormat::Hwloc;
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
                "--taskset" => format = BitmapFormat::Taskset,
                "-v" | "--verbose" => verbose = true,
                "--disallowed" | "--whole-system" => load = load.include_disallowed(true),
                "-h" | "--help" => {
                    p.usage_out();
                    return Err(Exit(0));
                }
                "--ignore" => {
                    let v = option_value(args, i, p)?;
                    match coretune_core::hwloc::type_from_name(v) {
                        Some(ty) => load.ignore(ty),
                        None => p.err(&format!(
                            "Unsupported type `{v}' passed to --ignore, ignoring."
                        )),
                    }
                    used = 2;
                }
                "--from" => {
                    options.from = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--to" => {
                    options.to = Some(option_value(args, i, p)?.to_owned());
                    used = 2;
                }
                "--at" => {
                    let v = option_value(args, i, p)?;
                    options.from = Some(v.to_owned());
                    options.to = Some(v.to_owned());
                    used = 2;
                }
                "--reverse" => options.reverse = true,
                "--restrict" => {
                    restrict.set_value(option_value(args, i, p)?, 8);
                    used = 2;
                }
                "--restrict-flags" => {
                    let v = option_value(args, i, p)?;
                    restrict.flags_value(v, p);
                    used = 2;
                }
                "--cpuset-output-format" | "--cof" => {
                    let v = option_value(args, i, p)?;
                    match BitmapFormat::from_name(v) {
                        Some(f) if f != BitmapFormat::SystemdDbusApi => format = f,
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
                _ => match common::lookup_input_option(args, i, &mut input, p)? {
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
            n = hwloc::atol(arg);
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
    let mut topo = common::load(&input, &load, 1, verbose, p)?;
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
