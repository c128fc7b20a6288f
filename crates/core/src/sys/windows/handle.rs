//! What every Windows file here needs: an owned kernel handle, opening threads and processes,
//! `BOOL` results as `io::Result`, UTF-16 strings and `FILETIME`s.

use std::io;
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Threading::{
    OpenProcess, OpenThread, PROCESS_ACCESS_RIGHTS, THREAD_ACCESS_RIGHTS,
};
use windows_sys::core::BOOL;

/// A kernel handle this process owns, closed when dropped.
#[derive(Debug)]
pub(super) struct Handle(HANDLE);

// SAFETY: a kernel handle is a process-wide index into the handle table, valid from any thread;
// nothing here is tied to the thread that opened it.
unsafe impl Send for Handle {}
// SAFETY: as above; the calls made through a shared `&Handle` are thread-safe kernel calls.
unsafe impl Sync for Handle {}

impl Handle {
    /// Takes ownership of `raw`, the result of a call that returns null or
    /// `INVALID_HANDLE_VALUE` on failure (then the thread's last error is the reason).
    pub(super) fn new(raw: HANDLE) -> io::Result<Self> {
        if raw.is_null() || raw == INVALID_HANDLE_VALUE {
            Err(io::Error::last_os_error())
        } else {
            Ok(Self(raw))
        }
    }

    /// The raw handle, for a call; it stays owned here.
    pub(super) fn raw(&self) -> HANDLE {
        self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a valid handle owned by this value (checked in `new`) and closed
        // exactly once, here.
        unsafe {
            CloseHandle(self.0);
        }
    }
}

/// Whether this is Wine rather than Windows (its ntdll exports `wine_get_version`). Wine 8 exports
/// some Windows 10 calls as stubs that abort the process when called (the CPU-set calls among
/// them), so those are not called there.
pub(super) fn is_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    static WINE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WINE.get_or_init(|| {
        let ntdll = wide("ntdll.dll");
        // SAFETY: a NUL-terminated module name; ntdll is loaded in every process, and the handle
        // GetModuleHandleW returns is not owned (nothing to close).
        let module = unsafe { GetModuleHandleW(ntdll.as_ptr()) };
        // SAFETY: a module handle (or null, which fails the lookup) and a NUL-terminated name.
        !module.is_null()
            && unsafe { GetProcAddress(module, c"wine_get_version".as_ptr().cast()) }.is_some()
    })
}

/// A `BOOL` result as an `io::Result` (the last error when it is false).
pub(super) fn check(ok: BOOL) -> io::Result<()> {
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Thread `tid`, with `access`.
pub(super) fn open_thread(tid: u32, access: THREAD_ACCESS_RIGHTS) -> io::Result<Handle> {
    // SAFETY: plain integers in, a handle (or null with the last error set) out.
    Handle::new(unsafe { OpenThread(access, 0, tid) })
}

/// Process `pid`, with `access`.
pub(super) fn open_process(pid: u32, access: PROCESS_ACCESS_RIGHTS) -> io::Result<Handle> {
    // SAFETY: plain integers in, a handle (or null with the last error set) out.
    Handle::new(unsafe { OpenProcess(access, 0, pid) })
}

/// `s` as a NUL-terminated UTF-16 string.
pub(super) fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// A UTF-16 buffer up to its first NUL.
pub(super) fn from_wide(buf: &[u16]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf16_lossy(&buf[..end])
}

/// A `FILETIME` span (100 ns units) as a duration.
pub(super) fn filetime(t: FILETIME) -> Duration {
    hundred_ns(u64::from(t.dwHighDateTime) << 32 | u64::from(t.dwLowDateTime))
}

/// A count of 100 ns units as a duration.
pub(super) fn hundred_ns(n: u64) -> Duration {
    Duration::from_nanos(n.saturating_mul(100))
}

/// 100 ns units as clock ticks of 10 ms (`ticks_per_second` = 100, as Linux's `USER_HZ`).
pub(super) fn ticks(n: u64) -> u64 {
    n / 100_000
}
