//! The headline figures a fleet is judged by, each read from a run's figures by one
//! rule, so a `run` document and the single-measurement documents give the same
//! figure for the same thing.

use std::collections::BTreeMap;

use crate::Figure;

/// One figure per host that a class's hosts are compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Headline {
    /// Triad bandwidth of each node's CPUs on its own memory; the weakest node counts.
    TriadPerNode,
    /// STREAM Triad of the machine (`stream`).
    StreamTriad,
    /// STREAM Triad with memory interleaved over every node (`run`, `stream --interleave`).
    InterleavedTriad,
    /// Idle latency of each node's CPUs to its own memory; the slowest node counts.
    LocalLatency,
    /// Idle latency to another node's memory; the slowest pair counts.
    RemoteLatency,
    /// Mean one-way core-to-core latency.
    CoreToCore,
    /// Every node reading another node's memory at once: the total.
    RemoteAllAtOnce,
}

impl Headline {
    pub const ALL: [Headline; 7] = [
        Headline::TriadPerNode,
        Headline::StreamTriad,
        Headline::InterleavedTriad,
        Headline::LocalLatency,
        Headline::RemoteLatency,
        Headline::CoreToCore,
        Headline::RemoteAllAtOnce,
    ];

    /// Its name in JSON, CSV and `FleetFacts::headlines`.
    pub fn name(self) -> &'static str {
        match self {
            Headline::TriadPerNode => "triad_per_node_gb_s",
            Headline::StreamTriad => "stream_triad_gb_s",
            Headline::InterleavedTriad => "interleaved_triad_gb_s",
            Headline::LocalLatency => "local_latency_ns",
            Headline::RemoteLatency => "remote_latency_ns",
            Headline::CoreToCore => "c2c_ns",
            Headline::RemoteAllAtOnce => "all_remote_gb_s",
        }
    }

    pub fn from_name(name: &str) -> Option<Headline> {
        Headline::ALL.into_iter().find(|h| h.name() == name)
    }

    /// A column heading.
    pub fn title(self) -> &'static str {
        match self {
            Headline::TriadPerNode => "Triad/node GB/s",
            Headline::StreamTriad => "STREAM Triad GB/s",
            Headline::InterleavedTriad => "interleaved Triad GB/s",
            Headline::LocalLatency => "local ns",
            Headline::RemoteLatency => "remote ns",
            Headline::CoreToCore => "c2c ns",
            Headline::RemoteAllAtOnce => "all-remote GB/s",
        }
    }

    /// Bandwidths are better high, latencies low.
    pub fn higher_is_better(self) -> bool {
        !matches!(
            self,
            Headline::LocalLatency | Headline::RemoteLatency | Headline::CoreToCore
        )
    }

    /// Its value among a run's figures, if the run measured it.
    fn read(self, figures: &[Figure]) -> Option<f64> {
        let same_node = |f: &Figure| dim(f, "cpu_node").is_some() && dim(f, "cpu_node") == dim(f, "mem_node");
        let triad = |f: &Figure| {
            dim(f, "mix") == Some("triad")
                || dim(f, "function").is_some_and(|n| n.eq_ignore_ascii_case("triad"))
        };
        let pick = |keep: &dyn Fn(&Figure) -> bool| -> Vec<f64> {
            figures.iter().filter(|f| keep(f)).map(|f| f.value).collect()
        };
        let values: Vec<f64> = match self {
            Headline::TriadPerNode => pick(&|f| {
                matches!(f.measurement.as_str(), "bandwidth" | "bandwidth-mixes")
                    && f.metric == "bandwidth_gb_s"
                    && triad(f)
                    && same_node(f)
            }),
            Headline::StreamTriad | Headline::InterleavedTriad => {
                let m = if self == Headline::StreamTriad {
                    "stream"
                } else {
                    "stream-interleaved"
                };
                pick(&|f| f.measurement == m && f.metric == "bandwidth_gb_s" && triad(f))
            }
            Headline::LocalLatency | Headline::RemoteLatency => {
                let local = self == Headline::LocalLatency;
                pick(&|f| {
                    f.measurement == "latency"
                        && f.metric == "latency_ns"
                        && dim(f, "cpu_node").is_some()
                        && same_node(f) == local
                })
            }
            Headline::CoreToCore => {
                let mut first = pick(&|f| f.measurement == "c2c" && f.metric == "mean_one_way_ns");
                first.truncate(1);
                first
            }
            Headline::RemoteAllAtOnce => pick(&|f| {
                f.measurement == "bandwidth-concurrent"
                    && dim(f, "pattern") == Some("all-remote")
                    && dim(f, "stream") == Some("total")
            }),
        };
        let worst = |a: f64, b: f64| {
            if self.higher_is_better() {
                a.min(b)
            } else {
                a.max(b)
            }
        };
        values.into_iter().filter(|v| v.is_finite()).reduce(worst)
    }
}

