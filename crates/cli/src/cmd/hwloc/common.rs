//! What coretune's drop-ins for hwloc's command-line tools (`calc`, `distrib`) share: hwloc's
//! topology input options (`--input`/`-i`, `--input-format`/`--if` and the 1.0 spellings), the
//! load as the tool does it, `--restrict`, and printing as a C program does (standard output
//! buffered and lost when the program aborts, standard error at once, hwloc's exit statuses).
//!
//! These tools are drop-ins: their command lines are hwloc's, parsed by hand in the order hwloc
//! parses them, and their messages and statuses are hwloc 2.9's rather than coretune's.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use coretune_core::hwloc::{CalcStop, Message, RESTRICT_FLAGS, parse_flags, parse_hwloc_bitmap};
use coretune_core::topology::LoadOptions;
use coretune_core::{Topology, TopologySource};

use crate::input::{SavedTree, saved_tree_to_xml};

/// A drop-in's command line: hwloc's arguments for the tool, unchanged, parsed by hand (clap
/// takes them as they come, `-h` and `--help` included).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub(crate) struct ToolArgs {
    /// The hwloc tool's arguments, unchanged (`coretune calc --help`, `coretune distrib --help`
    /// list them).
    #[arg(
        num_args = 0..,
        allow_hyphen_values = true,
        trailing_var_arg = true,
        value_name = "ARGS"
    )]
    pub(crate) args: Vec<String>,
}

/// The usage lines of the topology options both tools take, descriptions in column `column`
/// (hwloc's `hwloc_utils_input_format_usage`).
pub(crate) fn input_usage(column: usize) -> String {
    let line = |option: &str, what: &str| {
        if option.len() + 2 < column {
            format!("  {option:<width$}{what}\n", width = column - 2)
        } else {
            format!("  {option}\n{:column$}{what}\n", "")
        }
    };
    [
        line(
            "--restrict [nodeset=]<bitmap>",
            "Restrict the topology to some processors or NUMA nodes",
        ),
        line("--restrict-flags <flags>", "Flags for the restriction"),
        line(
            "--disallowed",
            "Include objects disallowed by administrative limitations",
        ),
        line(
            "-i --input <XML file|directory|\"synthetic description\">",
            "Read the topology from there instead of this machine",
        ),
        line(
            "--if --input-format <xml|fsroot|cpuid|synthetic>",
            "Force the input format",
        ),
    ]
    .concat()
}

/// An early end with hwloc's status, after what was printed.
#[derive(Debug)]
pub(crate) struct Exit(pub(crate) u8);

/// hwloc-calc 2.9 dies with SIGABRT here; a shell reports 128 + 6.
pub(crate) const ABORTED: u8 = 134;
/// hwloc-calc 2.9 dies with SIGSEGV (a malformed XML file, a Misc object without a name); a
/// shell reports 128 + 11.
pub(crate) const CRASHED: u8 = 139;

/// Standard output and error as a C program has them: output buffered (a line at a time on a
/// terminal), error unbuffered.
pub(crate) struct Printer {
    out: Vec<u8>,
    tty: bool,
    usage: fn() -> String,
}

/// glibc's buffer for a pipe or file: output goes out when it fills.
const STDIO_BUFFER: usize = 4096;

impl Printer {
    pub(crate) fn new(usage: fn() -> String) -> Self {
        Self {
            out: Vec::new(),
            tty: std::io::stdout().is_terminal(),
            usage,
        }
    }

    fn flush_out(&mut self) {
        let mut stdout = std::io::stdout().lock();
        // A reader that went away is not an error (as for every coretune command).
        let _ = stdout.write_all(&self.out);
        let _ = stdout.flush();
        self.out.clear();
    }

    /// Text for standard output.
    pub(crate) fn print(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
        if (self.tty && text.contains('\n')) || self.out.len() >= STDIO_BUFFER {
            self.flush_out();
        }
    }

    /// A line for standard output.
    pub(crate) fn line(&mut self, text: &str) {
        self.print(text);
        self.print("\n");
    }

