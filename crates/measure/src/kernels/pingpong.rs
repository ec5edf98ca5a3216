//! A cache line two pinned threads hand back and forth: an atomic word at a chosen
//! offset inside a page of a [`Buffer`], and the two sides of each handoff protocol.
//!
//! The answering side runs until the timing side stores [`STOP`], so it never needs to
//! know how many round trips there will be, and a timing side that stops early (or
//! unwinds) never leaves it spinning: [`Pinger`] stores STOP when dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use memfabric_model::C2cMode;

use crate::sys::Buffer;

/// The value that tells the answering side to return.
const STOP: u64 = u64::MAX;
/// CAS mode: the line says whose turn it is (core-to-core-latency's PING and PONG).
const PING: u64 = 0;
const PONG: u64 = 1;
/// Round trips between two looks at the stop request, so a long sample still stops
/// within a fraction of a second, at the cost of one branch per 1024 round trips.
const STOP_CHECK_EVERY: u64 = 1024;

/// Spins of the answering side's wait between two looks at the stop flag.
const STOP_FLAG_EVERY: u32 = 4096;

/// A mapped page whose only use is as atomic words, so it may be shared by threads.
pub struct LinePage {
    buf: Buffer,
    /// Set with every STOP, outside the page: in ping-pong mode the answering side
    /// may overwrite a STOP with its reply (it stores without looking), and then
    /// finds the stop here while it waits for a handoff that never comes.
    stopped: AtomicBool,
}

// SAFETY: after construction the page is reached only through `&AtomicU64` (see
// `line`), which is Sync; no slice of it is ever handed out again.
unsafe impl Sync for LinePage {}

impl LinePage {
    /// Takes a buffer that the caller has already placed (bound, touched, verified).
    pub fn new(buf: Buffer) -> LinePage {
        LinePage {
            buf,
            stopped: AtomicBool::new(false),
        }
    }

    /// The word at `offset_bytes`, or None when it is not 8-byte aligned or not inside.
    pub fn line(&self, offset_bytes: usize) -> Option<Line<'_>> {
        if !offset_bytes.is_multiple_of(8) || offset_bytes.checked_add(8)? > self.buf.len() {
            return None;
        }
        // SAFETY: the word lies inside the mapping (checked above), is 8-byte aligned
        // (the mapping is page-aligned, the offset a multiple of 8), lives as long as
        // `self`, and is only ever accessed atomically from here on.
        let word = unsafe { &*(self.buf.as_ptr().add(offset_bytes) as *const AtomicU64) };
        Some(Line {
            word,
            stopped: &self.stopped,
        })
    }
}

/// One line of a [`LinePage`].
#[derive(Clone, Copy)]
pub struct Line<'a> {
    word: &'a AtomicU64,
    stopped: &'a AtomicBool,
}

impl Line<'_> {
    /// Sets the line to its starting state; call before either side starts.
    pub fn reset(&self) {
        self.stopped.store(false, Ordering::SeqCst);
        self.word.store(PING, Ordering::SeqCst);
    }

    /// Tells the answering side to return.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.word.store(STOP, Ordering::SeqCst);
    }

    /// The answering side: hands the line back after every handoff until told to stop.
    pub fn serve(&self, mode: C2cMode) {
        match mode {
            C2cMode::Cas => loop {
                // As core-to-core-latency's pong thread: keep trying to swap PING for
                // PONG; a failed try returns what is there, STOP included.
                match self
                    .word
                    .compare_exchange(PING, PONG, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Err(STOP) => return,
                    _ => continue,
                }
            },
            C2cMode::Pingpong => {
                // Ping writes even values, pong the odd ones after them.
                let mut expect = 0;
                loop {
                    let mut spins = 0u32;
                    let v = loop {
                        let v = self.word.load(Ordering::Acquire);
                        if v == expect || v == STOP {
                            break v;
                        }
                        // Only a wait far longer than a handoff looks at the flag.
                        spins = spins.wrapping_add(1);
                        if spins.is_multiple_of(STOP_FLAG_EVERY) && self.stopped.load(Ordering::SeqCst) {
                            return;
                        }
                    };
                    if v == STOP {
                        return;
                    }
                    self.word.store(expect + 1, Ordering::Release);
                    expect += 2;
                }
            }
        }
    }
}

