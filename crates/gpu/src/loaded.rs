//! `gpu loaded-latency`: a CPU's pointer-chase latency on a node while the GPU's copy
//! engines stream to and from pinned buffers on that node at increasing rates.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use memfabric_measure::latency::{prepare_chase, ChaseShape, ReadyChase};
use memfabric_measure::observer::{interrupted, Observer};
use memfabric_measure::placement::{allocate_verified, pin, Target};
use memfabric_measure::sys::{current_affinity, Buffer};
use memfabric_model::{CopyDirection, GpuLoadedPoint, HugePages, Outcome};

use crate::sys::{timed, Device, DeviceMem, GpuError, Mapped, Op, Registered, Stream};
use crate::Gpu;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuLoadedPlan {
    /// The CPU that chases, and the node of both the chase and the DMA buffers.
    pub cpu: u32,
    /// The chasing CPU's SMT siblings (from the topology): the feeder avoids them.
    pub cpu_siblings: Vec<u32>,
    pub node: u32,
    pub chase: ChaseShape,
    /// Bytes of each DMA copy.
    pub copy_bytes: u64,
    pub direction: CopyDirection,
    /// Microseconds the feeding thread waits after each copy, one point each, from
    /// the largest; None is the idle point (no DMA).
    pub gaps_us: Vec<Option<u64>>,
    pub samples: usize,
    pub sample_time: Duration,
}

/// The idle point, then gaps from light load to back-to-back copies.
pub fn default_gaps() -> Vec<Option<u64>> {
    let gaps = [10_000, 3_000, 1_000, 300, 100, 30, 10, 0];
    std::iter::once(None).chain(gaps.map(Some)).collect()
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuLoadedPlan,
    obs: &dyn Observer,
) -> Result<Outcome<Vec<GpuLoadedPoint>>, GpuError> {
    if plan.copy_bytes == 0 && plan.gaps_us.iter().any(Option::is_some) {
        return Ok(Outcome::Failed {
            reason: "the DMA copy size is 0 bytes".into(),
        });
    }
    // Gpu is not Sync (its NVML handle), the device is: the threads get only that. The
    // chase runs on a thread of its own so that pinning it leaves the caller alone.
    let device = &gpu.device;
    std::thread::scope(|s| {
        s.spawn(|| on_cpu(device, plan, obs))
            .join()
            .unwrap_or_else(|_| Err(GpuError::Other("the measuring thread panicked".into())))
    })
}

/// Builds the chase (pinned to plan.cpu) and the DMA buffers once, then one point per gap.
fn on_cpu(
    dev: &Device,
    plan: &GpuLoadedPlan,
    obs: &dyn Observer,
) -> Result<Outcome<Vec<GpuLoadedPoint>>, GpuError> {
    // Read before prepare_chase pins this thread: the CPUs the feeder may use.
    let allowed = current_affinity().unwrap_or_default();
    let feeder = feeder_cpu(&allowed, plan.cpu, &plan.cpu_siblings);
    let ready = match prepare_chase(plan.cpu, &Target::Node(plan.node), &plan.chase, obs) {
        Ok(r) => r,
        Err(e) => return Ok(e.outcome()),
    };
    let loaded = plan.gaps_us.iter().any(Option::is_some);
    let mut bufs = match dma_buffers(plan, if loaded { buffers_for(plan.direction) } else { 0 }) {
        Ok(b) => b,
        Err(reason) => return Ok(Outcome::Failed { reason }),
    };
    let bytes = plan.copy_bytes as usize;
    let mut feed = if loaded {
        Some(Feed::new(dev, &mut bufs, bytes, plan.direction)?)
    } else {
        None
    };
    obs.begin("gpu loaded-latency", plan.gaps_us.len() as u64);
    let mut points = Vec::with_capacity(plan.gaps_us.len());
    for &gap in &plan.gaps_us {
        if obs.cancelled() {
            obs.finish();
            return Ok(interrupted());
        }
        let point = match (gap, feed.as_mut()) {
            (Some(g), Some(f)) => loaded_point(dev, plan, &ready, f, g, feeder, obs),
            _ => {
                let taken = ready.sample(plan.samples, plan.sample_time, obs);
                GpuLoadedPoint {
                    gap_us: None,
                    dma_gb_s: 0.0,
                    latency: ready.measurement_of(taken),
                }
            }
        };
        points.push(point);
        obs.advance(&label(gap));
    }
    obs.finish();
    Ok(Outcome::Ok(points))
}

