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
    ctx.conclude(&topo, report, render)
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

/// The curves levels were found in, with sizes as numbers for the plot.
fn latency_curve(r: &SweepReport) -> Vec<(f64, f64)> {
    memfabric_model::latency_curve(&r.points)
        .into_iter()
        .map(|(s, v)| (s as f64, v))
        .collect()
}

fn bandwidth_curve(r: &SweepReport) -> Vec<(f64, f64)> {
    memfabric_model::bandwidth_curve(&r.points)
        .into_iter()
        .map(|(s, v)| (s as f64, v))
        .collect()
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
mod tests;
