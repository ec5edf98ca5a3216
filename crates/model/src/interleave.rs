//! Memory spread over several nodes (`--interleave`), and the check that its pages
//! landed in the shares asked for.

use serde::{Deserialize, Serialize};

/// Nodes to spread a buffer over, and how many units each takes per round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interleave {
    /// Distinct, in the order given.
    pub nodes: Vec<u32>,
    /// Units per node per round, aligned with `nodes`; all 1 is plain interleave.
    pub weights: Vec<u32>,
}

impl Interleave {
    /// Plain interleave: one page per node in turn.
    pub fn even(nodes: Vec<u32>) -> Interleave {
        let weights = vec![1; nodes.len()];
        Interleave { nodes, weights }
    }

    /// True when every node takes the same share (the kernel's MPOL_INTERLEAVE).
    pub fn is_even(&self) -> bool {
        self.weights.windows(2).all(|w| w[0] == w[1])
    }

    /// The share of the buffer each node should hold, in percent.
    pub fn expected_pct(&self) -> Vec<f64> {
        let total: u64 = self.weights.iter().map(|&w| u64::from(w)).sum();
        self.weights
            .iter()
            .map(|&w| 100.0 * f64::from(w) / total.max(1) as f64)
            .collect()
    }

    /// "0,1" or "0:3,1:1" (weights only when uneven).
    pub fn label(&self) -> String {
        let parts: Vec<String> = if self.is_even() {
            self.nodes.iter().map(u32::to_string).collect()
        } else {
            self.nodes
                .iter()
                .zip(&self.weights)
                .map(|(n, w)| format!("{n}:{w}"))
                .collect()
        };
        parts.join(",")
    }
}

/// Where an interleaved buffer's pages were found, against where they were asked to go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterleaveShares {
    pub nodes: Vec<u32>,
    pub weights: Vec<u32>,
    /// How pages were spread: `mbind(MPOL_INTERLEAVE)`, or weighted blocks bound in turn.
    pub method: String,
    /// The unit pages are spread in: a page (a 2 MiB huge page under THP), or the
    /// block of the weighted rotation.
    pub unit_bytes: u64,
    /// Pages found on each of `nodes`, in order.
    pub pages_per_node: Vec<u64>,
    pub expected_pct: Vec<f64>,
    pub share_pct: Vec<f64>,
    /// Largest |share - expected| over the nodes, in percentage points.
    pub max_deviation_pct: f64,
    /// The most that deviation may be: 1 point, plus the share of one round of units
    /// per run of pages counted (a round can be cut short at the end of a run).
    pub tolerance_pct: f64,
}

impl InterleaveShares {
    /// Shares from the pages counted on each node. `counted` is every page asked about
    /// (pages elsewhere or not resident included), in `windows` runs of neighbouring
    /// pages (1 when every page was asked about), each of which can end mid-round.
    pub fn of(
        spec: &Interleave,
        method: &str,
        unit_bytes: u64,
        per_node: Vec<u64>,
        counted: u64,
        page_bytes: u64,
        windows: u64,
    ) -> Self {
        let expected_pct = spec.expected_pct();
        let share_pct: Vec<f64> = per_node
            .iter()
            .map(|&p| 100.0 * p as f64 / counted.max(1) as f64)
            .collect();
        let max_deviation_pct = share_pct
            .iter()
            .zip(&expected_pct)
            .map(|(s, e)| (s - e).abs())
            .fold(0.0, f64::max);
        let round: u64 = spec.weights.iter().map(|&w| u64::from(w)).sum::<u64>() * unit_bytes;
        let counted_bytes = counted * page_bytes;
        let tolerance_pct = 1.0 + 100.0 * (windows * round) as f64 / counted_bytes.max(1) as f64;
        InterleaveShares {
            nodes: spec.nodes.clone(),
            weights: spec.weights.clone(),
            method: method.into(),
            unit_bytes,
            pages_per_node: per_node,
            expected_pct,
            share_pct,
            max_deviation_pct,
            tolerance_pct,
        }
    }

    pub fn within_tolerance(&self) -> bool {
        self.max_deviation_pct <= self.tolerance_pct
    }

    /// One line naming the node furthest from its share.
    pub fn describe_miss(&self) -> String {
        let worst = (0..self.nodes.len())
            .max_by(|&a, &b| {
                let d = |i: usize| (self.share_pct[i] - self.expected_pct[i]).abs();
                d(a).total_cmp(&d(b))
            })
            .unwrap_or(0);
        format!(
            "interleave check failed: node {} holds {:.1}% of the pages, {:.1}% expected (tolerance ±{:.1} points); \
             a node short of free memory makes the kernel place its pages elsewhere",
            self.nodes.get(worst).copied().unwrap_or(0),
            self.share_pct.get(worst).copied().unwrap_or(0.0),
            self.expected_pct.get(worst).copied().unwrap_or(0.0),
            self.tolerance_pct
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn labels_and_expected_shares() {
        let even = Interleave::even(vec![0, 1, 2]);
        assert_eq!(even.label(), "0,1,2");
        assert!(even.is_even());
        let w = Interleave {
            nodes: vec![0, 2],
            weights: vec![3, 1],
        };
        assert_eq!(w.label(), "0:3,2:1");
        assert_eq!(w.expected_pct(), vec![75.0, 25.0]);
    }

    #[test]
    fn a_node_that_spilled_fails_the_check_and_is_named() {
        let spec = Interleave::even(vec![0, 1, 2]);
        let s = InterleaveShares::of(
            &spec,
            "mbind(MPOL_INTERLEAVE)",
            4096,
            vec![100, 100, 56],
            256,
            4096,
            1,
        );
        assert!(!s.within_tolerance());
        let msg = s.describe_miss();
        assert!(msg.contains("node 2 holds 21.9%"), "{msg}");
        assert!(msg.contains("33.3% expected"), "{msg}");
    }

    proptest! {
        /// A placement exactly as the rotation lays it out, cut anywhere, is within
        /// tolerance: the tolerance covers the last, partial round.
        #[test]
        fn an_exact_rotation_cut_anywhere_passes(
            weights in prop::collection::vec(1u32..5, 1..5),
            pages in 1u64..5000,
        ) {
            let nodes: Vec<u32> = (0..weights.len() as u32).collect();
            let spec = Interleave { nodes, weights: weights.clone() };
            let round: u64 = weights.iter().map(|&w| u64::from(w)).sum();
            let mut per_node = vec![0u64; weights.len()];
            for p in 0..pages {
                let mut k = p % round;
                for (i, &w) in weights.iter().enumerate() {
                    if k < u64::from(w) { per_node[i] += 1; break; }
                    k -= u64::from(w);
                }
            }
            let s = InterleaveShares::of(&spec, "m", 4096, per_node, pages, 4096, 1);
            prop_assert!(s.within_tolerance(), "{s:?}");
            let sum: f64 = s.share_pct.iter().sum();
            prop_assert!((sum - 100.0).abs() < 1e-6);
        }
    }
}
