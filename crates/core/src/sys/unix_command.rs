//! How a Unix system runs a shell command and finds a program (standard library only): shared by
//! Linux and the fallback for other Unix systems.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `sh -c SCRIPT`.
pub(crate) fn shell_command(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script);
    cmd
}

/// Whether a command name is a path (it has a `/`), which `execvp` runs as it is, rather than a
/// name looked up on `PATH`.
pub(crate) fn is_path(program: &str) -> bool {
    program.contains('/')
}

/// The files a command name may be in a directory of `PATH`: just `dir/name`.
pub(crate) fn executable_candidates(dir: &Path, name: &str) -> Vec<PathBuf> {
    vec![dir.join(name)]
}
