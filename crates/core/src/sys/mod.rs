//! The operating system calls coretune needs, one module per OS. Only this module may use
//! `unsafe`; everything above it is safe code.

#[cfg(target_os = "linux")]
mod linux;

#[cfg(target_os = "linux")]
pub(crate) use linux::{bind_before_exec, forward_signals_to, set_task_affinity, task_affinity};

#[cfg(not(target_os = "linux"))]
mod unsupported {
    use std::io;
    use std::process::Command;

    use hwlocality::cpu::cpuset::CpuSet;

    fn unsupported() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "CPU affinity is only implemented for Linux so far",
        )
    }

    pub(crate) fn bind_before_exec(_cmd: &mut Command, _cpus: &CpuSet) -> io::Result<()> {
        Err(unsupported())
    }

    pub(crate) fn set_task_affinity(_tid: i32, _cpus: &CpuSet) -> io::Result<()> {
        Err(unsupported())
    }

    pub(crate) fn task_affinity(_tid: i32) -> io::Result<CpuSet> {
        Err(unsupported())
    }

    pub(crate) fn forward_signals_to(_pid: u32) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) use unsupported::{
    bind_before_exec, forward_signals_to, set_task_affinity, task_affinity,
};
