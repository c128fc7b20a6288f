//! What went wrong with Slurm or with a fleet folder: [`FleetError`].

use std::path::PathBuf;

/// What went wrong with Slurm or with a fleet folder. Every variant keeps the command, path
/// or value it is about, and its message is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// A Slurm client command is not on `PATH`.
    #[error(
        "{program} is not on PATH: --slurm needs Slurm's client commands (sbatch, squeue, \
         scontrol; Debian package slurm-client) on a machine that can submit jobs"
    )]
    NoSlurm {
        /// The command.
        program: &'static str,
    },
    /// A Slurm command could not be started.
    #[error("{command}: {error}")]
    Spawn {
        /// The command line.
        command: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A Slurm command failed.
    #[error("{command} failed (exit status {status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: i32,
        /// What it said on stderr.
        stderr: String,
    },
    /// A Slurm command printed something unexpected.
    #[error("{command} printed '{}', not what coretune expects", output.trim())]
    Parse {
        /// The command line.
        command: String,
        /// What it printed.
        output: String,
    },
    /// A target is not usable.
    #[error("{0}")]
    BadTarget(String),
    /// A fleet file could not be read or written, or is not one.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The fleet folder is not new and holds other files (the sweep's error says which).
    #[error(transparent)]
    Folder(#[from] crate::sweep::SweepError),
    /// A folder given as a fleet's node folder (`tune --fleet-node`) is not one.
    #[error("{}: not a node folder of a fleet: {why}", dir.display())]
    NotANode {
        /// The folder.
        dir: PathBuf,
        /// Why not.
        why: String,
    },
    /// A new fleet was pointed at a folder that already holds one.
    #[error(
        "{} already holds a fleet; continue it with --resume {}, or choose another --out",
        dir.display(),
        dir.display()
    )]
    AlreadyAFleet {
        /// The folder.
        dir: PathBuf,
    },
}
