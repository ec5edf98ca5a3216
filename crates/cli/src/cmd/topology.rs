//! `memfabric topology`: what the machine is, as tables or JSON.

use anyhow::{Context, Result};
use memfabric_model::format_size;
use memfabric_topo::{format_cpulist, Topology};

use crate::args::TopologyArgs;
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &TopologyArgs) -> Result<Status> {
    let real = memfabric_topo::Roots::is_live_sys(&a.sysfs);
    let topo = match Topology::read(&a.sysfs) {
        Ok(t) => t,
        // A tree the user pointed at is input: its faults are theirs (exit 2).
        Err(e) if !real => return Err(Usage(format!("{}: {e}", a.sysfs.display())).into()),
        Err(e) => return Err(e).context("reading the topology from /sys"),
    };
    if ctx.json {
        // The environment describes this machine, so it is left out for a saved tree.
        ctx.print_json("topology", real.then_some(&topo), &topo)?;
    } else {
        let mut text = render(&topo);
        if real {
            text += &identity(&topo);
        }
        print_all(&text)?;
    }
    Ok(Status::Ok)
}

/// This machine's hardware class and host id, as every saved run records them.
fn identity(topo: &Topology) -> String {
    let roots = memfabric_topo::Roots::live();
    let model = memfabric_topo::Host::read(&roots).cpu_model;
    let class =
        memfabric_topo::HardwareClass::of(topo, model.as_deref(), &memfabric_topo::live_memory_devices(topo));
    let id = match memfabric_topo::host_id(&roots) {
        memfabric_topo::Fact::Known(id) => id,
        memfabric_topo::Fact::Unknown(why) => format!("unknown: {why}"),
    };
    format!(
        "\nHardware class: {} (runs list --class)\nHost id: {id} (runs list --host-id)\n",
        class.key
    )
}

pub fn render(t: &Topology) -> String {
    let mut out = summary_line(t);
    out += "\nPackages and dies\n";
    let mut pk = Table::new(&["<package", "<die", "<cpus"]);
    for d in &t.dies {
        pk.row(vec![
            d.package.to_string(),
            d.id.to_string(),
            format_cpulist(&d.cpus),
        ]);
    }
    out += &pk.render();
    out += "\nL3 domains (CPUs sharing one last-level cache)\n";
    let mut l3 = Table::new(&["domain", "<level", "size", "<node", "<cpus"]);
    for d in &t.l3_domains {
        l3.row(vec![
            d.index.to_string(),
            format!("L{}", d.level),
            format_size(d.size_bytes),
            d.node.map_or("several".into(), |n| n.to_string()),
            format_cpulist(&d.cpus),
        ]);
    }
    out += &l3.render();
    out += "\nNUMA nodes\n";
    out += &nodes_table(t);
    out += &distances(t);
    out += "\nCaches\n";
    let mut c = Table::new(&["<cache", "size", "line", "ways", "instances", "cpus each"]);
    for l in &t.caches {
        c.row(vec![
            format!("L{} {}", l.level, l.kind),
            format_size(l.size_bytes),
            l.line_size_bytes.to_string(),
            l.ways
                .map_or("-".into(), |w| if w == 0 { "full".into() } else { w.to_string() }),
            l.instances.to_string(),
            l.cpus_per_instance.to_string(),
        ]);
    }
    out += &c.render();
    out += &huge_pages(t);
    out += &hmat(t);
    out
}

fn summary_line(t: &Topology) -> String {
    let smt = match t.smt_active {
        Some(true) => "SMT on",
        Some(false) => "SMT off",
        None => "SMT unknown",
    };
    let cpu_less = t.nodes.iter().filter(|n| n.cpu_less).count();
    format!(
        "{} package(s), {} die(s), {} L3 domain(s), {} NUMA node(s) ({} CPU-less), {} CPUs, {}\n",
        t.packages.len(),
        t.dies.len(),
        t.l3_domains.len(),
        t.nodes.len(),
        cpu_less,
        t.cpus.len(),
        smt
    )
}

fn nodes_table(t: &Topology) -> String {
    let mut n = Table::new(&["node", "<cpus", "memory", "free", "<hugetlb pools (free/total)"]);
    for node in &t.nodes {
        let pools: Vec<String> = node
            .hugepages
            .iter()
            .map(|p| format!("{}: {}/{}", format_size(p.page_size_bytes), p.free, p.total))
            .collect();
        n.row(vec![
            node.id.to_string(),
            if node.cpu_less {
                "(CPU-less)".into()
            } else {
                format_cpulist(&node.cpus)
            },
            format_size(node.mem_total_bytes),
            format_size(node.mem_free_bytes),
            pools.join(", "),
        ]);
    }
    n.render()
}

fn distances(t: &Topology) -> String {
    if t.nodes.iter().all(|n| n.distances.is_empty()) {
        return String::new();
    }
    let mut header = vec!["from\\to".to_string()];
    header.extend(t.nodes.iter().map(|n| n.id.to_string()));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut d = Table::new(&refs);
    for node in &t.nodes {
        let mut row = vec![node.id.to_string()];
        row.extend(node.distances.iter().map(u32::to_string));
        d.row(row);
    }
    "\nNode distances (firmware SLIT, relative: 10 = local)\n".to_string() + &d.render()
}

fn huge_pages(t: &Topology) -> String {
    let h = &t.huge_pages;
    let pools: Vec<String> = h
        .pools
        .iter()
        .map(|p| {
            format!(
                "{} pages {}/{} free",
                format_size(p.page_size_bytes),
                p.free,
                p.total
            )
        })
        .collect();
    format!(
        "\nHuge pages: THP {} (defrag {}); hugetlb: {}\n",
        h.thp_enabled.as_deref().unwrap_or("unknown"),
        h.thp_defrag.as_deref().unwrap_or("unknown"),
        if pools.is_empty() {
            "no pools".into()
        } else {
            pools.join(", ")
        }
    )
}

fn hmat(t: &Topology) -> String {
    if t.hmat.is_empty() {
        return "\nFirmware memory performance (HMAT): not published\n".into();
    }
    let mut h = Table::new(&[
        "target",
        "<class",
        "<initiators",
        "read ns",
        "write ns",
        "read MB/s",
        "write MB/s",
    ]);
    let opt = |v: Option<u64>| v.map_or("-".into(), |x| x.to_string());
    for e in &t.hmat {
        h.row(vec![
            e.target_node.to_string(),
            format!("access{}", e.access_class),
            format_cpulist(&e.initiators),
            opt(e.read_latency_ns),
            opt(e.write_latency_ns),
            opt(e.read_bandwidth_mb_s),
            opt(e.write_bandwidth_mb_s),
        ]);
    }
    "\nFirmware memory performance (HMAT; access0: any initiator, access1: CPUs)\n".to_string() + &h.render()
}
