//! `plan numa --calibrate RUN`: the efficiencies a measured run of the
//! platform achieved, in place of the stated ones.

use serde::Serialize;

use super::links::{link_use, LinkChoice};
use super::numa::interleaved_requests;
use super::shares::{unbend, Efficiencies};
use super::{Platform, ProvisionError};

/// What a stored run measured, as the fleet headlines read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFigures {
    pub run: String,
    pub triad_per_node_gb_s: Option<f64>,
    pub interleaved_triad_gb_s: Option<f64>,
    pub sockets: usize,
    pub numa_nodes: usize,
    pub channels_populated: Option<usize>,
    pub dimm_mt_s: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub efficiencies: Efficiencies,
    pub source: String,
    pub notes: Vec<String>,
}

/// The efficiencies a run of the platform achieved: Triad per node over the
/// node's peak (from the run's own channels and speed where it recorded them),
/// and, where the links limited its interleaved Triad, that over the links'
/// raw rate (the platform's best link setting, which the run is taken to have).
pub fn calibrate(p: &Platform, r: &RunFigures) -> Result<Calibration, ProvisionError> {
    let refuse = |m: String| {
        Err(ProvisionError::Ask(format!(
            "cannot calibrate from {}: {m}",
            r.run
        )))
    };
    if r.sockets != p.sockets as usize {
        return refuse(format!(
            "it ran on {} socket(s); {} has {}",
            r.sockets, p.name, p.sockets
        ));
    }
    let Some(per_node) = r.triad_per_node_gb_s else {
        return refuse("it has no Triad per node (a `run` or `bandwidth` document has)".into());
    };
    let socket_peak = match (r.channels_populated, r.dimm_mt_s) {
        (Some(ch), Some(mts)) if ch > 0 => ch as f64 / r.sockets as f64 * p.channel_gb_s(mts),
        _ => p.socket_peak_gb_s(),
    };
    let nodes_per_socket = (r.numa_nodes / r.sockets.max(1)).max(1) as f64;
    let triad = per_node / (socket_peak / nodes_per_socket);
    if !(triad > 0.0 && triad <= 1.0) {
        return refuse(format!(
            "its Triad per node, {per_node:.1} GB/s, is {:.0} % of the node's theoretical {:.1} GB/s",
            triad * 100.0,
            socket_peak / nodes_per_socket
        ));
    }
    let mut e = Efficiencies {
        triad,
        ..p.efficiency
    };
    let mut notes = vec![format!(
        "Triad efficiency {triad:.2}: {per_node:.1} GB/s per node of {:.1} GB/s theoretical",
        socket_peak / nodes_per_socket
    )];
    let s = r.sockets as f64;
    let memory = s * triad * socket_peak;
    match (r.interleaved_triad_gb_s, link_use(p, LinkChoice::default())?) {
        (Some(inter), Some(l)) if inter < 0.9 * memory => {
            let requests = interleaved_requests(p, &l);
            let Some(links) = unbend(inter, requests) else {
                return refuse(format!(
                    "its interleaved Triad, {inter:.1} GB/s, is at the requests' limit ({:.1} GB/s): it says nothing of the links",
                    requests.unwrap_or(0.0)
                ));
            };
            let mixed = links / (0.75 * s * s * l.gb_s_per_direction);
            e.link_mixed = Some(mixed.min(e.link));
            notes.push(format!(
                "link share with lines both ways {:.3}: interleaved Triad {inter:.1} GB/s, below the memory's {memory:.1}, over 3/4 x {s}^2 x {:.1} GB/s ({}, taken to be the run's)",
                mixed.min(e.link),
                l.gb_s_per_direction,
                l.formula
            ));
            if mixed > e.link {
                notes.push(format!(
                    "  that is above the one-way share {:.3}: the run's Triad moved fewer bytes than write-allocate does (streaming stores?), so the share is held at {:.3}",
                    e.link, e.link
                ));
            }
        }
        (Some(inter), Some(_)) => notes.push(format!(
            "the links did not limit the run's interleaved Triad ({inter:.1} GB/s, at the memory's limit): the link shares stay at the stated {:.3} and {:.3}",
            e.link,
            e.mixed()
        )),
        _ => notes.push(format!(
            "no interleaved Triad across sockets in the run: the link shares stay at the stated {:.3} and {:.3}",
            e.link,
            e.mixed()
        )),
    }
    Ok(Calibration {
        efficiencies: e,
        source: r.run.clone(),
        notes,
    })
}
