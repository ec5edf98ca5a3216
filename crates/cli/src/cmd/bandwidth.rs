//! `memfabric bandwidth`: access mixes per CPU node x memory node, per thread count,
//! or per L3 domain.

use anyhow::Result;
use memfabric_measure::bandwidth::{Bandwidth, BandwidthAsk};
use memfabric_measure::domains::Domains;
use memfabric_measure::monitor::DramSource;
use memfabric_measure::plan::{BandwidthOptions, DomainOptions};
use memfabric_measure::Request;
use memfabric_model::{
    format_size, BandwidthReport, DomainScalingReport, DramCounting, DramTraffic, MixInfo,
};
use memfabric_topo::Topology;

use super::common::{self, cell_text};
use crate::args::{BandwidthArgs, DramArg, DramArgs};
use crate::output::{this_machine, Ctx, Status, Usage};
use crate::table::Table;

mod concurrent;
mod domains;

pub use concurrent::{measure_concurrent, render_concurrent};
pub use domains::render_domains;

pub fn run(ctx: &Ctx, a: &BandwidthArgs) -> Result<Status> {
    let topo = this_machine()?;
    if a.per_domain {
        let report = measure_domains(ctx, &topo, a)?;
        return ctx.conclude(&topo, report, |report| render_domains(report, &topo));
    }
    if a.concurrent.is_some() {
        let report = measure_concurrent(ctx, &topo, a)?;
        return ctx.conclude(&topo, report, |report| {
            render_concurrent(report) + &super::plan::expect::for_concurrent(report, &topo)
        });
    }
    let report = measure(ctx, &topo, a)?;
    ctx.conclude(&topo, report, render)
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &BandwidthArgs) -> Result<BandwidthReport> {
    if a.links.is_some() && topo.packages.len() <= 1 {
        eprintln!(
            "memfabric: note: --links: this machine has one socket, so no path crosses a socket link; the link peak is not used"
        );
    }
    let options = BandwidthOptions {
        mixes: a.mix.0.clone(),
        array_bytes_per_thread: a.size,
        threads: a.threads.as_ref().map(|t| t.0.clone()).unwrap_or_default(),
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        isa: common::isa(a.kernel)?,
    };
    let request = Request {
        options: BandwidthAsk {
            options,
            links: super::efficiency::links(a)?,
            dram: dram_source(&a.dram),
        },
        selection: common::selection(&a.select, None)?,
        cv_threshold_pct: a.common.cv_threshold,
        memory_peak: super::efficiency::given_peak(&a.peak, topo)?,
    };
    common::measure::<Bandwidth>(ctx, topo, &request)
}

fn measure_domains(ctx: &Ctx, topo: &Topology, a: &BandwidthArgs) -> Result<DomainScalingReport> {
    let mix = match a.mix.0.as_slice() {
        [m] => *m,
        _ => return Err(Usage("--per-domain takes one --mix".into()).into()),
    };
    if a.threads.is_some() {
        return Err(
            Usage("--per-domain runs every allowed CPU of each domain; drop --threads".into()).into(),
        );
    }
    let options = DomainOptions {
        mix,
        array_bytes_per_thread: a.size,
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        isa: common::isa(a.kernel)?,
        fclk_mhz: a.fclk,
    };
    let request = Request {
        options: (options, dram_source(&a.dram)),
        selection: common::selection(&a.select, None)?,
        cv_threshold_pct: a.common.cv_threshold,
        memory_peak: super::efficiency::given_peak(&a.peak, topo)?,
    };
    common::measure::<Domains>(ctx, topo, &request)
}

/// Where DRAM traffic is counted from, as --dram-counters asks.
fn dram_source(a: &DramArgs) -> DramSource {
    match a.dram_counters {
        DramArg::Off => DramSource::Off,
        DramArg::Auto => DramSource::Auto {
            sysfs: a.counters_sysfs.clone(),
            resctrl: a.counters_resctrl.clone(),
            proc_root: memfabric_topo::Roots::live().proc,
        },
    }
}

fn title(r: &BandwidthReport) -> String {
    format!(
        "Bandwidth, median GB/s (10^9 B/s of bytes read + written; {} kernel, {} per array per thread, huge pages: {}{})",
        r.kernel,
        format_size(r.array_bytes_per_thread),
        common::json_name(&r.huge_pages),
        common::interleave_title(r.interleave.as_ref())
    )
}

