//! Which measurements of a result the noise guard flagged: one answer per result
//! type, beside [`crate::Failures`], read by the fleet facts of every stored run.

use crate::{
    BandwidthMeasurement, BandwidthReport, C2cReport, ConcurrentReport, DomainScalingReport,
    GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport, GpuInfoReport, GpuInjectionReport,
    GpuLatencyReport, GpuLoadedLatencyReport, LatencyMeasurement, LatencyReport, LoadedLatencyReport,
    MonitorReport, Noise, Outcome, StreamReport, SweepReport,
};

pub trait Noises {
    /// Every flagged measurement's verdict, in the order the result holds them.
    fn noises(&self) -> Vec<&Noise>;
}

impl Noise {
    /// One line: "cv 7.1 % over the 5.0 % threshold: <first likely cause>".
    pub fn flag(&self) -> String {
        let cause = self
            .likely_causes
            .first()
            .map_or("no likely cause recorded", String::as_str);
        format!(
            "cv {:.1} % over the {:.1} % threshold: {cause}",
            self.cv * 100.0,
            self.threshold_cv * 100.0
        )
    }
}

fn latency(o: &Outcome<LatencyMeasurement>) -> Option<&Noise> {
    o.ok().and_then(|m| m.noise.as_ref())
}

fn bandwidth(o: &Outcome<BandwidthMeasurement>) -> Option<&Noise> {
    o.ok().and_then(|m| m.noise.as_ref())
}

impl Noises for LatencyReport {
    fn noises(&self) -> Vec<&Noise> {
        self.cells.iter().filter_map(|c| latency(&c.outcome)).collect()
    }
}

impl Noises for BandwidthReport {
    fn noises(&self) -> Vec<&Noise> {
        self.cells.iter().filter_map(|c| bandwidth(&c.outcome)).collect()
    }
}

impl Noises for DomainScalingReport {
    fn noises(&self) -> Vec<&Noise> {
        let all = self.alone.iter().chain(&self.cumulative);
        all.filter_map(|s| bandwidth(&s.outcome)).collect()
    }
}

impl Noises for StreamReport {
    fn noises(&self) -> Vec<&Noise> {
        let functions = self
            .outcome
            .ok()
            .map(|m| m.functions.as_slice())
            .unwrap_or_default();
        functions.iter().filter_map(|f| f.noise.as_ref()).collect()
    }
}

impl Noises for LoadedLatencyReport {
    fn noises(&self) -> Vec<&Noise> {
        let steps = self.steps.iter().filter_map(|s| latency(&s.latency));
        latency(&self.idle).into_iter().chain(steps).collect()
    }
}

impl Noises for C2cReport {
    fn noises(&self) -> Vec<&Noise> {
        let pairs = self.matrices.iter().flat_map(|m| &m.pairs);
        pairs
            .filter_map(|p| p.outcome.ok().and_then(|m| m.noise.as_ref()))
            .collect()
    }
}

impl Noises for SweepReport {
    fn noises(&self) -> Vec<&Noise> {
        let mut out = Vec::new();
        for p in &self.points {
            out.extend(p.latency.as_ref().and_then(|l| latency(&l.outcome)));
            out.extend(p.bandwidth.as_ref().and_then(|b| bandwidth(&b.outcome)));
        }
        out
    }
}

impl Noises for GpuLoadedLatencyReport {
    fn noises(&self) -> Vec<&Noise> {
        let points = self.outcome.ok().map(Vec::as_slice).unwrap_or_default();
        points.iter().filter_map(|p| latency(&p.latency)).collect()
    }
}

/// Results whose measurements carry no noise verdict.
macro_rules! no_noise {
    ($($t:ty),* $(,)?) => {$(
        impl Noises for $t {
            fn noises(&self) -> Vec<&Noise> {
                Vec::new()
            }
        }
    )*};
}

no_noise!(
    ConcurrentReport,
    MonitorReport,
    GpuInfoReport,
    GpuBandwidthReport,
    GpuLatencyReport,
    GpuCopyReport,
    GpuHostLatencyReport,
    GpuInjectionReport,
);
