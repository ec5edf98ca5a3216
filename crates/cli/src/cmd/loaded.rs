//! `memfabric loaded-latency`: latency of one CPU under a throttled load from the
//! others, or under a load that spreads one L3 domain at a time.

use std::time::Duration;

use anyhow::Result;
use memfabric_measure::loaded::LoadedLatency;
use memfabric_measure::plan::loaded::LoadedOptions;
use memfabric_measure::plan::Selection;
use memfabric_measure::Request;
use memfabric_model::{format_size, LatencyMeasurement, LoadedLatencyReport, Outcome};
use memfabric_topo::{format_cpulist, Topology};

use super::common;
use crate::args::{self, LoadedLatencyArgs};
use crate::output::{this_machine, Ctx, Status};
use crate::plot::{plot, PlotOptions};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &LoadedLatencyArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    ctx.conclude(&topo, report, render)
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &LoadedLatencyArgs) -> Result<LoadedLatencyReport> {
    let options = LoadedOptions {
        latency_cpu: a.latency_cpu,
        latency_domain: a.latency_domain,
        load_cpus: a.load_cpus.as_ref().map(|l| l.0.clone()),
        load_domain: a.load_domain,
        mem_node: a.mem_node,
        load_nodes: a.load_nodes.as_ref().map(|l| l.0.clone()),
        load_mem_nodes: a.load_mem_nodes.as_ref().map(|l| l.0.clone()),
        mix: a.mix,
        spread: a.spread,
        points: a.points,
        chase_bytes: a.chase_size,
        array_bytes_per_thread: a.size,
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        sample_time: Duration::from_millis(a.sample_ms.max(1)),
        isa: common::isa(a.kernel)?,
        seed: args::DEFAULT_SEED,
    };
    let request = Request {
        options,
        selection: Selection::default(),
        cv_threshold_pct: a.common.cv_threshold,
        memory_peak: None,
    };
    common::measure::<LoadedLatency>(ctx, topo, &request)
}

fn latency_cells(o: &Outcome<LatencyMeasurement>) -> Vec<String> {
    match o.ok() {
        Some(m) => {
            let s = &m.latency_ns;
            vec![
                format!("{:.1}", s.median),
                format!("{:.1}", s.min),
                format!("{:.1}", s.p99),
                format!("{:.1}", 100.0 * s.cv),
            ]
        }
        None => vec![common::cell_text(o, |_| String::new())],
    }
}

pub fn render(r: &LoadedLatencyReport) -> String {
    let mut mem: Vec<u32> = r.load_mem_nodes.clone();
    mem.sort_unstable();
    mem.dedup();
    let load_where = if mem.is_empty() {
        "it".to_string()
    } else {
        format!("node(s) {}", format_cpulist(&mem))
    };
    let mut out = format!(
        "Loaded latency: CPU {} chases a random cycle of {} on node {}; CPUs {} load {load_where} with mix {} ({}), {} per array per thread, {} kernel, huge pages: {}\n",
        r.latency_cpu,
        format_size(r.chase_size_bytes),
        r.mem_node,
        format_cpulist(&r.load_cpus),
        r.mix.mix,
        r.mix.description,
        format_size(r.array_bytes_per_thread),
        r.kernel,
        common::json_name(&r.huge_pages)
    );
    out += &super::bandwidth::caveat(r.cache_caveat.as_deref());
    out += &steps_table(r);
    out += &super::efficiency::over_peak(r.steps.iter().map(|s| s.efficiency.as_ref()));
    out += &curve(r);
    let mut labelled = vec![("idle".to_string(), &r.idle)];
    labelled.extend(
        r.steps
            .iter()
            .enumerate()
            .map(|(k, s)| (format!("step {}", k + 1), &s.latency)),
    );
    out += &common::problems(labelled.iter().map(|(l, o)| (l.clone(), *o)));
    out += &common::noise_notes(
        labelled
            .iter()
            .map(|(l, o)| (l.clone(), o.ok().and_then(|m| m.noise.as_ref()))),
    );
    // Spread steps add L3 domains at full speed: no delay applies to them.
    if !r.spread {
        out += &format!(
            "Delays: spin-loop hints after every 4 KiB of each array; one hint took {:.1} ns here.\n",
            r.spin_ns
        );
    }
    out += &format!("Load bytes counted: {}\n", r.mix.byte_counting);
    out
}

