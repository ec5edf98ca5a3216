//! Resolving a sweep request against the machine: the measuring CPU, the memory node,
//! the bandwidth threads, the grid of sizes and the cache levels to expect. Refused
//! here, before anything is allocated.

use std::time::Duration;

use memfabric_model::{format_size, HugePages, Mix, Pattern};
use memfabric_topo::{format_cpulist, Topology};

use crate::bandwidth::KernelOptions;
use crate::kernels::{Isa, LINE};
use crate::latency::ChaseShape;
use crate::plan::{chase_shape, check_kernel, LatencyOptions, Machine, PlanError};
use crate::sweep::{array_bytes, SweepBandwidth, SweepPlan};
use crate::team::Member;
use memfabric_analysis::sweep_levels::ExpectedLevel;

/// Threads of the bandwidth curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepThreads {
    Count(usize),
    /// Every allowed CPU of the measuring CPU's node.
    All,
}

pub struct SweepOptions {
    pub latency: bool,
    pub bandwidth: bool,
    pub min_bytes: u64,
    /// Default: 4x the measuring CPU's last-level cache, at most DEFAULT_MAX_CAP.
    pub max_bytes: Option<u64>,
    pub points_per_octave: u32,
    pub threads: SweepThreads,
    pub cpu: Option<u32>,
    pub mem_node: Option<u32>,
    pub huge_pages: HugePages,
    pub mix: Mix,
    pub pattern: Pattern,
    pub samples: usize,
    pub sample_time: Duration,
    pub isa: Isa,
    pub seed: u64,
}

/// Smallest --min: a chase of 16 lines, two kernel blocks.
pub const MIN_BYTES: u64 = 1 << 10;
pub const MAX_POINTS_PER_OCTAVE: u32 = 64;
/// The default --max stops here even when 4x the last-level cache is more: a sweep
/// past a gigabyte takes minutes (a VM may report an LLC of hundreds of MiB).
pub const DEFAULT_MAX_CAP: u64 = 1 << 30;
/// The default --max when the topology reports no cache sizes.
const DEFAULT_MAX_UNKNOWN: u64 = 256 << 20;
const MAX_POINTS: usize = 2000;

pub fn sweep_plan(m: &Machine, opt: &SweepOptions) -> Result<SweepPlan, PlanError> {
    check_options(opt)?;
    let cpu = match opt.cpu {
        Some(c) => m.allowed_cpu(c)?.id,
        None => *m
            .allowed_cpus
            .iter()
            .find(|&&c| m.topo.cpu(c).is_some())
            .ok_or_else(|| PlanError::BadValue("no allowed CPU is online".into()))?,
    };
    let cpu_node = m.node_of_cpu(cpu);
    let mem_node = opt.mem_node.unwrap_or(cpu_node);
    m.check_mem_node(mem_node)?;
    let members = members(m, cpu, cpu_node, mem_node, opt.threads)?;
    let (max_bytes, max_from) = match opt.max_bytes {
        Some(b) => (b, "--max".to_string()),
        None => default_max(m.topo, cpu),
    };
    let sizes = sizes(opt, max_bytes, &max_from)?;
    let latency = opt.latency.then(|| chase(opt, opt.min_bytes)).transpose()?;
    let bandwidth = opt.bandwidth.then(|| SweepBandwidth {
        mix: opt.mix,
        members: members.clone(),
        kernel: KernelOptions {
            isa: opt.isa,
            array_bytes: 0,
            huge_pages: opt.huge_pages,
            samples: opt.samples,
        },
    });
    check_fits(m, mem_node, &sizes, latency.as_ref(), bandwidth.as_ref())?;
    let cpus: Vec<u32> = members.iter().map(|m| m.cpu).collect();
    Ok(SweepPlan {
        cpu,
        cpu_node,
        mem_node,
        min_bytes: opt.min_bytes,
        max_bytes,
        max_from,
        points_per_octave: opt.points_per_octave,
        samples: opt.samples,
        sample_time: opt.sample_time,
        latency,
        expected_latency: ExpectedLevel::of(m.topo, cpu, &[cpu]),
        expected_bandwidth: ExpectedLevel::of(m.topo, cpu, &cpus),
        bandwidth,
        sizes,
    })
}

