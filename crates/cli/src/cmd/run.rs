//! `memfabric run`: the default suite, the main job. The suite's cells are
//! [`Cell::ALL`]; each is an ordinary memfabric command line, parsed by the same
//! parser as the user's, so the suite runs exactly what a user could run by hand,
//! with the same defaults and checks.

use anyhow::Result;
use clap::Parser;
use memfabric_model::{Cell, Document, Failure, RunReport, Suite};
use memfabric_topo::Topology;

use super::common;
use crate::args::{Cli, Command, GpuCommand, RunArgs};
use crate::output::{this_machine, Ctx, Finished, Status};

mod sizes;
mod summary;

/// The command line that measures `cell` in `suite`.
fn step(cell: Cell, suite: Suite) -> &'static str {
    use Suite::*;
    match (cell, suite) {
        (Cell::Latency, Quick) => "latency --matrix --size 64M --samples 5 --sample-ms 10",
        (Cell::Latency, Default) => "latency --matrix --size 512M --samples 10",
        (Cell::Latency, Thorough) => "latency --matrix",
        (Cell::Bandwidth, Quick) => "bandwidth --matrix --size 32M --samples 5",
        (Cell::Bandwidth, Default) => "bandwidth --matrix --size 64M --samples 8",
        (Cell::Bandwidth, Thorough) => "bandwidth --matrix",
        (Cell::Mixes, Quick) => "bandwidth --mix all --size 16M --samples 3",
        (Cell::Mixes, Default) => "bandwidth --mix all --size 64M --samples 5",
        (Cell::Mixes, Thorough) => "bandwidth --mix all",
        (Cell::Interleaved, Quick) => "stream --interleave all --size 64M --ntimes 3",
        (Cell::Interleaved, Default) => "stream --interleave all --size 512M --ntimes 5",
        (Cell::Interleaved, Thorough) => "stream --interleave all",
        (Cell::AllRemote, Quick) => "bandwidth --concurrent all-remote --size 16M --samples 3",
        (Cell::AllRemote, Default) => "bandwidth --concurrent all-remote --size 64M --samples 5",
        (Cell::AllRemote, Thorough) => "bandwidth --concurrent all-remote",
        (Cell::LoadedLatency, Quick) => {
            "loaded-latency --chase-size 64M --size 16M --points 12 --samples 3 --sample-ms 5"
        }
        (Cell::LoadedLatency, Default) => {
            "loaded-latency --chase-size 512M --size 64M --samples 5 --sample-ms 10"
        }
        (Cell::LoadedLatency, Thorough) => "loaded-latency",
        (Cell::C2c, Quick) => "c2c --samples 20 --iterations 500",
        (Cell::C2c, Default) => "c2c --samples 50",
        (Cell::C2c, Thorough) => "c2c",
        (Cell::Sweep, Quick) => "sweep --max 64M --points-per-octave 2 --samples 3",
        (Cell::Sweep, Default) => "sweep --points-per-octave 4",
        (Cell::Sweep, Thorough) => "sweep",
        (Cell::GpuBandwidth, Quick) => "gpu bandwidth --kernels triad --sizes 256M --samples 3",
        (Cell::GpuBandwidth, Default) => "gpu bandwidth --kernels copy,triad --sizes 64M,1G --samples 10",
        (Cell::GpuBandwidth, Thorough) => "gpu bandwidth",
        (Cell::GpuCopy, Quick) => "gpu copy --memory pinned --engine copy-engine --size 256M --samples 3",
        (Cell::GpuCopy, Default) => "gpu copy --memory pageable,pinned-node --size 256M --samples 5",
        (Cell::GpuCopy, Thorough) => "gpu copy",
    }
}

