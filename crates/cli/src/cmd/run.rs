//! `memfabric run`: the default suite, the main job.

use anyhow::Result;
use memfabric_model::{BandwidthReport, LatencyReport, Mix};
use memfabric_topo::Topology;
use serde::Serialize;

use super::common;
use crate::args::{self, BandwidthArgs, Common, HugeArg, KernelArg, LatencyArgs, PatternArg, RunArgs};
use crate::output::{print_all, this_machine, Ctx, Status};

#[derive(Serialize)]
struct RunReport {
    topology: Topology,
    latency: LatencyReport,
    bandwidth: BandwidthReport,
}

fn matrix() -> args::Selection {
    args::Selection {
        matrix: true,
        cpu_nodes: None,
        mem_nodes: None,
    }
}

pub fn run(ctx: &Ctx, a: &RunArgs) -> Result<Status> {
    let topo = this_machine()?;
    // --quick trades buffer size (still past most L3s) and sample count for time.
    let (size, samples) = if a.quick { (Some(64 << 20), 5) } else { (None, 10) };
    let latency = LatencyArgs {
        select: matrix(),
        cpu: None,
        size,
        stride: 64,
        window: None,
        pattern: PatternArg::Random,
        common: Common {
            huge_pages: HugeArg::Off,
            samples,
            cv_threshold: args::DEFAULT_CV_PERCENT,
        },
        sample_ms: if a.quick { 10 } else { 20 },
        seed: args::DEFAULT_SEED,
    };
    let bandwidth = BandwidthArgs {
        select: matrix(),
        mix: args::Mixes(vec![Mix::Read]),
        threads: None,
        per_domain: false,
        fclk: None,
        size,
        kernel: KernelArg::Auto,
        common: Common {
            huge_pages: HugeArg::Off,
            samples,
            cv_threshold: args::DEFAULT_CV_PERCENT,
        },
    };
    let report = RunReport {
        latency: super::latency::measure(ctx, &topo, &latency)?,
        bandwidth: super::bandwidth::measure(ctx, &topo, &bandwidth)?,
        topology: topo,
    };
    let failed = common::any_failed(report.latency.cells.iter().map(|c| &c.outcome))
        || common::any_failed(report.bandwidth.cells.iter().map(|c| &c.outcome));
    if ctx.json {
        ctx.print_json("run", Some(&report.topology), &report)?;
    } else {
        let text = [
            super::topology::render(&report.topology),
            super::latency::render(&report.latency),
            super::bandwidth::render(&report.bandwidth),
        ]
        .join("\n");
        print_all(&text)?;
    }
    Ok(Status::from_failures(failed))
}
