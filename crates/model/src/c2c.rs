//! Core-to-core latency: one cache line handed back and forth between two pinned CPUs,
//! for every ordered pair of the selected CPUs.
//!
//! Values are one-way: the time of a round trip divided by 2, which is what
//! core-to-core-latency (nviennot, 1.2.0) prints, so its means and ours compare.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::common::{Noise, Outcome, Placement};
use crate::stats::Summary;
use crate::units::{parse_size, SizeError};

/// How the two threads hand the line to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum C2cMode {
    /// Each side takes the line with compare-exchange (the other's value -> its own), as
    /// core-to-core-latency's default benchmark does: every try is a read-for-ownership.
    Cas,
    /// Each side spins on plain loads until it sees the other's value, then stores its own.
    Pingpong,
}

impl C2cMode {
    pub const ALL: [C2cMode; 2] = [C2cMode::Cas, C2cMode::Pingpong];

    pub fn name(self) -> &'static str {
        match self {
            C2cMode::Cas => "cas",
            C2cMode::Pingpong => "pingpong",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            C2cMode::Cas => "compare-exchange handoff (core-to-core-latency's default benchmark)",
            C2cMode::Pingpong => {
                "read/write ping-pong: spin on loads until the other's value shows, then store"
            }
        }
    }
}

/// Where the two CPUs of a pair sit relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum C2cClass {
    /// Both share one last-level cache (SMT siblings included).
    #[serde(rename = "same-l3")]
    SameL3,
    /// Different L3 domains (CCX, sub-NUMA cluster, die) of one socket.
    #[serde(rename = "other-l3-same-socket")]
    OtherL3,
    /// Different packages.
    #[serde(rename = "other-socket")]
    OtherSocket,
    /// Same socket, but the topology shows no L3 domain for one of them.
    #[serde(rename = "same-socket-l3-unknown")]
    SameSocketL3Unknown,
}

impl C2cClass {
    pub const ALL: [C2cClass; 4] = [
        C2cClass::SameL3,
        C2cClass::OtherL3,
        C2cClass::OtherSocket,
        C2cClass::SameSocketL3Unknown,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            C2cClass::SameL3 => "same L3",
            C2cClass::OtherL3 => "other L3, same socket",
            C2cClass::OtherSocket => "other socket",
            C2cClass::SameSocketL3Unknown => "same socket, L3 unknown",
        }
    }
}