    /// A line for standard error, written at once.
    pub(crate) fn err(&mut self, text: &str) {
        eprintln!("{text}");
    }

    /// Prints the engine's messages in order.
    pub(crate) fn messages(&mut self, msgs: &mut Vec<Message>) {
        for msg in msgs.drain(..) {
            match msg {
                Message::Stdout(line) => self.line(&line),
                Message::StdoutPartial(text) => self.print(&text),
                Message::Stderr(line) => self.err(&line),
            }
        }
    }

    /// The tool's usage, on standard output (`--help`).
    pub(crate) fn usage_out(&mut self) {
        let usage = (self.usage)();
        self.print(&usage);
    }

    /// The tool's usage, on standard error (after a bad option).
    pub(crate) fn usage_err(&mut self) {
        eprint!("{}", (self.usage)());
    }

    /// Ends the run with `status`, output flushed.
    pub(crate) fn finish(mut self, status: u8) -> ExitCode {
        self.flush_out();
        ExitCode::from(status)
    }

    /// Ends the run where hwloc's tool stops: an exit flushes output, an abort loses what is
    /// still buffered, as it does in the C program.
    pub(crate) fn stop(mut self, stop: CalcStop, tool: &str) -> ExitCode {
        match stop {
            CalcStop::Exit(status) => self.finish(status),
            CalcStop::Abort(assertion) => {
                self.out.clear();
                eprintln!("coretune {tool}: {assertion} ({tool} 2.9 aborts here)");
                ExitCode::from(ABORTED)
            }
            CalcStop::Crash(why) => {
                self.out.clear();
                eprintln!("coretune {tool}: {why} ({tool} 2.9 crashes here)");
                ExitCode::from(CRASHED)
            }
            _ => {
                self.flush_out();
                ExitCode::from(1)
            }
        }
    }
}

/// The result of a tool's `main`: `Err` for a usage error (its status), `Ok(Err)` where it
/// stops early, `Ok(Ok(status))` when it is done.
pub(crate) type ToolResult = Result<Result<u8, CalcStop>, Exit>;

/// Runs a tool's `main` with a fresh [`Printer`] and ends as the tool ends.
pub(crate) fn run_tool(
    tool: &str,
    usage: fn() -> String,
    main: impl FnOnce(&mut Printer) -> ToolResult,
) -> ExitCode {
    let mut p = Printer::new(usage);
    match main(&mut p) {
        Ok(Ok(status)) => p.finish(status),
        Ok(Err(stop)) => p.stop(stop, tool),
        Err(Exit(status)) => p.finish(status),
    }
}

/// The value of the option at `args[i]`; without one, the usage and status 1, as hwloc's tools
/// end.
pub(crate) fn option_value<'a>(
    args: &'a [String],
    i: usize,
    p: &mut Printer,
) -> Result<&'a str, Exit> {
    match args.get(i + 1) {
        Some(v) => Ok(v),
        None => {
            p.usage_err();
            Err(Exit(1))
        }
    }
}

/// hwloc's input formats (`--input-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum InputFormat {
    #[default]
    Default,
    Xml,
    Fsroot,
    Synthetic,
    Cpuid,
    Shmem,
    Archive,
}

/// `--input` and `--input-format` as given.
#[derive(Clone, Debug, Default)]
pub(crate) struct Input {
    pub(crate) path: Option<String>,
    pub(crate) format: InputFormat,
}

/// `strncasecmp(name, word, n) == 0`, as hwloc compares format names.
fn prefix_of(name: &str, word: &str, n: usize) -> bool {
    let a = name.as_bytes();
    let b = word.as_bytes();
    for i in 0..n {
        let (c1, c2) = (
            a.get(i).map_or(0, u8::to_ascii_lowercase),
            b.get(i).map_or(0, u8::to_ascii_lowercase),
        );
        if c1 == 0 || c2 == 0 || c1 != c2 {
            return c1 == c2;
        }
    }
    true
}

