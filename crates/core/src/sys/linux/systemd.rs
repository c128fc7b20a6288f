//! systemd: whether it manages this machine, and `systemctl` (found on `PATH`) to read and set
//! unit properties.

use std::io;
use std::path::Path;
use std::process::Command;

use crate::sys::error::SysError;

/// Whether systemd is the init system: the test `sd_booted()` makes (`/run/systemd/system` is a
/// folder), under `root`.
pub(crate) fn systemd_booted(root: &Path) -> bool {
    root.join("run/systemd/system").is_dir()
}

/// Runs `systemctl ARGS...` and returns its standard output.
///
/// # Errors
///
/// [`SysError::Call`] when it cannot be started or exits unsuccessfully (with its standard
/// error as the reason).
pub(crate) fn systemctl(args: &[&str]) -> Result<String, SysError> {
    let fail = |error| SysError::Call {
        call: "systemctl",
        error,
    };
    let out = Command::new("systemctl")
        .args(args)
        .output()
        .map_err(fail)?;
    if !out.status.success() {
        // Its lines joined: coretune's errors are one line.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let reason: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return Err(fail(io::Error::other(format!(
            "'systemctl {}' failed ({}): {}",
            args.join(" "),
            out.status,
            reason.join("; ")
        ))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
