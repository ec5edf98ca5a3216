//! perf_event_open for system-wide (uncore) counting: one fd per (PMU, CPU, event).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The first published layout of `struct perf_event_attr` (PERF_ATTR_SIZE_VER1,
/// 72 bytes): every field an uncore counter needs. The kernel accepts any
/// published size and treats the fields past it as zero.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// disabled, inherit, pinned, ... bit fields: all zero (counting starts at open).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// One open counter; closed on drop.
#[derive(Debug)]
pub struct PerfCounter {
    fd: OwnedFd,
}

impl PerfCounter {
    /// Opens a counting event of PMU `pmu_type` with `config`/`config1`/`config2`, for
    /// all processes on `cpu` (pid -1): what uncore PMUs require.
    pub fn open(pmu_type: u32, config: [u64; 3], cpu: u32) -> io::Result<PerfCounter> {
        let attr = PerfEventAttr {
            type_: pmu_type,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: config[0],
            config1: config[1],
            config2: config[2],
            ..PerfEventAttr::default()
        };
        // SAFETY: attr is a valid, fully initialised PERF_ATTR_SIZE_VER1 structure that
        // lives across the call; pid -1 with a CPU and group_fd -1 open a CPU-wide
        // counter; the kernel only reads `size` bytes of attr.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the syscall returned a new file descriptor that nothing else owns.
        Ok(PerfCounter {
            fd: unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) },
        })
    }

    /// The count so far (read_format 0: one u64).
    pub fn read(&self) -> io::Result<u64> {
        let mut value = 0u64;
        // SAFETY: reads at most 8 bytes into the 8-byte `value` from an fd we own.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                &mut value as *mut u64 as *mut libc::c_void,
                std::mem::size_of::<u64>(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != std::mem::size_of::<u64>() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "short read of a perf counter",
            ));
        }
        Ok(value)
    }
}