/// What can be refused without looking at the machine.
fn check_options(opt: &SweepOptions) -> Result<(), PlanError> {
    if !(1..=MAX_POINTS_PER_OCTAVE).contains(&opt.points_per_octave) {
        return Err(PlanError::BadValue(format!(
            "--points-per-octave must be between 1 and {MAX_POINTS_PER_OCTAVE}, not {}",
            opt.points_per_octave
        )));
    }
    if opt.samples == 0 {
        return Err(PlanError::BadValue("--samples must be at least 1".into()));
    }
    if opt.min_bytes < MIN_BYTES {
        return Err(PlanError::BadValue(format!(
            "--min must be at least {}",
            format_size(MIN_BYTES)
        )));
    }
    if opt.bandwidth {
        check_kernel(opt.isa, &[opt.mix], opt.samples)?;
    } else if opt.threads != SweepThreads::Count(1) {
        return Err(PlanError::Conflict(
            "--threads sets the bandwidth curve's threads; the latency chase runs on one CPU".into(),
        ));
    }
    Ok(())
}

/// The grid from --min to `max`, refused when inverted or too dense.
fn sizes(opt: &SweepOptions, max: u64, max_from: &str) -> Result<Vec<u64>, PlanError> {
    if opt.min_bytes > max {
        return Err(PlanError::BadValue(format!(
            "--min {} is larger than --max {} ({max_from})",
            format_size(opt.min_bytes),
            format_size(max)
        )));
    }
    let sizes = grid(opt.min_bytes, max, opt.points_per_octave);
    if sizes.len() > MAX_POINTS {
        return Err(PlanError::BadValue(format!(
            "{} points from --min to --max: more than {MAX_POINTS}; use fewer --points-per-octave",
            sizes.len()
        )));
    }
    Ok(sizes)
}

/// The sizes from min to max, `ppo` per octave, each rounded to 64 bytes; max is the
/// last even when it falls between two steps of the grid.
pub fn grid(min: u64, max: u64, ppo: u32) -> Vec<u64> {
    let round = |v: f64| ((v / LINE as f64).round() as u64 * LINE as u64).max(LINE as u64);
    let steps = ((max as f64 / min as f64).log2() * ppo as f64 + 1e-9).floor() as u64;
    let mut sizes: Vec<u64> = Vec::new();
    let candidates = (0..=steps).map(|k| round(min as f64 * (k as f64 / ppo as f64).exp2()));
    for s in candidates.chain(std::iter::once(round(max as f64))) {
        if sizes.last().is_none_or(|&l| s > l) {
            sizes.push(s);
        }
    }
    sizes
}

/// 4x the last-level cache instance of `cpu`, at most DEFAULT_MAX_CAP, and why.
fn default_max(topo: &Topology, cpu: u32) -> (u64, String) {
    let domain = topo
        .cpu(cpu)
        .and_then(|c| c.l3_domain)
        .and_then(|d| topo.l3_domains.get(d));
    let llc = domain.map(|d| d.size_bytes).filter(|&b| b > 0).or_else(|| {
        let sizes = topo.caches.iter().filter(|c| c.kind != "Instruction");
        sizes.map(|c| c.size_bytes).max().filter(|&b| b > 0)
    });
    let Some(llc) = llc else {
        return (
            DEFAULT_MAX_UNKNOWN,
            format!(
                "default: the topology reports no cache sizes, so {}",
                format_size(DEFAULT_MAX_UNKNOWN)
            ),
        );
    };
    let four = llc.saturating_mul(4);
    let what = format!("4x the {} last-level cache of CPU {cpu}", format_size(llc));
    if four <= DEFAULT_MAX_CAP {
        (four, format!("default: {what}"))
    } else {
        let cap = format_size(DEFAULT_MAX_CAP);
        let why = format!(
            "default: {cap}, where the default stops; {what} would be {}",
            format_size(four)
        );
        (DEFAULT_MAX_CAP, format!("{why} (give --max to go on)"))
    }
}

/// The bandwidth threads: the measuring CPU, then the other allowed CPUs of its node.
fn members(
    m: &Machine,
    cpu: u32,
    node: u32,
    mem_node: u32,
    threads: SweepThreads,
) -> Result<Vec<Member>, PlanError> {
    let mut cpus = vec![cpu];
    if let Some(n) = m.topo.node(node) {
        cpus.extend(
            n.cpus
                .iter()
                .filter(|&&c| c != cpu && m.allowed_cpus.contains(&c)),
        );
    }
    let count = match threads {
        SweepThreads::All => cpus.len(),
        SweepThreads::Count(0) => return Err(PlanError::BadValue("--threads must be at least 1".into())),
        SweepThreads::Count(t) if t > cpus.len() => {
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            return Err(PlanError::TooManyThreads {
                threads: t,
                node,
                available: cpus.len(),
                cpus: format_cpulist(&sorted),
            });
        }
        SweepThreads::Count(t) => t,
    };
    Ok(cpus[..count]
        .iter()
        .map(|&cpu| Member { cpu, mem_node })
        .collect())
}

