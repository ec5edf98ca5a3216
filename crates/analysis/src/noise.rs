//! The noise guard: a result whose samples spread too much is flagged, with the
//! likely causes this machine shows.

use memfabric_model::{
    BandwidthReport, DomainScalingReport, LatencyMeasurement, LatencyReport, LoadedLatencyReport, Noise,
    Outcome, StreamReport,
};
use memfabric_topo::{format_cpulist, Host, Topology};

/// Coefficient of variation above which a result is flagged (5 %).
pub const DEFAULT_THRESHOLD_CV: f64 = 0.05;

/// What can make samples spread, read once per command.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    pub load_avg_1m: Option<f64>,
    pub governor: Option<String>,
    pub hypervisor: bool,
}

impl Conditions {
    /// The conditions the system's state shows.
    pub fn of(host: &Host) -> Conditions {
        Conditions {
            load_avg_1m: host.load_avg_1m,
            governor: host.governor.clone(),
            hypervisor: host.has_flag("hypervisor"),
        }
    }
}

/// Likely causes of spread for a measurement on `cpus`, most specific first.
pub fn likely_causes(cond: &Conditions, topo: &Topology, cpus: &[u32]) -> Vec<String> {
    let mut causes = Vec::new();
    if let Some(load) = cond.load_avg_1m {
        if load > cpus.len() as f64 + 0.5 {
            causes.push(format!(
                "other load: 1-minute load average {load:.2} while {} CPU(s) measure",
                cpus.len()
            ));
        }
    }
    let mut siblings: Vec<u32> = cpus
        .iter()
        .filter_map(|&c| topo.cpu(c))
        .flat_map(|c| c.smt_siblings.iter().copied())
        .filter(|s| !cpus.contains(s))
        .collect();
    siblings.sort_unstable();
    siblings.dedup();
    if !siblings.is_empty() {
        causes.push(format!(
            "a busy SMT sibling: CPUs {} share cores with the measuring CPUs",
            format_cpulist(&siblings)
        ));
    }
    if let Some(g) = cond.governor.as_deref().filter(|g| *g != "performance") {
        causes.push(format!(
            "frequency scaling: the CPU governor is '{g}', not 'performance'"
        ));
    }
    if cond.hypervisor {
        causes.push("a virtual machine: other guests share the host's cores and memory".into());
    }
    if causes.is_empty() {
        causes.push(NO_CAUSE.into());
    }
    causes
}

const NO_CAUSE: &str = "no cause visible from here; take more or longer samples";

/// The noise of a chase: its spread as `assess` judges it, and, whatever the spread,
/// the samples it kept although its thread lost the CPU (their figures are too high
/// by the time the thread did not run, which no spread shows when every sample lost
/// the same share).
pub fn assess_latency(
    m: &LatencyMeasurement,
    threshold: f64,
    causes: impl FnOnce() -> Vec<String>,
) -> Option<Noise> {
    let mut noise = assess(m.latency_ns.cv, threshold, causes);
    if m.samples_preempted > 0 {
        let n = noise.get_or_insert_with(|| Noise {
            cv: m.latency_ns.cv,
            threshold_cv: threshold,
            likely_causes: Vec::new(),
        });
        n.likely_causes.retain(|c| c != NO_CAUSE);
        n.likely_causes.insert(
            0,
            format!(
                "the measuring thread lost its CPU (to another task, or to the host of this guest) in {} of {} samples after {} retakes: the figure is too high; free the CPU, or measure on another one",
                m.samples_preempted,
                m.samples_ns.len(),
                m.samples_retaken
            ),
        );
    }
    noise
}

fn assess(cv: f64, threshold: f64, causes: impl FnOnce() -> Vec<String>) -> Option<Noise> {
    (cv > threshold).then(|| Noise {
        cv,
        threshold_cv: threshold,
        likely_causes: causes(),
    })
}

pub fn annotate_latency(r: &mut LatencyReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    for cell in &mut r.cells {
        if let Outcome::Ok(m) = &mut cell.outcome {
            m.noise = assess_latency(m, threshold, || likely_causes(cond, topo, &[cell.cpu]));
        }
    }
}

pub fn annotate_bandwidth(r: &mut BandwidthReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    for cell in &mut r.cells {
        if let Outcome::Ok(m) = &mut cell.outcome {
            m.noise = assess(m.bandwidth_gb_s.cv, threshold, || {
                likely_causes(cond, topo, &cell.cpus)
            });
        }
    }
}

/// Flags each measured step of a per-domain run.
pub fn annotate_domains(r: &mut DomainScalingReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    for step in r.alone.iter_mut().chain(r.cumulative.iter_mut()) {
        if let Outcome::Ok(m) = &mut step.outcome {
            m.noise = assess(m.bandwidth_gb_s.cv, threshold, || {
                likely_causes(cond, topo, &step.cpus)
            });
        }
    }
}

/// Flags each STREAM function whose passes spread too much.
pub fn annotate_stream(r: &mut StreamReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    if let Outcome::Ok(m) = &mut r.outcome {
        for f in &mut m.functions {
            f.noise = assess(f.bandwidth_gb_s.cv, threshold, || {
                likely_causes(cond, topo, &r.cpus)
            });
        }
    }
}

/// Flags the idle latency and each loaded step whose latency samples spread too much.
/// Under load, spread is expected; the causes still name what else may add to it.
pub fn annotate_loaded(r: &mut LoadedLatencyReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    let cpus = [r.latency_cpu];
    let outcomes = std::iter::once(&mut r.idle).chain(r.steps.iter_mut().map(|s| &mut s.latency));
    for o in outcomes {
        if let Outcome::Ok(m) = o {
            m.noise = assess_latency(m, threshold, || likely_causes(cond, topo, &cpus));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn epyc() -> Topology {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/epyc7601-2s/sys");
        Topology::read(&root).unwrap()
    }

    #[test]
    fn names_each_visible_cause() {
        let cond = Conditions {
            load_avg_1m: Some(7.0),
            governor: Some("powersave".into()),
            hypervisor: true,
        };
        let causes = likely_causes(&cond, &epyc(), &[0, 1]);
        assert_eq!(causes.len(), 4, "{causes:?}");
        assert!(causes[0].contains("load average 7.00"));
        assert!(causes[1].contains("CPUs 64-65"));
        assert!(causes[2].contains("powersave"));
    }

    #[test]
    fn quiet_machine_still_gets_advice() {
        let causes = likely_causes(&Conditions::default(), &epyc(), &[0, 64]);
        assert_eq!(
            causes,
            vec!["no cause visible from here; take more or longer samples".to_string()]
        );
    }

    #[test]
    fn threshold_is_strict() {
        assert!(assess(0.05, 0.05, Vec::new).is_none());
        assert_eq!(
            assess(0.2, 0.05, || vec!["x".into()]).unwrap().likely_causes,
            vec!["x"]
        );
    }
}
