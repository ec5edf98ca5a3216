//! `memfabric sweep`: latency and bandwidth against working-set size, the levels each
//! curve shows, and how they compare with the caches the topology reports.

use std::time::Duration;

use anyhow::Result;
use memfabric_measure::plan::sweep::{SweepOptions, SweepThreads};
use memfabric_measure::plan::Selection;
use memfabric_measure::sweep::Sweep;
use memfabric_measure::Request;
use memfabric_model::{format_size, Noise, SweepLevels, SweepPoint, SweepReport};
use memfabric_topo::{format_cpulist, Topology};

use super::common::{self, cell_text};
use crate::args::{SweepArgs, SweepThreadsArg, SweepWhat};
use crate::output::{this_machine, Ctx, Status};
use crate::plot::{number, plot, PlotOptions};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &SweepArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    ctx.conclude("sweep", &topo, &report, || render(&report))
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &SweepArgs) -> Result<SweepReport> {
    let options = SweepOptions {
        latency: a.what != SweepWhat::Bandwidth,
        bandwidth: a.what != SweepWhat::Latency,
        min_bytes: a.min,
        max_bytes: a.max,
        points_per_octave: a.points_per_octave,
        threads: match a.threads {
            SweepThreadsArg::Count(n) => SweepThreads::Count(n),
            SweepThreadsArg::All => SweepThreads::All,
        },
        cpu: a.cpu,
        mem_node: a.mem_node,
        huge_pages: a.huge_pages.into(),
        mix: a.mix,
        pattern: a.pattern.into(),
        samples: a.samples,
        sample_time: Duration::from_millis(a.sample_ms.max(1)),
        isa: common::isa(a.kernel)?,
        seed: a.seed,
    };
    let request = Request {
        options,
        selection: Selection::default(),
        cv_threshold_pct: a.cv_threshold,
        memory_peak: None,
    };
    common::measure::<Sweep>(ctx, topo, &request)
}

pub fn render(r: &SweepReport) -> String {
    let mut out = header(r);
    out += "\n";
    out += &points_table(r);
    let label = |p: &SweepPoint, what: &str| format!("{} {what}", format_size(p.size_bytes));
    let lat = r
        .points
        .iter()
        .filter_map(|p| Some((label(p, "latency"), &p.latency.as_ref()?.outcome)));
    let bw = r
        .points
        .iter()
        .filter_map(|p| Some((label(p, "bandwidth"), &p.bandwidth.as_ref()?.outcome)));
    out += &common::problems(lat);
    out += &common::problems(bw);
    out += &noise_note(r);
    let curves = [
        ("latency", "ns per load", &r.latency_levels, latency_curve(r)),
        ("bandwidth", "GB/s", &r.bandwidth_levels, bandwidth_curve(r)),
    ];
    for (name, unit, levels, curve) in curves {
        if let Some(l) = levels {
            out += &format!("\nLevels of the {name} curve:\n");
            out += &levels_text(l, unit);
            out += &format!(
                "\n{} ({unit}, log scale) against working set per thread; ':' marks the boundaries\n",
                capitalised(name)
            );
            out += &curve_plot(&curve, l);
        }
    }
    out
}

fn header(r: &SweepReport) -> String {
    let mut out = format!(
        "Sweep from CPU {} (node {}) over memory on node {}: {} to {} ({}), {} sizes per octave, {} samples of {} ms, huge pages: {}\n",
        r.cpu,
        r.cpu_node,
        r.mem_node,
        format_size(r.min_bytes),
        format_size(r.max_bytes),
        r.max_from,
        r.points_per_octave,
        r.samples,
        number(r.sample_ms),
        common::json_name(&r.huge_pages),
    );
    if let Some(l) = &r.latency {
        let window = l
            .window_bytes
            .map_or(String::new(), |w| format!(" in {} windows", format_size(w)));
        out += &format!(
            "Latency: {}{window} chase, {}-byte stride, on CPU {}\n",
            common::json_name(&l.pattern),
            l.stride_bytes,
            r.cpu
        );
    }
    if let Some(b) = &r.bandwidth {
        let threads = match b.cpus.len() {
            1 => format!("1 thread on CPU {}", b.cpus[0]),
            n => format!(
                "{n} threads on CPUs {}, each with its own arrays",
                format_cpulist(&b.cpus)
            ),
        };
        out += &format!(
            "Bandwidth: {} ({}), {} kernel, {threads}; {}\n",
            b.mix.mix, b.mix.description, b.kernel, b.mix.byte_counting
        );
    }
    out
}

/// One row per size: median latency, median bandwidth (all threads), and the level of
/// the latency curve (the bandwidth curve's when there is no latency).
fn points_table(r: &SweepReport) -> String {
    let mut head = vec!["size"];
    if r.latency.is_some() {
        head.push("latency ns");
    }
    if r.bandwidth.is_some() {
        head.push("bandwidth GB/s");
    }
    head.push("<level");
    let mut t = Table::new(&head);
    for p in &r.points {
        let mut row = vec![format_size(p.size_bytes)];
        if let Some(l) = &p.latency {
            row.push(cell_text(&l.outcome, |m| flagged(m.latency_ns.median, &m.noise)));
        }
        if let Some(b) = &p.bandwidth {
            row.push(cell_text(&b.outcome, |m| {
                flagged(m.bandwidth_gb_s.median, &m.noise)
            }));
        }
        row.push(level_name(r, p));
        t.row(row);
    }
    t.render()
}

