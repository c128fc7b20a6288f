//! Why a sweep could not start, or stopped early: [`SweepError`].

use std::path::PathBuf;

use crate::grid::ConfigError;

/// Why a sweep could not start, or stopped early. Every variant keeps the path, program or
/// configuration it is about, and its message is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A results file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The default results folder cannot be made in the working directory (read-only, another
    /// user's): the way out is to say where (`--out DIR`).
    #[error("cannot create {} here: {error}; use --out DIR", base.display())]
    NoFolderHere {
        /// The folder the results go under by default (`coretune-results`).
        base: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A results file could not be written.
    #[error("writing {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A results file is not what it should be.
    #[error("{}{}: {message}", path.display(), if *line > 0 { format!(":{line}") } else { String::new() })]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 when not known).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A results file of another version.
    #[error("{}: a '{found}' file, not {expected}", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// The schema it says it has.
        found: String,
        /// The schema this coretune reads.
        expected: &'static str,
    },
    /// A folder with no sweep folder one or two levels below it.
    #[error("{}: no sweep folders in it (a fleet folder holds TYPE/NODE/sweep.json)", dir.display())]
    NotAFleet {
        /// The folder.
        dir: PathBuf,
    },
    /// Not a folder.
    #[error("{}: not a folder", dir.display())]
    NotAFolder {
        /// The path given.
        dir: PathBuf,
    },
    /// A new sweep was pointed at a folder that holds other files.
    #[error(
        "{} is not empty: --out takes a new or empty folder, so that coretune's files are not \
         mixed with others (nor written over them)",
        dir.display()
    )]
    NotEmpty {
        /// The folder.
        dir: PathBuf,
    },
    /// A new sweep was pointed at a folder that already holds one.
    #[error(
        "{} already holds a sweep; continue it with --resume {}, or choose another --out",
        dir.display(),
        dir.display()
    )]
    AlreadyASweep {
        /// The folder.
        dir: PathBuf,
    },
    /// No command to run.
    #[error("no command given")]
    NoCommand,
    /// An argument holds what looks like a misspelt placeholder.
    #[error(
        "'{arg}': {{{name}}} is not a placeholder; did you mean {{{known}}}? (placeholders: {})",
        crate::sweep::run::placeholder_list()
    )]
    Placeholder {
        /// The argument.
        arg: String,
        /// The name between the braces.
        name: String,
        /// The placeholder it is closest to.
        known: &'static str,
    },
    /// The program word is a whole command line (`-- 'sort f | wc -l'`) that no file matches.
    #[error(
        "'{program}': command not found: that is a whole command line in one word; run it \
         through sh -c with --shell, or give its words separately"
    )]
    WholeCommandLine {
        /// The word given.
        program: String,
    },
    /// The workload cannot be built.
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// The program cannot be started.
    #[error(transparent)]
    Launch(#[from] crate::program::LaunchError),
    /// A server's readiness test that is neither `tcp:HOST:PORT` nor a command.
    #[error(transparent)]
    Ready(#[from] crate::program::server::ParseReadyError),
    /// A server cannot be measured here (its port already answers).
    #[error(transparent)]
    Server(#[from] crate::program::server::ServerError),
    /// A configuration cannot run on this machine.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A `--metric-from` file exists before the sweep runs.
    #[error(
        "--metric-from {}: the file exists; coretune removes this file between runs (so that \
         an old figure never passes for a new one) and will not remove one it did not write: \
         move it away (a file left by an interrupted run too) or choose another name",
        path.display()
    )]
    MetricFileExists {
        /// The file.
        path: PathBuf,
    },
    /// A resumed sweep's program is not the file the sweep measured.
    #[error(
        "'{name}' is not the file this sweep measured ({}: {differs}): put that one back, or \
         give --force to go on with this one (its runs would be pooled with the others')",
        path.display()
    )]
    NotTheSameProgram {
        /// The program as the command names it.
        name: String,
        /// The file the sweep measured.
        path: PathBuf,
        /// What differs (`its size, mtime and hash differ`), or `it is gone`.
        differs: String,
    },
    /// A resumed sweep's working directory is gone.
    #[error(
        "the sweep ran in {}, which is gone: recreate it, or give --force to run from here",
        dir.display()
    )]
    WorkingDirGone {
        /// The directory the sweep ran in.
        dir: PathBuf,
    },
    /// The caller asked to stop (Ctrl-C); finished runs are in the log.
    #[error("interrupted")]
    Interrupted,
    /// A run exceeded the timeout and could not be stopped; it is logged as timed out.
    #[error("{0}")]
    Abandoned(String),
}
