//! `plan numa`: what a NUMA mode and a socket-link setting give, optionally
//! with the efficiencies of a stored run.

use anyhow::Result;
use memfabric_analysis::provision::{calibrate, numa_plan, Calibration, LinkChoice, NumaPlan, RunFigures};
use memfabric_model::fleet::FleetFacts;
use memfabric_model::StoredDocument;
use serde::Serialize;

use super::platforms::{load, Loaded};
use super::usage;
use crate::args::{NumaArgs, RunRef};
use crate::cmd::helpers;
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

#[derive(Serialize)]
struct NumaResult<'a> {
    platform_id: &'a str,
    platform_origin: &'a str,
    #[serde(flatten)]
    plan: &'a NumaPlan,
}

pub fn run(ctx: &Ctx, a: &NumaArgs) -> Result<Status> {
    let loaded = load(&a.platform)?;
    let links = LinkChoice {
        count: a.links,
        lanes: a.link_width,
        gbps: a.link_gbps,
    };
    let cal = match &a.calibrate {
        Some(r) => Some(calibration(ctx, &loaded, r)?),
        None => None,
    };
    let plan = numa_plan(&loaded.platform, a.nps, links, cal.as_ref()).map_err(usage)?;
    if ctx.json {
        let r = NumaResult {
            platform_id: &loaded.id,
            platform_origin: &loaded.origin,
            plan: &plan,
        };
        ctx.print_json("plan-numa", None, &r)?;
    } else {
        print_all(&render(&loaded, &plan))?;
    }
    Ok(Status::Ok)
}

/// The run's headline figures and platform facts, as the fleet report reads them.
fn calibration(ctx: &Ctx, l: &Loaded, r: &RunRef) -> Result<Calibration> {
    let store = helpers::open(ctx)?;
    let id = helpers::resolve(&store, r)?;
    let text = store.document(id)?;
    let doc = StoredDocument::parse(&text).map_err(|e| Usage(format!("run {id}: {e}")))?;
    let facts = FleetFacts::of(doc.environment.as_ref(), &doc.document.figures(), vec![]);
    let Some(class) = facts.class else {
        return Err(Usage(format!(
            "run {id} records no platform facts (a document of memfabric before 0.5)"
        ))
        .into());
    };
    let figures = RunFigures {
        run: format!("run {id}"),
        triad_per_node_gb_s: facts.headlines.get("triad_per_node_gb_s").copied(),
        interleaved_triad_gb_s: facts.headlines.get("interleaved_triad_gb_s").copied(),
        sockets: class.sockets,
        numa_nodes: class.numa_nodes,
        channels_populated: class.channels_populated,
        dimm_mt_s: class.dimm_mt_s,
    };
    calibrate(&l.platform, &figures).map_err(usage)
}

pub fn render(l: &Loaded, p: &NumaPlan) -> String {
    let links = p.links.as_ref().map_or("no socket links".to_string(), |k| {
        let lanes = k.lanes.map_or(String::new(), |n| format!(" x{n}"));
        let rate = k.gbps.map_or(String::new(), |g| format!(" at {g} Gbit/s"));
        format!("{} {}{lanes}{rate}", k.count, k.kind)
    });
    let mut out = format!(
        "Platform: {} ({}: {})\nAsked: {}, {links}\n\n",
        p.platform, l.id, l.origin, p.mode
    );
    let mut t = Table::new(&["<Triad", "GB/s", "<limited by"]);
    let local = if p.nodes_per_socket == 0 {
        "whole machine, one node"
    } else {
        "local, one node"
    };
    t.row(vec![
        local.into(),
        format!("{:.1}", p.local_triad_gb_s),
        if p.nodes_per_socket == 0 {
            p.interleaved_bottleneck.name().into()
        } else {
            "memory channels".into()
        },
    ]);
    if let Some(r) = p.remote_triad_gb_s {
        t.row(vec![
            "remote, one node on another socket".into(),
            format!("{r:.1}"),
            p.remote_bottleneck.map_or("-", |b| b.name()).into(),
        ]);
    }
    t.row(vec![
        "interleaved over every socket, all CPUs".into(),
        format!("{:.1}", p.interleaved_triad_gb_s),
        p.interleaved_bottleneck.name().into(),
    ]);
    out += &t.render();
    out += &format!(
        "\nNode peak {:.1} GB/s; socket peak {:.1} GB/s; {} socket(s); nodes per socket: {}.\nEfficiencies: Triad {:.2}, links {:.2} ({}).\n",
        p.node_peak_gb_s,
        p.socket_peak_gb_s,
        p.sockets,
        if p.nodes_per_socket == 0 { "memory interleaved across sockets".to_string() } else { p.nodes_per_socket.to_string() },
        p.efficiencies.triad,
        p.efficiencies.link,
        p.efficiency_source
    );
    for n in &p.notes {
        out += &format!("  {n}\n");
    }
    out += "\nHow:\n";
    for f in &p.formulas {
        out += &format!("  {f}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_links_against_four_on_genoa() {
        let l = load("epyc-9004-2s").unwrap();
        for (links, name) in [
            (3, "plan_numa_genoa_nps0_3_links"),
            (4, "plan_numa_genoa_nps0_4_links"),
        ] {
            let choice = LinkChoice {
                count: Some(links),
                ..LinkChoice::default()
            };
            let plan = numa_plan(&l.platform, 0, choice, None).unwrap();
            insta::assert_snapshot!(name, render(&l, &plan));
        }
        let plan = numa_plan(&l.platform, 4, LinkChoice::default(), None).unwrap();
        insta::assert_snapshot!("plan_numa_genoa_nps4", render(&l, &plan));
    }
}
