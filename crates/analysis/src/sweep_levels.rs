//! The levels of a sweep's curves, named after the caches the topology reports and
//! compared with their sizes.

use memfabric_model::{Boundary, LevelComparison, Plateau, SweepLevels};
use memfabric_topo::{CacheLevel, Topology};

use crate::levels::{detect, Direction};

/// A cache level the topology reports, as one measurement meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedLevel {
    /// As the kernel names it: "L1 Data", "L2 Unified".
    pub name: String,
    /// The instance the measuring CPU uses.
    pub instance_bytes: u64,
    /// Threads of the measurement that share that instance (at least 1).
    pub sharing_threads: usize,
}

impl ExpectedLevel {
    /// The data and unified caches of `cpu`, smallest level first, and how many of
    /// `threads` share each instance with it.
    pub fn of(topo: &Topology, cpu: u32, threads: &[u32]) -> Vec<ExpectedLevel> {
        let llc = topo
            .cpu(cpu)
            .and_then(|c| c.l3_domain)
            .and_then(|d| topo.l3_domains.get(d));
        topo.caches
            .iter()
            .filter(|l| l.kind != "Instruction" && l.size_bytes > 0)
            .map(|l| {
                let (instance_bytes, sharing) = match llc.filter(|d| d.level == l.level) {
                    Some(d) => (
                        d.size_bytes,
                        threads.iter().filter(|t| d.cpus.contains(t)).count(),
                    ),
                    None => (l.size_bytes, sharing_below_llc(topo, l, cpu, threads)),
                };
                ExpectedLevel {
                    name: format!("L{} {}", l.level, l.kind),
                    instance_bytes,
                    sharing_threads: sharing.max(1),
                }
            })
            .collect()
    }

    /// What one thread's working set can fill.
    pub fn expected_bytes(&self) -> u64 {
        self.instance_bytes / self.sharing_threads.max(1) as u64
    }
}

/// Threads sharing an instance of a cache below the LLC: none but the CPU when each
/// CPU has its own, its SMT siblings among the threads when a core's threads share it,
/// else (the topology does not say which CPUs) as many as could.
fn sharing_below_llc(topo: &Topology, l: &CacheLevel, cpu: u32, threads: &[u32]) -> usize {
    if l.cpus_per_instance <= 1 {
        return 1;
    }
    let siblings = topo.cpu(cpu).map(|c| c.smt_siblings.clone()).unwrap_or_default();
    if siblings.len() == l.cpus_per_instance as usize {
        threads.iter().filter(|t| siblings.contains(t)).count()
    } else {
        threads.len().min(l.cpus_per_instance as usize)
    }
}

/// The levels of one curve of (size, median) points: latency, or bandwidth when
/// `falls`. Points whose size does not grow past the one before are left out.
pub fn levels(
    mut curve: Vec<(u64, f64)>,
    falls: bool,
    expected: &[ExpectedLevel],
    threads: usize,
    max_bytes: u64,
) -> SweepLevels {
    curve.dedup_by(|b, a| b.0 <= a.0);
    let points: Vec<(f64, f64)> = curve.iter().map(|&(s, v)| (s as f64, v)).collect();
    let dir = if falls { Direction::Falls } else { Direction::Rises };
    let found = detect(&points, dir);
    let mut wanted: Vec<Expected> = expected
        .iter()
        .map(|e| Expected {
            name: e.name.clone(),
            bytes: e.expected_bytes(),
        })
        .collect();
    wanted.sort_by_key(|w| w.bytes);
    let at: Vec<f64> = found.steps.iter().map(|s| points[s.last_below].0).collect();
    let level_of_step = step_levels(&at, &wanted);
    let boundaries: Vec<Boundary> = found
        .steps
        .iter()
        .zip(&level_of_step)
        .map(|(s, level)| Boundary {
            size_bytes: curve[s.last_below].0,
            next_size_bytes: curve[s.first_above].0,
            step_ratio: s.ratio,
            level: level.clone(),
        })
        .collect();
    let plateaus = found
        .plateaus
        .iter()
        .enumerate()
        .map(|(k, p)| Plateau {
            from_bytes: curve[p.first].0,
            to_bytes: curve[p.last].0,
            points: p.last + 1 - p.first,
            level: past_llc(
                curve[p.first].0,
                plateau_name(k, &boundaries, &wanted, max_bytes),
                &wanted,
            ),
            latency_ns: (!falls).then_some(p.median),
            bandwidth_gb_s: falls.then_some(p.median),
        })
        .collect();
    let comparison = expected.iter().map(|e| compare(e, &boundaries)).collect();
    SweepLevels {
        threads,
        plateaus,
        boundaries,
        comparison,
    }
}

