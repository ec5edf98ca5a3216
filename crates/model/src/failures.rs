//! Which parts of a result failed, and why: one answer per result type, used for a
//! command's exit status, for `run`'s message naming the failed cells, and for the
//! report. A skipped cell (no hardware, no permission) is not a failure.

use crate::{
    BandwidthReport, C2cReport, DomainScalingReport, GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport,
    GpuInfoReport, GpuInjectionReport, GpuLatencyReport, GpuLoadedLatencyReport, LatencyReport,
    LoadedLatencyReport, MonitorReport, Outcome, StreamReport, SweepReport,
};

/// One part of a result that did not produce its number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which cell, e.g. "cpu 0 -> node 1".
    pub cell: String,
    pub reason: String,
}

pub trait Failures {
    /// Every failed cell, in the order the result holds them.
    fn failures(&self) -> Vec<Failure>;
}

pub(crate) fn failed<T>(cell: impl FnOnce() -> String, o: &Outcome<T>) -> Option<Failure> {
    match o {
        Outcome::Failed { reason } => Some(Failure {
            cell: cell(),
            reason: reason.clone(),
        }),
        _ => None,
    }
}

impl Failures for LatencyReport {
    fn failures(&self) -> Vec<Failure> {
        self.cells
            .iter()
            .filter_map(|c| failed(|| c.label(), &c.outcome))
            .collect()
    }
}

impl Failures for BandwidthReport {
    fn failures(&self) -> Vec<Failure> {
        self.cells
            .iter()
            .filter_map(|c| failed(|| c.label(), &c.outcome))
            .collect()
    }
}

impl Failures for DomainScalingReport {
    fn failures(&self) -> Vec<Failure> {
        let alone = self.alone.iter().map(|s| ("alone", s));
        let together = self.cumulative.iter().map(|s| ("together", s));
        alone
            .chain(together)
            .filter_map(|(how, s)| failed(|| format!("L3 domains {:?} {how}", s.domains), &s.outcome))
            .collect()
    }
}

impl Failures for StreamReport {
    fn failures(&self) -> Vec<Failure> {
        failed(|| "stream".into(), &self.outcome).into_iter().collect()
    }
}

impl Failures for LoadedLatencyReport {
    fn failures(&self) -> Vec<Failure> {
        let idle = failed(|| "idle".into(), &self.idle);
        let steps = self.steps.iter().enumerate().filter_map(|(i, s)| {
            failed(
                || format!("step {} ({:.1} GB/s of load)", i + 1, s.load_bandwidth_gb_s),
                &s.latency,
            )
        });
        idle.into_iter().chain(steps).collect()
    }
}

impl Failures for C2cReport {
    fn failures(&self) -> Vec<Failure> {
        let pairs = self
            .matrices
            .iter()
            .flat_map(|m| m.pairs.iter().map(move |p| (m, p)));
        pairs
            .filter_map(|(m, p)| {
                let cell = || {
                    format!(
                        "{} cpu {} <-> cpu {}, offset {}",
                        m.mode.name(),
                        p.first_cpu,
                        p.second_cpu,
                        m.offset_bytes
                    )
                };
                failed(cell, &p.outcome)
            })
            .collect()
    }
}

impl Failures for SweepReport {
    fn failures(&self) -> Vec<Failure> {
        let mut out = Vec::new();
        for p in &self.points {
            let size = crate::format_size(p.size_bytes);
            if let Some(l) = &p.latency {
                out.extend(failed(|| format!("latency at {size}"), &l.outcome));
            }
            if let Some(b) = &p.bandwidth {
                out.extend(failed(|| format!("bandwidth at {size}"), &b.outcome));
            }
        }
        out
    }
}

impl Failures for MonitorReport {
    fn failures(&self) -> Vec<Failure> {
        failed(|| "monitor".into(), &self.outcome).into_iter().collect()
    }
}

/// GPU results hold one outcome for the whole measurement.
macro_rules! one_outcome {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl Failures for $t {
            fn failures(&self) -> Vec<Failure> {
                failed(|| $name.into(), &self.outcome).into_iter().collect()
            }
        }
    )*};
}

one_outcome!(
    GpuInfoReport => "gpu info",
    GpuBandwidthReport => "gpu bandwidth",
    GpuLatencyReport => "gpu latency",
    GpuCopyReport => "gpu copy",
    GpuHostLatencyReport => "gpu host-latency",
    GpuLoadedLatencyReport => "gpu loaded-latency",
    GpuInjectionReport => "gpu injection",
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HugePages, LatencyCell, Pattern};

    #[test]
    fn skipped_cells_are_not_failures() {
        let cell = |cpu, outcome| LatencyCell {
            cpu,
            cpu_node: 0,
            mem_node: 1,
            outcome,
        };
        let r = LatencyReport {
            pattern: Pattern::Random,
            huge_pages: HugePages::Off,
            size_bytes: 1 << 20,
            stride_bytes: 64,
            window_bytes: None,
            seed: 1,
            cpu_nodes: vec![0],
            mem_nodes: vec![1],
            cells: vec![
                cell(
                    0,
                    Outcome::Skipped {
                        reason: "no memory".into(),
                    },
                ),
                cell(
                    2,
                    Outcome::Failed {
                        reason: "placement".into(),
                    },
                ),
            ],
            firmware: None,
            interleave: None,
        };
        assert_eq!(
            r.failures(),
            vec![Failure {
                cell: "cpu 2 -> node 1".into(),
                reason: "placement".into()
            }]
        );
    }
}
