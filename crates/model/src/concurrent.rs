//! `bandwidth --concurrent`: several node-to-node streams run at the same time, as a
//! busy multi-socket machine runs them, each with its own rate and all of them summed.

use serde::{Deserialize, Serialize};

use crate::{HugePages, MixInfo, Outcome, Placement, Summary};

/// Which streams run together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConcurrentPattern {
    /// Two nodes read each other's memory at once (0 -> 1 and 1 -> 0).
    Pairs,
    /// Every CPU node reads a node other than its own: the next node with memory.
    AllRemote,
    /// Every CPU node reads its own memory, all at once.
    AllLocal,
}

impl ConcurrentPattern {
    pub fn name(self) -> &'static str {
        match self {
            ConcurrentPattern::Pairs => "pairs",
            ConcurrentPattern::AllRemote => "all-remote",
            ConcurrentPattern::AllLocal => "all-local",
        }
    }

    /// The question the pattern answers, for the report's first line.
    pub fn question(self) -> &'static str {
        match self {
            ConcurrentPattern::Pairs => "what two nodes get from each other's memory when both are busy",
            ConcurrentPattern::AllRemote => {
                "what every node gets from remote memory while every other node does the same"
            }
            ConcurrentPattern::AllLocal => "what every node gets from its own memory while all of them run",
        }
    }
}

/// One stream: the CPUs of `cpu_node` running the mix over memory on `mem_node`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentStreamSpec {
    pub cpu_node: u32,
    pub mem_node: u32,
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentReport {
    pub pattern: ConcurrentPattern,
    pub mix: MixInfo,
    pub kernel: String,
    pub huge_pages: HugePages,
    pub array_bytes_per_thread: u64,
    pub streams: Vec<ConcurrentStreamSpec>,
    /// The streams run as one team: every sample starts on every thread together, so
    /// a failure anywhere fails the whole measurement.
    pub outcome: Outcome<ConcurrentMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentMeasurement {
    /// All streams' bytes over each sample's whole span (first start to last end).
    pub total_gb_s: Summary,
    pub total_samples_gb_s: Vec<f64>,
    /// The streams' own rates added up, per sample; at least the total, since each
    /// stream's span is inside the whole one.
    pub sum_of_streams_gb_s: Summary,
    /// In the order of the report's `streams`.
    pub streams: Vec<StreamRate>,
    /// The least, over the samples, of the time every stream was running as a share
    /// of the sample's span: 100 means all ran from the first start to the last end.
    pub min_overlap_pct: f64,
    /// Bytes crossing between sockets in each direction (two or more sockets).
    pub links: Vec<LinkFlow>,
    pub validated_elements: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRate {
    pub cpu_node: u32,
    pub mem_node: u32,
    pub bandwidth_gb_s: Summary,
    pub samples_gb_s: Vec<f64>,
    pub bytes_per_sample: u64,
    /// Each timed sample's (start, end) on this stream, ns from the first timed
    /// sample's earliest start on any stream.
    pub windows_ns: Vec<[u64; 2]>,
    pub placement: Vec<Placement>,
}

/// Data moving from the memory or CPUs of one socket to the other: reads flow from
/// the memory's socket to the CPU's, writes the other way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkFlow {
    pub from_socket: u32,
    pub to_socket: u32,
    /// The median rates of the streams crossing this way, weighted by the share of
    /// their bytes that go this way.
    pub gb_s: f64,
    /// This direction's part of all bytes crossing between sockets.
    pub share_pct: f64,
}

impl ConcurrentMeasurement {
    /// Least overlap for the streams to count as having run at once: in every sample
    /// at least half of the whole span was common to all of them.
    pub const TOGETHER_PCT: f64 = 50.0;

    pub fn ran_together(&self) -> bool {
        self.min_overlap_pct >= Self::TOGETHER_PCT
    }
}

impl ConcurrentReport {
    /// "pairs: node 0 -> 1, node 1 -> 0".
    pub fn label(&self) -> String {
        let streams: Vec<String> = self
            .streams
            .iter()
            .map(|s| format!("node {} -> {}", s.cpu_node, s.mem_node))
            .collect();
        format!("{}: {}", self.pattern.name(), streams.join(", "))
    }
}

impl crate::Failures for ConcurrentReport {
    fn failures(&self) -> Vec<crate::Failure> {
        crate::failures::failed(|| format!("concurrent {}", self.label()), &self.outcome)
            .into_iter()
            .collect()
    }
}

impl crate::Figures for ConcurrentReport {
    fn figures(&self) -> Vec<crate::Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let (pattern, mix) = (self.pattern.name().to_string(), self.mix.mix.to_string());
        let mut out = vec![crate::Figure::of(
            "bandwidth-concurrent",
            &[
                ("pattern", pattern.clone()),
                ("mix", mix.clone()),
                ("stream", "total".into()),
            ],
            "bandwidth_gb_s",
            &m.total_gb_s,
        )];
        for s in &m.streams {
            let stream = format!("{}->{}", s.cpu_node, s.mem_node);
            let dims = [
                ("pattern", pattern.clone()),
                ("mix", mix.clone()),
                ("stream", stream),
            ];
            out.push(crate::Figure::of(
                "bandwidth-concurrent",
                &dims,
                "bandwidth_gb_s",
                &s.bandwidth_gb_s,
            ));
        }
        for l in &m.links {
            let link = format!("socket {}->{}", l.from_socket, l.to_socket);
            let dims = [("pattern", pattern.clone()), ("mix", mix.clone()), ("link", link)];
            out.push(crate::Figure::single(
                "bandwidth-concurrent",
                &dims,
                "link_gb_s",
                l.gb_s,
            ));
        }
        out
    }
}

