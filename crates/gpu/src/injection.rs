//! `gpu injection`: does a GPU's DMA write into pinned host memory land in the CPU's
//! cache (Intel DDIO, AMD's cache injection)? A CPU chases the buffer once right
//! after the GPU wrote it, after flushing it to DRAM, and right after writing it itself.

use memfabric_measure::kernels::flush::{flush_lines, walk, CAN_FLUSH};
use memfabric_measure::observer::{interrupted, Observer};
use memfabric_measure::order::{sattolo, Rng};
use memfabric_measure::placement::{self, allocate_verified, pin};
use memfabric_model::{GpuInjection, GpuInjectionCase, HugePages, InjectionCase, Outcome, Summary};

use crate::sys::{timed, Device, DeviceMem, GpuError, Mapped, Op, Registered, Stream};
use crate::Gpu;

/// One chase element per line, so each load of the walk touches a line of its own.
const LINE: usize = 64;
/// Every sample measures the cases in this order; none depends on the one before,
/// since each starts by putting every line where its case wants it.
const CASES: [InjectionCase; 3] = [
    InjectionCase::GpuWritten,
    InjectionCase::Flushed,
    InjectionCase::CpuWritten,
];

#[derive(Debug, Clone, PartialEq)]
pub struct GpuInjectionPlan {
    pub cpu: u32,
    pub node: u32,
    pub buffer_bytes: u64,
    pub samples: usize,
    pub seed: u64,
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuInjectionPlan,
    obs: &dyn Observer,
) -> Result<Outcome<GpuInjection>, GpuError> {
    if !CAN_FLUSH {
        return Ok(Outcome::Failed {
            reason: "this architecture has no cache-line flush, so there is no DRAM baseline".into(),
        });
    }
    let lines = plan.buffer_bytes as usize / LINE;
    if lines < 2 {
        return Ok(Outcome::Failed {
            reason: format!("a {}-byte buffer holds fewer than two lines", plan.buffer_bytes),
        });
    }
    // Gpu is not Sync (its NVML handle), the device is: the thread gets only that. Its
    // own thread, because pinning it must leave the caller's affinity alone.
    let device = &gpu.device;
    std::thread::scope(|s| {
        s.spawn(|| on_cpu(device, plan, lines, obs))
            .join()
            .unwrap_or_else(|_| Err(GpuError::Other("the measuring thread panicked".into())))
    })
}

/// Runs pinned to plan.cpu: places and registers the buffer, then samples.
fn on_cpu(
    dev: &Device,
    plan: &GpuInjectionPlan,
    lines: usize,
    obs: &dyn Observer,
) -> Result<Outcome<GpuInjection>, GpuError> {
    dev.bind()?;
    let bytes = lines * LINE;
    let placed = pin(plan.cpu).map_err(|e| e.to_string()).and_then(|affinity| {
        allocate_verified(
            bytes,
            &placement::Target::Node(plan.node),
            HugePages::Off,
            affinity,
        )
    });
    let (mut buf, _) = match placed {
        Ok(p) => p,
        Err(reason) => return Ok(Outcome::Failed { reason }),
    };
    // Whole pages: older drivers refuse to register a range that is not page-aligned.
    let mut host = Registered::new(dev, buf.as_mut_slice())?;
    // Absolute addresses: the image means something only at this buffer's address.
    let image = chase_image(host.host().as_ptr() as u64, lines, plan.seed);
    let image_dev = DeviceMem::alloc(dev, bytes)?;
    image_dev.upload(&image)?;
    let stream = Stream::new(dev)?;
    let mut target = Target {
        host: &mut host,
        image: &image,
        image_dev: &image_dev,
        stream: &stream,
        lines,
    };
    target.run(plan.samples.max(1), obs)
}

/// The registered buffer, the chase image on both sides, and the copy stream.
struct Target<'t, 'b> {
    host: &'t mut Registered<'b>,
    image: &'t [u8],
    image_dev: &'t DeviceMem,
    stream: &'t Stream,
    lines: usize,
}

impl Target<'_, '_> {
    /// Every case once per sample, after one warm-up round (TLB, page-walk caches, the
    /// driver's copy path) that is dropped.
    fn run(&mut self, samples: usize, obs: &dyn Observer) -> Result<Outcome<GpuInjection>, GpuError> {
        obs.begin("gpu injection", samples as u64);
        let mut per_case: [Vec<f64>; 3] = Default::default();
        for round in 0..=samples {
            if obs.cancelled() {
                obs.finish();
                return Ok(interrupted());
            }
            for (k, &case) in CASES.iter().enumerate() {
                match self.once(case)? {
                    Ok(ns) if round > 0 => per_case[k].push(ns),
                    Ok(_) => {}
                    Err(reason) => {
                        obs.finish();
                        return Ok(Outcome::Failed { reason });
                    }
                }
            }
            if round > 0 {
                obs.advance(&format!("sample {round}"));
            }
        }
        obs.finish();
        Ok(result_of(per_case))
    }

