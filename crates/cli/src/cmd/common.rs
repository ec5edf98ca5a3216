//! Pieces latency and bandwidth share: resolving the selection, matrices, failures.

use anyhow::Result;
use memfabric_measure::kernels::Isa;
use memfabric_measure::plan::{self, Machine, PlanError};
use memfabric_measure::sys::{self};
use memfabric_measure::Measurement;
use memfabric_model::{Noise, Outcome, Placement, Summary};
use memfabric_topo::{format_cpulist, Topology};

use crate::args;
use crate::output::{Ctx, Usage};
use crate::table::Table;

/// The machine as plans see it. Says on stderr when a taskset or cpuset narrows the
/// CPUs, since every default then measures less than the whole machine.
pub fn machine(topo: &Topology) -> Result<Machine<'_>> {
    let allowed_cpus =
        sys::current_affinity().map_err(|e| anyhow::anyhow!("reading this process's CPU affinity: {e}"))?;
    let online: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    if online.iter().any(|c| !allowed_cpus.contains(c)) {
        eprintln!(
            "memfabric: note: measuring only the allowed CPUs {} of online CPUs {} (taskset or cpuset)",
            format_cpulist(&allowed_cpus),
            format_cpulist(&online)
        );
    }
    Ok(Machine {
        topo,
        allowed_cpus,
        roots: memfabric_topo::Roots::live(),
    })
}

/// The instruction set --kernel asks for, refused when this CPU cannot run it.
pub fn isa(k: args::KernelArg) -> Result<Isa> {
    use args::KernelArg as K;
    let chosen = match k {
        K::Auto => return Ok(Isa::detect()),
        K::Avx512 => Isa::Avx512,
        K::Avx2 => Isa::Avx2,
        K::Sse2 => Isa::Sse2,
        K::Neon => Isa::Neon,
        K::Scalar => Isa::Scalar,
    };
    if !chosen.supported() {
        return Err(Usage(format!("this CPU cannot run the {} kernel", chosen.name())).into());
    }
    Ok(chosen)
}

/// Plans, runs and enriches measurement `M` on this machine, drawing progress; a
/// plan the machine refuses is a usage error (exit code 2).
pub fn measure<M: Measurement>(ctx: &Ctx, topo: &Topology, options: &M::Options) -> Result<M::Report> {
    let machine = machine(topo)?;
    memfabric_measure::measure::<M>(&machine, options, &ctx.progress).map_err(usage)
}

/// Lines for every flagged result: its spread and what may cause it.
pub fn noise_notes<'a>(flagged: impl Iterator<Item = (String, Option<&'a Noise>)>) -> String {
    let mut out = String::new();
    for (label, noise) in flagged {
        if let Some(n) = noise {
            out += &format!(
                "  ! {label}: coefficient of variation {:.1} % is above {:.1} %; likely: {}\n",
                100.0 * n.cv,
                100.0 * n.threshold_cv,
                n.likely_causes.join("; ")
            );
        }
    }
    out
}

pub fn selection(s: &args::Selection, cpu: Option<u32>) -> Result<plan::Selection> {
    Ok(plan::Selection {
        cpu_nodes: s.cpu_nodes.as_ref().map(|l| l.0.clone()),
        mem_nodes: s.mem_nodes.as_ref().map(|l| l.0.clone()),
        cpu,
        matrix: s.matrix,
        interleave: interleave(&s.spread)?,
    })
}

/// `--interleave NODES|all` and its weights, read into what the plan resolves; a list
/// that does not read is a usage error in one line.
pub fn interleave(a: &args::InterleaveArgs) -> Result<Option<plan::InterleaveAsk>> {
    let Some(text) = a.interleave.as_deref().map(str::trim) else {
        return Ok(None);
    };
    let nodes = match text {
        "all" => None,
        "" => return Err(Usage("--interleave needs at least one node, or all".into()).into()),
        list => Some(ordered_nodes(list).ok_or_else(|| {
            Usage(format!(
                "--interleave {list}: not a node list (give nodes like 0,1 or 0-3, or all)"
            ))
        })?),
    };
    let weights = match a.interleave_weights.as_deref() {
        None => None,
        Some(w) => Some(
            w.split(',')
                .map(|x| x.trim().parse::<u32>())
                .collect::<Result<Vec<u32>, _>>()
                .map_err(|_| {
                    Usage(format!(
                        "--interleave-weights {w}: give whole numbers, one per node, like 3,1"
                    ))
                })?,
        ),
    };
    Ok(Some(plan::InterleaveAsk { nodes, weights }))
}