fn dim<'a>(f: &'a Figure, k: &str) -> Option<&'a str> {
    f.dims.get(k).map(String::as_str)
}

/// Every headline a run's figures hold, by name.
pub fn headlines(figures: &[Figure]) -> BTreeMap<String, f64> {
    Headline::ALL
        .into_iter()
        .filter_map(|h| h.read(figures).map(|v| (h.name().to_string(), v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(measurement: &str, dims: &[(&str, &str)], metric: &str, value: f64) -> Figure {
        let dims: Vec<(&str, String)> = dims.iter().map(|(k, v)| (*k, v.to_string())).collect();
        Figure::single(measurement, &dims, metric, value)
    }

    #[test]
    fn each_headline_takes_the_worst_of_its_figures() {
        let figures = vec![
            fig(
                "latency",
                &[("cpu_node", "0"), ("mem_node", "0")],
                "latency_ns",
                90.0,
            ),
            fig(
                "latency",
                &[("cpu_node", "1"), ("mem_node", "1")],
                "latency_ns",
                95.0,
            ),
            fig(
                "latency",
                &[("cpu_node", "0"), ("mem_node", "1")],
                "latency_ns",
                140.0,
            ),
            fig(
                "latency",
                &[("cpu_node", "1"), ("mem_node", "0")],
                "latency_ns",
                150.0,
            ),
            fig(
                "bandwidth-mixes",
                &[("cpu_node", "0"), ("mem_node", "0"), ("mix", "triad")],
                "bandwidth_gb_s",
                200.0,
            ),
            fig(
                "bandwidth-mixes",
                &[("cpu_node", "1"), ("mem_node", "1"), ("mix", "triad")],
                "bandwidth_gb_s",
                180.0,
            ),
            fig(
                "bandwidth-mixes",
                &[("cpu_node", "1"), ("mem_node", "1"), ("mix", "read")],
                "bandwidth_gb_s",
                10.0,
            ),
            fig(
                "stream-interleaved",
                &[("function", "Triad")],
                "bandwidth_gb_s",
                330.0,
            ),
            fig("stream-interleaved", &[("function", "Triad")], "best_gb_s", 340.0),
            fig("c2c", &[("pairs", "mean")], "mean_one_way_ns", 70.0),
            fig(
                "bandwidth-concurrent",
                &[("pattern", "all-remote"), ("stream", "total")],
                "bandwidth_gb_s",
                120.0,
            ),
            fig(
                "bandwidth-concurrent",
                &[("pattern", "all-remote"), ("stream", "0->1")],
                "bandwidth_gb_s",
                60.0,
            ),
        ];
        let h = headlines(&figures);
        assert_eq!(h["local_latency_ns"], 95.0);
        assert_eq!(h["remote_latency_ns"], 150.0);
        assert_eq!(h["triad_per_node_gb_s"], 180.0);
        assert_eq!(h["interleaved_triad_gb_s"], 330.0);
        assert_eq!(h["c2c_ns"], 70.0);
        assert_eq!(h["all_remote_gb_s"], 120.0);
        assert!(!h.contains_key("stream_triad_gb_s"), "no stream document");
        assert_eq!(h.len(), 6);
    }

    #[test]
    fn names_round_trip() {
        for h in Headline::ALL {
            assert_eq!(Headline::from_name(h.name()), Some(h));
        }
    }
}