    /// The part of the registered pages the chase covers.
    fn mem(&self) -> &[u8] {
        &self.host.host()[..self.image.len()]
    }

    fn mem_mut(&mut self) -> &mut [u8] {
        let n = self.image.len();
        &mut self.host.host_mut()[..n]
    }

    /// Puts the buffer's lines where `case` wants them, then walks every line once;
    /// returns ns per load, or why the walk cannot be trusted.
    fn once(&mut self, case: InjectionCase) -> Result<Result<f64, String>, GpuError> {
        let (image, image_dev, stream) = (self.image, self.image_dev, self.stream);
        match case {
            InjectionCase::GpuWritten => {
                // Out of every cache first: a line still cached from the last case would
                // be updated in place by the DMA write, which is not what is asked.
                flush_lines(self.mem());
                let op = Op::ToHost {
                    dst: self.mem_mut(),
                    src: image_dev,
                };
                timed(vec![(op, stream)])?;
            }
            InjectionCase::Flushed => {
                self.mem_mut().copy_from_slice(image);
                flush_lines(self.mem());
            }
            InjectionCase::CpuWritten => self.mem_mut().copy_from_slice(image),
        }
        let walked = match walk(self.mem(), 0, self.lines as u64) {
            Ok(w) => w,
            Err(e) => {
                return Ok(Err(format!(
                    "{} buffer: step {} read {:#x} at offset {}, not an address inside the buffer",
                    case.name(),
                    e.step,
                    e.value,
                    e.offset
                )))
            }
        };
        if walked.end != 0 {
            return Ok(Err(format!(
                "{} buffer: the chase did not return to its start after {} lines",
                case.name(),
                self.lines
            )));
        }
        // Checked after the clock stopped, so the check's own loads are not timed.
        if case == InjectionCase::GpuWritten && self.mem() != self.image {
            return Ok(Err("the GPU's copy differs from the image it was given".into()));
        }
        Ok(Ok(walked.ns as f64 / self.lines as f64))
    }
}

/// A random cycle through `lines` 64-byte lines of a buffer at `base`: the first 8
/// bytes of each line hold the absolute address of the next line.
pub fn chase_image(base: u64, lines: usize, seed: u64) -> Vec<u8> {
    let succ = sattolo(lines, &mut Rng::new(seed));
    let mut image = vec![0u8; lines * LINE];
    for (i, &next) in succ.iter().enumerate() {
        let at = i * LINE;
        image[at..at + 8].copy_from_slice(&(base + next as u64 * LINE as u64).to_ne_bytes());
    }
    image
}

