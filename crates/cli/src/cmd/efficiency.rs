//! Each bandwidth cell's share of its path's theoretical peak, from this
//! machine's DIMMs: set after measuring, shown beside the measured table.

use memfabric_analysis::theory;
use memfabric_model::{BandwidthCell, BandwidthReport, Efficiency, LinkPeak, MemoryPeak};
use memfabric_topo::Topology;

use super::common;
use crate::args::{BandwidthArgs, PeakArgs};
use crate::output::Usage;
use crate::table::Table;

const HOW: &str =
    "median / peak; peak: populated channels x configured MT/s x data width, its source in brackets below";

/// "62.0" for a share, "-" for none: the column the tables add.
pub fn percent(e: Option<&Efficiency>) -> String {
    e.map_or("-".into(), |e| format!("{:.1}", 100.0 * e.fraction))
}

/// The memory peak --channels/--mts/--bus-bits or --machine describe (None: read
/// SMBIOS), refusing nonsense as `theory` does.
pub fn given_peak(a: &PeakArgs, topo: &Topology) -> anyhow::Result<Option<MemoryPeak>> {
    let platform = match (&a.machine, a.channels) {
        (Some(path), _) => {
            let named = |e: theory::TheoryError| Usage(format!("machine file {}: {e}", path.display()));
            super::theory::read_machine_file(path)?
                .validate(&theory::FILE_NAMES)
                .map_err(named)?
        }
        (None, Some(_)) => theory::Description {
            name: None,
            sockets: Some(topo.packages.len().max(1) as u32),
            channels_per_socket: a.channels,
            mts: a.mts,
            bus_bits: a.bus_bits,
            links: None,
            lanes: None,
            gbps: None,
        }
        .validate(&theory::FLAG_NAMES)
        .map_err(|e| Usage(e.to_string()))?,
        (None, None) => return Ok(None),
    };
    match &platform.memory {
        Some(d) => Ok(Some(theory::dram_peak(d))),
        None => Err(Usage("--machine: the machine file describes no memory".into()).into()),
    }
}

/// Why there is no "% of peak", where there is none, with how to supply the peak.
pub fn unknown(why: Option<&str>) -> String {
    why.map_or(String::new(), |w| {
        format!("% of peak not known: {w}; give the memory with --channels N --mts M (or --machine FILE)\n")
    })
}

/// A warning where a figure is above 100 % of its peak: the peak's model does not fit.
pub fn over_peak<'a>(shares: impl IntoIterator<Item = Option<&'a Efficiency>>) -> String {
    let over = shares.into_iter().flatten().filter(|e| e.fraction > 1.0).count();
    if over == 0 {
        return String::new();
    }
    format!(
        "  ! {over} figure(s) above 100 % of the theoretical peak: the peak's model does not fit this machine (check --links/--lanes/--gbps for paths across sockets, --channels/--mts or the DIMMs SMBIOS lists); do not trust these percentages\n"
    )
}

/// The socket links --links, --lanes and --gbps describe, refusing nonsense.
pub fn links(a: &BandwidthArgs) -> anyhow::Result<Option<LinkPeak>> {
    let (Some(links), Some(lanes), Some(gbps)) = (a.links, a.lanes, a.gbps) else {
        return Ok(None);
    };
    if links == 0 || lanes == 0 || !(gbps.is_finite() && gbps > 0.0) {
        return Err(Usage(format!(
            "--links and --lanes must be at least 1 and --gbps a positive number, not {links}, {lanes}, {gbps}"
        ))
        .into());
    }
    Ok(Some(theory::link_peak(&theory::LinkSpec { links, lanes, gbps })))
}

fn pct(c: &BandwidthCell) -> Option<String> {
    c.efficiency
        .as_ref()
        .map(|e| format!("{:.1}", 100.0 * e.fraction))
}

/// Each cell's share of its peak: a matrix per mix where the report is one,
/// else a table; then what each peak is. Empty when no cell has a peak.
pub fn render(r: &BandwidthReport) -> String {
    if r.cells.iter().all(|c| c.efficiency.is_none()) {
        return String::new();
    }
    let square = r.cpu_nodes.len() > 1 || r.mem_nodes.len() > 1;
    let shares = if square && r.thread_counts.len() <= 1 {
        matrices(r)
    } else {
        table(r)
    };
    shares + &bases(r) + &over_peak(r.cells.iter().map(|c| c.efficiency.as_ref()))
}

fn matrices(r: &BandwidthReport) -> String {
    let mut out = String::new();
    for info in &r.mixes {
        let cell = |c: u32, m: u32| {
            let x = r
                .cells
                .iter()
                .find(|x| x.mix == info.mix && x.cpu_node == c && x.mem_node == m)?;
            pct(x)
        };
        let title = format!("\nShare of the theoretical peak, mix {}, % ({HOW})", info.mix);
        out += &common::matrix(&title, &r.cpu_nodes, &r.mem_nodes, cell);
    }
    out
}