/// The chase every latency point uses, checked as `latency` checks its own.
fn chase(opt: &SweepOptions, size: u64) -> Result<ChaseShape, PlanError> {
    let lat = LatencyOptions {
        size_bytes: Some(size),
        stride_bytes: LINE as u64,
        window_bytes: None,
        pattern: opt.pattern,
        huge_pages: opt.huge_pages,
        samples: opt.samples,
        sample_time: opt.sample_time,
        seed: opt.seed,
    };
    Ok(ChaseShape {
        size_bytes: size,
        stride_bytes: LINE as u64,
        window_bytes: chase_shape(size, &lat)?,
        pattern: opt.pattern,
        huge_pages: opt.huge_pages,
        seed: opt.seed,
    })
}

/// The largest point must fit (points run one at a time, each freed before the next).
fn check_fits(
    m: &Machine,
    node: u32,
    sizes: &[u64],
    latency: Option<&ChaseShape>,
    bandwidth: Option<&SweepBandwidth>,
) -> Result<(), PlanError> {
    let largest = *sizes.last().expect("a grid has a point");
    let too_large = |e: PlanError| {
        match e {
        PlanError::TooLarge { node, need, free } => PlanError::BadValue(format!(
            "node {node} needs {need} for the largest point but has {free} free (MemFree, or MemAvailable on a one-node machine); use a smaller --max"
        )),
        e => e,
    }
    };
    if let Some(shape) = latency {
        // The visit order is built beside the chase: 8 bytes per 64-byte line.
        m.check_fits(node, largest + largest / 8, shape.huge_pages)
            .map_err(too_large)?;
    }
    if let Some(b) = bandwidth {
        let each = array_bytes(b.mix, largest) * b.mix.arrays();
        m.check_members_fit(&b.members, each, b.kernel.huge_pages)
            .map_err(too_large)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> Topology {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name)
            .join("sys");
        Topology::read(&root).unwrap()
    }

    fn all_cpus(t: &Topology) -> Vec<u32> {
        t.cpus.iter().map(|c| c.id).collect()
    }

    fn options() -> SweepOptions {
        SweepOptions {
            latency: true,
            bandwidth: true,
            min_bytes: 4 << 10,
            max_bytes: None,
            points_per_octave: 4,
            threads: SweepThreads::Count(1),
            cpu: None,
            mem_node: None,
            huge_pages: HugePages::Off,
            mix: Mix::Read,
            pattern: Pattern::Random,
            samples: 3,
            sample_time: Duration::from_millis(1),
            isa: Isa::Scalar,
            seed: 1,
        }
    }

    fn plan(t: &Topology, opt: &SweepOptions) -> Result<SweepPlan, PlanError> {
        let m = Machine {
            topo: t,
            allowed_cpus: all_cpus(t),
            roots: memfabric_topo::Roots::live(),
        };
        sweep_plan(&m, opt)
    }

    #[test]
    fn grid_has_its_points_per_octave_and_ends_at_max() {
        assert_eq!(grid(4096, 16384, 2), [4096, 5824, 8192, 11584, 16384]);
        // A max between two steps of the grid is still the last point.
        assert_eq!(grid(4096, 10000, 1), [4096, 8192, 9984]);
        let g = grid(4 << 10, 4 << 20, 4);
        assert_eq!((g.len(), g[0], g[40]), (41, 4096, 4 << 20));
        assert!(g.windows(2).all(|w| w[0] < w[1] && w[1] % 64 == 0));
        // So many points per octave that rounding to lines repeats sizes: each once.
        let fine = grid(1 << 10, 2 << 10, 64);
        assert!(
            fine.windows(2).all(|w| w[0] < w[1]) && fine.len() == 17,
            "{fine:?}"
        );
    }

    #[test]
    fn default_max_is_four_llcs_or_the_cap() {
        let epyc = plan(&fixture("epyc7601-2s"), &options()).unwrap();
        assert_eq!((epyc.max_bytes, epyc.sizes.len()), (32 << 20, 53));
        assert!(
            epyc.max_from.contains("4x the 8M last-level cache of CPU 0"),
            "{}",
            epyc.max_from
        );
        let vm = plan(&fixture("this-machine"), &options()).unwrap();
        assert_eq!(vm.max_bytes, DEFAULT_MAX_CAP);
        assert!(vm.max_from.contains("would be 1.9G"), "{}", vm.max_from);
        let given = plan(
            &fixture("this-machine"),
            &SweepOptions {
                max_bytes: Some(4 << 20),
                ..options()
            },
        );
        assert_eq!(given.unwrap().max_from, "--max");
    }

    #[test]
    fn all_threads_share_the_llc_and_keep_their_own_l1_and_l2() {
        let t = fixture("epyc7601-2s");
        let p = plan(
            &t,
            &SweepOptions {
                threads: SweepThreads::All,
                ..options()
            },
        )
        .unwrap();
        let b = p.bandwidth.unwrap();
        let cpus: Vec<u32> = b.members.iter().map(|m| m.cpu).collect();
        let node0: Vec<u32> = (0..8).chain(64..72).collect();
        assert_eq!(cpus, node0);
        assert!(b.members.iter().all(|m| m.mem_node == 0));
        let shared: Vec<(String, usize, u64)> = p
            .expected_bandwidth
            .iter()
            .map(|e| (e.name.clone(), e.sharing_threads, e.expected_bytes()))
            .collect();
        // CPU 64 is CPU 0's SMT sibling; CPUs 0-3 and 64-67 share one L3 (a CCX).
        assert_eq!(
            shared,
            [
                ("L1 Data".to_string(), 2, 16 << 10),
                ("L2 Unified".to_string(), 2, 256 << 10),
                ("L3 Unified".to_string(), 8, 1 << 20)
            ]
        );
        let alone: Vec<usize> = p.expected_latency.iter().map(|e| e.sharing_threads).collect();
        assert_eq!(alone, [1, 1, 1]);
    }

    #[test]
    fn measuring_cpu_comes_first_and_its_node_is_the_default() {
        let t = fixture("epyc7601-2s");
        let p = plan(
            &t,
            &SweepOptions {
                cpu: Some(9),
                threads: SweepThreads::Count(3),
                ..options()
            },
        )
        .unwrap();
        assert_eq!((p.cpu, p.cpu_node, p.mem_node), (9, 1, 1));
        let cpus: Vec<u32> = p.bandwidth.unwrap().members.iter().map(|m| m.cpu).collect();
        assert_eq!(cpus, [9, 8, 10]);
        let far = plan(
            &t,
            &SweepOptions {
                cpu: Some(9),
                mem_node: Some(7),
                ..options()
            },
        )
        .unwrap();
        assert_eq!(far.mem_node, 7);
    }

    #[test]
    fn bad_requests_are_refused() {
        let t = fixture("epyc7601-2s");
        let err = |o: SweepOptions| plan(&t, &o).unwrap_err().to_string();
        assert!(err(SweepOptions {
            points_per_octave: 0,
            ..options()
        })
        .contains("--points-per-octave must be between 1 and 64"));
        let inverted = err(SweepOptions {
            min_bytes: 8 << 20,
            max_bytes: Some(1 << 20),
            ..options()
        });
        assert!(
            inverted.contains("--min 8M is larger than --max 1M"),
            "{inverted}"
        );
        assert!(err(SweepOptions {
            min_bytes: 512,
            ..options()
        })
        .contains("--min must be at least 1K"));
        assert!(err(SweepOptions {
            samples: 0,
            ..options()
        })
        .contains("--samples"));
        let latency_only = SweepOptions {
            bandwidth: false,
            threads: SweepThreads::All,
            ..options()
        };
        assert!(err(latency_only).contains("latency chase runs on one CPU"));
        assert!(err(SweepOptions {
            threads: SweepThreads::Count(17),
            ..options()
        })
        .contains("--threads 17 is more than node 0"));
        assert!(err(SweepOptions {
            threads: SweepThreads::Count(0),
            ..options()
        })
        .contains("at least 1"));
        assert!(err(SweepOptions {
            cpu: Some(999),
            ..options()
        })
        .contains("CPU 999 is not online"));
        assert!(err(SweepOptions {
            mem_node: Some(9),
            ..options()
        })
        .contains("node 9 does not exist"));
        let huge = err(SweepOptions {
            max_bytes: Some(64 << 30),
            ..options()
        });
        assert!(huge.contains("use a smaller --max"), "{huge}");
        let page = SweepOptions {
            pattern: Pattern::PageRandom,
            ..options()
        };
        assert_eq!(plan(&t, &page).unwrap().latency.unwrap().window_bytes, 4096);
    }
}