/// A node list in the order given, repeats kept (the plan refuses them by name):
/// weights pair with nodes by position, so "1,0" must not become "0,1".
fn ordered_nodes(list: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim) {
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(item.parse().ok()?),
        }
    }
    Some(out)
}

pub fn usage(e: PlanError) -> anyhow::Error {
    Usage(e.to_string()).into()
}

/// Rows: CPU nodes; columns: memory nodes; each cell a short text.
pub fn matrix(title: &str, rows: &[u32], cols: &[u32], cell: impl Fn(u32, u32) -> Option<String>) -> String {
    let mut header = vec!["<cpu node \\ mem node".to_string()];
    header.extend(cols.iter().map(|c| c.to_string()));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for &r in rows {
        let mut row = vec![r.to_string()];
        row.extend(cols.iter().map(|&c| cell(r, c).unwrap_or_else(|| "-".into())));
        t.row(row);
    }
    format!("{title}\n{}", t.render())
}

/// The short text of a cell in a matrix.
pub fn cell_text<T>(o: &Outcome<T>, value: impl Fn(&T) -> String) -> String {
    match o {
        Outcome::Ok(v) => value(v),
        Outcome::Skipped { .. } => "skipped".into(),
        Outcome::Failed { .. } => "FAILED".into(),
    }
}

/// Lines explaining every cell that did not produce a number.
pub fn problems<'a, T: 'a>(cells: impl Iterator<Item = (String, &'a Outcome<T>)>) -> String {
    let mut out = String::new();
    for (label, o) in cells {
        match o {
            Outcome::Ok(_) => {}
            Outcome::Skipped { reason } => out += &format!("  {label}: skipped: {reason}\n"),
            Outcome::Failed { reason } => out += &format!("  {label}: FAILED: {reason}\n"),
        }
    }
    out
}

/// Summary columns: median, min, p99, cv %, sample count.
pub fn summary_cells(s: &Summary, decimals: usize) -> Vec<String> {
    vec![
        format!("{:.*}", decimals, s.median),
        format!("{:.*}", decimals, s.min),
        format!("{:.*}", decimals, s.p99),
        format!("{:.1}", 100.0 * s.cv),
        s.count.to_string(),
    ]
}

/// "verified 4096/4096" or "NOT verified"; interleaved, with the share found on each
/// node ("verified 512/512 pages, 50.0/50.0 %").
pub fn placement_text(p: &[&Placement]) -> String {
    let sampled: u64 = p.iter().map(|p| p.pages_sampled).sum();
    let on: u64 = p.iter().map(|p| p.pages_on_node).sum();
    let shares = interleave_shares(p).map_or(String::new(), |s| format!(", {s}"));
    if p.iter().all(|p| p.verified) {
        format!("verified {on}/{sampled} pages{shares}")
    } else {
        format!("NOT verified {on}/{sampled} pages{shares}")
    }
}

/// The share of the pages found on each node of an interleave, all buffers together.
fn interleave_shares(p: &[&Placement]) -> Option<String> {
    let first = p.first()?.interleave.as_ref()?;
    let mut pages = vec![0u64; first.nodes.len()];
    for s in p.iter().filter_map(|p| p.interleave.as_ref()) {
        for (total, n) in pages.iter_mut().zip(&s.pages_per_node) {
            *total += n;
        }
    }
    let all: u64 = p.iter().map(|p| p.pages_sampled).sum::<u64>().max(1);
    let pct: Vec<String> = pages
        .iter()
        .map(|&n| format!("{:.1}", 100.0 * n as f64 / all as f64))
        .collect();
    Some(format!(
        "{} % on nodes {}",
        pct.join("/"),
        first
            .nodes
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/")
    ))
}

/// "; memory interleaved over nodes 0,1 (column 0 is the set)" for a title, or nothing.
pub fn interleave_title(i: Option<&memfabric_model::Interleave>) -> String {
    i.map_or(String::new(), |i| {
        let how = if i.is_even() { "page by page" } else { "by weight" };
        format!(
            "; memory interleaved {how} over nodes {} (memory column {} stands for the set)",
            i.label(),
            i.nodes[0]
        )
    })
}

/// The name a value has in JSON (e.g. "page-random", "2M"), for titles.
pub fn json_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Run `id` of the database memfabric 0.4.0 wrote (tests/fixtures/store), read from
/// a copy: opening a store may write to it.
#[cfg(test)]
pub fn stored_v040(id: i64) -> memfabric_model::Document {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/store/runs-v0.4.0.sqlite"
    );
    std::fs::copy(fixture, &db).unwrap();
    let store = memfabric_store::Store::open(&db).unwrap();
    memfabric_model::StoredDocument::parse(&store.document(id).unwrap())
        .unwrap()
        .document
}