/// `count` buffers of plan.copy_bytes on plan.node, placement verified.
fn dma_buffers(plan: &GpuLoadedPlan, count: usize) -> Result<Vec<Buffer>, String> {
    (0..count)
        .map(|_| {
            allocate_verified(
                plan.copy_bytes as usize,
                &Target::Node(plan.node),
                HugePages::Off,
                vec![plan.cpu],
            )
            .map(|(b, _)| b)
        })
        .collect()
}

/// The registered host buffers, device buffers and streams the feeder copies with:
/// one of each, or two for both directions at once.
struct Feed<'b> {
    /// First, so that dropping a Feed waits for its streams before the memory goes.
    streams: Vec<Stream>,
    host: Vec<Registered<'b>>,
    dev: Vec<DeviceMem>,
    bytes: usize,
    direction: CopyDirection,
}

impl<'b> Feed<'b> {
    fn new(
        dev: &Device,
        bufs: &'b mut [Buffer],
        bytes: usize,
        direction: CopyDirection,
    ) -> Result<Feed<'b>, GpuError> {
        let host = bufs
            .iter_mut()
            // Whole pages: older drivers refuse to register a range that is not page-aligned.
            .map(|b| Registered::new(dev, b.as_mut_slice()))
            .collect::<Result<Vec<_>, _>>()?;
        let n = host.len();
        Ok(Feed {
            host,
            dev: (0..n)
                .map(|_| DeviceMem::alloc(dev, bytes))
                .collect::<Result<_, _>>()?,
            streams: (0..n).map(|_| Stream::new(dev)).collect::<Result<_, _>>()?,
            bytes,
            direction,
        })
    }

    /// One timed step: a copy each way in flight together for bidirectional.
    fn round(&mut self) -> Result<(), GpuError> {
        let (s, d) = (&self.streams, &self.dev);
        let (first, second) = self.host.split_at_mut(1);
        let n = self.bytes;
        let a = &mut first[0];
        let ops = match self.direction {
            CopyDirection::HostToDevice => vec![(up(&d[0], &a.host()[..n]), &s[0])],
            CopyDirection::DeviceToHost => vec![(down(&mut a.host_mut()[..n], &d[0]), &s[0])],
            CopyDirection::Bidirectional => {
                vec![
                    (up(&d[0], &a.host()[..n]), &s[0]),
                    (down(&mut second[0].host_mut()[..n], &d[1]), &s[1]),
                ]
            }
        };
        timed(ops).map(|_| ())
    }
}

fn up<'a>(dst: &'a DeviceMem, src: &'a [u8]) -> Op<'a> {
    Op::ToDevice { dst, src }
}

fn down<'a>(dst: &'a mut [u8], src: &'a DeviceMem) -> Op<'a> {
    Op::ToHost { dst, src }
}

/// Sets the stop flag however the scope is left, so the feeder is never waited for
/// forever (a panic on the chasing side would otherwise hang the scope).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// One point under DMA load: the feeder copies while this thread chases.
fn loaded_point(
    dev: &Device,
    plan: &GpuLoadedPlan,
    ready: &ReadyChase,
    feed: &mut Feed<'_>,
    gap_us: u64,
    feeder: Option<u32>,
    obs: &dyn Observer,
) -> GpuLoadedPoint {
    let stop = AtomicBool::new(false);
    let moved = AtomicU64::new(0);
    let (dma_gb_s, latency, fed) = std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        let h = s.spawn(|| feed_loop(dev, feed, gap_us, feeder, &stop, &moved));
        let sampled = chase_under_load(plan, ready, &h, &moved, obs);
        stop.store(true, Ordering::Release);
        let fed = h.join();
        match sampled {
            Some((gb_s, latency)) => (gb_s, Some(latency), fed),
            None => (0.0, None, fed),
        }
    });
    let latency = match (fed, latency) {
        (Ok(Ok(())), Some(l)) => l,
        (Ok(Ok(())), None) => interrupted(),
        (Ok(Err(e)), _) => Outcome::Failed {
            reason: format!("DMA feeder: {e}"),
        },
        (Err(_), _) => Outcome::Failed {
            reason: "the DMA feeder thread panicked".into(),
        },
    };
    GpuLoadedPoint {
        gap_us: Some(gap_us),
        dma_gb_s,
        latency,
    }
}

