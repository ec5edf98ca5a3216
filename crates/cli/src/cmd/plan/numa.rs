//! `plan numa`: what a NUMA mode and a socket-link setting give, optionally
//! with the efficiencies of a stored run.

use anyhow::Result;
use memfabric_analysis::provision::{
    calibrate, numa_plan, Calibration, LinkChoice, LinkUse, NumaPlan, Platform, RunFigures,
};
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
        print_all(&render(&loaded, &plan, a.explain))?;
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

/// A link setting as the user gives it: `4 xGMI x16 at 32 Gbit/s`.
pub fn link_text(k: &LinkUse) -> String {
    let lanes = k.lanes.map_or(String::new(), |n| format!(" x{n}"));
    let rate = k.gbps.map_or(String::new(), |g| format!(" at {g} Gbit/s"));
    format!("{} {}{lanes}{rate}", k.count, k.kind)
}

pub fn render(l: &Loaded, p: &NumaPlan, explain: bool) -> String {
    let links = p.links.as_ref().map_or("no socket links".to_string(), link_text);
    let mut out = format!(
        "Platform: {} ({}: {})\nAsked: {}, {links}\n\n",
        p.platform, l.id, l.origin, p.mode
    );
    let mut t = Table::new(&["<figure", "value", "<unit", "<limited by"]);
    for f in &p.figures {
        t.row(vec![
            f.what.clone(),
            format!("{:.1}", f.value),
            f.unit.into(),
            f.limited_by.map_or("-", |b| b.name()).into(),
        ]);
    }
    out += &t.render();
    let e = &p.efficiencies;
    out += &format!(
        "\nNode peak {:.1} GB/s; socket peak {:.1} GB/s; {} socket(s); nodes per socket: {}.\nEfficiencies ({}): Triad {:.2}, reads {:.3}; links {:.3} with lines one way, {:.3} both ways.\n",
        p.node_peak_gb_s,
        p.socket_peak_gb_s,
        p.sockets,
        if p.nodes_per_socket == 0 { "memory interleaved across sockets".to_string() } else { p.nodes_per_socket.to_string() },
        p.efficiency_source,
        e.triad,
        e.read,
        e.link,
        e.mixed()
    );
    for n in &p.notes {
        out += &format!("  {n}\n");
    }
    out += "\nHow (GB/s, ns):\n";
    let m = &l.platform.memory;
    out += &format!(
        "  memory: {} channels x {} MT/s x {} bits / 8 = {:.1} GB/s per socket\n",
        m.channels_per_socket, m.mts[0], m.bus_bits, p.socket_peak_gb_s
    );
    if let Some(k) = &p.links {
        out += &format!("  links: {}\n", k.formula);
    }
    for f in &p.figures {
        out += &format!("  {}: {}\n", f.key, f.formula);
    }
    if explain {
        out += &explain_text(&l.platform, p);
    }
    out
}

/// What crosses the links, and which figures rest on published measurements.
fn explain_text(platform: &Platform, p: &NumaPlan) -> String {
    let e = &p.efficiencies;
    let mut out = format!(
        "\nWhy:\n\
         - Memory: reads alone reach {:.3} of the channels' peak, Triad {:.2} (STREAM's count: 24 bytes per element).\n\
         - A read of another socket's memory sends a command one way and a 64-byte line back; with reads alone one\n  \
         direction carries lines only: {:.3} of its raw rate is data, so a line travels with {:.1} bytes of header.\n\
         - Triad's stores allocate: a stored line is read first and written back later, so per element line 3 lines\n  \
         are read and 1 written. With memory interleaved over S sockets each direction of a socket pair carries\n  \
         4/3 x T/S^2 of lines and a command for each line going the other way ({:.1} bytes each): {:.3} is data,\n  \
         and Triad T = 3/4 x S^2 x {:.3} x L at most, L the raw rate one way.\n\
         - One node on another socket's memory: Triad draws all its lines one way and sends a third back; reads\n  \
         draw lines only.\n",
        e.read,
        e.triad,
        e.link,
        e.header_bytes(),
        e.command_bytes(),
        e.mixed(),
        e.mixed()
    );
    if let Some(n) = platform.links.as_ref().and_then(|l| l.remote_lines_in_flight) {
        out += &format!(
            "- Requests: a socket's cores keep about {n:.0} lines in flight to the other socket (each node of NPSn its share),\n  \
             so they draw at most lines x 64 B / remote latency (Little's law). Where this and the link's limit are close the\n  \
             rate bends below both: (a^-{k} + b^-{k})^(-1/{k}), k = {k}.\n",
            k = memfabric_analysis::provision::numa::BEND
        );
    }
    if platform.latency.is_some() {
        out += "- Latency: remote = local + a hop across the link, a fixed part plus parts counted in bit times of one lane\n  (serialisers, clock crossings) and of the whole link (frames held whole before they are forwarded).\n";
    }
    if platform.calibration.is_empty() {
        out += "\nNo figure of this platform is calibrated on a published measurement: every efficiency is the stated default.\n";
        return out;
    }
    out += "\nCalibrated on published measurements (the platform file's [calibration]):\n";
    for (key, source) in &platform.calibration {
        let users: Vec<&str> = p
            .figures
            .iter()
            .filter(|f| f.uses.contains(&key.as_str()))
            .map(|f| f.key)
            .collect();
        if users.is_empty() {
            continue;
        }
        out += &format!("  {key}: {source}\n    used by {}\n", users.join(", "));
    }
    if p.efficiency_source != "stated in the platform file" {
        out += &format!(
            "  The efficiencies above are {}'s, not these.\n",
            p.efficiency_source
        );
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
            insta::assert_snapshot!(name, render(&l, &plan, false));
        }
        let plan = numa_plan(&l.platform, 4, LinkChoice::default(), None).unwrap();
        insta::assert_snapshot!("plan_numa_genoa_nps4", render(&l, &plan, false));
        let plan = numa_plan(&l.platform, 1, LinkChoice::default(), None).unwrap();
        insta::assert_snapshot!("plan_numa_genoa_nps1_explain", render(&l, &plan, true));
    }
}
