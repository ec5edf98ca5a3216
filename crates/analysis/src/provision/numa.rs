//! What a NUMA mode and a socket-link choice give: per node, local and
//! remote read bandwidth (as MLC's bandwidth matrix measures it), idle
//! latency and Triad; for the whole machine, Triad with every node on its own
//! memory and with memory interleaved over every socket. Each figure is the
//! least of what the memory channels, the socket links and the requests a
//! socket keeps in flight allow, and says which one it is.
//!
//! What crosses a link, per 64-byte line (a line is the unit every transfer
//! carries, with a header of h bytes; a request or an acknowledgement is a
//! command of c bytes without data):
//! - A read of the other socket's memory sends a command one way and a line
//!   back. Reads alone load one direction with data only: the data share is
//!   `e_link = 64 / (64 + h)`.
//! - Triad writes with write-allocate: a store first reads its line, then
//!   writes it back. Per element line, 3 lines are read and 1 written, while
//!   STREAM counts 3 x 8 bytes. With memory interleaved over S sockets each
//!   direction of a pair carries 4/3 x T/S^2 bytes of lines, and as many
//!   commands for the lines going the other way: the share is
//!   `e_mixed = 64 / (64 + h + c)`, and `T <= 3/4 x S^2 x e_mixed x L`.
//! - One node running Triad on another socket's memory draws all its lines
//!   (reads and write-allocates) one way and sends a third back: that
//!   direction carries 64 + h per line plus c/3 of acknowledgements.
//!
//! A socket's cores keep at most N lines in flight to the other socket, so
//! requests allow N x 64 / remote latency (Little's law). Where that limit
//! and the link's are close the rate bends below both ([`bend`]).

use serde::Serialize;

use super::links::{hop_ns, link_use, LinkChoice, LinkUse};
use super::shares::Limits;
pub use super::shares::{bend, unbend, Efficiencies, BEND, LINE};
use super::{Platform, ProvisionError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    MemoryChannels,
    SocketLinks,
    /// The lines a socket's cores keep in flight to the other socket.
    RemoteRequests,
}

impl Bottleneck {
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::MemoryChannels => "memory channels",
            Bottleneck::SocketLinks => "socket links",
            Bottleneck::RemoteRequests => "requests in flight",
        }
    }
}

/// One predicted figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// `local_read_gb_s`, `remote_latency_ns`, `interleaved_triad_gb_s`, ...
    pub key: &'static str,
    pub what: String,
    pub value: f64,
    pub unit: &'static str,
    /// None for a latency.
    pub limited_by: Option<Bottleneck>,
    pub formula: String,
    /// The platform file's keys whose values the figure rests on; where the
    /// file's `calibration` cites a measurement for a key, `--explain` says so.
    pub uses: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumaPlan {
    pub platform: String,
    pub mode: String,
    pub nodes_per_socket: u32,
    pub sockets: u32,
    pub links: Option<LinkUse>,
    pub socket_peak_gb_s: f64,
    /// NPS0: the whole machine's.
    pub node_peak_gb_s: f64,
    pub figures: Vec<Figure>,
    /// As used, `link_mixed` resolved.
    pub efficiencies: Efficiencies,
    /// "stated in the platform file" or the run they were taken from.
    pub efficiency_source: String,
    pub notes: Vec<String>,
}

impl NumaPlan {
    pub fn figure(&self, key: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.key == key)
    }

    pub fn value(&self, key: &str) -> Option<f64> {
        self.figure(key).map(|f| f.value)
    }

    /// Triad with memory interleaved over every socket (NPS0: the machine's).
    pub fn interleaved(&self) -> Option<&Figure> {
        self.figure("interleaved_triad_gb_s").or_else(|| {
            self.figure("system_triad_gb_s")
                .filter(|_| self.nodes_per_socket == 0)
        })
    }
}

pub use super::calibrate::Calibration;