/// A recorded caveat as the line the terminal shows.
pub fn caveat(c: Option<&str>) -> String {
    c.map_or(String::new(), |c| format!("  ! {c}\n"))
}

pub fn render(r: &BandwidthReport) -> String {
    let mut out = String::new();
    let square = r.cpu_nodes.len() > 1 || r.mem_nodes.len() > 1;
    if square && r.thread_counts.len() <= 1 {
        for info in &r.mixes {
            let cell = |c: u32, m: u32| {
                r.cells
                    .iter()
                    .find(|x| x.mix == info.mix && x.cpu_node == c && x.mem_node == m)
                    .map(|x| cell_text(&x.outcome, |v| format!("{:.1}", v.bandwidth_gb_s.median)))
            };
            let t = format!("{}, mix {}", title(r), info.mix);
            out += &common::matrix(&t, &r.cpu_nodes, &r.mem_nodes, cell);
            out += "\n";
        }
    } else {
        out += &title(r);
        out += "\n";
    }
    out += &cells_table(r);
    out += &caveat(r.cache_caveat.as_deref());
    out += &super::efficiency::render(r);
    out += &super::efficiency::unknown(r.peak_unknown.as_deref());
    out += &super::firmware::render(r.firmware.as_ref());
    out += &common::problems(r.cells.iter().map(|c| (c.label(), &c.outcome)));
    out += &common::noise_notes(
        r.cells
            .iter()
            .map(|c| (c.label(), c.outcome.ok().and_then(|m| m.noise.as_ref()))),
    );
    out += &render_dram(
        &r.dram_counting,
        r.cells
            .iter()
            .map(|c| (c.label(), c.outcome.ok().and_then(|m| m.dram.as_ref()))),
    );
    out += &byte_counting(&r.mixes);
    out
}

/// One row per cell: every mix, thread count and node pair.
fn cells_table(r: &BandwidthReport) -> String {
    let mut t = Table::new(&[
        "<mix",
        "threads",
        "cpu node",
        "mem node",
        "median GB/s",
        "min",
        "max",
        "cv %",
        "samples",
        "<checked",
        "<placement",
    ]);
    for c in &r.cells {
        let mut row = vec![
            c.mix.to_string(),
            c.cpus.len().to_string(),
            c.cpu_node.to_string(),
            c.mem_node.to_string(),
        ];
        match c.outcome.ok() {
            Some(v) => {
                row.extend(gb_s_cells(v));
                row.push(checked_text(v.validated_elements));
                row.push(common::placement_text(&v.placement.iter().collect::<Vec<_>>()));
            }
            None => row.push(cell_text(&c.outcome, |_| String::new())),
        }
        t.row(row);
    }
    t.render()
}

fn gb_s_cells(v: &memfabric_model::BandwidthMeasurement) -> Vec<String> {
    let s = &v.bandwidth_gb_s;
    let mut row: Vec<String> = [s.median, s.min, s.max]
        .iter()
        .map(|x| format!("{x:.2}"))
        .collect();
    row.extend([format!("{:.1}", 100.0 * s.cv), s.count.to_string()]);
    row
}

fn checked_text(n: u64) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{n} ok")
    }
}

fn byte_counting(mixes: &[MixInfo]) -> String {
    let mut out = String::from("Bytes counted:\n");
    for m in mixes {
        out += &format!(
            "  {:<8} {}: {}\n",
            m.mix.to_string(),
            m.description,
            m.byte_counting
        );
    }
    out
}