fn table(r: &BandwidthReport) -> String {
    let mut t = Table::new(&[
        "<mix",
        "threads",
        "cpu node",
        "mem node",
        "median GB/s",
        "peak GB/s",
        "% of peak",
    ]);
    for c in &r.cells {
        let (Some(e), Some(m)) = (&c.efficiency, c.outcome.ok()) else {
            continue;
        };
        t.row(vec![
            c.mix.to_string(),
            c.cpus.len().to_string(),
            c.cpu_node.to_string(),
            c.mem_node.to_string(),
            format!("{:.2}", m.bandwidth_gb_s.median),
            theory::num(e.peak_gb_s),
            pct(c).unwrap_or_default(),
        ]);
    }
    format!("\nShare of the theoretical peak ({HOW})\n{}", t.render())
}

/// One line per memory node's own peak, then what crossing sockets adds.
fn bases(r: &BandwidthReport) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut across: Vec<String> = Vec::new();
    for c in &r.cells {
        let Some(e) = &c.efficiency else { continue };
        let (own, link) = match e.basis.split_once("; across sockets") {
            Some((own, link)) => (own, Some(format!("  across sockets{link}\n"))),
            None if e.basis.starts_with("across sockets") => continue,
            None => (e.basis.as_str(), None),
        };
        let line = format!(
            "  node {}: {} GB/s, {own}\n",
            c.mem_node,
            theory::num(e.peak_gb_s)
        );
        if !seen.contains(&line) {
            seen.push(line);
        }
        across.extend(link.filter(|l| !across.contains(l)));
    }
    seen.concat() + &across.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_above_100_percent_is_flagged() {
        let e = |fraction: f64| Efficiency {
            peak_gb_s: 100.0,
            fraction,
            basis: "test".into(),
        };
        let (under, over) = (e(0.93), e(1.2));
        assert_eq!(over_peak([Some(&under), None]), "");
        let warning = over_peak([Some(&under), Some(&over), Some(&over)]);
        assert!(
            warning.starts_with("  ! 2 figure(s) above 100 % of the theoretical peak"),
            "{warning}"
        );
    }
    use memfabric_model::Outcome;
    use memfabric_topo::{group_dimms, read_memory_devices, Topology};
    use std::path::Path;

    /// A 4-node SNC2 matrix with 8 DDR5 channels per socket: each node's share
    /// of the peak, and the firmware's figures beside the measured ones.
    #[test]
    fn bandwidth_with_peaks_and_firmware() {
        use memfabric_model::{BandwidthCell, BandwidthMeasurement, HugePages, Mix, MixInfo, Summary};
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/snc-2s/sys");
        let mut topo = Topology::read(&root).unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/smbios/ddr5-2s-16dimm");
        topo.memory_devices = read_memory_devices(&dir);
        group_dimms(&mut topo.memory_devices.dimms, 2);
        let socket = |n: u32| n / 2;
        let mut cells = Vec::new();
        for c in 0..4 {
            for m in 0..4 {
                let v = if c == m {
                    110.0
                } else if socket(c) == socket(m) {
                    95.0
                } else {
                    60.0
                };
                cells.push(BandwidthCell {
                    mix: Mix::Read,
                    cpu_node: c,
                    mem_node: m,
                    cpus: vec![c],
                    outcome: Outcome::Ok(BandwidthMeasurement {
                        bandwidth_gb_s: Summary::of(&[v]).unwrap(),
                        samples_gb_s: vec![v],
                        bytes_per_sample: 1 << 30,
                        validated_elements: 0,
                        placement: Vec::new(),
                        noise: None,
                        dram: None,
                    }),
                    efficiency: None,
                });
            }
        }
        let mut r = BandwidthReport {
            kernel: "avx512".into(),
            huge_pages: HugePages::Off,
            array_bytes_per_thread: 64 << 20,
            mixes: vec![MixInfo::of(Mix::Read)],
            cpu_nodes: vec![0, 1, 2, 3],
            mem_nodes: vec![0, 1, 2, 3],
            thread_counts: Vec::new(),
            cells,
            firmware: None,
            dram_counting: Default::default(),
            peak_unknown: None,
            cache_caveat: None,
            interleave: None,
        };
        let Outcome::Ok(peak) = theory::smbios_peak(&topo.memory_devices) else {
            panic!()
        };
        theory::annotate_bandwidth(&mut r, &topo, &peak, None);
        r.firmware = memfabric_analysis::firmware::compare_bandwidth(&r, &topo);
        insta::assert_snapshot!(super::super::bandwidth::render(&r));
    }
}
