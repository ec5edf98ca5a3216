//! The cache-hierarchy sweep: latency and bandwidth against working-set size, the
//! levels found in each curve, and how they compare with the caches the topology reports.

use serde::{Deserialize, Serialize};

use crate::{BandwidthMeasurement, HugePages, LatencyMeasurement, MixInfo, Outcome, Pattern};

/// One sweep: a grid of sizes from `min_bytes` to `max_bytes`, `points_per_octave`
/// sizes per doubling, each measured by latency, bandwidth or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// The CPU that chases (latency) and runs the first bandwidth thread.
    pub cpu: u32,
    pub cpu_node: u32,
    pub mem_node: u32,
    pub huge_pages: HugePages,
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Where `max_bytes` comes from: `--max`, or the default and why.
    pub max_from: String,
    pub points_per_octave: u32,
    pub samples: usize,
    /// Time each sample is calibrated to last.
    pub sample_ms: f64,
    /// Null when the sweep measures bandwidth only.
    pub latency: Option<SweepLatencySetup>,
    /// Null when the sweep measures latency only.
    pub bandwidth: Option<SweepBandwidthSetup>,
    /// One per size of the grid, in increasing size.
    pub points: Vec<SweepPoint>,
    /// Levels found in the latency curve (null without latency).
    pub latency_levels: Option<SweepLevels>,
    /// Levels found in the bandwidth curve (null without bandwidth).
    pub bandwidth_levels: Option<SweepLevels>,
}

/// How every latency point chases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLatencySetup {
    pub pattern: Pattern,
    pub stride_bytes: u64,
    /// page-random only: the window inside which the order is random.
    pub window_bytes: Option<u64>,
    pub seed: u64,
}

/// How every bandwidth point runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepBandwidthSetup {
    pub mix: MixInfo,
    pub kernel: String,
    /// One thread per CPU, each with its own arrays of the point's size.
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The size of the grid: min_bytes x 2^(k / points_per_octave), rounded to 64 bytes.
    pub size_bytes: u64,
    pub latency: Option<SweepLatencyPoint>,
    pub bandwidth: Option<SweepBandwidthPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLatencyPoint {
    /// Bytes the chase covers: size_bytes rounded to whole strides.
    pub chase_bytes: u64,
    pub outcome: Outcome<LatencyMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepBandwidthPoint {
    /// Bytes of each array of each thread: whole 512-byte kernel blocks.
    pub array_bytes_per_thread: u64,
    /// Bytes one thread's kernel walks: arrays x array_bytes_per_thread.
    pub working_set_bytes_per_thread: u64,
    /// Passes over the arrays per sample, chosen so a sample lasts about sample_ms.
    pub passes_per_sample: u64,
    pub outcome: Outcome<BandwidthMeasurement>,
}

/// The levels one curve shows: flat stretches separated by steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLevels {
    /// Threads whose working sets share the caches (1 for latency).
    pub threads: usize,
    /// In increasing size; one more than `boundaries`.
    pub plateaus: Vec<Plateau>,
    /// Where the curve steps from one level to the next, in increasing size.
    pub boundaries: Vec<Boundary>,
    /// One per cache level the topology reports (data and unified caches).
    pub comparison: Vec<LevelComparison>,
}

/// A flat stretch of the curve: the points between two steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub points: usize,
    /// What serves this stretch: a cache level (e.g. "L2 Unified"), "memory",
    /// "memory-side cache?" or "?" when no reported level matches.
    pub level: String,
    /// Median of the stretch's medians (latency curves only).
    pub latency_ns: Option<f64>,
    /// Median of the stretch's medians (bandwidth curves only).
    pub bandwidth_gb_s: Option<f64>,
}