/// The timing side. Dropping it stops the answering side.
pub struct Pinger<'a> {
    line: Line<'a>,
    mode: C2cMode,
    /// Pingpong: the odd value the answering side writes next.
    expect: u64,
}

impl<'a> Pinger<'a> {
    pub fn new(line: Line<'a>, mode: C2cMode) -> Pinger<'a> {
        Pinger {
            line,
            mode,
            expect: 1,
        }
    }

    /// Runs `n` round trips: each waits for the other side's handoff, then hands the
    /// line back. Returns false, with fewer done, once `stop` says so.
    pub fn round_trips(&mut self, n: u64, stop: &dyn Fn() -> bool) -> bool {
        let mut done = 0;
        while done < n {
            if stop() {
                return false;
            }
            let chunk = (n - done).min(STOP_CHECK_EVERY);
            match self.mode {
                C2cMode::Cas => self.cas(chunk),
                C2cMode::Pingpong => self.pingpong(chunk),
            }
            done += chunk;
        }
        true
    }

    /// core-to-core-latency's ping loop: swap PONG for PING, spinning until it works.
    fn cas(&self, n: u64) {
        let word = self.line.word;
        for _ in 0..n {
            while word
                .compare_exchange(PONG, PING, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {}
        }
    }

    fn pingpong(&mut self, n: u64) {
        let word = self.line.word;
        for _ in 0..n {
            while word.load(Ordering::Acquire) != self.expect {}
            word.store(self.expect + 1, Ordering::Release);
            self.expect += 2;
        }
    }
}

impl Drop for Pinger<'_> {
    fn drop(&mut self) {
        self.line.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::HugePages;

    fn page() -> LinePage {
        LinePage::new(Buffer::map(4096, HugePages::Off).unwrap())
    }

    #[test]
    fn lines_stay_inside_and_aligned() {
        let p = page();
        assert!(p.line(0).is_some() && p.line(4032).is_some());
        assert!(p.line(4).is_none(), "unaligned");
        assert!(p.line(p.buf.len()).is_none(), "past the end");
        assert!(p.line(usize::MAX - 3).is_none(), "overflow");
    }

    #[test]
    fn both_modes_rally_and_stop() {
        let _turn = crate::measuring();
        let p = page();
        for mode in C2cMode::ALL {
            let line = p.line(64).unwrap();
            line.reset();
            std::thread::scope(|s| {
                s.spawn(|| line.serve(mode));
                let mut ping = Pinger::new(line, mode);
                assert!(ping.round_trips(3000, &|| false));
                assert!(!ping.round_trips(10, &|| true), "a stop request is honoured");
            });
            // Drop stopped it, and serve returned: the scope joined.
            assert!(p.stopped.load(Ordering::SeqCst));
        }
    }

    /// The answering side's reply overwrote the STOP (the race a drop right after a
    /// handoff can lose): it still returns, from the flag.
    #[test]
    fn a_stop_overwritten_by_the_reply_still_stops() {
        let p = page();
        let line = p.line(0).unwrap();
        line.reset();
        std::thread::scope(|s| {
            let server = s.spawn(|| line.serve(C2cMode::Pingpong));
            while line.word.load(Ordering::SeqCst) != 1 {}
            // As if the STOP landed just before the reply to handoff 2 and the reply
            // overwrote it: the word holds the reply, no handoff 4 ever comes, and
            // only the flag says stop. (Setting the flag before the reply is seen
            // races: the server may read the flag first and never reply.)
            line.word.store(2, Ordering::SeqCst);
            while line.word.load(Ordering::SeqCst) != 3 {}
            line.stopped.store(true, Ordering::SeqCst);
            server.join().unwrap();
        });
        assert_eq!(line.word.load(Ordering::SeqCst), 3, "the reply was made");
    }
}