/// The three cases' samples (in CASES order) summarised, with the verdict.
fn result_of(samples: [Vec<f64>; 3]) -> Outcome<GpuInjection> {
    let mut cases = Vec::with_capacity(3);
    for (case, samples_ns) in CASES.into_iter().zip(samples) {
        let Some(latency_ns) = Summary::of(&samples_ns) else {
            return interrupted();
        };
        cases.push(GpuInjectionCase {
            case,
            samples_ns,
            latency_ns,
        });
    }
    let median = |k: usize| cases[k].latency_ns.median;
    let v = verdict(median(0), median(1), median(2));
    Outcome::Ok(GpuInjection {
        cases,
        lands_in_cache: v.lands_in_cache,
        saved_ns: v.saved_ns,
        explanation: v.explanation,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub lands_in_cache: bool,
    pub saved_ns: f64,
    pub explanation: String,
}

/// Flushed lines must read at least this much slower than CPU-written ones for the
/// two baselines to tell cache from DRAM at all.
const MIN_CONTRAST: f64 = 1.5;

/// GPU-written lines land in the cache when their median ns per load is closer to
/// the CPU-written median than to the flushed (DRAM) one.
pub fn verdict(gpu_written: f64, flushed: f64, cpu_written: f64) -> Verdict {
    let saved_ns = flushed - gpu_written;
    let medians = format!(
        "GPU-written lines read at {gpu_written:.1} ns per load, flushed ones (DRAM) at {flushed:.1} ns, \
         CPU-written ones at {cpu_written:.1} ns"
    );
    if flushed < cpu_written * MIN_CONTRAST {
        return Verdict {
            lands_in_cache: false,
            saved_ns,
            explanation: format!(
                "{medians}: flushed lines are not clearly slower than cached ones, so this run cannot \
                 tell whether the GPU's writes land in the cache"
            ),
        };
    }
    let lands_in_cache = (gpu_written - cpu_written).abs() < (flushed - gpu_written).abs();
    let explanation = if lands_in_cache {
        format!(
            "{medians}: the GPU's DMA writes land in the CPU's cache (DDIO or cache injection), \
             saving {saved_ns:.1} ns per load of freshly copied data"
        )
    } else {
        format!(
            "{medians}: the GPU's DMA writes go to DRAM (saved {saved_ns:.1} ns); injection is off, \
             unsupported, or the buffer's node is not on the GPU's socket"
        )
    };
    Verdict {
        lands_in_cache,
        saved_ns,
        explanation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_one_cycle_through_every_line() {
        let (base, lines) = (0x7f00_0000_0000u64, 4096);
        let image = chase_image(base, lines, 42);
        let next = |line: usize| {
            let at = line * LINE;
            let addr = u64::from_ne_bytes(image[at..at + 8].try_into().unwrap());
            assert_eq!((addr - base) % LINE as u64, 0);
            ((addr - base) / LINE as u64) as usize
        };
        let mut seen = vec![false; lines];
        let mut line = 0;
        for _ in 0..lines {
            assert!(!seen[line]);
            seen[line] = true;
            line = next(line);
        }
        assert_eq!(line, 0);
        assert!(image.chunks(LINE).all(|l| l[8..].iter().all(|&b| b == 0)));
        assert_ne!(chase_image(base, lines, 43), image, "the seed picks the order");
    }

    #[test]
    fn cache_speed_gpu_writes_land_in_the_cache() {
        let v = verdict(38.0, 110.0, 6.0);
        assert!(v.lands_in_cache);
        assert_eq!(v.saved_ns, 72.0);
        for s in [
            "38.0",
            "110.0",
            "6.0",
            "saving 72.0 ns",
            "land in the CPU's cache",
        ] {
            assert!(v.explanation.contains(s), "{s}: {}", v.explanation);
        }
    }

    #[test]
    fn dram_speed_gpu_writes_do_not() {
        let v = verdict(105.0, 110.0, 6.0);
        assert!(!v.lands_in_cache);
        assert_eq!(v.saved_ns, 5.0);
        assert!(v.explanation.contains("go to DRAM"), "{}", v.explanation);
        // Exactly halfway is not closer to the cache.
        assert!(!verdict(58.0, 110.0, 6.0).lands_in_cache);
    }

    #[test]
    fn no_contrast_between_the_baselines_decides_nothing() {
        let v = verdict(9.0, 10.0, 8.0);
        assert!(!v.lands_in_cache);
        assert!(v.explanation.contains("cannot tell"), "{}", v.explanation);
    }

    #[test]
    fn results_keep_the_case_order_and_medians() {
        let o = result_of([
            vec![40.0, 38.0, 39.0],
            vec![110.0, 100.0, 120.0],
            vec![5.0, 6.0, 7.0],
        ]);
        let Outcome::Ok(r) = o else { panic!("{o:?}") };
        assert_eq!(r.cases.iter().map(|c| c.case).collect::<Vec<_>>(), CASES.to_vec());
        assert_eq!(r.cases[0].latency_ns.median, 39.0);
        assert!(r.lands_in_cache);
        assert_eq!(r.saved_ns, 71.0);
        assert!(matches!(
            result_of([vec![], vec![1.0], vec![1.0]]),
            Outcome::Skipped { .. }
        ));
    }

    /// Needs an NVIDIA GPU: cargo test -p memfabric-gpu -- --ignored
    #[test]
    #[ignore]
    fn injection_on_a_real_gpu() {
        let gpu = Gpu::open(0, &memfabric_topo::Roots::live().sys).expect("a GPU");
        let cpu = memfabric_measure::sys::current_affinity().unwrap()[0];
        let plan = GpuInjectionPlan {
            cpu,
            node: gpu.info.numa_node.unwrap_or(0),
            buffer_bytes: 2 << 20,
            samples: 5,
            seed: 1,
        };
        let o = measure(&gpu, &plan, &memfabric_measure::Silent).unwrap();
        let Outcome::Ok(r) = o else { panic!("{o:?}") };
        assert_eq!(r.cases.len(), 3);
        assert!(r
            .cases
            .iter()
            .all(|c| c.samples_ns.len() == 5 && c.latency_ns.median > 0.0));
        eprintln!("{}", r.explanation);
    }
}