/// `hwloc_utils_parse_input_format`: any prefix hwloc accepts.
fn parse_input_format(name: &str, p: &mut Printer) -> Result<InputFormat, Exit> {
    Ok(if prefix_of(name, "default", 3) {
        InputFormat::Default
    } else if prefix_of(name, "xml", 1) {
        InputFormat::Xml
    } else if prefix_of(name, "fsroot", 1) {
        InputFormat::Fsroot
    } else if prefix_of(name, "shmem", 5) {
        InputFormat::Shmem
    } else if prefix_of(name, "synthetic", 1) {
        InputFormat::Synthetic
    } else if prefix_of(name, "cpuid", 1) {
        InputFormat::Cpuid
    } else if prefix_of(name, "archive", 1) {
        InputFormat::Archive
    } else {
        p.err(&format!("input format `{name}' not supported"));
        p.usage_err();
        return Err(Exit(1));
    })
}

/// `hwloc_utils_lookup_input_option`: consumes an input option at `args[i]`, returning how many
/// arguments it took.
pub(crate) fn lookup_input_option(
    args: &[String],
    i: usize,
    input: &mut Input,
    p: &mut Printer,
) -> Result<Option<usize>, Exit> {
    let opt = args[i].as_str();
    match opt {
        "--input" | "-i" => {
            let v = option_value(args, i, p)?;
            input.path = (!v.is_empty()).then(|| v.to_owned());
        }
        "--input-format" | "--if" => {
            let v = option_value(args, i, p)?;
            input.format = parse_input_format(v, p)?;
        }
        "--synthetic" | "--xml" | "--fsys-root" => {
            input.path = Some(option_value(args, i, p)?.to_owned());
            input.format = match opt {
                "--synthetic" => InputFormat::Synthetic,
                "--xml" => InputFormat::Xml,
                _ => InputFormat::Fsroot,
            };
        }
        _ => return Ok(None),
    }
    Ok(Some(2))
}

/// `hwloc_utils_autodetect_input_format`; `verbose` narrates the guess on standard output.
fn autodetect(path: &str, verbose: bool, p: &mut Printer) -> InputFormat {
    let mut guess = |format: InputFormat, what: &str| {
        if verbose {
            p.line(&format!("assuming `{path}' is {what}"));
        }
        format
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return guess(InputFormat::Synthetic, "a synthetic topology description");
    };
    if meta.is_file() {
        if path.ends_with(".shmem") {
            return guess(InputFormat::Shmem, "a shmem topology file");
        }
        if path.ends_with(".tar.gz") || path.ends_with(".tar.bz2") {
            return guess(InputFormat::Archive, "an archive topology file");
        }
        return guess(InputFormat::Xml, "a XML file");
    }
    if meta.is_dir() {
        let dir = Path::new(path);
        if dir.join("pu0").is_file() {
            return guess(InputFormat::Cpuid, "a cpuid dump");
        }
        if dir.join("proc").is_dir() {
            return guess(InputFormat::Fsroot, "a file-system root");
        }
    }
    p.err(&format!("Unrecognized input file: {path}"));
    InputFormat::Default
}

