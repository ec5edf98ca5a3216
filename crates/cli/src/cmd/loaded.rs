//! `memfabric loaded-latency`: latency of one CPU under a throttled load from the
//! others, or under a load that spreads one L3 domain at a time.

use std::time::Duration;

use anyhow::Result;
use memfabric_measure::loaded_plan::{loaded_plan, LoadedOptions};
use memfabric_measure::{loaded, noise};
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
    let failed =
        common::any_failed(std::iter::once(&report.idle).chain(report.steps.iter().map(|s| &s.latency)));
    ctx.finish_report("loaded-latency", &topo, &report, || render(&report))?;
    Ok(Status::from_failures(failed))
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &LoadedLatencyArgs) -> Result<LoadedLatencyReport> {
    let machine = common::machine(topo)?;
    let options = LoadedOptions {
        latency_cpu: a.latency_cpu,
        latency_domain: a.latency_domain,
        load_cpus: a.load_cpus.as_ref().map(|l| l.0.clone()),
        load_domain: a.load_domain,
        mem_node: a.mem_node,
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
    let plan = loaded_plan(&machine, &options).map_err(common::usage)?;
    let threshold = common::threshold(a.common.cv_threshold)?;
    let mut report = loaded::run(&plan, &ctx.progress);
    noise::annotate_loaded(&mut report, topo, &noise::Conditions::read(), threshold);
    Ok(report)
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
    let mut out = format!(
        "Loaded latency: CPU {} chases a random cycle of {} on node {}; CPUs {} load it with mix {} ({}), {} per array per thread, {} kernel, huge pages: {}\n",
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
        row.extend(latency_cells(&s.latency));
        t.row(row);
    }
    out += &t.render();
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
    out += &format!(
        "Delays: spin-loop hints after every 4 KiB of each array; one hint took {:.1} ns here.\nLoad bytes counted: {}\n",
        r.spin_ns, r.mix.byte_counting
    );
    out
}

/// Latency against the load's bandwidth, as a text plot (the idle point at 0 GB/s).
fn curve(r: &LoadedLatencyReport) -> String {
    let mut points: Vec<(f64, f64)> = r
        .steps
        .iter()
        .filter_map(|s| {
            s.latency
                .ok()
                .map(|m| (s.load_bandwidth_gb_s, m.latency_ns.median))
        })
        .collect();
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
