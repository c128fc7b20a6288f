//! Which OpenMP runtime the program has loaded, for the default skip mask (`skip=auto`).
//!
//! | runtime | recognised by the loaded library | default | why |
//! |---|---|---|---|
//! | GNU libgomp | `libgomp.so*` | `0x0` | creates exactly the N−1 workers (measured: `tests/pin.rs`) |
//! | LLVM libomp (Debian `libomp-dev`) | `libomp.so*`, `libomp5.so` | `0x0` | creates exactly the N−1 workers (measured, LLVM 14) |
//! | Intel libiomp5 (oneAPI, Intel compilers) | `libiomp5.so` | `0x1` | its monitor thread is created first: likwid-pin(1) asks for `-s 0x1` with Intel's runtime |
//!
//! Debian's `libiomp5.so` is a link to LLVM's libomp, whose soname `libomp.so.5` is what a
//! program linked against it loads, so it counts as LLVM's.

use std::ffi::{CStr, c_int, c_void};

/// A runtime found loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runtime {
    Gnu,
    Llvm,
    Intel,
}

impl Runtime {
    /// The runtime a loaded object's file name (its last path component) belongs to.
    fn of(file: &[u8]) -> Option<Self> {
        if file.starts_with(b"libgomp.so") {
            Some(Runtime::Gnu)
        } else if file.starts_with(b"libiomp5.so") {
            Some(Runtime::Intel)
        } else if file.starts_with(b"libomp.so") || file.starts_with(b"libomp5.so") {
            Some(Runtime::Llvm)
        } else {
            None
        }
    }

    fn default_skip(self) -> (u64, &'static str) {
        match self {
            Runtime::Gnu => (0x0, "default for GNU libgomp"),
            Runtime::Llvm => (0x0, "default for LLVM libomp"),
            Runtime::Intel => (0x1, "default for Intel libiomp5"),
        }
    }
}

/// The skip mask for the OpenMP runtime loaded now, and where it came from.
pub(crate) fn default_skip() -> (u64, &'static str) {
    let mut found: Option<Runtime> = None;
    // SAFETY: the callback matches `dl_iterate_phdr`'s type and only reads the info it is
    // given; `data` points to `found`, alive for the whole call.
    unsafe {
        libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast::<c_void>());
    }
    found.map_or((0, "no OpenMP runtime loaded"), Runtime::default_skip)
}

/// `dl_iterate_phdr` callback: records the first OpenMP runtime among the loaded objects.
unsafe extern "C" fn visit(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the `Option<Runtime>` passed by `default_skip`; `info` is valid for the
    // call, and `dlpi_name` is null or a NUL-terminated string.
    unsafe {
        let found = &mut *data.cast::<Option<Runtime>>();
        let name = (*info).dlpi_name;
        if name.is_null() {
            return 0;
        }
        let path = CStr::from_ptr(name).to_bytes();
        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        if let Some(runtime) = Runtime::of(file) {
            *found = Some(runtime);
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn runtimes_by_file_name() {
        assert_eq!(Runtime::of(b"libgomp.so.1"), Some(Runtime::Gnu));
        assert_eq!(Runtime::of(b"libomp.so.5"), Some(Runtime::Llvm));
        assert_eq!(Runtime::of(b"libiomp5.so"), Some(Runtime::Intel));
        assert_eq!(Runtime::of(b"libc.so.6"), None);
        // The test binary itself has no OpenMP runtime.
        assert_eq!(default_skip().0, 0);
    }
}
