//! `memfabric run`: the default suite, the main job. Each step is an ordinary
//! memfabric command line, parsed by the same parser as the user's, so the suite
//! runs exactly what a user could run by hand, with the same defaults and checks.

use anyhow::Result;
use clap::Parser;
use memfabric_model::{
    BandwidthReport, C2cReport, Figure, Figures, GpuBandwidthReport, GpuCopyReport, LatencyReport,
    LoadedLatencyReport, Outcome, SweepReport,
};
use memfabric_topo::Topology;
use serde::Serialize;

use super::common;
use crate::args::{Cli, Command, GpuCommand, RunArgs};
use crate::output::{this_machine, Ctx, Status};

#[derive(Serialize)]
struct RunReport {
    /// quick, default or thorough.
    suite: String,
    /// The command line of each step, as a user would type it.
    steps: Vec<String>,
    topology: Topology,
    latency: LatencyReport,
    bandwidth: BandwidthReport,
    mixes: BandwidthReport,
    loaded_latency: LoadedLatencyReport,
    c2c: C2cReport,
    sweep: SweepReport,
    /// Skipped, with why, where there is no NVIDIA driver or GPU.
    gpu_bandwidth: GpuBandwidthReport,
    gpu_copy: GpuCopyReport,
}

impl Figures for RunReport {
    fn figures(&self) -> Vec<Figure> {
        let mut f = self.latency.figures();
        f.extend(self.bandwidth.figures());
        for mut m in self.mixes.figures() {
            m.measurement = "bandwidth-mixes".into();
            f.push(m);
        }
        f.extend(self.loaded_latency.figures());
        f.extend(self.c2c.figures());
        f.extend(self.sweep.figures());
        f.extend(self.gpu_bandwidth.figures());
        f.extend(self.gpu_copy.figures());
        f
    }
}

/// The steps of each suite, as command lines. --quick trades buffer sizes (still past
/// most L3s) and sample counts for time; --thorough takes each command's defaults,
/// which follow the machine's cache sizes.
fn suite(quick: bool, thorough: bool, c2c_cpus: Option<String>) -> Vec<String> {
    let mut steps: Vec<String> = if thorough {
        vec![
            "latency --matrix".into(),
            "bandwidth --matrix".into(),
            "bandwidth --mix all".into(),
            "loaded-latency".into(),
            "c2c".into(),
            "sweep".into(),
            "gpu bandwidth".into(),
            "gpu copy".into(),
        ]
    } else if quick {
        vec![
            "latency --matrix --size 64M --samples 5 --sample-ms 10".into(),
            "bandwidth --matrix --size 32M --samples 5".into(),
            "bandwidth --mix all --size 16M --samples 3".into(),
            "loaded-latency --chase-size 64M --size 16M --points 12 --samples 3 --sample-ms 5".into(),
            "c2c --samples 20 --iterations 500".into(),
            "sweep --max 64M --points-per-octave 2 --samples 3".into(),
            "gpu bandwidth --kernels triad --sizes 256M --samples 3".into(),
            "gpu copy --memory pinned --engine copy-engine --size 256M --samples 3".into(),
        ]
    } else {
        vec![
            "latency --matrix --size 512M --samples 10".into(),
            "bandwidth --matrix --size 64M --samples 8".into(),
            "bandwidth --mix all --size 64M --samples 5".into(),
            "loaded-latency --chase-size 512M --size 64M --samples 5 --sample-ms 10".into(),
            "c2c --samples 50".into(),
            "sweep --points-per-octave 4".into(),
            "gpu bandwidth --kernels copy,triad --sizes 64M,1G --samples 10".into(),
            "gpu copy --memory pageable,pinned-node --size 256M --samples 5".into(),
        ]
    };
    if let Some(cpus) = c2c_cpus {
        steps[4] += &format!(" --cpus {cpus}");
    }
    steps
}

/// On machines with many CPUs the core-to-core matrix is sampled: the first CPU of
/// every L3 domain, then others spread evenly, up to 32 CPUs (496 pairs each way).
fn c2c_sample(topo: &Topology, allowed: &[u32]) -> Option<String> {
    const MAX: usize = 32;
    if allowed.len() <= MAX {
        return None;
    }
    let mut pick: Vec<u32> = topo
        .l3_domains
        .iter()
        .filter_map(|d| d.cpus.iter().copied().find(|c| allowed.contains(c)))
        .take(MAX)
        .collect();
    let step = allowed.len().div_ceil(MAX);
    for &c in allowed.iter().step_by(step) {
        if pick.len() < MAX && !pick.contains(&c) {
            pick.push(c);
        }
    }
    pick.sort_unstable();
    Some(memfabric_topo::format_cpulist(&pick))
}