/// A plateau that starts past the last-level cache is not one of the caches the
/// topology reports, whatever the steps before it matched: it is memory (or, where
/// a further step ends it, the "memory-side cache?" already named). Without this a
/// curve that climbs into DRAM without an L3 step named its DRAM plateau after L3.
fn past_llc(from_bytes: u64, name: String, wanted: &[Expected]) -> String {
    let llc = wanted.last().map_or(u64::MAX, |w| w.bytes);
    if from_bytes > llc && wanted.iter().any(|w| w.name == name) {
        "memory".into()
    } else {
        name
    }
}

/// The name of the level each step ends, where one matches.
fn step_levels(at: &[f64], wanted: &[Expected]) -> Vec<Option<String>> {
    let mut names = vec![None; at.len()];
    for (w, m) in wanted.iter().zip(match_levels(at, wanted)) {
        if let Some(i) = m {
            names[i] = Some(w.name.clone());
        }
    }
    names
}

/// What serves plateau k: the level whose boundary ends it. Past the last boundary,
/// the level after the one that boundary ends, or memory after the largest cache;
/// "?" where nothing the topology reports matches.
fn plateau_name(k: usize, boundaries: &[Boundary], wanted: &[Expected], max_bytes: u64) -> String {
    let beyond = |b: &Boundary| wanted.last().is_some_and(|l| b.size_bytes > l.bytes);
    if let Some(b) = boundaries.get(k) {
        return match &b.level {
            Some(name) => name.clone(),
            None if beyond(b) => "memory-side cache?".into(),
            None => "?".into(),
        };
    }
    let Some(below) = k.checked_sub(1).map(|j| &boundaries[j]) else {
        // No step at all: the first level, if the sweep never outgrew it.
        return match wanted.first() {
            Some(first) if max_bytes <= first.bytes => first.name.clone(),
            _ => "?".into(),
        };
    };
    match wanted
        .iter()
        .position(|w| below.level.as_deref() == Some(w.name.as_str()))
    {
        Some(j) => wanted
            .get(j + 1)
            .map_or_else(|| "memory".into(), |w| w.name.clone()),
        None if beyond(below) => "memory".into(),
        None => "?".into(),
    }
}

fn compare(e: &ExpectedLevel, boundaries: &[Boundary]) -> LevelComparison {
    let expected_bytes = e.expected_bytes();
    let detected_bytes = boundaries
        .iter()
        .find(|b| b.level.as_deref() == Some(e.name.as_str()))
        .map(|b| b.size_bytes);
    let ratio = detected_bytes.map(|d| d as f64 / expected_bytes.max(1) as f64);
    LevelComparison {
        level: e.name.clone(),
        instance_bytes: e.instance_bytes,
        sharing_threads: e.sharing_threads,
        expected_bytes,
        detected_bytes,
        ratio,
        agrees: ratio.is_some_and(|r| (0.5..=2.0).contains(&r)),
    }
}

/// The name of a level as the topology reports it, and the capacity one thread of the
/// measurement can expect of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub name: String,
    pub bytes: u64,
}

/// Boundaries farther than this factor from a level's expected size do not match it.
pub const MATCH_FACTOR: f64 = 8.0;

