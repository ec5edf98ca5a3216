//! `memfabric bandwidth`: read bandwidth per CPU node x memory node.

use anyhow::Result;
use memfabric_measure::plan::{bandwidth_plan, BandwidthOptions};
use memfabric_measure::sys::ReadKernel;
use memfabric_measure::{bandwidth, noise};
use memfabric_model::{format_size, BandwidthReport};
use memfabric_topo::{format_cpulist, Topology};

use super::common::{self, cell_text};
use crate::args::{BandwidthArgs, KernelArg};
use crate::output::{print_all, this_machine, Ctx, Status, Usage};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &BandwidthArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    let failed = common::any_failed(report.cells.iter().map(|c| &c.outcome));
    if ctx.json {
        ctx.print_json("bandwidth", Some(&topo), &report)?;
    } else {
        print_all(&render(&report))?;
    }
    Ok(Status::from_failures(failed))
}

fn kernel(k: KernelArg) -> Result<ReadKernel> {
    let chosen = match k {
        KernelArg::Auto => return Ok(ReadKernel::detect()),
        KernelArg::Avx512 => ReadKernel::Avx512,
        KernelArg::Avx2 => ReadKernel::Avx2,
        KernelArg::Sse2 => ReadKernel::Sse2,
        KernelArg::Scalar => ReadKernel::Scalar,
    };
    if !chosen.supported() {
        return Err(Usage(format!("this CPU cannot run the {} kernel", chosen.name())).into());
    }
    Ok(chosen)
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &BandwidthArgs) -> Result<BandwidthReport> {
    let machine = common::machine(topo)?;
    let options = BandwidthOptions {
        buffer_bytes_per_thread: a.size,
        threads: a.threads,
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        kernel: kernel(a.kernel)?,
    };
    let plan =
        bandwidth_plan(&machine, &common::selection(&a.select, None), &options).map_err(common::usage)?;
    let threshold = common::threshold(a.common.cv_threshold)?;
    let mut report = bandwidth::run(&plan, &ctx.progress);
    noise::annotate_bandwidth(&mut report, topo, &noise::Conditions::read(), threshold);
    Ok(report)
}

pub fn render(r: &BandwidthReport) -> String {
    let title = format!(
        "Read bandwidth, median GB/s (10^9 B/s; {} kernel, {} per thread, huge pages: {})",
        r.kernel,
        format_size(r.buffer_bytes_per_thread),
        common::json_name(&r.huge_pages)
    );
    let cell = |c: u32, m: u32| {
        r.cells
            .iter()
            .find(|x| x.cpu_node == c && x.mem_node == m)
            .map(|x| cell_text(&x.outcome, |v| format!("{:.1}", v.bandwidth_gb_s.median)))
    };
    let mut out = common::matrix(&title, &r.cpu_nodes, &r.mem_nodes, cell);
    let mut t = Table::new(&[
        "cpu node",
        "mem node",
        "<cpus",
        "median GB/s",
        "min",
        "max",
        "cv %",
        "samples",
        "<placement",
    ]);
    for c in &r.cells {
        if let Some(v) = c.outcome.ok() {
            let mut row = vec![
                c.cpu_node.to_string(),
                c.mem_node.to_string(),
                format_cpulist(&c.cpus),
            ];
            let s = &v.bandwidth_gb_s;
            row.extend([s.median, s.min, s.max].map(|x| format!("{x:.2}")));
            row.extend([format!("{:.1}", 100.0 * s.cv), s.count.to_string()]);
            row.push(common::placement_text(&v.placement.iter().collect::<Vec<_>>()));
            t.row(row);
        }
    }
    out += "\n";
    out += &t.render();
    let label = |c: &memfabric_model::BandwidthCell| format!("node {} -> node {}", c.cpu_node, c.mem_node);
    out += &common::problems(r.cells.iter().map(|c| (label(c), &c.outcome)));
    out += &common::noise_notes(
        r.cells
            .iter()
            .map(|c| (label(c), c.outcome.ok().and_then(|m| m.noise.as_ref()))),
    );
    out += &format!("Bytes counted: {}\n", r.byte_counting);
    out
}
