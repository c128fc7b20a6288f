//! The host: its name, the kernel release and the CPU model, for the reproducibility record.

use std::path::Path;

use super::files::{first_line, parse_text};
use crate::sys::error::SysError;

/// The host name (`/proc/sys/kernel/hostname`).
pub(crate) fn host_name() -> Result<String, SysError> {
    first_line(Path::new("/proc/sys/kernel/hostname"))
}

/// The kernel release, as `uname -r` prints it (`/proc/sys/kernel/osrelease`).
pub(crate) fn kernel_release() -> Result<String, SysError> {
    first_line(Path::new("/proc/sys/kernel/osrelease"))
}

/// The CPU model: the first `model name` line of `/proc/cpuinfo`, or `Model` (the board, on a
/// Raspberry Pi's 64-bit kernel, which has no model name).
///
/// A hand reader rather than procfs's `CpuInfo`, which keeps only the per-processor blocks (the
/// Raspberry Pi's `Model` line is in a block of its own after them) and cuts values at a second
/// `:`.
fn parse_cpu_model(text: &str) -> Result<String, String> {
    text.lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .ok_or_else(|| "no 'model name' or 'Model' line".to_owned())
}

/// The CPU model (`/proc/cpuinfo`).
pub(crate) fn cpu_model() -> Result<String, SysError> {
    parse_text(Path::new("/proc/cpuinfo"), parse_cpu_model)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn cpu_model_of_x86_and_a_raspberry_pi() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\n";
        assert_eq!(parse_cpu_model(x86).unwrap(), "AMD EPYC 7B13");
        let pi = "processor\t: 0\nBogoMIPS\t: 108.00\n\nRevision\t: c03111\n\
                  Model\t\t: Raspberry Pi 4 Model B Rev 1.1\n";
        assert_eq!(
            parse_cpu_model(pi).unwrap(),
            "Raspberry Pi 4 Model B Rev 1.1"
        );
        assert!(parse_cpu_model("processor\t: 0\n").is_err());
    }

    #[test]
    fn this_host_has_a_name_and_a_kernel_release() {
        assert!(!host_name().unwrap().is_empty());
        assert!(!kernel_release().unwrap().is_empty());
    }
}