/// Every cell's command line, with the core-to-core CPUs sampled where the machine
/// has many; the cells that need several memory nodes only where there are.
fn steps(suite: Suite, c2c_cpus: Option<&str>, memory_nodes: usize) -> Vec<(Cell, String)> {
    Cell::ALL
        .iter()
        .filter(|c| memory_nodes > 1 || !c.needs_nodes())
        .map(|&cell| {
            let mut line = step(cell, suite).to_string();
            if let (Cell::C2c, Some(cpus)) = (cell, c2c_cpus) {
                line += &format!(" --cpus {cpus}");
            }
            (cell, line)
        })
        .collect()
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

/// Runs one step's command line; its result as a document.
fn measure(ctx: &Ctx, topo: &Topology, line: &str) -> Result<Document> {
    Ok(match parse(line) {
        Command::Latency(x) => super::latency::measure(ctx, topo, &x)?.into(),
        Command::Bandwidth(x) if x.concurrent.is_some() => {
            super::bandwidth::measure_concurrent(ctx, topo, &x)?.into()
        }
        Command::Bandwidth(x) => super::bandwidth::measure(ctx, topo, &x)?.into(),
        Command::Stream(x) => super::stream::measure(ctx, topo, &x)?.into(),
        Command::LoadedLatency(x) => super::loaded::measure(ctx, topo, &x)?.into(),
        Command::C2c(x) => super::c2c::measure(ctx, topo, &x)?.into(),
        Command::Sweep(x) => super::sweep::measure(ctx, topo, &x)?.into(),
        Command::Gpu(g) => match &g.command {
            GpuCommand::Bandwidth(b) => super::gpu::measure_bandwidth(ctx, topo, g.gpu, b)?.into(),
            GpuCommand::Copy(c) => super::gpu::measure_copy(ctx, topo, g.gpu, c)?.into(),
            _ => unreachable!("suite step {line}"),
        },
        _ => unreachable!("suite step {line}"),
    })
}

/// The exit status of a finished suite, and the message naming every failed cell.
fn verdict(report: &RunReport) -> (Status, Option<String>) {
    let failed = report.failed_cells();
    if failed.is_empty() {
        return (Status::Ok, None);
    }
    let mut cells: Vec<&str> = failed.iter().map(|(c, _)| c.name()).collect();
    cells.dedup();
    let lines: Vec<String> = failed
        .iter()
        .map(|(c, Failure { cell, reason })| format!("  {}: {cell}: {reason}", c.name()))
        .collect();
    let message = format!(
        "the suite finished with failed cells in {}:\n{}",
        cells.join(", "),
        lines.join("\n")
    );
    (Status::MeasurementFailed, Some(message))
}

/// One cell's part of the text output.
fn render_part(cell: Cell, doc: &Document, topo: &Topology) -> String {
    match doc {
        Document::Latency(r) => super::latency::render(r),
        Document::Bandwidth(r) => super::bandwidth::render(r),
        Document::Stream(r) => format!(
            "{}: {}{}",
            cell.title(),
            super::stream::render(r, topo),
            super::plan::expect::for_stream(r, topo)
        ),
        Document::BandwidthConcurrent(r) => {
            super::bandwidth::render_concurrent(r) + &super::plan::expect::for_concurrent(r, topo)
        }
        Document::LoadedLatency(r) => super::loaded::render(r),
        Document::C2c(r) => super::c2c::render(r),
        Document::Sweep(r) => super::sweep::render(r),
        Document::GpuBandwidth(r) => format!("{}: {}", cell.title(), super::gpu::render_bandwidth(r)),
        Document::GpuCopy(r) => format!("{}: {}", cell.title(), super::gpu::render_copy(r)),
        other => unreachable!("suite cell {} made a {} document", cell.name(), other.command()),
    }
}

/// The headline numbers first, then the steps, the topology and each cell, with
/// repeated noise warnings folded into one line each at the end.
fn render(report: &RunReport) -> String {
    let mut parts = vec![
        format!("Steps: {}\n{}", report.steps.join("; "), time_text(report)),
        super::topology::render(&report.topology),
    ];
    parts.extend(
        report
            .parts()
            .iter()
            .map(|(c, d)| render_part(*c, d, &report.topology)),
    );
    format!(
        "memfabric run ({} suite)\n{}\n{}",
        report.suite.name(),
        summary::headline(report),
        summary::fold_noise(&parts.join("\n"))
    )
}

/// What each step took, where the run recorded it.
fn time_text(report: &RunReport) -> String {
    if report.step_seconds.len() != report.steps.len() {
        return String::new();
    }
    let each: Vec<String> = report
        .steps
        .iter()
        .zip(&report.step_seconds)
        .map(|(line, s)| {
            format!(
                "{} {s:.2} s",
                line.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    format!(
        "Time: {:.1} s in all ({})\n",
        report.step_seconds.iter().sum::<f64>(),
        each.join(", ")
    )
}

pub fn run(ctx: &Ctx, a: &RunArgs) -> Result<Status> {
    let topo = this_machine()?;
    let machine = common::machine(&topo)?;
    let suite = match (a.quick, a.thorough) {
        (true, _) => Suite::Quick,
        (_, true) => Suite::Thorough,
        _ => Suite::Default,
    };
    let sample = c2c_sample(&topo, &machine.allowed_cpus);
    let steps: Vec<(Cell, String)> = steps(suite, sample.as_deref(), topo.memory_nodes().len())
        .into_iter()
        .map(|(cell, line)| (cell, sizes::past_caches(&line, &topo)))
        .collect();
    let mut parts = Vec::new();
    let mut seconds = Vec::new();
    for (cell, line) in &steps {
        let t = std::time::Instant::now();
        parts.push((*cell, measure(ctx, &topo, line)?));
        seconds.push((t.elapsed().as_secs_f64() * 1000.0).round() / 1000.0);
    }
    let lines = steps.into_iter().map(|(_, l)| l).collect();
    let mut report = RunReport::assemble(suite, lines, topo.clone(), parts)?;
    report.step_seconds = seconds;
    let (status, message) = verdict(&report);
    let finished = Finished {
        topo: Some(&topo),
        text: if ctx.json { String::new() } else { render(&report) },
        document: report.into(),
    };
    if let Some(id) = ctx.finish(finished)? {
        if !a.no_report {
            let store =
                memfabric_store::Store::open_location(&ctx.save.as_ref().expect("run saves").location)?;
            let path = super::report::default_file(id);
            super::helpers::write_atomically(&path, &super::report::html(&store, id, None)?)?;
            eprintln!("memfabric: wrote the report {}", path.display());
        }
    }
    if let Some(m) = message {
        eprintln!("memfabric: {m}");
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_step_parses() {
        for suite in Suite::ALL {
            for (_, line) in steps(suite, Some("0-3"), 2) {
                let _ = parse(&line);
            }
        }
    }

    /// The run document memfabric 0.4.0 wrote on the development machine.
    fn stored_run() -> RunReport {
        match common::stored_v040(1) {
            Document::Run(r) => *r,
            other => panic!("run 1 is a {} document", other.command()),
        }
    }

    #[test]
    fn the_summary_comes_first_and_noise_warnings_are_folded() {
        let r = stored_run();
        let text = render(&r);
        let first: Vec<&str> = text.lines().take(12).collect();
        for name in [
            "idle memory latency, local (multichase",
            "read bandwidth, all CPUs of a node, local",
            "triad mix (STREAM Triad's bytes)",
            "latency under the heaviest load",
            "core-to-core one-way, mean of every sample of every pair",
            "GPU memory bandwidth (BabelStream): skipped: no NVIDIA driver found",
        ] {
            assert!(
                first.iter().any(|l| l.contains(name)),
                "{name} not on the first screen:\n{}",
                first.join("\n")
            );
        }
        // Every noisy result is counted once, in one line per likely cause.
        let unfolded: String = r
            .parts()
            .iter()
            .map(|(c, d)| render_part(*c, d, &r.topology))
            .collect();
        let warnings = unfolded.matches(": coefficient of variation ").count();
        assert!(warnings > 1, "the stored run has noisy results: {warnings}");
        assert_eq!(text.matches(": coefficient of variation ").count(), 0);
        let folded: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("spread more than the noise threshold"))
            .collect();
        let counted: usize = folded
            .iter()
            .map(|l| {
                l.trim_start_matches("  ! ")
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        assert_eq!(counted, warnings, "{folded:?}");
        assert!(folded.len() < warnings);
    }

    #[test]
    fn a_suite_with_every_cell_ok_exits_0() {
        assert_eq!(verdict(&stored_run()), (Status::Ok, None));
    }

    #[test]
    fn a_failed_loaded_latency_or_sweep_cell_fails_the_suite_and_is_named() {
        use memfabric_model::Outcome;
        let mut r = stored_run();
        r.loaded_latency.steps[1].latency = Outcome::Failed {
            reason: "placement not verified".into(),
        };
        let point = r.sweep.points.iter_mut().find(|p| p.bandwidth.is_some()).unwrap();
        point.bandwidth.as_mut().unwrap().outcome = Outcome::Failed {
            reason: "validation: c[7] = 2, expected 3".into(),
        };
        let (status, message) = verdict(&r);
        assert_eq!(status, Status::MeasurementFailed);
        let message = message.unwrap();
        assert!(
            message.starts_with("the suite finished with failed cells in loaded_latency, sweep:"),
            "{message}"
        );
        assert!(message.contains("loaded_latency: step 2 ("), "{message}");
        assert!(message.contains(": placement not verified"), "{message}");
        assert!(message.contains("sweep: bandwidth at "), "{message}");
        assert!(message.contains("validation: c[7] = 2, expected 3"), "{message}");
    }
}
