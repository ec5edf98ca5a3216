//! The socket links a plan uses: the raw rate of the links asked for, and the
//! hop they add to an idle remote access.

use serde::Serialize;

use super::{Platform, ProvisionError};

/// The link settings asked for; None takes the platform's best.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkChoice {
    pub count: Option<u32>,
    pub lanes: Option<u32>,
    pub gbps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkUse {
    pub kind: String,
    pub count: u32,
    pub lanes: Option<u32>,
    pub gbps: Option<f64>,
    /// Between one pair of sockets, one direction, raw.
    pub gb_s_per_direction: f64,
    pub formula: String,
}

pub fn link_use(p: &Platform, ask: LinkChoice) -> Result<Option<LinkUse>, ProvisionError> {
    let Some(spec) = &p.links else {
        if ask.count.is_some() || ask.lanes.is_some() || ask.gbps.is_some() {
            return Err(ProvisionError::Ask(format!(
                "{} has one socket: there are no socket links",
                p.name
            )));
        }
        return Ok(None);
    };
    let count = ask
        .count
        .unwrap_or_else(|| spec.counts.iter().copied().max().unwrap_or(1));
    if !spec.counts.contains(&count) {
        return Err(ProvisionError::Ask(format!(
            "{} joins sockets with {} {} link(s); not {count}",
            p.name,
            join(&spec.counts),
            spec.kind
        )));
    }
    if let Some(per_link) = spec.gb_s_per_link {
        if ask.lanes.is_some() || ask.gbps.is_some() {
            return Err(ProvisionError::Ask(format!(
                "{}'s {} links have a fixed rate: --link-width and --link-gbps do not apply",
                p.name, spec.kind
            )));
        }
        let total = f64::from(count) * per_link;
        return Ok(Some(LinkUse {
            kind: spec.kind.clone(),
            count,
            lanes: None,
            gbps: None,
            gb_s_per_direction: total,
            formula: format!(
                "{count} {} x {per_link} GB/s per direction = {total:.1} GB/s",
                spec.kind
            ),
        }));
    }
    let lanes = ask.lanes.unwrap_or(spec.widths[0]);
    if !spec.widths.contains(&lanes) {
        return Err(ProvisionError::Ask(format!(
            "{} links run x{}; not x{lanes}",
            spec.kind,
            spec.widths
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" or x")
        )));
    }
    let top = spec.gbps.unwrap_or(0.0);
    let gbps = ask.gbps.unwrap_or(top);
    if !(gbps > 0.0 && gbps <= top) {
        return Err(ProvisionError::Ask(format!(
            "{} lanes run above 0 and at most {top} Gbit/s; not {gbps}",
            spec.kind
        )));
    }
    let total = f64::from(count * lanes) * gbps / 8.0;
    Ok(Some(LinkUse {
        kind: spec.kind.clone(),
        count,
        lanes: Some(lanes),
        gbps: Some(gbps),
        gb_s_per_direction: total,
        formula: format!(
            "{count} {} x {lanes} lanes x {gbps} Gbit/s / 8 = {total:.1} GB/s per direction ({:.1} both)",
            spec.kind,
            2.0 * total
        ),
    }))
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(" or ")
}

/// Gbit/s of one link, one direction: lanes x Gbit/s per lane, or the
/// vendor's GB/s per link x 8.
fn link_gbit_s(link: &LinkUse) -> f64 {
    match (link.lanes, link.gbps) {
        (Some(lanes), Some(gbps)) => f64::from(lanes) * gbps,
        _ => link.gb_s_per_direction / f64::from(link.count) * 8.0,
    }
}

/// The hop a remote access adds to the local idle latency, in ns, and how:
/// a fixed part (the fabric on both sides), a part counted in bit times of
/// one lane (serialiser, deserialiser and clock crossings, which run at the
/// lane's rate), and a part counted in bit times of the whole link (what
/// the link layer holds before it forwards: frames checked whole before use).
pub fn hop_ns(spec: &super::LatencySpec, link: &LinkUse) -> (f64, String) {
    let lane = link.gbps.map_or(0.0, |g| spec.hop_lane_bits / g);
    let whole = spec.hop_link_bits / link_gbit_s(link);
    let hop = spec.hop_ns + lane + whole;
    let lane_text = match link.gbps {
        Some(g) => format!(" + {:.0} bits / {g} Gbit/s per lane", spec.hop_lane_bits),
        None => String::new(),
    };
    (
        hop,
        format!(
            "hop = {:.1} ns{lane_text} + {:.0} bits / {:.0} Gbit/s per link = {hop:.1} ns",
            spec.hop_ns,
            spec.hop_link_bits,
            link_gbit_s(link)
        ),
    )
}
