//! Latency tiers: the cells of a latency matrix grouped into levels of distance (same
//! die, same socket, other socket, a far memory node...), the "package mapping"
//! reviewers draw by hand from an MLC matrix.
//!
//! Method: sort the cells by latency and cut wherever one value is more than
//! `rel_gap` above the one before it. Cells inside one tier differ by run noise
//! (a few percent); tiers differ by a hop through the fabric (tens of percent), so a
//! relative gap separates them without knowing how many tiers there are.

use serde::{Deserialize, Serialize};

/// The default cut: a step of more than 8 % starts a new tier.
pub const DEFAULT_REL_GAP: f64 = 0.08;

/// One (CPU node, memory node) pair and its latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TierCell {
    pub cpu_node: u32,
    pub mem_node: u32,
    pub latency_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tier {
    /// 0 is the fastest.
    pub index: usize,
    pub min_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
    /// Sorted by (cpu node, mem node).
    pub cells: Vec<TierCell>,
}

impl crate::LatencyReport {
    /// The measured cells grouped into tiers by their median latency.
    pub fn tiers(&self, rel_gap: f64) -> Vec<Tier> {
        let cells: Vec<TierCell> = self
            .cells
            .iter()
            .filter_map(|c| {
                c.outcome.ok().map(|m| TierCell {
                    cpu_node: c.cpu_node,
                    mem_node: c.mem_node,
                    latency_ns: m.latency_ns.median,
                })
            })
            .collect();
        latency_tiers(&cells, rel_gap)
    }
}

impl crate::LoadedLatencyReport {
    /// (load GB/s, median latency ns) of every measured step, by increasing bandwidth:
    /// the curve MLC's loaded-latency plots draw.
    pub fn curve(&self) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = self
            .steps
            .iter()
            .filter_map(|s| {
                s.latency
                    .ok()
                    .map(|m| (s.load_bandwidth_gb_s, m.latency_ns.median))
            })
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    }
}

/// Groups the cells into tiers, fastest first. Non-finite latencies are left out.
pub fn latency_tiers(cells: &[TierCell], rel_gap: f64) -> Vec<Tier> {
    let mut sorted: Vec<TierCell> = cells
        .iter()
        .copied()
        .filter(|c| c.latency_ns.is_finite())
        .collect();
    sorted.sort_by(|a, b| a.latency_ns.total_cmp(&b.latency_ns));
    let mut groups: Vec<Vec<TierCell>> = Vec::new();
    for c in sorted {
        match groups.last_mut() {
            Some(g) if c.latency_ns <= g.last().expect("non-empty").latency_ns * (1.0 + rel_gap) => g.push(c),
            _ => groups.push(vec![c]),
        }
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(index, mut g)| {
            let min_ns = g.first().expect("non-empty").latency_ns;
            let max_ns = g.last().expect("non-empty").latency_ns;
            let mean_ns = g.iter().map(|c| c.latency_ns).sum::<f64>() / g.len() as f64;
            g.sort_by_key(|c| (c.cpu_node, c.mem_node));
            Tier {
                index,
                min_ns,
                max_ns,
                mean_ns,
                cells: g,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cell(c: u32, m: u32, ns: f64) -> TierCell {
        TierCell {
            cpu_node: c,
            mem_node: m,
            latency_ns: ns,
        }
    }

    #[test]
    fn epyc_like_matrix_gives_its_four_tiers() {
        // 8 nodes: local 90, same socket 140 (other die), other socket 200/250.
        let mut cells = Vec::new();
        for c in 0..8u32 {
            for m in 0..8u32 {
                let ns = match (c == m, c / 4 == m / 4, (c % 4) == (m % 4)) {
                    (true, _, _) => 90.0,
                    (false, true, _) => 140.0,
                    (false, false, true) => 200.0,
                    (false, false, false) => 250.0,
                };
                cells.push(cell(c, m, ns * (1.0 + 0.01 * ((c * 8 + m) % 3) as f64)));
            }
        }
        let tiers = latency_tiers(&cells, DEFAULT_REL_GAP);
        let sizes: Vec<usize> = tiers.iter().map(|t| t.cells.len()).collect();
        assert_eq!(sizes, [8, 24, 8, 24]);
        assert!(tiers[0].cells.iter().all(|c| c.cpu_node == c.mem_node));
    }

    proptest! {
        /// Cells drawn from k well-separated levels (each 30-80 % above the last) with
        /// up to +-3 % noise come back as exactly those k tiers, fastest first, and
        /// the tiers always partition the input.
        #[test]
        fn separated_levels_are_recovered(
            steps in prop::collection::vec(1.3f64..1.8, 1..6),
            assign in prop::collection::vec((0usize..6, -0.03f64..0.03), 1..4096),
        ) {
            let mut levels = vec![60.0];
            for s in &steps {
                let next = levels.last().unwrap() * s;
                levels.push(next);
            }
            let cells: Vec<TierCell> = assign
                .iter()
                .enumerate()
                .map(|(i, &(l, noise))| cell((i / 64) as u32, (i % 64) as u32, levels[l % levels.len()] * (1.0 + noise)))
                .collect();
            let tiers = latency_tiers(&cells, DEFAULT_REL_GAP);
            let mut used: Vec<usize> = assign.iter().map(|&(l, _)| l % levels.len()).collect();
            used.sort_unstable();
            used.dedup();
            prop_assert_eq!(tiers.len(), used.len());
            prop_assert_eq!(tiers.iter().map(|t| t.cells.len()).sum::<usize>(), cells.len());
            for w in tiers.windows(2) {
                prop_assert!(w[0].max_ns < w[1].min_ns);
            }
            for (t, &l) in tiers.iter().zip(&used) {
                prop_assert!(t.min_ns >= levels[l] * 0.97 - 1e-9 && t.max_ns <= levels[l] * 1.03 + 1e-9);
            }
        }
    }
}
