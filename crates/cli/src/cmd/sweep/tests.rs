use super::*;
use memfabric_analysis::sweep_levels::{levels, ExpectedLevel};
use memfabric_model::{
    BandwidthMeasurement, HugePages, LatencyMeasurement, Mix, MixInfo, Noise, Outcome, Pattern, Placement,
    Summary, SweepBandwidthPoint, SweepBandwidthSetup, SweepLatencyPoint, SweepLatencySetup,
};

fn placement() -> Placement {
    Placement {
        requested_node: 0,
        page_size_bytes: 4096,
        pages_total: 1,
        pages_sampled: 1,
        pages_on_node: 1,
        pages_elsewhere: Vec::new(),
        thread_affinity: vec![0],
        verified: true,
        method: "test".into(),
        interleave: None,
    }
}

/// A chase over LRU caches of 48K, 2M and 32M, then memory at 110 ns.
fn chase_ns(size: f64) -> f64 {
    let mut ns = 0.0;
    let mut reaching = 1.0;
    for (capacity, hit_ns) in [(48e3, 1.2), (2e6, 5.0), (32e6, 40.0)] {
        let hits = (capacity / size).min(1.0);
        ns += reaching * hits * hit_ns;
        reaching *= 1.0 - hits;
    }
    ns + reaching * 110.0
}

fn point(size: u64, noisy: bool) -> SweepPoint {
    let ns = chase_ns(size as f64);
    let gb_s = 300.0 / ns.sqrt();
    let noise = noisy.then(|| Noise {
        cv: 0.12,
        threshold_cv: 0.05,
        likely_causes: vec!["a virtual machine: other guests share the host's cores and memory".into()],
    });
    let latency = LatencyMeasurement {
        latency_ns: Summary::of(&[ns, ns * 1.01]).unwrap(),
        samples_ns: vec![ns, ns * 1.01],
        loads_per_sample: 4096,
        samples_retaken: 0,
        samples_preempted: 0,
        cycle_verified_elements: size / 64,
        placement: placement(),
        noise,
    };
    let bandwidth = BandwidthMeasurement {
        bandwidth_gb_s: Summary::of(&[gb_s]).unwrap(),
        samples_gb_s: vec![gb_s],
        bytes_per_sample: size,
        validated_elements: 0,
        placement: vec![placement()],
        noise: None,
        dram: None,
    };
    SweepPoint {
        size_bytes: size,
        latency: Some(SweepLatencyPoint {
            chase_bytes: size,
            outcome: Outcome::Ok(latency),
        }),
        bandwidth: Some(SweepBandwidthPoint {
            array_bytes_per_thread: size,
            working_set_bytes_per_thread: size,
            passes_per_sample: 1,
            outcome: Outcome::Ok(bandwidth),
        }),
    }
}

fn report() -> SweepReport {
    let sizes = memfabric_measure::plan::sweep::grid(4 << 10, 128 << 20, 2);
    let mut points: Vec<SweepPoint> = sizes.iter().map(|&s| point(s, s == 8 << 10)).collect();
    points[3].bandwidth.as_mut().unwrap().outcome = Outcome::Failed {
        reason: "validation failed: 1 of 1024 elements of the written array are wrong".into(),
    };
    let expected: Vec<ExpectedLevel> = [
        ("L1 Data", 48u64 << 10),
        ("L2 Unified", 2 << 20),
        ("L3 Unified", 32 << 20),
    ]
    .iter()
    .map(|&(name, bytes)| ExpectedLevel {
        name: name.into(),
        instance_bytes: bytes,
        sharing_threads: 1,
    })
    .collect();
    let curve = |lat: bool| -> Vec<(u64, f64)> {
        let of = |p: &SweepPoint| match lat {
            true => Some((p.size_bytes, p.latency.as_ref()?.outcome.ok()?.latency_ns.median)),
            false => Some((
                p.size_bytes,
                p.bandwidth.as_ref()?.outcome.ok()?.bandwidth_gb_s.median,
            )),
        };
        points.iter().filter_map(of).collect()
    };
    SweepReport {
        cpu: 0,
        cpu_node: 0,
        mem_node: 0,
        huge_pages: HugePages::Off,
        min_bytes: 4 << 10,
        max_bytes: 128 << 20,
        max_from: "default: 4x the 32M last-level cache of CPU 0".into(),
        points_per_octave: 2,
        samples: 2,
        sample_ms: 2.0,
        latency: Some(SweepLatencySetup {
            pattern: Pattern::Random,
            stride_bytes: 64,
            window_bytes: None,
            seed: 1,
        }),
        bandwidth: Some(SweepBandwidthSetup {
            mix: MixInfo::of(Mix::Read),
            kernel: "avx2".into(),
            cpus: vec![0],
        }),
        latency_levels: Some(levels(curve(true), false, &expected, 1, 128 << 20)),
        bandwidth_levels: Some(levels(curve(false), true, &expected, 1, 128 << 20)),
        points,
    }
}

