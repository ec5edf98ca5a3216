//! A platform described by numbers, from flags or a machine file (TOML),
//! and its validation.

use serde::Deserialize;

/// Why a description of a platform cannot be used. Each names the setting
/// as the user wrote it (a flag or a machine-file key).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TheoryError {
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error("{0} must be a multiple of 8 (bits), not {1}")]
    NotBytes(&'static str, u32),
    #[error("{name} must be a positive number of Gbit/s per lane, not {value}")]
    BadRate { name: &'static str, value: f64 },
    #[error("{0}")]
    Incomplete(String),
}

/// How the settings are called where they were given: flags or file keys.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    pub sockets: &'static str,
    pub channels: &'static str,
    pub mts: &'static str,
    pub bus_bits: &'static str,
    pub links: &'static str,
    pub lanes: &'static str,
    pub gbps: &'static str,
}

pub const FLAG_NAMES: Names = Names {
    sockets: "--sockets",
    channels: "--channels",
    mts: "--mts",
    bus_bits: "--bus-bits",
    links: "--links",
    lanes: "--lanes",
    gbps: "--gbps",
};

pub const FILE_NAMES: Names = Names {
    sockets: "sockets",
    channels: "channels_per_socket",
    mts: "mts",
    bus_bits: "bus_bits",
    links: "links",
    lanes: "lanes",
    gbps: "gbps",
};

/// A platform as described, before validation: `--channels 12 --mts 4800`
/// or the same keys in a machine file (TOML, see docs/JSON.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Description {
    pub name: Option<String>,
    pub sockets: Option<u32>,
    pub channels_per_socket: Option<u32>,
    pub mts: Option<u32>,
    pub bus_bits: Option<u32>,
    pub links: Option<u32>,
    pub lanes: Option<u32>,
    pub gbps: Option<f64>,
}

/// A memory system of identical sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramSpec {
    pub sockets: u32,
    pub channels: u32,
    pub mt_s: u32,
    pub bus_bits: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSpec {
    pub links: u32,
    pub lanes: u32,
    pub gbps: f64,
}

/// A validated description.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    pub name: Option<String>,
    pub memory: Option<DramSpec>,
    pub links: Option<LinkSpec>,
}

fn at_least_1(v: Option<u32>, name: &'static str) -> Result<Option<u32>, TheoryError> {
    match v {
        Some(0) => Err(TheoryError::Zero(name)),
        v => Ok(v),
    }
}

impl Description {
    /// Checks the description: every number at least 1, memory given as
    /// channels (64 bits each unless bus bits say otherwise) or as one wide
    /// bus (bus bits alone), links given all three or not at all.
    pub fn validate(&self, n: &Names) -> Result<Platform, TheoryError> {
        let sockets = at_least_1(self.sockets, n.sockets)?;
        let channels = at_least_1(self.channels_per_socket, n.channels)?;
        let mts = at_least_1(self.mts, n.mts)?;
        let bus_bits = at_least_1(self.bus_bits, n.bus_bits)?;
        if let Some(b) = bus_bits.filter(|b| b % 8 != 0) {
            return Err(TheoryError::NotBytes(n.bus_bits, b));
        }
        let memory = match (channels, mts, bus_bits) {
            (None, None, None) => None,
            (_, None, _) => {
                return Err(TheoryError::Incomplete(format!(
                    "give {} (transfers per second) with {} or {}",
                    n.mts, n.channels, n.bus_bits
                )))
            }
            (None, Some(_), None) => {
                return Err(TheoryError::Incomplete(format!(
                    "{} needs {} (64-bit channels per socket) or {} (a wide bus's total width, e.g. 256 for LPDDR5X)",
                    n.mts, n.channels, n.bus_bits
                )))
            }
            (c, Some(mt_s), b) => Some(DramSpec {
                sockets: sockets.unwrap_or(1),
                // A bus width alone is one wide bus (LPDDR, GDDR, HBM).
                channels: c.unwrap_or(1),
                mt_s,
                bus_bits: b.unwrap_or(64),
            }),
        };
        let links = self.link_spec(n)?;
        if memory.is_none() && links.is_none() {
            return Err(TheoryError::Incomplete(format!(
                "nothing to calculate: give memory ({} and {}, or {}) or links ({}, {}, {})",
                n.channels, n.mts, n.bus_bits, n.links, n.lanes, n.gbps
            )));
        }
        if memory.is_none() && sockets.is_some() {
            return Err(TheoryError::Incomplete(format!(
                "{} applies to memory: give {} too",
                n.sockets, n.mts
            )));
        }
        Ok(Platform {
            name: self.name.clone(),
            memory,
            links,
        })
    }

    fn link_spec(&self, n: &Names) -> Result<Option<LinkSpec>, TheoryError> {
        let links = at_least_1(self.links, n.links)?;
        let lanes = at_least_1(self.lanes, n.lanes)?;
        if let Some(g) = self.gbps.filter(|g| !(g.is_finite() && *g > 0.0)) {
            return Err(TheoryError::BadRate {
                name: n.gbps,
                value: g,
            });
        }
        match (links, lanes, self.gbps) {
            (None, None, None) => Ok(None),
            (Some(links), Some(lanes), Some(gbps)) => Ok(Some(LinkSpec { links, lanes, gbps })),
            _ => Err(TheoryError::Incomplete(format!(
                "socket links need all three of {}, {} and {}",
                n.links, n.lanes, n.gbps
            ))),
        }
    }
}