fn parse(step: &str) -> Command {
    let words = std::iter::once("memfabric").chain(step.split_whitespace());
    Cli::try_parse_from(words)
        .expect("suite steps are valid command lines")
        .command
}

pub fn run(ctx: &Ctx, a: &RunArgs) -> Result<Status> {
    let topo = this_machine()?;
    let machine = common::machine(&topo)?;
    let steps = suite(a.quick, a.thorough, c2c_sample(&topo, &machine.allowed_cpus));
    let mut latency = None;
    let mut bandwidth = None;
    let mut mixes = None;
    let mut loaded_latency = None;
    let mut c2c = None;
    let mut sweep = None;
    let mut gpu_bandwidth = None;
    let mut gpu_copy = None;
    for step in &steps {
        match parse(step) {
            Command::Latency(x) => latency = Some(super::latency::measure(ctx, &topo, &x)?),
            Command::Bandwidth(x) if x.select.matrix => {
                bandwidth = Some(super::bandwidth::measure(ctx, &topo, &x)?)
            }
            Command::Bandwidth(x) => mixes = Some(super::bandwidth::measure(ctx, &topo, &x)?),
            Command::LoadedLatency(x) => loaded_latency = Some(super::loaded::measure(ctx, &topo, &x)?),
            Command::C2c(x) => c2c = Some(super::c2c::measure(ctx, &topo, &x)?),
            Command::Sweep(x) => sweep = Some(super::sweep::measure(ctx, &topo, &x)?),
            Command::Gpu(g) => match &g.command {
                GpuCommand::Bandwidth(b) => {
                    gpu_bandwidth = Some(super::gpu::measure_bandwidth(ctx, g.gpu, b)?)
                }
                GpuCommand::Copy(c) => gpu_copy = Some(super::gpu::measure_copy(ctx, &topo, g.gpu, c)?),
                _ => unreachable!("suite step {step}"),
            },
            _ => unreachable!("suite step {step}"),
        }
    }
    let report = RunReport {
        suite: if a.thorough {
            "thorough"
        } else if a.quick {
            "quick"
        } else {
            "default"
        }
        .into(),
        steps,
        latency: latency.expect("suite measures latency"),
        bandwidth: bandwidth.expect("suite measures bandwidth"),
        mixes: mixes.expect("suite measures mixes"),
        loaded_latency: loaded_latency.expect("suite measures loaded latency"),
        c2c: c2c.expect("suite measures c2c"),
        sweep: sweep.expect("suite sweeps"),
        gpu_bandwidth: gpu_bandwidth.expect("suite measures the GPU"),
        gpu_copy: gpu_copy.expect("suite copies to the GPU"),
        topology: topo,
    };
    let failed = common::any_failed(report.latency.cells.iter().map(|c| &c.outcome))
        || common::any_failed(
            report
                .bandwidth
                .cells
                .iter()
                .chain(&report.mixes.cells)
                .map(|c| &c.outcome),
        )
        || common::any_failed(
            report
                .c2c
                .matrices
                .iter()
                .flat_map(|m| m.pairs.iter().map(|p| &p.outcome)),
        )
        || matches!(report.gpu_bandwidth.outcome, Outcome::Failed { .. })
        || matches!(report.gpu_copy.outcome, Outcome::Failed { .. });
    let text = || {
        [
            format!(
                "memfabric run ({} suite): {}\n",
                report.suite,
                report.steps.join("; ")
            ),
            super::topology::render(&report.topology),
            super::latency::render(&report.latency),
            super::bandwidth::render(&report.bandwidth),
            super::bandwidth::render(&report.mixes),
            super::loaded::render(&report.loaded_latency),
            super::c2c::render(&report.c2c),
            super::sweep::render(&report.sweep),
            format!(
                "GPU memory bandwidth: {}",
                super::gpu::render_bandwidth(&report.gpu_bandwidth)
            ),
            format!(
                "Host-device copies: {}",
                super::gpu::render_copy(&report.gpu_copy)
            ),
        ]
        .join("\n")
    };
    if let Some(id) = ctx.finish_report("run", &report.topology, &report, text)? {
        if !a.no_report {
            let store = memfabric_store::Store::open(&ctx.save.as_ref().expect("run saves").db)?;
            let path = super::report::default_file(id);
            super::report::write_atomically(&path, &super::report::html(&store, id, None)?)?;
            eprintln!("memfabric: wrote the report {}", path.display());
        }
    }
    Ok(Status::from_failures(failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_step_parses() {
        for (q, t) in [(true, false), (false, false), (false, true)] {
            for step in suite(q, t, Some("0-3".into())) {
                let _ = parse(&step);
            }
        }
    }
}
