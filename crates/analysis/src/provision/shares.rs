//! What share of a raw rate carries data: the efficiencies of the memory and
//! of the socket links, and how two limits in series combine.

use serde::{Deserialize, Serialize};

use super::numa::Bottleneck;

/// Bytes in a cache line: what every link transfer carries.
pub const LINE: f64 = 64.0;

/// How sharply two limits in series meet: `(a^-k + b^-k)^(-1/k)`. Near the
/// link's capacity requests wait in its queues, so the rate bends below both
/// limits before the lesser is reached. k = 4 is the bend LP1852's Tables 4
/// and 5 give together; a sharp min() is 9 % high at x16/16, where the two
/// are close.
pub const BEND: f64 = 4.0;

/// `a` bent by a second limit `b` where there is one.
pub fn bend(a: f64, b: Option<f64>) -> f64 {
    match b {
        Some(b) => (a.powf(-BEND) + b.powf(-BEND)).powf(-1.0 / BEND),
        None => a,
    }
}

/// The link term that gives `rate` when bent by `b`: what a calibration
/// solves for. None where `rate` is not below `b`.
pub fn unbend(rate: f64, b: Option<f64>) -> Option<f64> {
    match b {
        Some(b) if rate < b => Some((rate.powf(-BEND) - b.powf(-BEND)).powf(-1.0 / BEND)),
        Some(_) => None,
        None => Some(rate),
    }
}

/// The stated efficiencies: the figure a model multiplies raw rates by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Efficiencies {
    /// Triad (STREAM's byte count) over the theoretical DRAM peak.
    #[serde(default = "triad_default")]
    pub triad: f64,
    /// Reads alone (MLC's bandwidth matrix) over the theoretical DRAM peak.
    #[serde(default = "read_default")]
    pub read: f64,
    /// Data over the raw link rate in a direction that carries lines one way:
    /// 64 / (64 + header bytes).
    #[serde(default = "link_default")]
    pub link: f64,
    /// Data over the raw link rate when lines flow both ways, each direction
    /// also carrying the other's commands: 64 / (64 + header + command bytes).
    /// Absent, a command is taken to be as long as a header.
    #[serde(default)]
    pub link_mixed: Option<f64>,
}

/// Triad-like mixes reach 75-80 % of the DRAM peak (see ANCHORS and docs/PLAN.md).
fn triad_default() -> f64 {
    0.78
}

/// Reads alone reach about 80 % (LP1852 Table 5: 370 of 460.8 GB/s;
/// McCalpin's Xeon 8160: 112 of 128).
fn read_default() -> f64 {
    0.80
}

/// A line with 16 bytes of header and CRC: 64 / 80.
fn link_default() -> f64 {
    0.80
}

impl Default for Efficiencies {
    fn default() -> Self {
        Efficiencies {
            triad: triad_default(),
            read: read_default(),
            link: link_default(),
            link_mixed: None,
        }
    }
}

impl Efficiencies {
    pub fn validate(&self) -> Result<(), String> {
        let ok = |v: f64| v > 0.0 && v <= 1.0;
        if !(ok(self.triad) && ok(self.read) && ok(self.link)) {
            return Err("efficiency: triad, read and link are fractions above 0 and at most 1".into());
        }
        match self.link_mixed {
            Some(m) if !(m > 0.0 && m <= self.link) => Err(format!(
                "efficiency: link_mixed ({m}) is above 0 and at most link ({}): commands only add bytes",
                self.link
            )),
            _ => Ok(()),
        }
    }

    /// The link's data share with lines flowing both ways.
    pub fn mixed(&self) -> f64 {
        self.link_mixed.unwrap_or(1.0 / (2.0 / self.link - 1.0))
    }

    /// Bytes a line carries with it on the wire.
    pub fn header_bytes(&self) -> f64 {
        LINE / self.link - LINE
    }

    /// Bytes of a request or an acknowledgement.
    pub fn command_bytes(&self) -> f64 {
        LINE / self.mixed() - LINE / self.link
    }

    /// The data share of the direction a remote node's Triad draws its lines
    /// in: each line with its header, and an acknowledgement for every third.
    pub fn remote_triad_share(&self) -> f64 {
        LINE / (LINE + self.header_bytes() + self.command_bytes() / 3.0)
    }
}

/// A rate limited by the memory, or by a link term bent by a request limit.
pub(super) struct Limits {
    pub memory: f64,
    pub link: Option<f64>,
    pub requests: Option<f64>,
}

impl Limits {
    pub fn resolve(&self) -> (f64, Bottleneck) {
        let Some(link) = self.link else {
            return (self.memory, Bottleneck::MemoryChannels);
        };
        let crossing = bend(link, self.requests);
        if self.memory <= crossing {
            (self.memory, Bottleneck::MemoryChannels)
        } else if self.requests.is_some_and(|r| r < link) {
            (crossing, Bottleneck::RemoteRequests)
        } else {
            (crossing, Bottleneck::SocketLinks)
        }
    }
}