/// Waits for the feeder's first copy (past its start-up), then samples the chase and
/// the bytes the feeder moved meanwhile. None if the feeder ended first or a stop was
/// asked for.
fn chase_under_load(
    plan: &GpuLoadedPlan,
    ready: &ReadyChase,
    feeder: &ScopedJoinHandle<'_, Result<(), GpuError>>,
    moved: &AtomicU64,
    obs: &dyn Observer,
) -> Option<(f64, Outcome<memfabric_model::LatencyMeasurement>)> {
    while moved.load(Ordering::Acquire) == 0 {
        if feeder.is_finished() || obs.cancelled() {
            return None;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let (m0, t0) = (moved.load(Ordering::Acquire), Instant::now());
    let taken = ready.sample(plan.samples, plan.sample_time, obs);
    let (m1, secs) = (moved.load(Ordering::Acquire), t0.elapsed().as_secs_f64());
    Some((gb_per_s(m1 - m0, secs), ready.measurement_of(taken)))
}

/// The feeder thread: copies, counts, waits `gap_us`, until told to stop.
fn feed_loop(
    dev: &Device,
    feed: &mut Feed<'_>,
    gap_us: u64,
    cpu: Option<u32>,
    stop: &AtomicBool,
    moved: &AtomicU64,
) -> Result<(), GpuError> {
    // Off the chasing CPU and its SMT sibling: the driver spins while it waits for a
    // copy, and so does `pause` for short gaps.
    if let Some(c) = cpu {
        pin(c).map_err(|e| GpuError::Other(e.to_string()))?;
    }
    // CUDA contexts are current per thread; this one has none yet.
    dev.bind()?;
    let per_round = bytes_per_round(feed.direction, feed.bytes as u64);
    while !stop.load(Ordering::Acquire) {
        feed.round()?;
        moved.fetch_add(per_round, Ordering::Release);
        pause(gap_us);
    }
    Ok(())
}

/// Sleeps overshoot by the timer slack (50 µs by default on Linux), which would make
/// every gap under a millisecond much longer than asked: sleep all but the last
/// SPIN_US, then spin to the deadline.
const SPIN_US: u64 = 150;

fn pause(gap_us: u64) {
    if gap_us == 0 {
        return;
    }
    let deadline = Instant::now() + Duration::from_micros(gap_us);
    if gap_us > SPIN_US {
        std::thread::sleep(Duration::from_micros(gap_us - SPIN_US));
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

pub fn buffers_for(direction: CopyDirection) -> usize {
    match direction {
        CopyDirection::Bidirectional => 2,
        CopyDirection::HostToDevice | CopyDirection::DeviceToHost => 1,
    }
}

/// Bytes one feeder round moves over the link, both directions counted.
pub fn bytes_per_round(direction: CopyDirection, copy_bytes: u64) -> u64 {
    copy_bytes * buffers_for(direction) as u64
}

/// GB/s (10^9 B/s); 0 for an empty window.
pub fn gb_per_s(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs * 1e-9
    } else {
        0.0
    }
}

/// The CPU the feeder runs on: one the caller may use other than the chasing CPU and
/// its SMT siblings (the highest such); failing that any other; None if none is left.
pub fn feeder_cpu(allowed: &[u32], chase_cpu: u32, siblings: &[u32]) -> Option<u32> {
    let others = || allowed.iter().copied().filter(|&c| c != chase_cpu);
    others()
        .filter(|c| !siblings.contains(c))
        .max()
        .or_else(|| others().max())
}

fn label(gap: Option<u64>) -> String {
    match gap {
        None => "idle".into(),
        Some(0) => "back-to-back copies".into(),
        Some(g) => format!("{g} µs between copies"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_gaps_start_idle_and_shrink_to_back_to_back() {
        let g = default_gaps();
        assert_eq!(g[0], None);
        assert_eq!(g.last(), Some(&Some(0)));
        let us: Vec<u64> = g.iter().flatten().copied().collect();
        assert_eq!(us.len(), g.len() - 1);
        assert!(us.windows(2).all(|w| w[0] > w[1]), "{us:?}");
        assert_eq!(
            (label(g[0]), label(Some(0))),
            ("idle".into(), "back-to-back copies".into())
        );
        assert_eq!(label(Some(300)), "300 µs between copies");
    }

    #[test]
    fn rates_count_both_directions() {
        assert_eq!(bytes_per_round(CopyDirection::HostToDevice, 1 << 26), 1 << 26);
        assert_eq!(bytes_per_round(CopyDirection::DeviceToHost, 1 << 26), 1 << 26);
        assert_eq!(bytes_per_round(CopyDirection::Bidirectional, 1 << 26), 1 << 27);
        assert_eq!(gb_per_s(25_000_000_000, 1.0), 25.0);
        assert_eq!(gb_per_s(5_000_000_000, 0.1), 50.0);
        assert_eq!(gb_per_s(1, 0.0), 0.0);
        assert_eq!(gb_per_s(0, 0.5), 0.0);
    }

    #[test]
    fn the_feeder_stays_off_the_chasing_core() {
        let allowed: Vec<u32> = (0..16).collect();
        assert_eq!(feeder_cpu(&allowed, 3, &[3, 11]), Some(15));
        assert_eq!(feeder_cpu(&allowed, 15, &[7, 15]), Some(14));
        // Only the sibling left: better than sharing the chasing CPU itself.
        assert_eq!(feeder_cpu(&[3, 11], 3, &[3, 11]), Some(11));
        assert_eq!(feeder_cpu(&[3], 3, &[3]), None);
        assert_eq!(feeder_cpu(&[], 3, &[3]), None);
    }

    #[test]
    fn short_pauses_are_not_stretched_by_the_timer_slack() {
        let t = Instant::now();
        for _ in 0..10 {
            pause(20);
        }
        let us = t.elapsed().as_micros();
        assert!(us >= 200, "{us} µs");
        pause(0);
    }

    /// Needs an NVIDIA GPU: cargo test -p memfabric-gpu -- --ignored
    #[test]
    #[ignore]
    fn loaded_latency_on_a_real_gpu() {
        use memfabric_model::Pattern;
        let gpu = Gpu::open(0, &memfabric_topo::Roots::live().sys).expect("a GPU");
        let cpu = current_affinity().unwrap()[0];
        let plan = GpuLoadedPlan {
            cpu,
            cpu_siblings: Vec::new(),
            node: gpu.info.numa_node.unwrap_or(0),
            chase: ChaseShape {
                size_bytes: 64 << 20,
                stride_bytes: 64,
                window_bytes: 4096,
                pattern: Pattern::Random,
                huge_pages: HugePages::Off,
                seed: 1,
            },
            copy_bytes: 16 << 20,
            direction: CopyDirection::Bidirectional,
            gaps_us: vec![None, Some(1000), Some(0)],
            samples: 3,
            sample_time: Duration::from_millis(20),
        };
        let o = measure(&gpu, &plan, &memfabric_measure::Silent).unwrap();
        let Outcome::Ok(points) = o else { panic!("{o:?}") };
        assert_eq!(points.len(), 3);
        assert_eq!(points[0].dma_gb_s, 0.0);
        assert!(points[2].dma_gb_s > 1.0, "{points:?}");
        assert!(
            points.iter().all(|p| matches!(p.latency, Outcome::Ok(_))),
            "{points:?}"
        );
        eprintln!("{points:#?}");
    }
}