pub fn numa_plan(
    p: &Platform,
    nps: u32,
    links: LinkChoice,
    cal: Option<&Calibration>,
) -> Result<NumaPlan, ProvisionError> {
    if !p.numa.nodes_per_socket.contains(&nps) {
        let offered: Vec<String> = p
            .numa
            .nodes_per_socket
            .iter()
            .map(|&n| p.numa.mode_name(n))
            .collect();
        return Err(ProvisionError::Ask(format!(
            "{} offers {}; not {}",
            p.name,
            offered.join(", "),
            p.numa.mode_name(nps)
        )));
    }
    let link = link_use(p, links)?;
    let mut e = cal.map_or(p.efficiency, |c| c.efficiencies);
    e.link_mixed = Some(e.mixed());
    let m = Model::new(p, e, nps, link.as_ref());
    let figures = if nps == 0 {
        m.interleaved_mode()
    } else {
        m.per_node()
    };
    Ok(NumaPlan {
        platform: p.name.clone(),
        mode: p.numa.mode_name(nps),
        nodes_per_socket: nps,
        sockets: p.sockets,
        socket_peak_gb_s: m.peak,
        node_peak_gb_s: m.node_peak(),
        links: link,
        figures,
        efficiencies: e,
        efficiency_source: cal.map_or("stated in the platform file".into(), |c| c.source.clone()),
        notes: cal.map(|c| c.notes.clone()).unwrap_or_default(),
    })
}

/// The platform's figures for one mode and link choice.
struct Model<'a> {
    p: &'a Platform,
    e: Efficiencies,
    nps: u32,
    s: f64,
    peak: f64,
    link: Option<&'a LinkUse>,
    /// Idle remote latency and how it was reached.
    remote_ns: Option<(f64, String)>,
}

