//! Every result flattened into figures: one measured number per row, with the
//! dimensions that say what it is (mix, node pair, thread count...). Comparison of two
//! runs and tidy CSV export both work on figures, so they need no knowledge of each
//! measurement's shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    BandwidthMeasurement, BandwidthReport, C2cReport, DomainScalingReport, LatencyMeasurement, LatencyReport,
    LoadedLatencyReport, Outcome, StreamReport, Summary,
};

/// One measured number and what it measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The measurement it belongs to, e.g. "latency", "bandwidth".
    pub measurement: String,
    /// What identifies it within the measurement, e.g. {cpu_node: 0, mem_node: 1}.
    pub dims: BTreeMap<String, String>,
    /// Name with unit, e.g. "latency_ns", "bandwidth_gb_s".
    pub metric: String,
    /// The headline value: the median of the samples unless the metric says otherwise.
    pub value: f64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Coefficient of variation of the samples (0.02 = 2 %).
    pub cv: Option<f64>,
    pub samples: usize,
}

impl Figure {
    /// One value that is not a summary of samples.
    pub(crate) fn single(measurement: &str, dims: &[(&str, String)], metric: &str, value: f64) -> Figure {
        Figure {
            measurement: measurement.into(),
            dims: dims.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            metric: metric.into(),
            value,
            min: None,
            max: None,
            cv: None,
            samples: 1,
        }
    }

    pub(crate) fn of(measurement: &str, dims: &[(&str, String)], metric: &str, s: &Summary) -> Figure {
        Figure {
            measurement: measurement.into(),
            dims: dims.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            metric: metric.into(),
            value: s.median,
            min: Some(s.min),
            max: Some(s.max),
            cv: Some(s.cv),
            samples: s.count,
        }
    }

    /// The dimensions as one canonical string, "k=v;k=v" in key order: a join key.
    pub fn dims_key(&self) -> String {
        let parts: Vec<String> = self.dims.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.join(";")
    }

    /// The unit, read from the metric's suffix.
    pub fn unit(&self) -> &'static str {
        const UNITS: [(&str, &str); 5] = [
            ("_ns", "ns"),
            ("_gb_s", "GB/s"),
            ("_bytes", "bytes"),
            ("_s", "s"),
            ("_pct", "%"),
        ];
        UNITS
            .iter()
            .find(|(suffix, _)| self.metric.ends_with(suffix))
            .map_or("", |(_, u)| u)
    }
}

/// A result that can be flattened into figures. Cells that failed or were skipped
/// give no figure: there is nothing measured to compare.
pub trait Figures {
    fn figures(&self) -> Vec<Figure>;
}

fn latency(
    out: &mut Vec<Figure>,
    measurement: &str,
    dims: &[(&str, String)],
    o: &Outcome<LatencyMeasurement>,
) {
    if let Outcome::Ok(m) = o {
        out.push(Figure::of(measurement, dims, "latency_ns", &m.latency_ns));
    }
}

fn bandwidth(
    out: &mut Vec<Figure>,
    measurement: &str,
    dims: &[(&str, String)],
    o: &Outcome<BandwidthMeasurement>,
) {
    if let Outcome::Ok(m) = o {
        out.push(Figure::of(measurement, dims, "bandwidth_gb_s", &m.bandwidth_gb_s));
        // Counted DRAM traffic over programmed bytes, one value over all samples.
        if let Some(ratio) = m.dram.as_ref().and_then(|d| d.ratio) {
            out.push(Figure::single(measurement, dims, "dram_traffic_ratio", ratio));
        }
    }
}

fn list(ids: &[usize]) -> String {
    let parts: Vec<String> = ids.iter().map(usize::to_string).collect();
    parts.join("+")
}

impl Figures for LatencyReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for c in &self.cells {
            let dims = [
                ("cpu_node", c.cpu_node.to_string()),
                ("mem_node", c.mem_node.to_string()),
            ];
            latency(&mut out, "latency", &dims, &c.outcome);
        }
        out
    }
}

impl Figures for BandwidthReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for c in &self.cells {
            let dims = [
                ("mix", c.mix.to_string()),
                ("threads", c.cpus.len().to_string()),
                ("cpu_node", c.cpu_node.to_string()),
                ("mem_node", c.mem_node.to_string()),
            ];
            bandwidth(&mut out, "bandwidth", &dims, &c.outcome);
        }
        out
    }
}

impl Figures for DomainScalingReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        let mix = self.mix.mix.to_string();
        for (part, steps) in [("alone", &self.alone), ("cumulative", &self.cumulative)] {
            for d in steps {
                let dims = [
                    ("mix", mix.clone()),
                    ("part", part.into()),
                    ("domains", list(&d.domains)),
                ];
                bandwidth(&mut out, "bandwidth-per-domain", &dims, &d.outcome);
            }
        }
        out
    }
}