/// Pairs each expected level (in increasing size) with a boundary (sizes, increasing),
/// keeping both orders: each level takes the nearest boundary, in log size, among those
/// above the previous level's, within MATCH_FACTOR. Then a level left without one
/// takes the boundary between its neighbours' when exactly one lies there, however
/// far: the curve does leave a level there, just not where the topology says.
/// Returns a boundary index per level.
pub fn match_levels(boundaries: &[f64], expected: &[Expected]) -> Vec<Option<usize>> {
    let mut next = 0;
    let mut matched: Vec<Option<usize>> = expected
        .iter()
        .map(|e| {
            let distance = |b: f64| (b / e.bytes as f64).log2().abs();
            let best = (next..boundaries.len())
                .filter(|&i| distance(boundaries[i]) <= MATCH_FACTOR.log2())
                .min_by(|&i, &j| distance(boundaries[i]).total_cmp(&distance(boundaries[j])));
            if let Some(i) = best {
                next = i + 1;
            }
            best
        })
        .collect();
    for j in 0..matched.len() {
        if matched[j].is_none() {
            let from = matched[..j].iter().rev().find_map(|m| *m).map_or(0, |i| i + 1);
            let to = matched[j + 1..]
                .iter()
                .find_map(|m| *m)
                .unwrap_or(boundaries.len());
            if to == from + 1 {
                matched[j] = Some(from);
            }
        }
    }
    matched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_keeps_order_and_distance() {
        let e = |name: &str, bytes: u64| Expected {
            name: name.into(),
            bytes,
        };
        let expected = [e("L1", 48 << 10), e("L2", 2 << 20), e("L3", 480 << 20)];
        // A TLB step at 6M lies between L2 and L3; memory at 100M is within 8x of L3.
        let b = [56e3, 2.8e6, 6e6, 100e6];
        assert_eq!(match_levels(&b, &expected), [Some(0), Some(1), Some(3)]);
        // Nothing near L1: the first boundary goes to L2, none is left for L3.
        assert_eq!(match_levels(&[2.5e6], &expected), [None, Some(0), None]);
        assert_eq!(match_levels(&[], &expected), [None, None, None]);
        // A third level that ends far from where the topology says still ends there.
        assert_eq!(
            match_levels(&[56e3, 2.8e6, 9.5e6], &expected),
            [Some(0), Some(1), Some(2)]
        );
        assert_eq!(
            match_levels(&[56e3, 20e6, 300e6], &expected),
            [Some(0), Some(1), Some(2)]
        );
        // Two candidates between the neighbours' boundaries: no guess.
        assert_eq!(
            match_levels(&[56e3, 20e6, 40e6, 300e6], &expected),
            [Some(0), None, Some(3)]
        );
    }
}

#[cfg(test)]
mod past_the_llc {
    use super::*;

    fn expected() -> Vec<ExpectedLevel> {
        [
            ("L1 Data", 32u64 << 10),
            ("L2 Unified", 512 << 10),
            ("L3 Unified", 32 << 20),
        ]
        .iter()
        .map(|&(name, bytes)| ExpectedLevel {
            name: name.into(),
            instance_bytes: bytes,
            sharing_threads: 1,
        })
        .collect()
    }

    /// A latency curve as the quick suite measured it on a 2-CPU EPYC guest (two
    /// points per octave to 64 MiB): L1, L2, then an L3 plateau that climbs into
    /// DRAM around the 32 MiB last-level cache.
    fn curve() -> Vec<(u64, f64)> {
        let mut c = Vec::new();
        let mut size = 4u64 << 10;
        while size <= 64 << 20 {
            for s in [size, size * 3 / 2] {
                // No L3 plateau: past L2 the latency climbs steadily into DRAM, as in
                // a guest whose host shares the L3 with other tenants.
                let ns = match s {
                    s if s <= 32 << 10 => 1.2,
                    s if s <= 512 << 10 => 4.0,
                    s if s < 40 << 20 => 4.0 * (s as f64 / (512 << 10) as f64).powf(0.84),
                    _ => 153.0,
                };
                c.push((s, ns));
            }
            size *= 2;
        }
        c
    }

    #[test]
    fn a_plateau_past_the_last_level_cache_is_memory_in_both_curves() {
        let lat = levels(curve(), false, &expected(), 1, 64 << 20);
        let last = lat.plateaus.last().unwrap();
        assert!(last.from_bytes > 8 << 20, "{:?}", lat.plateaus);
        assert_eq!(last.level, "memory", "{:?}", lat.plateaus);
        let bw: Vec<(u64, f64)> = curve().into_iter().map(|(s, ns)| (s, 1000.0 / ns)).collect();
        let bw = levels(bw, true, &expected(), 1, 64 << 20);
        assert_eq!(bw.plateaus.last().unwrap().level, "memory");
    }
}
