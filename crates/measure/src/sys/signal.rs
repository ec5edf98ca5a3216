//! SIGINT and SIGTERM ask a measurement to stop between samples; they do not kill the
//! process, so threads are joined, mappings (hugetlb pages included) are released,
//! and no half-written result reaches stdout.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: the one kind of work a signal handler may safely do.
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Installs the handlers. SA_RESETHAND restores the default after the first signal,
/// so a second Ctrl-C kills a run that does not stop fast enough.
pub fn install_stop_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the sigaction struct is fully initialised (zeroed, then the handler,
        // an empty mask and flags set) and on_signal is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART | libc::SA_RESETHAND;
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Asks the running measurement to stop between samples as if `sig` had come:
/// for a reason found inside the process, such as stdout's reader going away.
pub fn request_stop(sig: i32) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// The signal that asked to stop, if one did.
pub fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