#[test]
fn table_levels_and_plots() {
    insta::assert_snapshot!(render(&report()));
}

#[test]
fn unexplained_boundaries_get_a_hint() {
    let mut r = report();
    let lv = r.latency_levels.as_mut().unwrap();
    lv.boundaries[1].level = None;
    let text = levels_text(lv, "ns per load");
    assert!(
        text.contains("Boundary between 2M and 2.8M: 7.04x slower\n"),
        "{text}"
    );
    assert!(text.contains("where a TLB's reach ends"), "{text}");
    assert!(!levels_text(r.bandwidth_levels.as_ref().unwrap(), "GB/s").contains("TLB"));
}

#[test]
fn latency_alone_names_levels_by_its_own_curve() {
    let mut r = report();
    r.bandwidth = None;
    r.bandwidth_levels = None;
    for p in &mut r.points {
        p.bandwidth = None;
    }
    let text = render(&r);
    assert!(!text.contains("GB/s") && text.contains("L2 Unified"), "{text}");
    let row = text.lines().find(|l| l.trim_start().starts_with("256K")).unwrap();
    assert!(row.ends_with("L2 Unified"), "{row}");
}

/// The run memfabric 0.4.0 saved of `sweep`.
fn stored_sweep() -> SweepReport {
    match common::stored_v040(8) {
        memfabric_model::Document::Sweep(r) => r,
        other => panic!("run 8 is a {} document", other.command()),
    }
}

/// The terminal and the HTML report draw the boundaries the one detection found,
/// on the curve it found them in: a triad's working set per thread is three arrays.
#[test]
fn terminal_and_report_show_the_same_boundaries_on_the_same_curve() {
    let mut r = stored_sweep();
    let b = r.bandwidth.as_mut().unwrap();
    b.mix = MixInfo::of(Mix::Triad);
    for p in &mut r.points {
        let b = p.bandwidth.as_mut().unwrap();
        b.working_set_bytes_per_thread = 3 * b.array_bytes_per_thread;
    }
    let curve = memfabric_model::bandwidth_curve(&r.points);
    r.bandwidth_levels = Some(levels(curve, true, &[], 1, r.max_bytes));
    let text = render(&r);
    let html: String = memfabric_report::sections(&memfabric_model::Document::Sweep(r.clone()))
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    let levels = [&r.latency_levels, &r.bandwidth_levels];
    let boundaries: Vec<u64> = levels
        .into_iter()
        .flatten()
        .flat_map(|l| l.boundaries.iter().map(|b| b.size_bytes))
        .collect();
    assert!(!boundaries.is_empty(), "the stored curves have steps");
    for size in boundaries {
        let terminal = format!("Boundary between {} and ", format_size(size));
        assert!(text.contains(&terminal), "terminal: {terminal}\n{text}");
        // The report's mark at that size sits on a point it plots there.
        let point = format!(" = {}, ", memfabric_report::svg::human(size as f64));
        assert!(html.contains(&point), "report: no point at {point}");
    }
}
