//! The host, for the reproducibility record: its name (`GetComputerNameExW`), the Windows version
//! (`RtlGetVersion`, which tells the truth where `GetVersionEx` answers what the manifest says)
//! and the CPU model (the registry's `ProcessorNameString`). Windows has no cpufreq governor:
//! that field stays absent (the power plan is not the same thing).

use windows_sys::Wdk::System::SystemServices::RtlGetVersion;
use windows_sys::Win32::System::Registry::{HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ, RegGetValueW};
use windows_sys::Win32::System::SystemInformation::{
    ComputerNameDnsHostname, GetComputerNameExW, OSVERSIONINFOW,
};

use super::handle::{check, from_wide, wide};
use crate::sys::error::SysError;

/// The computer's DNS host name.
pub(crate) fn host_name() -> Result<String, SysError> {
    let mut buf = vec![0u16; 256];
    let mut len = u32::try_from(buf.len()).unwrap_or(0);
    // SAFETY: `buf` holds `len` UTF-16 units; the call writes at most that many (with the NUL)
    // and the length it wrote.
    check(unsafe { GetComputerNameExW(ComputerNameDnsHostname, buf.as_mut_ptr(), &mut len) })
        .map_err(|error| SysError::Call {
            call: "GetComputerNameExW",
            error,
        })?;
    Ok(from_wide(&buf[..len as usize]))
}

/// `Windows MAJOR.MINOR.BUILD`.
pub(crate) fn kernel_release() -> Result<String, SysError> {
    let mut v = OSVERSIONINFOW {
        dwOSVersionInfoSize: std::mem::size_of::<OSVERSIONINFOW>() as u32,
        ..OSVERSIONINFOW::default()
    };
    // SAFETY: `v` is writable with its size set, as the call requires.
    let status = unsafe { RtlGetVersion(&mut v) };
    if status < 0 {
        return Err(SysError::Call {
            call: "RtlGetVersion",
            error: std::io::Error::other(format!("NTSTATUS {status:#x}")),
        });
    }
    Ok(format!(
        "Windows {}.{}.{}",
        v.dwMajorVersion, v.dwMinorVersion, v.dwBuildNumber
    ))
}

/// The first processor's `ProcessorNameString`, trimmed.
pub(crate) fn cpu_model() -> Result<String, SysError> {
    let key = wide(r"HARDWARE\DESCRIPTION\System\CentralProcessor\0");
    let value = wide("ProcessorNameString");
    let mut buf = vec![0u16; 256];
    let mut bytes = u32::try_from(buf.len() * 2).unwrap_or(0);
    // SAFETY: `key` and `value` are NUL-terminated UTF-16 strings; `buf` is writable for `bytes`
    // bytes, which the call writes at most (a NUL-terminated string, RRF_RT_REG_SZ); the type is
    // not asked for (null).
    let status = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            key.as_ptr(),
            value.as_ptr(),
            RRF_RT_REG_SZ,
            std::ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &mut bytes,
        )
    };
    if status != 0 {
        return Err(SysError::Call {
            call: "RegGetValueW(ProcessorNameString)",
            error: std::io::Error::from_raw_os_error(status as i32),
        });
    }
    Ok(from_wide(&buf).trim().to_owned())
}

/// Windows has power plans, not cpufreq governors, boost switches or SMT control files, and
/// isolates no CPUs: nothing is known, so nothing is said (`isolated` is empty, as
/// `isolated_cpus` says).
pub(crate) fn cpu_settings(_root: &std::path::Path) -> crate::sys::types::CpuSettings {
    crate::sys::types::CpuSettings {
        isolated: Some(Vec::new()),
        ..crate::sys::types::CpuSettings::default()
    }
}