/// A step: the curve has risen (latency) or fallen (bandwidth) halfway, geometrically,
/// from one plateau to the next between `size_bytes` and `next_size_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Boundary {
    /// The last size still on the lower side of the halfway mark: the estimate of the
    /// capacity that ends here.
    pub size_bytes: u64,
    /// The first size past the halfway mark.
    pub next_size_bytes: u64,
    /// How much slower the next level is: latency after / before, or bandwidth before /
    /// after (always > 1).
    pub step_ratio: f64,
    /// The reported cache level this boundary matches, if any.
    pub level: Option<String>,
}

/// One cache level the topology reports, and the boundary found for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelComparison {
    /// As the kernel names it: "L1 Data", "L2 Unified", "L3 Unified".
    pub level: String,
    /// Size of the instance the measuring CPU uses.
    pub instance_bytes: u64,
    /// Threads of this measurement sharing that instance.
    pub sharing_threads: usize,
    /// What one thread's working set can fill: instance_bytes / sharing_threads.
    pub expected_bytes: u64,
    pub detected_bytes: Option<u64>,
    /// detected_bytes / expected_bytes.
    pub ratio: Option<f64>,
    /// The ratio is within a factor of 2 either way.
    pub agrees: bool,
}

/// The latency curve, as levels are found in it and drawn: (bytes the chase covers,
/// median ns) of every point with a result. Text, HTML and detection all use this.
pub fn latency_curve(points: &[SweepPoint]) -> Vec<(u64, f64)> {
    let point = |p: &SweepPoint| {
        let l = p.latency.as_ref()?;
        Some((l.chase_bytes, l.outcome.ok()?.latency_ns.median))
    };
    points.iter().filter_map(point).collect()
}

/// The bandwidth curve, as levels are found in it and drawn: (bytes one thread's
/// kernel walks, median GB/s) of every point with a result.
pub fn bandwidth_curve(points: &[SweepPoint]) -> Vec<(u64, f64)> {
    let point = |p: &SweepPoint| {
        let b = p.bandwidth.as_ref()?;
        Some((
            b.working_set_bytes_per_thread,
            b.outcome.ok()?.bandwidth_gb_s.median,
        ))
    };
    points.iter().filter_map(point).collect()
}

impl crate::figures::Figures for SweepReport {
    /// Each point's median latency and bandwidth, and each boundary matched to a
    /// reported cache level (as `boundary_bytes`), so two sweeps compare level by level.
    fn figures(&self) -> Vec<crate::figures::Figure> {
        let figure = |dims: Vec<(&str, String)>, metric: &str, value: f64, s: Option<&crate::Summary>| {
            crate::figures::Figure {
                measurement: "sweep".into(),
                dims: dims.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                metric: metric.into(),
                value,
                min: s.map(|s| s.min),
                max: s.map(|s| s.max),
                cv: s.map(|s| s.cv),
                samples: s.map_or(1, |s| s.count),
            }
        };
        let threads = self.bandwidth.as_ref().map_or(0, |b| b.cpus.len()).to_string();
        let mut out = Vec::new();
        for p in &self.points {
            let size = ("size_bytes", p.size_bytes.to_string());
            if let Some(Outcome::Ok(m)) = p.latency.as_ref().map(|l| &l.outcome) {
                let s = &m.latency_ns;
                out.push(figure(vec![size.clone()], "latency_ns", s.median, Some(s)));
            }
            if let (Some(Outcome::Ok(m)), Some(b)) =
                (p.bandwidth.as_ref().map(|b| &b.outcome), &self.bandwidth)
            {
                let dims = vec![size, ("mix", b.mix.mix.to_string()), ("threads", threads.clone())];
                let s = &m.bandwidth_gb_s;
                out.push(figure(dims, "bandwidth_gb_s", s.median, Some(s)));
            }
        }
        for (curve, levels) in [
            ("latency", &self.latency_levels),
            ("bandwidth", &self.bandwidth_levels),
        ] {
            for b in levels.iter().flat_map(|l| &l.boundaries) {
                if let Some(level) = &b.level {
                    let dims = vec![("curve", curve.to_string()), ("level", level.clone())];
                    out.push(figure(dims, "boundary_bytes", b.size_bytes as f64, None));
                }
            }
        }
        out
    }
}
