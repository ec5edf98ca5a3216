//! `memfabric stream`: STREAM's four kernels, counted and validated as STREAM does.

use anyhow::Result;
use memfabric_measure::plan::{Selection, StreamOptions};
use memfabric_measure::stream::Stream;
use memfabric_measure::Request;
use memfabric_model::{format_size, Outcome, StreamReport};
use memfabric_topo::{format_cpulist, Topology};

use super::common;
use crate::args::StreamArgs;
use crate::output::{this_machine, Ctx, Status};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &StreamArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    ctx.conclude(&topo, report, |report| {
        render(report, &topo) + &super::plan::expect::for_stream(report, &topo)
    })
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &StreamArgs) -> Result<StreamReport> {
    let selection = Selection {
        cpu_nodes: a.cpu_nodes.as_ref().map(|l| l.0.clone()),
        mem_nodes: a.mem_nodes.as_ref().map(|l| l.0.clone()),
        cpu: None,
        matrix: false,
        interleave: common::interleave(&a.spread)?,
    };
    let options = StreamOptions {
        array_bytes: a.size,
        threads: a.threads,
        ntimes: a.ntimes,
        huge_pages: a.huge_pages.into(),
        isa: common::isa(a.kernel)?,
        non_temporal: a.non_temporal,
    };
    let request = Request {
        options,
        selection,
        cv_threshold_pct: a.cv_threshold,
        memory_peak: super::efficiency::given_peak(&a.peak, topo)?,
    };
    common::measure::<Stream>(ctx, topo, &request)
}

pub fn render(r: &StreamReport, topo: &Topology) -> String {
    let mut nodes = r.mem_nodes.clone();
    nodes.sort_unstable();
    nodes.dedup();
    let where_ = match &r.interleave {
        Some(i) => format!("each thread's part interleaved over nodes {}", i.label()),
        None => format!("arrays on node(s) {}", format_cpulist(&nodes)),
    };
    let array_bytes = r.array_elements * r.bytes_per_element;
    let mut out = format!(
        "STREAM kernels: {} threads on CPUs {}, {where_}\n\
         {} elements per array ({} each, {} for all three), {} passes (the first not counted), {} kernel{}, huge pages: {}\n",
        r.cpus.len(),
        format_cpulist(&r.cpus),
        r.array_elements,
        format_size(array_bytes),
        format_size(3 * array_bytes),
        r.ntimes,
        r.kernel,
        if r.non_temporal { " with streaming stores" } else { "" },
        common::json_name(&r.huge_pages)
    );
    let llc = topo.total_llc_bytes();
    if llc > 0 && array_bytes < 4 * llc {
        out += &format!(
            "  ! each array is smaller than 4x the last-level cache ({}): STREAM's rule is broken and caches serve part of the traffic\n",
            format_size(4 * llc)
        );
    }
    let m = match &r.outcome {
        Outcome::Ok(m) => m,
        Outcome::Failed { reason } => return out + &format!("FAILED: {reason}\n"),
        Outcome::Skipped { reason } => return out + &format!("skipped: {reason}\n"),
    };
    let mut t = Table::new(&[
        "<Function",
        "Best GB/s",
        "median GB/s",
        "cv %",
        "Avg time s",
        "Min time s",
        "Max time s",
        "bytes/element",
        "% of peak",
    ]);
    for f in &m.functions {
        t.row(vec![
            format!("{}:", f.name),
            format!("{:.1}", f.best_gb_s),
            format!("{:.1}", f.bandwidth_gb_s.median),
            format!("{:.1}", 100.0 * f.bandwidth_gb_s.cv),
            format!("{:.6}", f.avg_time_s),
            format!("{:.6}", f.min_time_s),
            format!("{:.6}", f.max_time_s),
            f.bytes_per_element.to_string(),
            super::efficiency::percent(f.efficiency.as_ref()),
        ]);
    }
    out += &t.render();
    out += &super::efficiency::unknown(r.peak_unknown.as_deref());
    out += &super::efficiency::over_peak(m.functions.iter().map(|f| f.efficiency.as_ref()));
    out += &common::noise_notes(m.functions.iter().map(|f| (f.name.clone(), f.noise.as_ref())));
    let v = &m.validation;
    out += &format!(
        "Solution validates: every element of a, b and c within {:e} (relative) of {:e}, {:e}, {:e}\n",
        v.epsilon, v.expected[0], v.expected[1], v.expected[2]
    );
    out += &format!(
        "Placement: {}\n",
        common::placement_text(&m.placement.iter().collect::<Vec<_>>())
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::{HugePages, StreamFunction, StreamMeasurement, StreamValidation, Summary};
    use std::path::Path;

    #[test]
    fn stream_table() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/this-machine/sys");
        let topo = Topology::read(&root).unwrap();
        let function = |name: &str, bytes: u64, t: [f64; 3]| {
            let total = (bytes << 27) as f64;
            let samples: Vec<f64> = t.iter().map(|s| total / s * 1e-9).collect();
            StreamFunction {
                name: name.into(),
                bytes_per_element: bytes,
                best_gb_s: total / t[0] * 1e-9,
                bandwidth_gb_s: Summary::of(&samples).unwrap(),
                samples_gb_s: samples,
                avg_time_s: t.iter().sum::<f64>() / 3.0,
                min_time_s: t[0],
                max_time_s: t[2],
                noise: None,
                efficiency: None,
            }
        };
        let r = StreamReport {
            kernel: "avx512".into(),
            non_temporal: false,
            huge_pages: HugePages::Off,
            array_elements: 1 << 27,
            bytes_per_element: 8,
            ntimes: 4,
            cpus: vec![0, 1],
            mem_nodes: vec![0, 0],
            outcome: Outcome::Ok(StreamMeasurement {
                functions: vec![
                    function("Copy", 16, [0.08, 0.081, 0.085]),
                    function("Scale", 16, [0.081, 0.082, 0.09]),
                    function("Add", 24, [0.11, 0.112, 0.113]),
                    function("Triad", 24, [0.111, 0.112, 0.114]),
                ],
                validation: StreamValidation {
                    passed: true,
                    epsilon: 1e-13,
                    errors: [0, 0, 0],
                    expected: memfabric_measure::stream::expected_values(4),
                },
                placement: Vec::new(),
            }),
            peak_unknown: None,
            interleave: None,
        };
        insta::assert_snapshot!(render(&r, &topo));
    }
}