impl<'a> Model<'a> {
    fn new(p: &'a Platform, e: Efficiencies, nps: u32, link: Option<&'a LinkUse>) -> Model<'a> {
        let remote_ns = match (&p.latency, link) {
            (Some(spec), Some(l)) => {
                let (hop, how) = hop_ns(spec, l);
                Some((spec.local_ns + hop, how))
            }
            _ => None,
        };
        Model {
            p,
            e,
            nps,
            s: f64::from(p.sockets),
            peak: p.socket_peak_gb_s(),
            link,
            remote_ns,
        }
    }

    fn node_peak(&self) -> f64 {
        if self.nps == 0 {
            self.peak * self.s
        } else {
            self.peak / f64::from(self.nps)
        }
    }

    /// GB/s the requests of `share` of a socket's cores allow to the other
    /// socket: lines in flight x 64 / remote latency (bytes per ns = GB/s).
    fn requests(&self, share: f64) -> Option<f64> {
        let lines = self.p.links.as_ref()?.remote_lines_in_flight?;
        let (ns, _) = self.remote_ns.as_ref()?;
        Some(lines * share * LINE / ns)
    }

    /// The request term of a formula: `factor` x the requests of `share` of
    /// a socket's cores, `label` saying what the factor is.
    fn requests_text(&self, share: f64, factor: f64, label: &str) -> String {
        match (
            self.requests(share),
            self.p.links.as_ref().and_then(|l| l.remote_lines_in_flight),
        ) {
            (Some(r), Some(n)) => format!(
                "; requests {label}{:.0} lines x 64 B / {:.1} ns = {:.1}; bent by k = {BEND}",
                n * share,
                self.remote_ns.as_ref().map_or(0.0, |r| r.0),
                factor * r
            ),
            _ => String::new(),
        }
    }

    fn figure(
        &self,
        key: &'static str,
        what: &str,
        limits: Limits,
        formula: String,
        uses: &[&'static str],
    ) -> Figure {
        let (value, by) = limits.resolve();
        let mut uses = uses.to_vec();
        if limits.requests.is_some() {
            uses.extend(["links.remote_lines_in_flight", "latency"]);
        }
        Figure {
            key,
            what: what.into(),
            value,
            unit: "GB/s",
            limited_by: Some(by),
            formula,
            uses,
        }
    }

    fn latency(&self, key: &'static str, what: &str, value: f64, formula: String) -> Figure {
        Figure {
            key,
            what: what.into(),
            value,
            unit: "ns",
            limited_by: None,
            formula,
            uses: vec!["latency"],
        }
    }

    fn latencies(&self) -> Vec<Figure> {
        let Some(spec) = &self.p.latency else {
            return vec![];
        };
        let local = self.latency(
            "local_latency_ns",
            "idle latency, local",
            spec.local_ns,
            format!("local = {:.1} ns", spec.local_ns),
        );
        let Some((remote, how)) = &self.remote_ns else {
            return vec![local];
        };
        if self.nps == 0 {
            let mean = (spec.local_ns + (self.s - 1.0) * remote) / self.s;
            return vec![self.latency(
                "local_latency_ns",
                "idle latency, memory interleaved over every socket",
                mean,
                format!(
                    "(local {:.1} + {} x remote {remote:.1}) / {} ns; remote = local + {how}",
                    spec.local_ns,
                    self.s - 1.0,
                    self.s
                ),
            )];
        }
        vec![
            local,
            self.latency(
                "remote_latency_ns",
                "idle latency, a node on another socket",
                *remote,
                format!("remote = local {:.1} ns + {how}", spec.local_ns),
            ),
        ]
    }

    /// Memory interleaved over every socket, all CPUs: Triad and reads.
    fn interleaved_limits(&self, share: f64, lines_per_byte: f64) -> (Limits, String) {
        let s = self.s;
        let link = self
            .link
            .map(|l| lines_per_byte * s * s * share * l.gb_s_per_direction);
        let requests = self.requests(1.0).map(|r| s * s / (s - 1.0) * r);
        let text = match self.link {
            Some(l) => format!(
                "; links {lines_per_byte:.2} x {s}^2 x {share:.3} x {:.1} = {:.1}{}",
                l.gb_s_per_direction,
                link.unwrap_or(0.0),
                self.requests_text(1.0, s * s / (s - 1.0), &format!("{s}^2/{} x ", s - 1.0))
            ),
            None => String::new(),
        };
        (
            Limits {
                memory: 0.0,
                link,
                requests,
            },
            text,
        )
    }

    fn interleaved_triad(&self, key: &'static str, what: &str) -> Figure {
        let (mut l, text) = self.interleaved_limits(self.e.mixed(), 0.75);
        l.memory = self.s * self.e.triad * self.peak;
        let formula = format!(
            "min(memory {} x {:.2} x {:.1} = {:.1}{text})",
            self.s, self.e.triad, self.peak, l.memory
        );
        self.figure(
            key,
            what,
            l,
            formula,
            &["efficiency.triad", "efficiency.link", "efficiency.link_mixed"],
        )
    }

    /// NPS0: the machine is one node.
    fn interleaved_mode(&self) -> Vec<Figure> {
        let (mut reads, text) = self.interleaved_limits(self.e.mixed(), 1.0);
        reads.memory = self.s * self.e.read * self.peak;
        let read_formula = format!(
            "min(memory {} x {:.3} x {:.1} = {:.1}{text})",
            self.s, self.e.read, self.peak, reads.memory
        );
        let mut out = vec![self.figure(
            "local_read_gb_s",
            "reads, all CPUs, the one node",
            reads,
            read_formula,
            &["efficiency.read", "efficiency.link", "efficiency.link_mixed"],
        )];
        out.extend(self.latencies());
        out.push(self.interleaved_triad(
            "system_triad_gb_s",
            "Triad, all CPUs, memory interleaved over every socket",
        ));
        out
    }

    /// A figure of the memory alone: `nodes` x `eff` x a node's peak.
    fn memory_only(&self, key: &'static str, what: &str, nodes: f64, eff: f64, uses: &'static str) -> Figure {
        let node = self.node_peak();
        let formula = if nodes == 1.0 {
            format!("{eff:.3} x node peak {node:.1}")
        } else {
            format!("{nodes} nodes x {eff:.3} x {node:.1}")
        };
        let limits = Limits {
            memory: nodes * eff * node,
            link: None,
            requests: None,
        };
        self.figure(key, what, limits, formula, &[uses])
    }

    /// One node's CPUs on a node of another socket: the link's direction
    /// that carries the lines has `data_share` of data.
    fn remote(
        &self,
        l: &LinkUse,
        key: &'static str,
        what: &str,
        eff: f64,
        data_share: f64,
        how: &str,
    ) -> Figure {
        let node = self.node_peak();
        let share = 1.0 / f64::from(self.nps);
        let limits = Limits {
            memory: eff * node,
            link: Some(data_share * l.gb_s_per_direction),
            requests: self.requests(share),
        };
        let formula = format!(
            "min(memory {eff:.3} x {node:.1} = {:.1}; links {how} {data_share:.3} x {:.1} = {:.1}{})",
            eff * node,
            l.gb_s_per_direction,
            data_share * l.gb_s_per_direction,
            self.requests_text(share, 1.0, if self.nps > 1 { "1/nps x " } else { "" })
        );
        let eff_key = if eff == self.e.read {
            "efficiency.read"
        } else {
            "efficiency.triad"
        };
        let mut uses = vec![eff_key, "efficiency.link"];
        if data_share != self.e.link {
            uses.push("efficiency.link_mixed");
        }
        self.figure(key, what, limits, formula, &uses)
    }

    /// Two sockets, NPS1: each reads the other's memory, so each direction
    /// carries one socket's lines and the other's commands.
    fn all_remote(&self, l: &LinkUse) -> Figure {
        let node = self.node_peak();
        let link = self.e.mixed() * l.gb_s_per_direction;
        let limits = Limits {
            memory: self.e.read * node,
            link: Some(link),
            requests: self.requests(1.0),
        };
        let formula = format!(
            "2 x min(memory {:.3} x {node:.1} = {:.1}; links, lines one way and the other's commands, {:.3} x {:.1} = {link:.1}{})",
            self.e.read,
            self.e.read * node,
            self.e.mixed(),
            l.gb_s_per_direction,
            self.requests_text(1.0, 1.0, "")
        );
        let mut f = self.figure(
            "all_remote_read_gb_s",
            "reads, each socket on the other's memory at once",
            limits,
            formula,
            &["efficiency.read", "efficiency.link", "efficiency.link_mixed"],
        );
        f.value *= 2.0;
        f
    }

    fn per_node(&self) -> Vec<Figure> {
        let nodes = self.s * f64::from(self.nps);
        let (read, triad) = (self.e.read, self.e.triad);
        let mut out = vec![self.memory_only(
            "local_read_gb_s",
            "reads, one node's CPUs, its own memory",
            1.0,
            read,
            "efficiency.read",
        )];
        if let Some(l) = self.link {
            let what = "reads, one node's CPUs, a node on another socket";
            out.push(self.remote(l, "remote_read_gb_s", what, read, self.e.link, "lines one way"));
        }
        let what = "reads, every node on its own memory at once";
        out.push(self.memory_only("system_read_gb_s", what, nodes, read, "efficiency.read"));
        if let (Some(l), true) = (self.link, self.p.sockets == 2 && self.nps == 1) {
            out.push(self.all_remote(l));
        }
        out.extend(self.latencies());
        let what = "Triad, one node's CPUs, its own memory";
        out.push(self.memory_only("local_triad_gb_s", what, 1.0, triad, "efficiency.triad"));
        if let Some(l) = self.link {
            let what = "Triad, one node's CPUs, a node on another socket";
            let share = self.e.remote_triad_share();
            out.push(self.remote(l, "remote_triad_gb_s", what, triad, share, "lines and acks"));
        }
        let what = "Triad, every node on its own memory at once";
        out.push(self.memory_only("system_triad_gb_s", what, nodes, triad, "efficiency.triad"));
        if self.link.is_some() {
            out.push(self.interleaved_triad(
                "interleaved_triad_gb_s",
                "Triad, all CPUs, memory interleaved over every socket",
            ));
        }
        out
    }
}

/// What the requests of every socket allow an interleaved Triad over `link`,
/// where the platform states the lines in flight and the latency.
pub(super) fn interleaved_requests(p: &Platform, link: &LinkUse) -> Option<f64> {
    let m = Model::new(p, p.efficiency, 1, Some(link));
    let s = m.s;
    m.requests(1.0).map(|r| s * s / (s - 1.0) * r)
}