/// A value, with " !" when its samples spread more than the threshold.
fn flagged(v: f64, noise: &Option<Noise>) -> String {
    let mark = if noise.is_some() { " !" } else { "" };
    format!("{}{mark}", number(v))
}

/// The plateau a point falls on: past every boundary whose last size is below it.
fn level_name(r: &SweepReport, p: &SweepPoint) -> String {
    let (levels, x) = match (&r.latency_levels, &p.latency, &r.bandwidth_levels, &p.bandwidth) {
        (Some(l), Some(pl), _, _) if pl.outcome.ok().is_some() => (l, pl.chase_bytes),
        (None, _, Some(l), Some(pb)) if pb.outcome.ok().is_some() => (l, pb.working_set_bytes_per_thread),
        _ => return String::new(),
    };
    let k = levels.boundaries.iter().filter(|b| b.size_bytes < x).count();
    levels
        .plateaus
        .get(k)
        .map(|pl| pl.level.clone())
        .unwrap_or_default()
}

fn noise_note(r: &SweepReport) -> String {
    let noises: Vec<&Noise> = r
        .points
        .iter()
        .flat_map(|p| {
            let l = p.latency.as_ref().and_then(|l| l.outcome.ok()?.noise.as_ref());
            let b = p.bandwidth.as_ref().and_then(|b| b.outcome.ok()?.noise.as_ref());
            [l, b]
        })
        .flatten()
        .collect();
    match noises.first() {
        None => String::new(),
        Some(n) => format!(
            "  ! {} value(s) whose samples spread more than {:.1} % (coefficient of variation); likely: {}\n",
            noises.len(),
            100.0 * n.threshold_cv,
            n.likely_causes.join("; ")
        ),
    }
}

/// The comparison with the topology, the plateaus and the boundaries.
fn levels_text(l: &SweepLevels, unit: &str) -> String {
    let mut t = Table::new(&[
        "<cache", "instance", "threads", "expected", "found", "ratio", "<agrees",
    ]);
    for c in &l.comparison {
        t.row(vec![
            c.level.clone(),
            format_size(c.instance_bytes),
            c.sharing_threads.to_string(),
            format_size(c.expected_bytes),
            c.detected_bytes.map_or("-".into(), format_size),
            c.ratio.map_or("-".into(), |r| format!("{r:.2}")),
            if c.agrees { "yes" } else { "no" }.into(),
        ]);
    }
    let mut out = t.render();
    let value_head = format!("median {unit}");
    let mut p = Table::new(&["from", "to", "points", &value_head, "<level"]);
    for x in &l.plateaus {
        let v = x.latency_ns.or(x.bandwidth_gb_s).map_or("-".into(), number);
        p.row(vec![
            format_size(x.from_bytes),
            format_size(x.to_bytes),
            x.points.to_string(),
            v,
            x.level.clone(),
        ]);
    }
    out += "Plateaus:\n";
    out += &p.render();
    for b in &l.boundaries {
        out += &format!(
            "Boundary between {} and {}: {:.2}x slower{}\n",
            format_size(b.size_bytes),
            format_size(b.next_size_bytes),
            b.step_ratio,
            b.level
                .as_ref()
                .map_or(String::new(), |n| format!(", end of {n}"))
        );
    }
    if l.boundaries.iter().any(|b| b.level.is_none()) {
        out += "  A boundary no cache level explains may be where a TLB's reach ends (with 4 KiB pages,\n";
        out += "  64 to 2048 entries reach 256K to 8M), a memory-side cache, or noise: compare --huge-pages thp.\n";
    }
    out
}

fn latency_curve(r: &SweepReport) -> Vec<(f64, f64)> {
    let point = |p: &SweepPoint| {
        let l = p.latency.as_ref()?;
        Some((l.chase_bytes as f64, l.outcome.ok()?.latency_ns.median))
    };
    r.points.iter().filter_map(point).collect()
}

fn bandwidth_curve(r: &SweepReport) -> Vec<(f64, f64)> {
    let point = |p: &SweepPoint| {
        let b = p.bandwidth.as_ref()?;
        Some((
            b.working_set_bytes_per_thread as f64,
            b.outcome.ok()?.bandwidth_gb_s.median,
        ))
    };
    r.points.iter().filter_map(point).collect()
}

fn curve_plot(curve: &[(f64, f64)], l: &SweepLevels) -> String {
    let marks: Vec<f64> = l.boundaries.iter().map(|b| b.size_bytes as f64).collect();
    let size = |v: f64| format_size(v.round() as u64);
    let o = PlotOptions {
        width: 64,
        height: 10,
        log_x: true,
        log_y: true,
        marks: &marks,
        x_label: &size,
        ..PlotOptions::default()
    };
    plot(curve, &o)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_analysis::sweep_levels::{levels, ExpectedLevel};
    use memfabric_model::{
        BandwidthMeasurement, HugePages, LatencyMeasurement, Mix, MixInfo, Noise, Outcome, Pattern,
        Placement, Summary, SweepBandwidthPoint, SweepBandwidthSetup, SweepLatencyPoint, SweepLatencySetup,
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
}
