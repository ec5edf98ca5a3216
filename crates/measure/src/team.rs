//! A team of pinned threads that run timed rounds in lockstep: every thread sets up its
//! own memory, then all start each round together behind a barrier. Bandwidth and
//! STREAM both run on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use memfabric_model::{HugePages, Placement};

use crate::kernels::ARRAY_ALIGN;
use crate::observer::Observer;
use crate::placement::{allocate_verified, pin, Target};
use crate::sys::Buffer;

/// One member: the CPU it is pinned to and the node its arrays live on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub cpu: u32,
    pub mem_node: u32,
}

/// What one member brings back: its own result and its (start, end) per round run.
pub type MemberResult<V> = Result<(V, Vec<(Instant, Instant)>), String>;

/// A member's memory: `count` arrays of `elements` doubles in one buffer bound to its
/// node and first-touched by the member itself.
pub struct Arrays {
    buf: Buffer,
    elements: usize,
    count: usize,
    pub placement: Placement,
}

/// Doubles between the starts of two arrays: whole 4 KiB pages, so that each array
/// starts on a page (the interleaved kernels walk pages) and stays aligned.
fn stride_elements(elements: usize) -> usize {
    elements.max(1).next_multiple_of(PAGE_ELEMENTS)
}

const PAGE_ELEMENTS: usize = 4096 / 8;

impl Arrays {
    /// Pins to the member's CPU and maps its arrays on the member's node; a placement
    /// that cannot be verified is an error.
    pub fn new(m: Member, count: usize, elements: usize, huge: HugePages) -> Result<Arrays, String> {
        Arrays::placed(m.cpu, &Target::Node(m.mem_node), count, elements, huge)
    }

    /// As [`Arrays::new`], with the memory at `target` (a node or an interleave).
    pub fn placed(
        cpu: u32,
        target: &Target,
        count: usize,
        elements: usize,
        huge: HugePages,
    ) -> Result<Arrays, String> {
        let affinity = pin(cpu).map_err(|e| e.to_string())?;
        let bytes = count * stride_elements(elements) * 8;
        let (buf, placement) = allocate_verified(bytes, target, huge, affinity)?;
        Ok(Arrays {
            buf,
            elements,
            count,
            placement,
        })
    }

    /// The arrays as distinct mutable slices.
    pub fn slices(&mut self) -> Vec<&mut [f64]> {
        let stride = stride_elements(self.elements);
        let all = crate::kernels::as_doubles(self.buf.as_mut_slice());
        debug_assert!((all.as_ptr() as usize).is_multiple_of(ARRAY_ALIGN));
        all.chunks_mut(stride)
            .take(self.count)
            .map(|c| &mut c[..self.elements])
            .collect()
    }
}

/// A point between rounds, seen by one thread while every other member waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Round `r` is about to start; every earlier round has ended on every member.
    Before(usize),
    /// No round follows: this many ran (fewer than asked when the team stopped).
    End(usize),
}

/// Runs `rounds` lockstep rounds on every member. `setup` runs first on each member's
/// own thread (pinned by it, normally through [`Arrays::new`]); `round` is timed;
/// `finish` turns the state into the member's result once the rounds are over, with
/// the number of rounds run. A member whose setup fails stops the whole team before
/// the first round, and a cancelled observer stops it between rounds.
pub fn run<S, V>(
    members: &[Member],
    rounds: usize,
    obs: &dyn Observer,
    setup: &(dyn Fn(Member) -> Result<S, String> + Sync),
    round: &(dyn Fn(&mut S, usize) + Sync),
    finish: &(dyn Fn(S, usize) -> Result<V, String> + Sync),
) -> Vec<MemberResult<V>>
where
    S: Send,
    V: Send,
{
    run_with_edges(members, rounds, obs, setup, round, finish, &|_| {})
}

/// As [`run`], calling `edge` at every edge between rounds, while no member runs:
/// before each round and once after the last. Counters read there span whole
/// rounds and nothing of setup or `finish`.
pub fn run_with_edges<S, V>(
    members: &[Member],
    rounds: usize,
    obs: &dyn Observer,
    setup: &(dyn Fn(Member) -> Result<S, String> + Sync),
    round: &(dyn Fn(&mut S, usize) + Sync),
    finish: &(dyn Fn(S, usize) -> Result<V, String> + Sync),
    edge: &(dyn Fn(Edge) + Sync),
) -> Vec<MemberResult<V>>
where
    S: Send,
    V: Send,
{
    let n = members.len();
    let ready = Barrier::new(n);
    let go = Barrier::new(n);
    let failed = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    // Every thread passes every barrier the same number of times, whether its own
    // setup failed or not, so no thread is ever left waiting.
    let member = |m: Member| -> MemberResult<V> {
        let mut state = setup(m);
        if state.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        let mut times = Vec::with_capacity(rounds);
        for r in 0..=rounds {
            // The leader decides, between two barriers, whether all go on.
            if ready.wait().is_leader() {
                if r == rounds || obs.cancelled() || failed.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                    edge(Edge::End(r));
                } else {
                    edge(Edge::Before(r));
                }
            }
            go.wait();
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if let Ok(s) = &mut state {
                let t0 = Instant::now();
                round(s, r);
                times.push((t0, Instant::now()));
            }
        }
        let done = times.len();
        state.and_then(|s| finish(s, done)).map(|v| (v, times))
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = members
            .iter()
            .map(|&m| {
                let member = &member;
                scope.spawn(move || member(m))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("measuring thread panicked".into()))
            })
            .collect()
    })
}

/// Seconds each round took, from the first member's start to the last member's end,
/// so a straggler lowers the figure instead of hiding. Rounds every member ran only.
pub fn round_seconds(times: &[Vec<(Instant, Instant)>]) -> Vec<f64> {
    let rounds = times.iter().map(Vec::len).min().unwrap_or(0);
    (0..rounds)
        .map(|r| {
            let start = times.iter().map(|t| t[r].0).min().expect("members");
            let end = times.iter().map(|t| t[r].1).max().expect("members");
            (end - start).as_nanos().max(1) as f64 * 1e-9
        })
        .collect()
}