/// The DRAM traffic the counters saw in each measurement beside the program's
/// bytes, or one line on why it was not counted.
fn render_dram<'a>(
    counting: &DramCounting,
    rows: impl Iterator<Item = (String, Option<&'a DramTraffic>)>,
) -> String {
    let Some(source) = &counting.source else {
        return match counting.reason.starts_with("no memory-traffic counters") {
            _ if counting.reason.is_empty() => String::new(),
            true => "DRAM traffic not counted: no memory-controller counters here \
                     (`memfabric monitor` says what is missing and how to enable it)\n"
                .into(),
            false => format!("DRAM traffic {}\n", counting.reason),
        };
    };
    let mut t = Table::new(&[
        "<measurement",
        "read GB",
        "write GB",
        "total GB",
        "program GB",
        "ratio",
        "read ratio",
        "write ratio",
        "GB/s",
    ]);
    for (label, d) in rows {
        let Some(d) = d else {
            t.row(vec![label, "not counted".into()]);
            continue;
        };
        let mut row = vec![label];
        row.extend(memfabric_report::dram_cells(d));
        row.push(format!("{:.2}", d.system.total_gb_s));
        t.row(row);
    }
    let mut out = format!(
        "\nDRAM traffic over the timed samples, counted by {source} (the whole machine's; ratio = counted / program bytes):\n"
    );
    out += &t.render();
    if counting.reason.contains("counting failed") {
        out += &format!("{}\n", counting.reason);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::{
        BandwidthCell, BandwidthMeasurement, DomainBandwidth, HugePages, Mix, Outcome, Placement, Summary,
    };
    use std::path::Path;

    fn placement(node: u32, cpu: u32) -> Placement {
        Placement {
            requested_node: node,
            page_size_bytes: 4096,
            pages_total: 1024,
            pages_sampled: 1024,
            pages_on_node: 1024,
            pages_elsewhere: Vec::new(),
            thread_affinity: vec![cpu],
            verified: true,
            method: "test".into(),
            interleave: None,
        }
    }

    fn measured(samples: &[f64], cpus: &[u32], node: u32, checked: u64) -> Outcome<BandwidthMeasurement> {
        Outcome::Ok(BandwidthMeasurement {
            bandwidth_gb_s: Summary::of(samples).unwrap(),
            samples_gb_s: samples.to_vec(),
            bytes_per_sample: 1 << 30,
            validated_elements: checked,
            placement: cpus.iter().map(|&c| placement(node, c)).collect(),
            noise: None,
            dram: None,
        })
    }

    #[test]
    fn mixes_and_threads_table() {
        let mut cells = Vec::new();
        for (k, mix) in [Mix::Read, Mix::TriadNt].into_iter().enumerate() {
            for cpus in [vec![0], vec![0, 1]] {
                let base = 10.0 * (k + cpus.len()) as f64;
                let checked = if mix == Mix::Read {
                    0
                } else {
                    2048 * cpus.len() as u64
                };
                cells.push(BandwidthCell {
                    mix,
                    cpu_node: 0,
                    mem_node: 0,
                    outcome: measured(&[base, base + 0.5, base - 0.25], &cpus, 0, checked),
                    cpus,
                    efficiency: None,
                });
            }
        }
        cells[3].outcome = Outcome::Failed {
            reason: "validation failed: 1 of 4096 elements of the written array are wrong".into(),
        };
        let r = BandwidthReport {
            kernel: "avx2".into(),
            huge_pages: HugePages::Off,
            array_bytes_per_thread: 16 << 10,
            mixes: vec![MixInfo::of(Mix::Read), MixInfo::of(Mix::TriadNt)],
            cpu_nodes: vec![0],
            mem_nodes: vec![0],
            thread_counts: vec![1, 2],
            cells,
            firmware: None,
            dram_counting: Default::default(),
            peak_unknown: None,
            cache_caveat: None,
            interleave: None,
        };
        insta::assert_snapshot!(render(&r));
    }

    /// Copy's regular stores read each destination line before writing it; copy-nt's
    /// streaming stores do not: the counters show it as a read ratio of 2 against 1.
    #[test]
    fn dram_traffic_beside_the_programs_bytes() {
        let gib = 1u64 << 30;
        let traffic = |read: u64, write: u64| {
            let mut system = memfabric_model::Traffic::empty("system", None);
            system.read_bytes = Some(read);
            system.write_bytes = Some(write);
            system.total_bytes = read + write;
            system.rate(1.0);
            DramTraffic {
                source: "intel-imc".into(),
                rounds: 4,
                window_s: 1.0,
                sockets: Vec::new(),
                system,
                program_read_bytes: 4 * gib,
                program_write_bytes: 4 * gib,
                ratio: None,
                read_ratio: None,
                write_ratio: None,
            }
            .with_ratios()
        };
        let cell = |mix, dram: Option<DramTraffic>| {
            let mut outcome = measured(&[20.0, 20.5, 19.5], &[0, 1], 0, 2048);
            if let Outcome::Ok(m) = &mut outcome {
                m.dram = dram;
            }
            BandwidthCell {
                mix,
                cpu_node: 0,
                mem_node: 0,
                cpus: vec![0, 1],
                outcome,
                efficiency: None,
            }
        };
        let mut r = BandwidthReport {
            kernel: "avx2".into(),
            huge_pages: HugePages::Off,
            array_bytes_per_thread: 64 << 20,
            mixes: vec![MixInfo::of(Mix::Copy), MixInfo::of(Mix::CopyNt)],
            cpu_nodes: vec![0],
            mem_nodes: vec![0],
            thread_counts: Vec::new(),
            cells: vec![
                cell(Mix::Copy, Some(traffic(8 * gib + gib / 10, 4 * gib))),
                cell(Mix::CopyNt, None),
            ],
            firmware: None,
            dram_counting: DramCounting {
                source: Some("intel-imc".into()),
                reason: "intel-imc: the first available".into(),
            },
            peak_unknown: None,
            cache_caveat: None,
            interleave: None,
        };
        let counted = render(&r);
        assert!(counted.contains("2.02"), "copy's read ratio: {counted}");
        insta::assert_snapshot!(counted);
        r.dram_counting = DramCounting {
            source: None,
            reason: "no memory-traffic counters: no memory-controller PMU".into(),
        };
        let none = render(&r);
        assert!(none.contains("DRAM traffic not counted: no memory-controller counters here"));
        assert!(!none.contains("program GB"));
    }

    #[test]
    fn matrix_per_mix() {
        let mut cells = Vec::new();
        for mix in [Mix::Copy, Mix::Rmw] {
            for c in 0..2 {
                for m in 0..3 {
                    let v = 20.0 - 5.0 * m as f64 + if mix == Mix::Rmw { 1.0 } else { 0.0 };
                    cells.push(BandwidthCell {
                        mix,
                        cpu_node: c,
                        mem_node: m,
                        cpus: vec![2 * c, 2 * c + 1],
                        outcome: measured(&[v, v], &[2 * c, 2 * c + 1], m, 4096),
                        efficiency: None,
                    });
                }
            }
        }
        let r = BandwidthReport {
            kernel: "avx512".into(),
            huge_pages: HugePages::Huge2M,
            array_bytes_per_thread: 64 << 20,
            mixes: vec![MixInfo::of(Mix::Copy), MixInfo::of(Mix::Rmw)],
            cpu_nodes: vec![0, 1],
            mem_nodes: vec![0, 1, 2],
            thread_counts: Vec::new(),
            cells,
            firmware: None,
            dram_counting: Default::default(),
            peak_unknown: None,
            cache_caveat: None,
            interleave: None,
        };
        insta::assert_snapshot!(render(&r));
    }

    #[test]
    fn per_domain_tables() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/epyc7601-2s/sys");
        let topo = Topology::read(&root).unwrap();
        let step = |domains: Vec<usize>, v: f64| {
            let cpus: Vec<u32> = domains
                .iter()
                .flat_map(|&d| topo.l3_domains[d].cpus.clone())
                .collect();
            DomainBandwidth {
                mem_nodes: cpus.iter().map(|&c| topo.cpu(c).unwrap().node.unwrap()).collect(),
                outcome: measured(&[v, v], &cpus, 0, 0),
                bytes_per_fclk: Some(v * 1e3 / 1333.0),
                efficiency: Some(memfabric_model::Efficiency {
                    peak_gb_s: 170.6,
                    fraction: v / 170.6,
                    basis: "node 0: socket 0: 8 channels x 2666 MT/s x 8 B (SMBIOS)".into(),
                }),
                domains,
                cpus,
            }
        };
        let r = DomainScalingReport {
            mix: MixInfo::of(Mix::Read),
            kernel: "avx2".into(),
            huge_pages: HugePages::Off,
            array_bytes_per_thread: 64 << 20,
            fclk_mhz: Some(1333.0),
            alone: vec![step(vec![0], 28.0), step(vec![1], 27.5), step(vec![2], 28.2)],
            cumulative: vec![
                step(vec![0], 28.0),
                step(vec![0, 1], 36.0),
                step(vec![0, 1, 2], 55.0),
            ],
            dram_counting: Default::default(),
            peak_unknown: None,
        };
        insta::assert_snapshot!(render_domains(&r, &topo));
    }
}