/// The idle point and every step: its load, the latency and its share of the peak.
fn steps_table(r: &LoadedLatencyReport) -> String {
    let mut t = if r.spread {
        Table::new(&[
            "<load",
            "load cpus",
            "load GB/s",
            "latency ns",
            "min",
            "p99",
            "cv %",
        ])
    } else {
        Table::new(&[
            "<delay (spins)",
            "delay ns",
            "load GB/s",
            "latency ns",
            "min",
            "p99",
            "cv %",
        ])
    };
    // The load's share of the memory's peak, where SMBIOS gives one: a last column.
    let peaks = r.steps.iter().any(|s| s.efficiency.is_some());
    if peaks {
        t = t.with_column("load % of peak");
    }
    let mut idle = vec!["idle".to_string(), "-".into(), "0.00".into()];
    idle.extend(latency_cells(&r.idle));
    t.row(idle);
    for s in &r.steps {
        let mut row = if r.spread {
            let names: Vec<String> = s.domains.iter().map(|d| format!("L3 {d}")).collect();
            vec![names.join("+"), format_cpulist(&s.load_cpus)]
        } else {
            vec![s.delay_spins.to_string(), format!("{:.0}", s.delay_ns)]
        };
        row.push(format!("{:.2}", s.load_bandwidth_gb_s));
        let mut cells = latency_cells(&s.latency);
        cells.resize(4, String::new());
        row.extend(cells);
        if peaks {
            row.push(super::efficiency::percent(s.efficiency.as_ref()));
        }
        t.row(row);
    }
    t.render()
}

/// Latency against the load's bandwidth, as a text plot (the idle point at 0 GB/s).
fn curve(r: &LoadedLatencyReport) -> String {
    let mut points = r.curve();
    if let Some(m) = r.idle.ok() {
        points.push((0.0, m.latency_ns.median));
    }
    if points.len() < 2 {
        return String::new();
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let o = PlotOptions {
        width: 60,
        height: 10,
        ..PlotOptions::default()
    };
    format!(
        "\nLatency (ns, up) against load bandwidth (GB/s, across):\n{}",
        plot(&points, &o)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::{Efficiency, HugePages, LoadStep, Mix, MixInfo, Pattern, Placement, Summary};

    fn latency(ns: f64) -> Outcome<LatencyMeasurement> {
        Outcome::Ok(LatencyMeasurement {
            latency_ns: Summary::of(&[ns, ns * 1.02]).unwrap(),
            samples_ns: vec![ns, ns * 1.02],
            loads_per_sample: 4096,
            samples_retaken: 0,
            samples_preempted: 0,
            cycle_verified_elements: 1 << 20,
            placement: Placement {
                requested_node: 0,
                page_size_bytes: 4096,
                pages_total: 16384,
                pages_sampled: 4096,
                pages_on_node: 4096,
                pages_elsewhere: Vec::new(),
                thread_affinity: vec![0],
                verified: true,
                method: "test".into(),
                interleave: None,
            },
            noise: None,
        })
    }

    fn report(spread: bool, steps: Vec<LoadStep>) -> LoadedLatencyReport {
        LoadedLatencyReport {
            latency_cpu: 0,
            latency_domain: Some(0),
            mem_node: 0,
            load_cpus: (1..16).collect(),
            load_mem_nodes: Vec::new(),
            mix: MixInfo::of(Mix::Read),
            kernel: "avx512".into(),
            huge_pages: HugePages::Off,
            array_bytes_per_thread: 128 << 20,
            chase_size_bytes: 1 << 30,
            pattern: Pattern::Random,
            spin_ns: 20.0,
            spread,
            idle: latency(190.0),
            steps,
            cache_caveat: None,
        }
    }

    #[test]
    fn spread_mode_prints_no_delay_line() {
        let step = |domains: Vec<usize>, gbs: f64| LoadStep {
            delay_spins: 0,
            delay_ns: 0.0,
            load_cpus: domains
                .iter()
                .flat_map(|&d| [2 * d as u32 + 2, 2 * d as u32 + 3])
                .collect(),
            domains,
            load_bandwidth_gb_s: gbs,
            latency: latency(200.0 + gbs),
            efficiency: None,
        };
        let text = render(&report(true, vec![step(vec![1], 40.0), step(vec![1, 2], 75.0)]));
        assert!(!text.contains("Delays:") && !text.contains("spin-loop"), "{text}");
        assert!(
            text.contains("L3 1+L3 2") && text.contains("Load bytes counted: "),
            "{text}"
        );
        let throttled = render(&report(false, vec![step(vec![], 40.0)]));
        assert!(throttled.contains("Delays: spin-loop hints"), "{throttled}");
    }

    #[test]
    fn curve_table_and_share_of_peak() {
        let steps = [
            (0u64, 150.0, 270.0),
            (4, 90.0, 230.0),
            (64, 30.0, 205.0),
            (1024, 2.0, 192.0),
        ]
        .iter()
        .map(|&(spins, gbs, ns)| LoadStep {
            delay_spins: spins,
            delay_ns: spins as f64 * 20.0,
            domains: Vec::new(),
            load_cpus: (1..16).collect(),
            load_bandwidth_gb_s: gbs,
            latency: latency(ns),
            efficiency: Some(Efficiency {
                peak_gb_s: 307.2,
                fraction: gbs / 307.2,
                basis: "node 0: 8 channels x 4800 MT/s x 8 B".into(),
            }),
        })
        .collect();
        insta::assert_snapshot!(render(&report(false, steps)));
    }
}
