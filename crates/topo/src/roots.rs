//! Where the kernel's views of the machine are read from: `/sys` and `/proc` on the
//! machine itself, saved copies of them in tests and audits. This is the one place
//! those two paths are written; everything else is handed a [`Roots`].

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Roots {
    /// The machine this process runs on.
    pub fn live() -> Roots {
        Roots {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }

    /// Whether `sys` is the live /sys (a saved tree describes another machine, or
    /// this one at another time).
    pub fn is_live_sys(sys: &Path) -> bool {
        sys == Roots::live().sys
    }

    /// Whether `proc` is the live /proc.
    pub fn is_live_proc(proc: &Path) -> bool {
        proc == Roots::live().proc
    }
}
