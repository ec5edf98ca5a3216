//! Read bandwidth: every CPU of a node reads its own buffer on one memory node with a
//! hand-written vector kernel, all threads released together by a barrier.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use memfabric_model::{
    BandwidthCell, BandwidthMeasurement, BandwidthReport, HugePages, Outcome, Placement, Summary,
};

use crate::observer::{interrupted, Observer};
use crate::placement::{allocate_on_node, describe_mismatch, pin};
use crate::sys::{read_kernel, ReadKernel, READ_BLOCK};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandwidthCellSpec {
    pub cpu_node: u32,
    pub mem_node: u32,
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct BandwidthPlan {
    pub cells: Vec<BandwidthCellSpec>,
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    /// A multiple of READ_BLOCK.
    pub buffer_bytes_per_thread: u64,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub kernel: ReadKernel,
}

pub const BYTE_COUNTING: &str =
    "bytes the program reads (STREAM convention); no writes, so no write-allocate traffic";

pub fn run(plan: &BandwidthPlan, obs: &dyn Observer) -> BandwidthReport {
    obs.begin("bandwidth", plan.cells.len() as u64);
    let cells = plan
        .cells
        .iter()
        .map(|spec| {
            let outcome = if obs.cancelled() {
                interrupted()
            } else {
                measure_cell(plan, spec, obs)
            };
            obs.advance(&format!("node {} -> node {}", spec.cpu_node, spec.mem_node));
            BandwidthCell {
                cpu_node: spec.cpu_node,
                mem_node: spec.mem_node,
                cpus: spec.cpus.clone(),
                outcome,
            }
        })
        .collect();
    obs.finish();
    BandwidthReport {
        mix: "read".into(),
        kernel: plan.kernel.name().into(),
        huge_pages: plan.huge_pages,
        buffer_bytes_per_thread: plan.buffer_bytes_per_thread,
        byte_counting: BYTE_COUNTING.into(),
        cpu_nodes: plan.cpu_nodes.clone(),
        mem_nodes: plan.mem_nodes.clone(),
        cells,
    }
}

/// What one thread brings back: its placement and its (start, end) per round.
type ThreadResult = Result<(Placement, Vec<(Instant, Instant)>), String>;

fn measure_cell(
    plan: &BandwidthPlan,
    spec: &BandwidthCellSpec,
    obs: &dyn Observer,
) -> Outcome<BandwidthMeasurement> {
    let ready = Barrier::new(spec.cpus.len());
    let go = Barrier::new(spec.cpus.len());
    let failed = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let shared = Shared {
        plan,
        ready: &ready,
        go: &go,
        failed: &failed,
        stop: &stop,
        obs,
    };
    let results: Vec<ThreadResult> = std::thread::scope(|s| {
        let handles: Vec<_> = spec
            .cpus
            .iter()
            .map(|&cpu| {
                let shared = &shared;
                let node = spec.mem_node;
                s.spawn(move || shared.thread(cpu, node))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("reader thread panicked".into())))
            .collect()
    });
    summarize(plan, results)
}

struct Shared<'a> {
    plan: &'a BandwidthPlan,
    ready: &'a Barrier,
    go: &'a Barrier,
    failed: &'a AtomicBool,
    stop: &'a AtomicBool,
    obs: &'a dyn Observer,
}

impl Shared<'_> {
    /// Every thread passes every barrier the same number of times, whether its own
    /// setup failed or not, so no thread is ever left waiting.
    fn thread(&self, cpu: u32, node: u32) -> ThreadResult {
        let setup = pin(cpu).map_err(|e| e.to_string()).and_then(|aff| {
            allocate_on_node(
                self.plan.buffer_bytes_per_thread as usize,
                node,
                self.plan.huge_pages,
                aff,
            )
            .map_err(|e| e.to_string())
        });
        let setup = setup.and_then(|(mut buf, placement)| {
            if !placement.verified {
                return Err(describe_mismatch(&placement));
            }
            // Distinct non-zero data, so the loads read real values.
            for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(31).wrapping_add(cpu as u8);
            }
            Ok((buf, placement))
        });
        if setup.is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        let mut times = Vec::with_capacity(self.plan.samples + 1);
        for _ in 0..=self.plan.samples {
            // Round start: the leader decides, between two barriers, whether all go on.
            if self.ready.wait().is_leader() && (self.obs.cancelled() || self.failed.load(Ordering::SeqCst)) {
                self.stop.store(true, Ordering::SeqCst);
            }
            self.go.wait();
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            if let Ok((buf, _)) = &setup {
                let t0 = Instant::now();
                std::hint::black_box(read_kernel(self.plan.kernel, buf.as_slice()));
                times.push((t0, Instant::now()));
            }
        }
        setup.map(|(_, placement)| (placement, times))
    }
}

fn summarize(plan: &BandwidthPlan, results: Vec<ThreadResult>) -> Outcome<BandwidthMeasurement> {
    let mut placements = Vec::new();
    let mut per_thread = Vec::new();
    for r in results {
        match r {
            Ok((p, t)) => {
                placements.push(p);
                per_thread.push(t);
            }
            Err(reason) => return Outcome::Failed { reason },
        }
    }
    let threads = per_thread.len() as u64;
    let bytes_per_sample = plan.buffer_bytes_per_thread * threads;
    let rounds = per_thread.iter().map(Vec::len).min().unwrap_or(0);
    // Round 0 is the warm-up. A round lasts from the first thread's start to the last
    // thread's end, so a straggler lowers the figure instead of hiding.
    let samples_gb_s: Vec<f64> = (1..rounds)
        .map(|r| {
            let start = per_thread.iter().map(|t| t[r].0).min().expect("threads");
            let end = per_thread.iter().map(|t| t[r].1).max().expect("threads");
            bytes_per_sample as f64 / (end - start).as_nanos().max(1) as f64
        })
        .collect();
    match Summary::of(&samples_gb_s) {
        Some(bandwidth_gb_s) => Outcome::Ok(BandwidthMeasurement {
            bandwidth_gb_s,
            samples_gb_s,
            bytes_per_sample,
            placement: placements,
            noise: None,
        }),
        None => interrupted(),
    }
}

/// Rounds a per-thread buffer size to what the kernels take.
pub fn round_buffer(bytes: u64) -> u64 {
    bytes.max(READ_BLOCK as u64).next_multiple_of(READ_BLOCK as u64)
}
