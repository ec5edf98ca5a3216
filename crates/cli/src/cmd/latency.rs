//! `memfabric latency`: idle latency per CPU node x memory node.

use std::time::Duration;

use anyhow::Result;
use memfabric_measure::latency::Latency;
use memfabric_measure::plan::LatencyOptions;
use memfabric_measure::Request;
use memfabric_model::tiers::DEFAULT_REL_GAP;
use memfabric_model::{format_size, LatencyReport};
use memfabric_topo::Topology;

use super::common::{self, cell_text};
use crate::args::LatencyArgs;
use crate::output::{this_machine, Ctx, Status};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &LatencyArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    ctx.conclude(&topo, report, render)
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &LatencyArgs) -> Result<LatencyReport> {
    let options = LatencyOptions {
        size_bytes: a.size,
        stride_bytes: a.stride,
        window_bytes: a.window,
        pattern: a.pattern.into(),
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        sample_time: Duration::from_millis(a.sample_ms.max(1)),
        seed: a.seed,
    };
    let request = Request {
        options,
        selection: common::selection(&a.select, a.cpu)?,
        cv_threshold_pct: a.common.cv_threshold,
        memory_peak: None,
    };
    common::measure::<Latency>(ctx, topo, &request)
}

pub fn render(r: &LatencyReport) -> String {
    let window = r
        .window_bytes
        .map_or(String::new(), |w| format!(" in {} windows", format_size(w)));
    let title = format!(
        "Idle latency, median ns per load ({}{window} chase over {}, {}-byte stride, huge pages: {}{})",
        common::json_name(&r.pattern),
        format_size(r.size_bytes),
        r.stride_bytes,
        common::json_name(&r.huge_pages),
        common::interleave_title(r.interleave.as_ref()),
    );
    let cell = |c: u32, m: u32| {
        r.cells
            .iter()
            .find(|x| x.cpu_node == c && x.mem_node == m)
            .map(|x| cell_text(&x.outcome, |v| format!("{:.1}", v.latency_ns.median)))
    };
    let mut out = common::matrix(&title, &r.cpu_nodes, &r.mem_nodes, cell);
    out += &super::firmware::render(r.firmware.as_ref());
    let mut t = Table::new(&[
        "cpu",
        "cpu node",
        "mem node",
        "median ns",
        "min ns",
        "p99 ns",
        "cv %",
        "samples",
        "<placement",
    ]);
    for c in &r.cells {
        if let Some(v) = c.outcome.ok() {
            let mut row = vec![c.cpu.to_string(), c.cpu_node.to_string(), c.mem_node.to_string()];
            row.extend(common::summary_cells(&v.latency_ns, 1));
            row.push(common::placement_text(&[&v.placement]));
            t.row(row);
        }
    }
    out += "\n";
    out += &t.render();
    out += &tiers(r);
    let label = memfabric_model::LatencyCell::label;
    out += &common::problems(r.cells.iter().map(|c| (label(c), &c.outcome)));
    out += &common::noise_notes(
        r.cells
            .iter()
            .map(|c| (label(c), c.outcome.ok().and_then(|m| m.noise.as_ref()))),
    );
    out
}

/// The matrix grouped into latency tiers (same node, same socket, other socket...),
/// when it has more than one.
fn tiers(r: &LatencyReport) -> String {
    let tiers = r.tiers(DEFAULT_REL_GAP);
    if tiers.len() < 2 {
        return String::new();
    }
    let mut t = Table::new(&["tier", "min ns", "max ns", "<cpu node -> mem node"]);
    for tier in &tiers {
        let pairs: Vec<String> = tier
            .cells
            .iter()
            .map(|c| format!("{}->{}", c.cpu_node, c.mem_node))
            .collect();
        t.row(vec![
            tier.index.to_string(),
            format!("{:.1}", tier.min_ns),
            format!("{:.1}", tier.max_ns),
            pairs.join(" "),
        ]);
    }
    format!(
        "\nLatency tiers (a step of more than {:.0} % starts a new tier):\n{}",
        100.0 * DEFAULT_REL_GAP,
        t.render()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::{HugePages, LatencyCell, LatencyMeasurement, Outcome, Pattern, Placement, Summary};

    #[test]
    fn matrix_with_tiers() {
        let ns = [[80.0, 141.0, 250.0], [139.0, 81.0, 352.0]];
        let mut cells = Vec::new();
        for c in 0..2u32 {
            for m in 0..3u32 {
                let v = ns[c as usize][m as usize];
                cells.push(LatencyCell {
                    cpu: 2 * c,
                    cpu_node: c,
                    mem_node: m,
                    outcome: Outcome::Ok(LatencyMeasurement {
                        latency_ns: Summary::of(&[v, v * 1.01, v * 0.99]).unwrap(),
                        samples_ns: vec![v, v * 1.01, v * 0.99],
                        loads_per_sample: 100_000,
                        samples_retaken: 0,
                        samples_preempted: 0,
                        cycle_verified_elements: 1 << 22,
                        placement: Placement {
                            requested_node: m,
                            page_size_bytes: 4096,
                            pages_total: 65536,
                            pages_sampled: 4096,
                            pages_on_node: 4096,
                            pages_elsewhere: Vec::new(),
                            thread_affinity: vec![2 * c],
                            verified: true,
                            method: "test".into(),
                            interleave: None,
                        },
                        noise: None,
                    }),
                });
            }
        }
        let r = LatencyReport {
            pattern: Pattern::Random,
            huge_pages: HugePages::Off,
            size_bytes: 256 << 20,
            stride_bytes: 64,
            window_bytes: None,
            seed: 1,
            cpu_nodes: vec![0, 1],
            mem_nodes: vec![0, 1, 2],
            cells,
            firmware: None,
            interleave: None,
        };
        insta::assert_snapshot!(render(&r));
    }
}