impl Figures for StreamReport {
    fn figures(&self) -> Vec<Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let nt = if self.non_temporal { "streaming" } else { "regular" };
        let mut out = Vec::new();
        for f in &m.functions {
            let dims = [("function", f.name.clone()), ("stores", nt.into())];
            out.push(Figure::of("stream", &dims, "bandwidth_gb_s", &f.bandwidth_gb_s));
            let mut best = Figure::of("stream", &dims, "best_gb_s", &f.bandwidth_gb_s);
            best.value = f.best_gb_s;
            out.push(best);
        }
        out
    }
}

impl Figures for LoadedLatencyReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        let mix = self.mix.mix.to_string();
        latency(
            &mut out,
            "loaded-latency",
            &[("mix", mix.clone()), ("step", "idle".into())],
            &self.idle,
        );
        for s in &self.steps {
            let step = if self.spread {
                format!("domains {}", list(&s.domains))
            } else {
                format!("delay {}", s.delay_spins)
            };
            let dims = [("mix", mix.clone()), ("step", step)];
            latency(&mut out, "loaded-latency", &dims, &s.latency);
            if s.latency.ok().is_some() {
                out.push(Figure::single(
                    "loaded-latency",
                    &dims,
                    "load_bandwidth_gb_s",
                    s.load_bandwidth_gb_s,
                ));
            }
        }
        out
    }
}

impl Figures for C2cReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for m in &self.matrices {
            for p in &m.pairs {
                if let Outcome::Ok(x) = &p.outcome {
                    let dims = [
                        ("mode", m.mode.name().to_string()),
                        ("offset_bytes", m.offset_bytes.to_string()),
                        ("first_cpu", p.first_cpu.to_string()),
                        ("second_cpu", p.second_cpu.to_string()),
                    ];
                    out.push(Figure::of("c2c", &dims, "one_way_ns", &x.one_way_ns));
                }
            }
            if let Some(mean) = m.mean_one_way_ns {
                out.push(Figure {
                    measurement: "c2c".into(),
                    dims: [
                        ("mode".to_string(), m.mode.name().to_string()),
                        ("offset_bytes".to_string(), m.offset_bytes.to_string()),
                        ("pairs".to_string(), "mean".to_string()),
                    ]
                    .into_iter()
                    .collect(),
                    metric: "mean_one_way_ns".into(),
                    value: mean,
                    min: None,
                    max: None,
                    cv: None,
                    samples: m.pairs.len(),
                });
            }
        }
        out
    }
}

/// One direction's GB/s of a place, where its source counts it.
type Pick = fn(&crate::Traffic) -> Option<f64>;

/// Per place (the system, each socket, each channel) and direction, the GB/s of
/// the run's intervals: median, range and spread, one sample per interval.
impl Figures for crate::MonitorReport {
    fn figures(&self) -> Vec<crate::Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let Some(first) = m.intervals.first() else {
            return Vec::new();
        };
        let metrics: [(&str, Pick); 3] = [
            ("read_gb_s", |t| t.read_gb_s),
            ("write_gb_s", |t| t.write_gb_s),
            ("total_gb_s", |t| Some(t.total_gb_s)),
        ];
        let mut out = Vec::new();
        for (kind, place) in crate::MonitorMeasurement::places(first) {
            for (metric, pick) in metrics {
                let values: Vec<f64> = m
                    .intervals
                    .iter()
                    .filter_map(|i| crate::MonitorMeasurement::places(i).find(|(_, t)| t.name == place.name))
                    .filter_map(|(_, t)| pick(t))
                    .collect();
                if let Some(s) = crate::Summary::of(&values) {
                    let dims = [(kind, place.name.clone())];
                    out.push(crate::Figure::of("monitor", &dims, metric, &s));
                }
            }
        }
        out
    }
}

/// One line for `runs list`: per metric, how many figures and their range.
pub fn summarize(command: &str, figures: &[Figure]) -> String {
    let mut metrics: Vec<&str> = figures.iter().map(|f| f.metric.as_str()).collect();
    metrics.dedup();
    let mut seen = Vec::new();
    for m in metrics {
        if seen.contains(&m) {
            continue;
        }
        seen.push(m);
    }
    let parts: Vec<String> = seen
        .iter()
        .map(|m| {
            let v: Vec<&Figure> = figures.iter().filter(|f| f.metric == *m).collect();
            let lo = v.iter().map(|f| f.value).fold(f64::INFINITY, f64::min);
            let hi = v.iter().map(|f| f.value).fold(f64::NEG_INFINITY, f64::max);
            let unit = v[0].unit();
            if v.len() == 1 {
                format!("{m} {lo:.1} {unit}")
            } else {
                format!("{} x {m} {lo:.1}-{hi:.1} {unit}", v.len())
            }
        })
        .collect();
    if parts.is_empty() {
        format!("{command}: no figures")
    } else {
        format!("{command}: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_from_the_metric_suffix() {
        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
        let f = Figure::of(
            "latency",
            &[("mem_node", "1".into()), ("cpu_node", "0".into())],
            "latency_ns",
            &s,
        );
        assert_eq!(f.unit(), "ns");
        assert_eq!(f.dims_key(), "cpu_node=0;mem_node=1");
        assert_eq!(f.value, 2.0);
        let g = Figure {
            metric: "best_gb_s".into(),
            ..f
        };
        assert_eq!(g.unit(), "GB/s");
    }
}
