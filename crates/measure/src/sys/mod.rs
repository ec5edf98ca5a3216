//! Every system call of memfabric lives under this module: affinity, memory
//! mapping and NUMA placement, perf events, signals. With `crate::kernels`, it holds
//! all of the crate's `unsafe` code; callers above get safe, checked wrappers.

mod mem;
mod perf;
mod signal;

pub use mem::{Buffer, MapError};
pub use perf::PerfCounter;
pub use signal::{install_stop_handlers, request_stop, stop_signal};

use std::io;

/// Pins the calling thread to one CPU, then reads the mask back: the caller
/// compares it with what it asked for, because a cpuset can silently narrow it.
pub fn pin_current_thread(cpu: u32) -> io::Result<Vec<u32>> {
    // SAFETY: cpu_set_t is a plain bit array; zeroed is its empty state, and
    // CPU_SET stays inside it because we check the index against its capacity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    current_affinity()
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> io::Result<Vec<u32>> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        Ok((0..max)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect())
    }
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu takes no arguments and only returns a value.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

/// Asks the kernel which node each page lives on (move_pages with nodes = NULL moves
/// nothing). Returns one status per address: a node id, or a negative errno.
pub fn page_nodes(addrs: &[*const u8]) -> io::Result<Vec<i32>> {
    let mut status = vec![i32::MIN; addrs.len()];
    // SAFETY: pages and status both hold `addrs.len()` entries; nodes = NULL makes the
    // call a pure query, and pid 0 is this process.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            addrs.len() as libc::c_ulong,
            addrs.as_ptr(),
            std::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status)
}

/// CPU time the calling thread has run, in ns (CLOCK_THREAD_CPUTIME_ID); `None` where
/// the clock cannot be read. In a KVM guest with steal-time accounting, time the
/// host gave this vCPU's physical CPU to others is not counted.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Reads the monotonic clock; std's Instant wraps the same clock, this one is used
/// to measure the clock's own cost at start-up.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
