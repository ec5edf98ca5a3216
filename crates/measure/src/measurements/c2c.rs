//! Core-to-core latency: two threads pinned to two CPUs hand one cache line back and
//! forth, for every ordered pair of the selected CPUs, per handoff mode and per byte
//! offset of the line inside its page.
//!
//! What is reported is core-to-core-latency's figure (nviennot, 1.2.0, src/bench/cas.rs
//! and read_write.rs: `duration / num_round_trips / 2.0`): the time of a sample over its
//! round trips, halved, i.e. one handoff from one CPU to the other. One warm-up sample
//! is discarded, as there.

use std::sync::{Barrier, Mutex};
use std::time::Instant;

use memfabric_model::{
    C2cLinePage, C2cMatrix, C2cMeasurement, C2cMode, C2cPair, C2cReport, HugePages, Noise, Outcome, Summary,
};
use memfabric_topo::Topology;

use crate::kernels::{Line, LinePage, Pinger};
use crate::observer::{interrupted, Observer};
use crate::placement::{allocate_on_node, describe_mismatch, pin};
use crate::plan::c2c::PAGE_BYTES;
pub use crate::plan::c2c::{
    c2c_plan, classify, C2cOptions, C2cPairSpec, C2cPlan, DEFAULT_ROUND_TRIPS, DEFAULT_SAMPLES,
};
use memfabric_analysis::noise::{likely_causes, Conditions};

/// Samples run first and discarded, as core-to-core-latency does.
pub const WARMUP_SAMPLES: usize = 1;

/// What every value of a report is, in words, for the JSON.
pub const METHOD: &str = "one_way_ns = time of a sample / its round trips / 2 \
(core-to-core-latency's figure); each round trip: the first CPU waits for the second's \
handoff of the line, then hands it back; the line is a 64-bit word at the offset in a \
page bound to the first CPU's node; one warm-up sample discarded per pair";

pub fn run(plan: &C2cPlan, obs: &dyn Observer) -> C2cReport {
    let pages: Vec<NodePage> = plan
        .pages
        .iter()
        .map(|&(node, cpu)| map_page(node, cpu))
        .collect();
    let total = plan.modes.len() * plan.offsets_bytes.len() * plan.pairs.len();
    obs.begin("c2c", total as u64);
    let mut matrices = Vec::new();
    for &mode in &plan.modes {
        for &offset in &plan.offsets_bytes {
            let pairs = plan
                .pairs
                .iter()
                .map(|spec| {
                    let outcome = if obs.cancelled() {
                        interrupted()
                    } else {
                        measure_on_page(plan, &pages, spec, mode, offset, obs)
                    };
                    obs.advance(&format!(
                        "{} @{offset}: cpu {} <-> {}",
                        mode.name(),
                        spec.first,
                        spec.second
                    ));
                    C2cPair {
                        first_cpu: spec.first,
                        second_cpu: spec.second,
                        class: spec.class,
                        line_node: spec.line_node,
                        outcome,
                    }
                })
                .collect();
            matrices.push(C2cMatrix::assemble(mode, offset, &plan.cpus, pairs));
        }
    }
    obs.finish();
    C2cReport {
        method: METHOD.into(),
        cpus: plan.cpus.clone(),
        modes: plan.modes.clone(),
        offsets_bytes: plan.offsets_bytes.clone(),
        samples: plan.samples,
        warmup_samples: WARMUP_SAMPLES,
        round_trips_per_sample: plan.round_trips,
        line_pages: pages.into_iter().map(|p| p.record).collect(),
        matrices,
    }
}

/// One pair on the line at `offset` of its first CPU's node page, if that page is there.
fn measure_on_page(
    plan: &C2cPlan,
    pages: &[NodePage],
    spec: &C2cPairSpec,
    mode: C2cMode,
    offset: u64,
    obs: &dyn Observer,
) -> Outcome<C2cMeasurement> {
    let failed = |reason: String| Outcome::Failed { reason };
    match pages
        .iter()
        .find(|p| p.record.node == spec.line_node)
        .map(|p| &p.page)
    {
        Some(Ok(page)) => match page.line(offset as usize) {
            Some(line) => measure_pair(plan, line, mode, spec, obs),
            None => failed(format!("offset {offset} is outside the line page")),
        },
        Some(Err(e)) => failed(e.clone()),
        None => failed(format!(
            "internal error: no line page for node {}",
            spec.line_node
        )),
    }
}

