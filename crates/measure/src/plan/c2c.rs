//! The c2c plan: which CPUs pair up, where each pair's line lives, and what is
//! refused before anything is mapped.

use memfabric_model::{C2cClass, C2cMode};
use memfabric_topo::{format_cpulist, Topology};

use crate::kernels::LINE;
use crate::plan::{Machine, PlanError};

/// Timed samples per pair when none is asked for.
pub const DEFAULT_SAMPLES: usize = 100;
/// Round trips per sample when none is asked for: core-to-core-latency's default.
pub const DEFAULT_ROUND_TRIPS: u64 = 1000;
/// Offsets are inside one 4 KiB page, whatever the base page size.
pub(crate) const PAGE_BYTES: u64 = 4096;

/// What the user asked for, syntax already checked.
#[derive(Debug, Clone)]
pub struct C2cOptions {
    /// Default: every online CPU this process may use.
    pub cpus: Option<Vec<u32>>,
    pub modes: Vec<C2cMode>,
    pub offsets_bytes: Vec<u64>,
    pub samples: usize,
    pub round_trips: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct C2cPairSpec {
    pub first: u32,
    pub second: u32,
    pub class: C2cClass,
    pub line_node: u32,
}

/// A validated core-to-core measurement.
#[derive(Debug, Clone)]
pub struct C2cPlan {
    pub cpus: Vec<u32>,
    /// Every ordered pair of distinct CPUs, row-major.
    pub pairs: Vec<C2cPairSpec>,
    /// (node, CPU that maps and first-touches the node's line page).
    pub pages: Vec<(u32, u32)>,
    pub modes: Vec<C2cMode>,
    pub offsets_bytes: Vec<u64>,
    pub samples: usize,
    pub round_trips: u64,
}

/// Refuses, before anything is mapped, what cannot run: fewer than two CPUs, CPUs that
/// are offline or outside the affinity mask, offsets that are not a line in a page.
pub fn c2c_plan(m: &Machine, opt: &C2cOptions) -> Result<C2cPlan, PlanError> {
    let bad = |s: String| Err(PlanError::BadValue(s));
    if opt.samples == 0 {
        return bad("--samples must be at least 1".into());
    }
    if opt.round_trips == 0 {
        return bad("--iterations must be at least 1".into());
    }
    if opt.modes.is_empty() {
        return bad("no --mode to measure".into());
    }
    if opt.offsets_bytes.is_empty() {
        return bad("no --offsets to measure".into());
    }
    let line = LINE as u64;
    if let Some(o) = opt
        .offsets_bytes
        .iter()
        .find(|&&o| !o.is_multiple_of(line) || o >= PAGE_BYTES)
    {
        return bad(format!(
            "--offsets {o}: each offset must be a multiple of {line} bytes (a cache line) below {PAGE_BYTES} (a 4 KiB page)"
        ));
    }
    let cpus = cpus(m, opt.cpus.as_deref())?;
    let node_of = |c: u32| m.topo.cpu(c).and_then(|c| c.node).unwrap_or(0);
    let mut pages: Vec<(u32, u32)> = Vec::new();
    for &c in &cpus {
        if !pages.iter().any(|&(n, _)| n == node_of(c)) {
            pages.push((node_of(c), c));
        }
    }
    let pairs = cpus
        .iter()
        .flat_map(|&first| cpus.iter().map(move |&second| (first, second)))
        .filter(|(a, b)| a != b)
        .map(|(first, second)| C2cPairSpec {
            first,
            second,
            class: classify(m.topo, first, second),
            line_node: node_of(first),
        })
        .collect();
    Ok(C2cPlan {
        cpus,
        pairs,
        pages,
        modes: opt.modes.clone(),
        offsets_bytes: opt.offsets_bytes.clone(),
        samples: opt.samples,
        round_trips: opt.round_trips,
    })
}

/// The CPUs asked for, each online and allowed, or all allowed online CPUs; at least 2.
fn cpus(m: &Machine, asked: Option<&[u32]>) -> Result<Vec<u32>, PlanError> {
    let online: Vec<u32> = m.topo.cpus.iter().map(|c| c.id).collect();
    let allowed = || format_cpulist(&m.allowed_cpus);
    let cpus = match asked {
        Some(list) => {
            for &cpu in list {
                if !online.contains(&cpu) {
                    return Err(PlanError::UnknownCpu {
                        cpu,
                        online: format_cpulist(&online),
                    });
                }
                if !m.allowed_cpus.contains(&cpu) {
                    return Err(PlanError::CpuNotAllowed {
                        cpu,
                        allowed: allowed(),
                    });
                }
            }
            list.to_vec()
        }
        None => online
            .iter()
            .copied()
            .filter(|c| m.allowed_cpus.contains(c))
            .collect(),
    };
    if cpus.len() < 2 {
        return Err(PlanError::BadValue(match asked {
            Some(_) => format!(
                "--cpus {} names {} CPU: a line needs two CPUs to bounce between",
                format_cpulist(&cpus),
                cpus.len()
            ),
            None => format!(
                "this process may use only CPU {} (taskset or cpuset): a line needs two CPUs to bounce between",
                allowed()
            ),
        }));
    }
    Ok(cpus)
}

/// Where two CPUs sit relative to each other, from the topology's packages and L3 domains.
pub fn classify(topo: &Topology, a: u32, b: u32) -> C2cClass {
    let (Some(x), Some(y)) = (topo.cpu(a), topo.cpu(b)) else {
        return C2cClass::SameSocketL3Unknown;
    };
    if x.package != y.package {
        return C2cClass::OtherSocket;
    }
    match (x.l3_domain, y.l3_domain) {
        (Some(p), Some(q)) if p == q => C2cClass::SameL3,
        (Some(_), Some(_)) => C2cClass::OtherL3,
        _ => C2cClass::SameSocketL3Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn epyc() -> Topology {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/epyc7601-2s/sys");
        Topology::read(&root).unwrap()
    }

    fn options(cpus: Option<Vec<u32>>, offsets: Vec<u64>) -> C2cOptions {
        C2cOptions {
            cpus,
            modes: vec![C2cMode::Cas],
            offsets_bytes: offsets,
            samples: 3,
            round_trips: 100,
        }
    }

    #[test]
    fn classes_follow_l3_domains_and_packages() {
        let t = epyc();
        // CCX 0 is CPUs 0-3 and their SMT siblings 64-67; CCX 1 is 4-7; socket 1 from 32.
        assert_eq!(classify(&t, 0, 1), C2cClass::SameL3);
        assert_eq!(classify(&t, 0, 64), C2cClass::SameL3);
        assert_eq!(classify(&t, 0, 4), C2cClass::OtherL3);
        assert_eq!(classify(&t, 0, 31), C2cClass::OtherL3);
        assert_eq!(classify(&t, 32, 0), C2cClass::OtherSocket);
        assert_eq!(classify(&t, 0, 4096), C2cClass::SameSocketL3Unknown);
    }

    #[test]
    fn plan_pairs_every_ordered_pair_with_a_page_per_node() {
        let t = epyc();
        let m = Machine {
            topo: &t,
            allowed_cpus: t.cpus.iter().map(|c| c.id).collect(),
            roots: memfabric_topo::Roots::live(),
        };
        let p = c2c_plan(&m, &options(Some(vec![0, 1, 4, 32]), vec![0, 64, 4032])).unwrap();
        assert_eq!(p.pairs.len(), 12);
        assert!(p.pairs.iter().all(|s| s.first != s.second));
        let classes: Vec<C2cClass> = p.pairs.iter().take(3).map(|s| s.class).collect();
        assert_eq!(
            classes,
            [C2cClass::SameL3, C2cClass::OtherL3, C2cClass::OtherSocket]
        );
        let node32 = t.cpu(32).unwrap().node.unwrap();
        assert_eq!(p.pages, vec![(0, 0), (node32, 32)]);
        assert_eq!(
            p.pairs[9].line_node, node32,
            "the line lives on the first CPU's node"
        );
        let all = c2c_plan(&m, &options(None, vec![0])).unwrap();
        assert_eq!(all.pairs.len(), 128 * 127);
        assert_eq!(all.pages.len(), 8);
    }

    #[test]
    fn plan_refuses_what_cannot_run() {
        let t = epyc();
        let m = Machine {
            topo: &t,
            allowed_cpus: vec![0, 1, 2],
            roots: memfabric_topo::Roots::live(),
        };
        let err = |o: C2cOptions| c2c_plan(&m, &o).unwrap_err().to_string();
        assert!(err(options(Some(vec![0]), vec![0])).contains("names 1 CPU"));
        assert!(err(options(Some(vec![0, 4096]), vec![0])).contains("CPU 4096 is not online"));
        assert!(err(options(Some(vec![0, 5]), vec![0])).contains("outside this process's allowed CPUs 0-2"));
        for bad in [100, 4096, 32] {
            let e = err(options(None, vec![0, bad]));
            assert!(
                e.contains(&format!("--offsets {bad}: each offset must be a multiple of 64")),
                "{e}"
            );
        }
        assert!(err(C2cOptions {
            samples: 0,
            ..options(None, vec![0])
        })
        .contains("--samples"));
        assert!(err(C2cOptions {
            round_trips: 0,
            ..options(None, vec![0])
        })
        .contains("--iterations"));
        let one = Machine {
            topo: &t,
            allowed_cpus: vec![7],
            roots: memfabric_topo::Roots::live(),
        };
        let e = c2c_plan(&one, &options(None, vec![0])).unwrap_err().to_string();
        assert!(e.contains("may use only CPU 7"), "{e}");
    }
}
