//! `memfabric latency`: idle latency per CPU node x memory node.

use std::time::Duration;

use anyhow::Result;
use memfabric_measure::plan::{latency_plan, LatencyOptions};
use memfabric_measure::{latency, noise};
use memfabric_model::{format_size, LatencyReport};
use memfabric_topo::Topology;

use super::common::{self, cell_text};
use crate::args::LatencyArgs;
use crate::output::{print_all, this_machine, Ctx, Status};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &LatencyArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    let failed = common::any_failed(report.cells.iter().map(|c| &c.outcome));
    if ctx.json {
        ctx.print_json("latency", Some(&topo), &report)?;
    } else {
        print_all(&render(&report))?;
    }
    Ok(Status::from_failures(failed))
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &LatencyArgs) -> Result<LatencyReport> {
    let machine = common::machine(topo)?;
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
    let plan =
        latency_plan(&machine, &common::selection(&a.select, a.cpu), &options).map_err(common::usage)?;
    let threshold = common::threshold(a.common.cv_threshold)?;
    let mut report = latency::run(&plan, &ctx.progress);
    noise::annotate_latency(&mut report, topo, &noise::Conditions::read(), threshold);
    Ok(report)
}

pub fn render(r: &LatencyReport) -> String {
    let window = r
        .window_bytes
        .map_or(String::new(), |w| format!(" in {} windows", format_size(w)));
    let title = format!(
        "Idle latency, median ns per load ({}{window} chase over {}, {}-byte stride, huge pages: {})",
        common::json_name(&r.pattern),
        format_size(r.size_bytes),
        r.stride_bytes,
        common::json_name(&r.huge_pages),
    );
    let cell = |c: u32, m: u32| {
        r.cells
            .iter()
            .find(|x| x.cpu_node == c && x.mem_node == m)
            .map(|x| cell_text(&x.outcome, |v| format!("{:.1}", v.latency_ns.median)))
    };
    let mut out = common::matrix(&title, &r.cpu_nodes, &r.mem_nodes, cell);
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
    let label = |c: &memfabric_model::LatencyCell| format!("cpu {} -> node {}", c.cpu, c.mem_node);
    out += &common::problems(r.cells.iter().map(|c| (label(c), &c.outcome)));
    out += &common::noise_notes(
        r.cells
            .iter()
            .map(|c| (label(c), c.outcome.ok().and_then(|m| m.noise.as_ref()))),
    );
    out
}
