//! GPU results flattened into figures, for the run history and comparisons.

use crate::figures::{Figure, Figures};
use crate::gpu::*;
use crate::Outcome;

impl Figures for GpuBandwidthReport {
    fn figures(&self) -> Vec<Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in &m.points {
            let dims = [
                ("kernel", p.kernel.name().to_string()),
                ("array_bytes", p.array_bytes.to_string()),
            ];
            out.push(Figure::of(
                "gpu-bandwidth",
                &dims,
                "bandwidth_gb_s",
                &p.bandwidth_gb_s,
            ));
            out.push(Figure::single(
                "gpu-bandwidth",
                &dims,
                "best_gb_s",
                p.bandwidth_gb_s.max,
            ));
        }
        out
    }
}

impl Figures for GpuLatencyReport {
    fn figures(&self) -> Vec<Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in &m.points {
            let dims = [("size_bytes", p.size_bytes.to_string())];
            out.push(Figure::single("gpu-latency", &dims, "latency_ns", p.latency_ns));
            out.push(Figure::single(
                "gpu-latency",
                &dims,
                "latency_cycles",
                p.latency_cycles,
            ));
        }
        for l in &m.levels {
            let dims = [("level", l.name.clone())];
            out.push(Figure::single(
                "gpu-latency-level",
                &dims,
                "latency_cycles",
                l.latency_cycles,
            ));
        }
        out
    }
}

/// One figure per measured entry of a list of cells.
fn per_cell<C>(o: &Outcome<Vec<C>>, figure: impl Fn(&C) -> Option<Figure>) -> Vec<Figure> {
    match o {
        Outcome::Ok(cells) => cells.iter().filter_map(figure).collect(),
        _ => Vec::new(),
    }
}

impl Figures for GpuCopyReport {
    fn figures(&self) -> Vec<Figure> {
        per_cell(&self.outcome, |c| {
            let m = c.outcome.ok()?;
            let dims = [
                ("memory", c.memory.name().to_string()),
                ("node", c.node.map_or("-".into(), |n| n.to_string())),
                ("engine", c.engine.name().to_string()),
                ("direction", c.direction.name().to_string()),
            ];
            Some(Figure::of("gpu-copy", &dims, "bandwidth_gb_s", &m.bandwidth_gb_s))
        })
    }
}

impl Figures for GpuHostLatencyReport {
    fn figures(&self) -> Vec<Figure> {
        per_cell(&self.outcome, |c| {
            let m = c.outcome.ok()?;
            let dims = [("node", c.node.to_string())];
            Some(Figure::of("gpu-host-latency", &dims, "latency_ns", &m.latency_ns))
        })
    }
}

impl Figures for GpuLoadedLatencyReport {
    fn figures(&self) -> Vec<Figure> {
        let Outcome::Ok(points) = &self.outcome else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in points {
            if let Outcome::Ok(m) = &p.latency {
                let dims = [("gap_us", p.gap_us.map_or("idle".into(), |g| g.to_string()))];
                out.push(Figure::of(
                    "gpu-loaded-latency",
                    &dims,
                    "latency_ns",
                    &m.latency_ns,
                ));
                out.push(Figure::single(
                    "gpu-loaded-latency",
                    &dims,
                    "dma_gb_s",
                    p.dma_gb_s,
                ));
            }
        }
        out
    }
}

impl Figures for GpuInjectionReport {
    fn figures(&self) -> Vec<Figure> {
        let Outcome::Ok(m) = &self.outcome else {
            return Vec::new();
        };
        let mut out: Vec<Figure> = m
            .cases
            .iter()
            .map(|c| {
                Figure::of(
                    "gpu-injection",
                    &[("case", c.case.name().to_string())],
                    "latency_ns",
                    &c.latency_ns,
                )
            })
            .collect();
        out.push(Figure::single("gpu-injection", &[], "saved_ns", m.saved_ns));
        out
    }
}

impl Figures for GpuInfoReport {
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Summary;

    #[test]
    fn copy_cells_are_named_by_their_json_names() {
        let s = Summary::of(&[55.0, 55.1]).unwrap();
        let r = GpuCopyReport {
            gpu: None,
            size_bytes: 1 << 30,
            samples: 2,
            nodes: vec![0],
            outcome: Outcome::Ok(vec![GpuCopyCell {
                memory: HostMemory::PinnedNode,
                node: Some(0),
                engine: CopyEngine::CopyEngine,
                direction: CopyDirection::HostToDevice,
                outcome: Outcome::Ok(GpuCopyMeasurement {
                    bandwidth_gb_s: s,
                    samples_gb_s: vec![55.0, 55.1],
                    bytes_per_sample: 1 << 30,
                    placement: None,
                }),
            }]),
        };
        let f = r.figures();
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].dims_key(),
            "direction=host-to-device;engine=copy-engine;memory=pinned-node;node=0"
        );
        let skipped = GpuCopyReport {
            outcome: Outcome::Skipped {
                reason: "no NVIDIA driver found".into(),
            },
            ..r
        };
        assert!(skipped.figures().is_empty());
    }
}