/// Every ordered pair of the selected CPUs, per mode and line offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cReport {
    /// What each value is and how it is taken, in words.
    pub method: String,
    /// Rows and columns of every matrix, in this order.
    pub cpus: Vec<u32>,
    pub modes: Vec<C2cMode>,
    /// Byte offsets of the line inside its page (multiples of 64 below 4096).
    pub offsets_bytes: Vec<u64>,
    /// Timed samples per pair, after `warmup_samples` discarded ones.
    pub samples: usize,
    pub warmup_samples: usize,
    pub round_trips_per_sample: u64,
    /// One page per node of the first CPUs; a pair's line is in the page of its first
    /// CPU's node, at the matrix's offset, so all pairs of a row bounce the same line.
    pub line_pages: Vec<C2cLinePage>,
    /// Ordered by mode, then offset.
    pub matrices: Vec<C2cMatrix>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cLinePage {
    pub node: u32,
    /// The pinned CPU that mapped and first touched it.
    pub cpu: u32,
    pub outcome: Outcome<Placement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cMatrix {
    pub mode: C2cMode,
    pub offset_bytes: u64,
    /// Every ordered pair of distinct CPUs, rows (first CPU) in the order of `cpus`.
    pub pairs: Vec<C2cPair>,
    /// `[i][j]`: the median one-way ns of first CPU `cpus[i]` with second CPU `cpus[j]`;
    /// null on the diagonal and for a pair without a result.
    pub median_one_way_ns: Vec<Vec<Option<f64>>>,
    /// Per class present: a summary of the pair medians of that class.
    pub classes: Vec<C2cClassSummary>,
    /// Mean of every sample of every pair with a result: what core-to-core-latency
    /// prints as "Mean latency" (it averages every sample of the pairs it measures).
    pub mean_one_way_ns: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cPair {
    /// Times the round trips; the line lives on this CPU's node.
    pub first_cpu: u32,
    /// Answers.
    pub second_cpu: u32,
    pub class: C2cClass,
    pub line_node: u32,
    pub outcome: Outcome<C2cMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cMeasurement {
    /// One-way latency: a sample's time / round trips / 2.
    pub one_way_ns: Summary,
    /// One value per timed sample, in the order taken.
    pub samples_one_way_ns: Vec<f64>,
    /// Affinity masks of the two threads, read back after pinning.
    pub first_affinity: Vec<u32>,
    pub second_affinity: Vec<u32>,
    /// Set when the samples spread more than the noise threshold allows.
    pub noise: Option<Noise>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cClassSummary {
    pub class: C2cClass,
    /// Over the medians of this class's pairs: count, min, median, mean, max, ...
    pub pair_medians_ns: Summary,
}

impl C2cMatrix {
    /// Builds the dense matrix, the class summaries and the overall mean from the pairs.
    pub fn assemble(mode: C2cMode, offset_bytes: u64, cpus: &[u32], pairs: Vec<C2cPair>) -> C2cMatrix {
        let index = |cpu: u32| cpus.iter().position(|&c| c == cpu);
        let mut dense = vec![vec![None; cpus.len()]; cpus.len()];
        for p in &pairs {
            if let (Some(i), Some(j), Outcome::Ok(m)) = (index(p.first_cpu), index(p.second_cpu), &p.outcome)
            {
                if i != j {
                    dense[i][j] = Some(m.one_way_ns.median);
                }
            }
        }
        C2cMatrix {
            mode,
            offset_bytes,
            classes: class_summaries(&pairs),
            mean_one_way_ns: mean_of_samples(&pairs),
            median_one_way_ns: dense,
            pairs,
        }
    }
}

/// One summary per class that has a pair with a result, in the order of `C2cClass::ALL`.
pub fn class_summaries(pairs: &[C2cPair]) -> Vec<C2cClassSummary> {
    C2cClass::ALL
        .iter()
        .filter_map(|&class| {
            let medians: Vec<f64> = pairs
                .iter()
                .filter(|p| p.class == class)
                .filter_map(|p| p.outcome.ok().map(|m| m.one_way_ns.median))
                .collect();
            Summary::of(&medians).map(|pair_medians_ns| C2cClassSummary {
                class,
                pair_medians_ns,
            })
        })
        .collect()
}

/// The mean of every sample of every pair with a result.
pub fn mean_of_samples(pairs: &[C2cPair]) -> Option<f64> {
    let (sum, n) = pairs
        .iter()
        .filter_map(|p| p.outcome.ok())
        .flat_map(|m| m.samples_one_way_ns.iter())
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum OffsetListError {
    #[error("empty offset list: give byte offsets such as 0,64,2048")]
    Empty,
    #[error("empty entry in offset list '{0}'")]
    EmptyEntry(String),
    #[error(transparent)]
    Size(#[from] SizeError),
}

/// Parses `0,64,2K`: byte offsets (binary suffixes allowed), in the order given,
/// without repeats. Whether each is a usable offset is the plan's business.
pub fn parse_offsets(text: &str) -> Result<Vec<u64>, OffsetListError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(OffsetListError::Empty);
    }
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(OffsetListError::EmptyEntry(text.to_string()));
        }
        let v = parse_size(entry)?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pair(first: u32, second: u32, class: C2cClass, samples: &[f64]) -> C2cPair {
        C2cPair {
            first_cpu: first,
            second_cpu: second,
            class,
            line_node: 0,
            outcome: match Summary::of(samples) {
                Some(one_way_ns) => Outcome::Ok(C2cMeasurement {
                    one_way_ns,
                    samples_one_way_ns: samples.to_vec(),
                    first_affinity: vec![first],
                    second_affinity: vec![second],
                    noise: None,
                }),
                None => Outcome::Skipped {
                    reason: "interrupted".into(),
                },
            },
        }
    }

    #[test]
    fn assembles_matrix_classes_and_mean() {
        let pairs = vec![
            pair(0, 1, C2cClass::SameL3, &[10.0, 20.0]),
            pair(0, 2, C2cClass::OtherSocket, &[100.0, 100.0]),
            pair(1, 0, C2cClass::SameL3, &[30.0, 30.0]),
            pair(1, 2, C2cClass::OtherSocket, &[]),
            pair(2, 0, C2cClass::OtherSocket, &[120.0, 140.0]),
            pair(2, 1, C2cClass::OtherSocket, &[110.0, 110.0]),
        ];
        let m = C2cMatrix::assemble(C2cMode::Cas, 64, &[0, 1, 2], pairs);
        assert_eq!(
            m.median_one_way_ns,
            vec![
                vec![None, Some(15.0), Some(100.0)],
                vec![Some(30.0), None, None],
                vec![Some(130.0), Some(110.0), None],
            ]
        );
        assert_eq!(m.classes.len(), 2);
        let same = &m.classes[0].pair_medians_ns;
        assert_eq!(
            (m.classes[0].class, same.count, same.mean),
            (C2cClass::SameL3, 2, 22.5)
        );
        let other = &m.classes[1].pair_medians_ns;
        assert_eq!(
            (other.count, other.min, other.median, other.max),
            (3, 100.0, 110.0, 130.0)
        );
        // Every sample counts once: (10+20+100+100+30+30+120+140+110+110) / 10.
        assert_eq!(m.mean_one_way_ns, Some(77.0));
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["classes"][1]["class"], "other-socket");
        assert_eq!(json["pairs"][3]["outcome"]["status"], "skipped");
    }

    #[test]
    fn offsets_parse_in_order_without_repeats() {
        assert_eq!(parse_offsets("0,64, 2K,64"), Ok(vec![0, 64, 2048]));
        assert_eq!(parse_offsets(""), Err(OffsetListError::Empty));
        assert!(matches!(
            parse_offsets("0,,64"),
            Err(OffsetListError::EmptyEntry(_))
        ));
        assert!(matches!(parse_offsets("0-64"), Err(OffsetListError::Size(_))));
    }

    proptest! {
        #[test]
        fn offsets_round_trip(v in prop::collection::vec(0u64..1 << 20, 1..20)) {
            let text: Vec<String> = v.iter().map(u64::to_string).collect();
            let got = parse_offsets(&text.join(",")).unwrap();
            let mut want = Vec::new();
            for x in v {
                if !want.contains(&x) {
                    want.push(x);
                }
            }
            prop_assert_eq!(got, want);
        }

        #[test]
        fn class_summaries_cover_every_measured_pair(
            medians in prop::collection::vec((0usize..4, 1.0f64..1e4, 0.0f64..50.0), 1..60)
        ) {
            let pairs: Vec<C2cPair> = medians
                .iter()
                .enumerate()
                .map(|(k, &(c, x, d))| pair(k as u32, k as u32 + 1, C2cClass::ALL[c], &[x - d.min(x / 2.0), x, x + d]))
                .collect();
            let classes = class_summaries(&pairs);
            let total: usize = classes.iter().map(|c| c.pair_medians_ns.count).sum();
            prop_assert_eq!(total, pairs.len());
            for c in &classes {
                let s = &c.pair_medians_ns;
                prop_assert!(s.min <= s.median && s.median <= s.max);
                prop_assert!(s.min <= s.mean * (1.0 + 1e-12) && s.mean <= s.max * (1.0 + 1e-12));
            }
            let mean = mean_of_samples(&pairs).unwrap();
            let lo = pairs.iter().map(|p| p.outcome.ok().unwrap().one_way_ns.min).fold(f64::MAX, f64::min);
            let hi = pairs.iter().map(|p| p.outcome.ok().unwrap().one_way_ns.max).fold(0.0, f64::max);
            prop_assert!(lo <= mean * (1.0 + 1e-12) && mean <= hi * (1.0 + 1e-12));
        }
    }
}