/// Per-sample overlap of several streams' windows: the span all of them share over
/// the span from the first start to the last end, in percent.
pub fn overlap_pct(windows: &[[u64; 2]]) -> f64 {
    let (Some(first), Some(last)) = (
        windows.iter().map(|w| w[0]).min(),
        windows.iter().map(|w| w[1]).max(),
    ) else {
        return 0.0;
    };
    let common_start = windows.iter().map(|w| w[0]).max().unwrap_or(first);
    let common_end = windows.iter().map(|w| w[1]).min().unwrap_or(last);
    let span = last.saturating_sub(first).max(1);
    100.0 * common_end.saturating_sub(common_start) as f64 / span as f64
}

/// What crosses between sockets each way, from each stream's (cpu socket, memory
/// socket, median GB/s) and the share of the mix's bytes that are reads.
pub fn link_flows(streams: &[(u32, u32, f64)], read_fraction: f64) -> Vec<LinkFlow> {
    let mut flows: Vec<LinkFlow> = Vec::new();
    let mut add = |from: u32, to: u32, gb_s: f64| {
        if from == to || gb_s <= 0.0 {
            return;
        }
        match flows
            .iter_mut()
            .find(|f| f.from_socket == from && f.to_socket == to)
        {
            Some(f) => f.gb_s += gb_s,
            None => flows.push(LinkFlow {
                from_socket: from,
                to_socket: to,
                gb_s,
                share_pct: 0.0,
            }),
        }
    };
    for &(cpu_socket, mem_socket, gb_s) in streams {
        add(mem_socket, cpu_socket, gb_s * read_fraction);
        add(cpu_socket, mem_socket, gb_s * (1.0 - read_fraction));
    }
    let total: f64 = flows.iter().map(|f| f.gb_s).sum();
    for f in &mut flows {
        f.share_pct = 100.0 * f.gb_s / total.max(f64::MIN_POSITIVE);
    }
    flows.sort_by_key(|f| (f.from_socket, f.to_socket));
    flows
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn overlap_of_windows() {
        assert_eq!(overlap_pct(&[[0, 100], [0, 100]]), 100.0);
        assert_eq!(overlap_pct(&[[0, 100], [50, 150]]), 100.0 * 50.0 / 150.0);
        assert_eq!(overlap_pct(&[[0, 10], [20, 30]]), 0.0);
    }

    #[test]
    fn reads_flow_from_the_memory_socket_and_writes_back() {
        // Socket 0's CPUs read socket 1's memory at 10 GB/s with a copy (half reads),
        // socket 1's read socket 0's at 6 GB/s.
        let f = link_flows(&[(0, 1, 10.0), (1, 0, 6.0)], 0.5);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].from_socket, f[0].to_socket), (0, 1));
        assert!((f[0].gb_s - 8.0).abs() < 1e-9);
        assert!((f[1].gb_s - 8.0).abs() < 1e-9);
        assert!((f[0].share_pct - 50.0).abs() < 1e-9);
        // Local streams cross nothing.
        assert!(link_flows(&[(0, 0, 10.0)], 1.0).is_empty());
    }

    proptest! {
        #[test]
        fn overlap_is_a_percentage_and_full_for_equal_windows(
            ws in prop::collection::vec((0u64..1000, 1u64..1000), 1..6)
        ) {
            let windows: Vec<[u64; 2]> = ws.iter().map(|&(s, d)| [s, s + d]).collect();
            let o = overlap_pct(&windows);
            prop_assert!((0.0..=100.0).contains(&o));
            let same = vec![windows[0]; windows.len()];
            prop_assert_eq!(overlap_pct(&same), 100.0);
        }

        #[test]
        fn flows_share_all_crossing_bytes(
            streams in prop::collection::vec((0u32..3, 0u32..3, 0.1f64..100.0), 1..6),
            read in 0.0f64..=1.0,
        ) {
            let f = link_flows(&streams, read);
            let crossing: f64 = streams.iter().filter(|s| s.0 != s.1).map(|s| s.2).sum();
            let total: f64 = f.iter().map(|x| x.gb_s).sum();
            prop_assert!((total - crossing).abs() < 1e-6 * crossing.max(1.0));
            if !f.is_empty() {
                let shares: f64 = f.iter().map(|x| x.share_pct).sum();
                prop_assert!((shares - 100.0).abs() < 1e-6);
            }
        }
    }
}
