//! `bandwidth --per-domain` as text: each L3 domain alone, then domains added one
//! by one.

use memfabric_model::{format_size, DomainBandwidth, DomainScalingReport};
use memfabric_topo::{format_cpulist, Topology};

use super::{byte_counting, gb_s_cells, render_dram};
use crate::cmd::common::{self, cell_text};
use crate::cmd::efficiency;
use crate::table::Table;

fn domain_names(topo: &Topology, d: &DomainBandwidth) -> String {
    let names: Vec<String> = d
        .domains
        .iter()
        .map(|&i| match topo.l3_domains.get(i).and_then(|x| x.cache_id) {
            Some(id) => format!("{i} (L3 id {id})"),
            None => i.to_string(),
        })
        .collect();
    names.join(", ")
}

pub fn render_domains(r: &DomainScalingReport, topo: &Topology) -> String {
    let mut out = format!(
        "Per-domain bandwidth, mix {} ({}), median GB/s; {} kernel, {} per array per thread, huge pages: {}\n",
        r.mix.mix,
        r.mix.description,
        r.kernel,
        format_size(r.array_bytes_per_thread),
        common::json_name(&r.huge_pages)
    );
    let fclk = r.fclk_mhz.map(|f| format!("B/fclk @ {f} MHz"));
    let mut head = vec![
        "<L3 domain",
        "<cpus",
        "<mem nodes",
        "median GB/s",
        "min",
        "max",
        "cv %",
        "samples",
    ];
    if let Some(f) = &fclk {
        head.push(f.as_str());
    }
    let peaks = r
        .alone
        .iter()
        .chain(&r.cumulative)
        .any(|d| d.efficiency.is_some());
    if peaks {
        head.push("% of peak");
    }
    out += "Each domain alone:\n";
    out += &alone_table(r, topo, &head, fclk.is_some(), peaks);
    out += "\nDomains added one by one:\n";
    out += &grow_table(r, topo, peaks);
    out += &notes(r, topo);
    out
}

/// Each domain measured alone.
fn alone_table(r: &DomainScalingReport, topo: &Topology, head: &[&str], fclk: bool, peaks: bool) -> String {
    let mut alone = Table::new(head);
    for d in &r.alone {
        let mut row = domain_row(topo, d, fclk);
        if peaks && d.outcome.ok().is_some() {
            row.push(efficiency::percent(d.efficiency.as_ref()));
        }
        alone.row(row);
    }
    alone.render()
}

/// Domains measured together, one more each step: the total and what each added.
fn grow_table(r: &DomainScalingReport, topo: &Topology, peaks: bool) -> String {
    let mut grow_head = vec!["<domains", "threads", "median GB/s", "gain", "per domain"];
    if peaks {
        grow_head.push("% of peak");
    }
    let mut grow = Table::new(&grow_head);
    let mut previous: Option<f64> = None;
    for (k, d) in r.cumulative.iter().enumerate() {
        let mut row = vec![domain_names(topo, d), d.cpus.len().to_string()];
        match d.outcome.ok() {
            Some(m) => {
                let v = m.bandwidth_gb_s.median;
                row.push(format!("{v:.2}"));
                row.push(previous.map_or("-".into(), |p| format!("{:+.2}", v - p)));
                row.push(format!("{:.2}", v / (k + 1) as f64));
                if peaks {
                    row.push(efficiency::percent(d.efficiency.as_ref()));
                }
                previous = Some(v);
            }
            None => row.extend([
                cell_text(&d.outcome, |_| String::new()),
                String::new(),
                String::new(),
            ]),
        }
        grow.row(row);
    }
    grow.render()
}

/// What failed, what was noisy, the DRAM traffic counted, and how bytes are counted.
fn notes(r: &DomainScalingReport, topo: &Topology) -> String {
    let steps = r
        .alone
        .iter()
        .map(|d| (format!("domain {}", domain_names(topo, d)), d))
        .chain(
            r.cumulative
                .iter()
                .map(|d| (format!("domains {}", domain_names(topo, d)), d)),
        );
    let steps: Vec<(String, &DomainBandwidth)> = steps.collect();
    let mut out = common::problems(steps.iter().map(|(l, d)| (l.clone(), &d.outcome)));
    out += &efficiency::unknown(r.peak_unknown.as_deref());
    out += &efficiency::over_peak(steps.iter().map(|(_, d)| d.efficiency.as_ref()));
    out += &common::noise_notes(
        steps
            .iter()
            .map(|(l, d)| (l.clone(), d.outcome.ok().and_then(|m| m.noise.as_ref()))),
    );
    out += &render_dram(
        &r.dram_counting,
        steps
            .iter()
            .map(|(l, d)| (l.clone(), d.outcome.ok().and_then(|m| m.dram.as_ref()))),
    );
    out += &byte_counting(std::slice::from_ref(&r.mix));
    out
}

fn domain_row(topo: &Topology, d: &DomainBandwidth, fclk: bool) -> Vec<String> {
    let mut nodes = d.mem_nodes.clone();
    nodes.sort_unstable();
    nodes.dedup();
    let mut row = vec![
        domain_names(topo, d),
        format_cpulist(&d.cpus),
        format_cpulist(&nodes),
    ];
    match d.outcome.ok() {
        Some(m) => {
            row.extend(gb_s_cells(m));
            if fclk {
                row.push(d.bytes_per_fclk.map_or("-".into(), |b| format!("{b:.1}")));
            }
        }
        None => row.push(cell_text(&d.outcome, |_| String::new())),
    }
    row
}