/// Loads the topology as hwloc's tools do (`hwloc_utils_enable_input_format` then
/// `hwloc_topology_load`). `bad_xml` is the status the tool ends with when the XML cannot be
/// loaded (hwloc-calc 2.9 crashes, hwloc-distrib exits with 1); `verbose` is the tool's
/// verbosity at load time.
pub(crate) fn load(
    input: &Input,
    options: &LoadOptions,
    bad_xml: u8,
    verbose: bool,
    p: &mut Printer,
) -> Result<Topology, Exit> {
    let Some(path) = input.path.as_deref() else {
        return load_source(&TopologySource::Live, options, bad_xml, p);
    };
    let mut path = path.to_owned();
    let mut format = input.format;
    if format == InputFormat::Default && path == "-.xml" {
        format = InputFormat::Xml;
        path = "-".to_owned();
    }
    if format == InputFormat::Default {
        format = autodetect(&path, verbose, p);
        if format == InputFormat::Default {
            p.usage_err();
            return Err(Exit(1));
        }
    }
    let source = match format {
        InputFormat::Xml if path == "-" => {
            let mut xml = String::new();
            if std::io::stdin().read_to_string(&mut xml).is_err() {
                p.err("Setting source XML file: Invalid argument");
                return Err(Exit(1));
            }
            TopologySource::Xml {
                label: "-".to_owned(),
                xml,
            }
        }
        InputFormat::Xml => {
            if !Path::new(&path).exists() {
                p.err("Setting source XML file: No such file or directory");
                return Err(Exit(1));
            }
            TopologySource::XmlFile(path.into())
        }
        InputFormat::Synthetic => TopologySource::Synthetic(path),
        InputFormat::Fsroot | InputFormat::Cpuid => {
            let kind = if format == InputFormat::Fsroot {
                SavedTree::Fsroot
            } else {
                SavedTree::Cpuid
            };
            match saved_tree_to_xml(Path::new(&path), kind, true) {
                Ok(source) => source,
                Err(e) => {
                    p.err(&format!("{e:#}"));
                    return Err(Exit(1));
                }
            }
        }
        // hwloc's tools do nothing for a shmem input and load this machine.
        InputFormat::Shmem | InputFormat::Default => TopologySource::Live,
        InputFormat::Archive => {
            p.err("This installation of hwloc does not support loading from an archive, sorry.");
            return Err(Exit(1));
        }
    };
    load_source(&source, options, bad_xml, p)
}

fn load_source(
    source: &TopologySource,
    options: &LoadOptions,
    bad_xml: u8,
    p: &mut Printer,
) -> Result<Topology, Exit> {
    match Topology::load_with(source, options) {
        Ok(topo) => Ok(topo),
        Err(e) => {
            let status = match source {
                TopologySource::Synthetic(_) => {
                    p.err("Setting synthetic topology description: Invalid argument");
                    1
                }
                TopologySource::Xml { .. } | TopologySource::XmlFile(_) => {
                    p.err(&format!("coretune: {e}"));
                    bad_xml
                }
                _ => {
                    p.err(&format!("coretune: {e}"));
                    1
                }
            };
            Err(Exit(status))
        }
    }
}

/// `--restrict [nodeset=]BITMAP` and `--restrict-flags`, as given.
#[derive(Clone, Debug, Default)]
pub(crate) struct Restrict {
    pub(crate) set: Option<String>,
    pub(crate) flags: u64,
}

impl Restrict {
    /// `--restrict VALUE`; `prefix_len` is how much of `nodeset=` the tool compares (hwloc-calc
    /// 2.9 compares 7 characters, hwloc-distrib 8).
    pub(crate) fn set_value(&mut self, value: &str, prefix_len: usize) {
        let nodeset = "nodeset=";
        if value.len() >= prefix_len
            && value.as_bytes()[..prefix_len] == nodeset.as_bytes()[..prefix_len]
        {
            self.set = Some(value.get(8..).unwrap_or("").to_owned());
            self.flags |= 1 << 3;
        } else {
            self.set = Some(value.to_owned());
        }
    }

    /// `--restrict-flags VALUE`.
    pub(crate) fn flags_value(&mut self, value: &str, p: &mut Printer) {
        let (flags, mut msgs) = parse_flags(value, RESTRICT_FLAGS, "restrict");
        p.messages(&mut msgs);
        self.flags = flags;
    }

    /// Applies the restriction after the load; a refusal is reported and ignored, as hwloc's
    /// tools do.
    pub(crate) fn apply(&self, topo: &mut Topology, p: &mut Printer) -> Result<(), CalcStop> {
        let Some(text) = &self.set else {
            return Ok(());
        };
        let set = parse_hwloc_bitmap(text)?;
        if topo.restrict(&set, self.flags).is_err() {
            p.err("Restricting the topology: Invalid argument");
        }
        Ok(())
    }
}