/// A node's line page, when it could be placed, and what the report says of it.
struct NodePage {
    page: Result<LinePage, String>,
    record: C2cLinePage,
}

/// Maps one page bound to `node` from a thread pinned to `cpu`, which touches it, and
/// checks where it landed. Every offset of every pair on that node uses this page.
fn map_page(node: u32, cpu: u32) -> NodePage {
    let placed = std::thread::scope(|s| {
        s.spawn(|| {
            let affinity = pin(cpu).map_err(|e| e.to_string())?;
            allocate_on_node(PAGE_BYTES as usize, node, HugePages::Off, affinity).map_err(|e| e.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("page-mapping thread panicked".into()))
    });
    let (page, outcome) = match placed {
        Ok((buf, p)) if p.verified => (Ok(LinePage::new(buf)), Outcome::Ok(p)),
        Ok((_, p)) => {
            let reason = format!("line page on node {node}: {}", describe_mismatch(&p));
            (Err(reason.clone()), Outcome::Failed { reason })
        }
        Err(e) => {
            let reason = format!("line page on node {node}: {e}");
            (Err(reason.clone()), Outcome::Failed { reason })
        }
    };
    NodePage {
        page,
        record: C2cLinePage { node, cpu, outcome },
    }
}

/// One pair: the second CPU's thread answers; the first CPU's thread times.
fn measure_pair(
    plan: &C2cPlan,
    line: Line<'_>,
    mode: C2cMode,
    spec: &C2cPairSpec,
    obs: &dyn Observer,
) -> Outcome<C2cMeasurement> {
    line.reset();
    // Both threads pin, then meet here; only then may the timing side start, so
    // neither ever waits on a thread that could not be pinned.
    let ready = Barrier::new(2);
    let second_pinned: Mutex<Option<Result<Vec<u32>, String>>> = Mutex::new(None);
    std::thread::scope(|s| {
        let answer = s.spawn(|| {
            let pinned = pin(spec.second).map_err(|e| e.to_string());
            let ok = pinned.is_ok();
            *second_pinned.lock().unwrap_or_else(|e| e.into_inner()) = Some(pinned);
            ready.wait();
            if ok {
                line.serve(mode);
            }
        });
        let time = s.spawn(|| {
            // Dropped on every way out, it releases the answering thread.
            let mut pinger = Pinger::new(line, mode);
            let first = pin(spec.first).map_err(|e| e.to_string());
            ready.wait();
            let second = second_pinned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| Err("the answering thread did not report".into()));
            match (first, second) {
                (Ok(a), Ok(b)) => time_samples(plan, &mut pinger, obs, a, b),
                (Err(e), _) | (_, Err(e)) => Outcome::Failed { reason: e },
            }
        });
        let outcome = time.join().unwrap_or_else(|_| Outcome::Failed {
            reason: "measuring thread panicked".into(),
        });
        let _ = answer.join();
        outcome
    })
}

fn time_samples(
    plan: &C2cPlan,
    pinger: &mut Pinger<'_>,
    obs: &dyn Observer,
    first_affinity: Vec<u32>,
    second_affinity: Vec<u32>,
) -> Outcome<C2cMeasurement> {
    let stop = || obs.cancelled();
    let n = plan.round_trips;
    let mut samples = Vec::with_capacity(plan.samples.min(1 << 16));
    for k in 0..WARMUP_SAMPLES + plan.samples {
        let t = Instant::now();
        if !pinger.round_trips(n, &stop) {
            return interrupted();
        }
        let ns = t.elapsed().as_nanos() as f64;
        if k >= WARMUP_SAMPLES {
            samples.push(ns / n as f64 / 2.0);
        }
    }
    match Summary::of(&samples) {
        Some(one_way_ns) => Outcome::Ok(C2cMeasurement {
            one_way_ns,
            samples_one_way_ns: samples,
            first_affinity,
            second_affinity,
            noise: None,
        }),
        None => interrupted(),
    }
}

/// Flags each pair whose samples spread more than `threshold` (a ratio).
pub fn annotate_noise(r: &mut C2cReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    for p in r.matrices.iter_mut().flat_map(|m| m.pairs.iter_mut()) {
        if let Outcome::Ok(m) = &mut p.outcome {
            if m.one_way_ns.cv > threshold {
                m.noise = Some(Noise {
                    cv: m.one_way_ns.cv,
                    threshold_cv: threshold,
                    likely_causes: likely_causes(cond, topo, &[p.first_cpu, p.second_cpu]),
                });
            }
        }
    }
}

/// `memfabric c2c`.
pub struct CoreToCore;

impl crate::measurement::Measurement for CoreToCore {
    type Options = crate::measurement::Request<crate::plan::c2c::C2cOptions>;
    type Plan = crate::measurement::Checked<crate::plan::c2c::C2cPlan>;
    type Report = C2cReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|_, opt| crate::plan::c2c::c2c_plan(m, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> C2cReport {
        run(&p.plan, obs)
    }

    fn enrich(r: &mut C2cReport, p: &Self::Plan, m: &crate::plan::Machine) {
        annotate_noise(r, m.topo, &m.conditions(), p.threshold_cv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use crate::plan::Machine;

    fn options(cpus: Option<Vec<u32>>, offsets: Vec<u64>) -> C2cOptions {
        C2cOptions {
            cpus,
            modes: vec![C2cMode::Cas],
            offsets_bytes: offsets,
            samples: 3,
            round_trips: 100,
        }
    }

    fn this_machine() -> Option<Topology> {
        let t = Topology::read(&memfabric_topo::Roots::live().sys).ok()?;
        let allowed = crate::sys::current_affinity().ok()?;
        (t.cpus.iter().filter(|c| allowed.contains(&c.id)).count() >= 2).then_some(t)
    }

    #[test]
    fn real_pairs_bounce_in_both_modes() {
        let _turn = crate::measuring();
        let Some(t) = this_machine() else {
            eprintln!("skipped: needs 2 allowed CPUs");
            return;
        };
        let m = Machine {
            topo: &t,
            allowed_cpus: crate::sys::current_affinity().unwrap(),
            roots: memfabric_topo::Roots::live(),
        };
        let cpus = m.allowed_cpus[..2].to_vec();
        let opt = C2cOptions {
            modes: C2cMode::ALL.to_vec(),
            ..options(Some(cpus.clone()), vec![0, 2048])
        };
        let r = run(&c2c_plan(&m, &opt).unwrap(), &crate::Silent);
        assert_eq!(r.matrices.len(), 4);
        assert!(r
            .line_pages
            .iter()
            .all(|p| p.outcome.ok().is_some_and(|p| p.verified)));
        for mat in &r.matrices {
            assert_eq!(mat.pairs.len(), 2);
            for p in &mat.pairs {
                let o = p.outcome.ok().unwrap_or_else(|| panic!("{p:?}"));
                assert_eq!(o.samples_one_way_ns.len(), 3);
                assert!(o.one_way_ns.min > 0.0);
                assert_eq!(
                    (o.first_affinity.clone(), o.second_affinity.clone()),
                    (vec![p.first_cpu], vec![p.second_cpu])
                );
            }
            assert!(mat.median_one_way_ns[0][0].is_none() && mat.median_one_way_ns[0][1].is_some());
        }
    }

    /// Asks to stop once it has been asked a given number of times.
    struct StopAfter(AtomicU64);

    impl Observer for StopAfter {
        fn cancelled(&self) -> bool {
            self.0.fetch_sub(1, Ordering::SeqCst) <= 1
        }
    }

    #[test]
    fn a_stop_request_ends_even_an_endless_sample() {
        let _turn = crate::measuring();
        let Some(t) = this_machine() else {
            return;
        };
        let m = Machine {
            topo: &t,
            allowed_cpus: crate::sys::current_affinity().unwrap(),
            roots: memfabric_topo::Roots::live(),
        };
        let opt = C2cOptions {
            round_trips: u64::MAX / 4,
            ..options(Some(m.allowed_cpus[..2].to_vec()), vec![0])
        };
        let plan = c2c_plan(&m, &opt).unwrap();
        let started = Instant::now();
        let r = run(&plan, &StopAfter(AtomicU64::new(20)));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        for p in &r.matrices[0].pairs {
            assert_eq!(p.outcome, interrupted::<C2cMeasurement>());
        }
    }
}
