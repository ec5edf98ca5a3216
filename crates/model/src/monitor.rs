//! `monitor`: memory traffic read from the memory controllers' own counters while
//! the machine (or one command) runs.

use serde::{Deserialize, Serialize};

use crate::Outcome;

/// What `monitor` reports: which counter source, why, and the traffic per interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorReport {
    /// The source used ("intel-imc", "intel-imc-free-running", "amd-umc", "amd-df",
    /// "nvidia-scf", "resctrl-mbm"), or none.
    pub source: Option<String>,
    /// Why this source (or why none).
    pub source_reason: String,
    /// Every source looked for, in order of preference, and what was found.
    pub candidates: Vec<SourceStatus>,
    /// What is missing for counters to work, each with how to enable it.
    pub missing: Vec<String>,
    pub interval_s: f64,
    /// The command monitored over its lifetime, with `-- COMMAND ARGS...`.
    pub command: Option<CommandRun>,
    pub outcome: Outcome<MonitorMeasurement>,
}

/// One source looked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceStatus {
    pub name: String,
    pub available: bool,
    pub detail: String,
}

/// The command run under `monitor -- COMMAND ARGS...`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub argv: Vec<String>,
    /// Its exit status, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub wall_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorMeasurement {
    pub intervals: Vec<MonitorInterval>,
    /// The whole run as one interval (index = number of intervals).
    pub total: MonitorInterval,
}

/// Traffic over one interval: per channel (or L3 domain), per socket, system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorInterval {
    pub index: usize,
    pub start_s: f64,
    pub duration_s: f64,
    pub channels: Vec<Traffic>,
    pub sockets: Vec<Traffic>,
    pub system: Traffic,
}

/// Bytes and GB/s (10^9 bytes/s) of one place. Sources that count reads and writes
/// together (AMD DF, resctrl MBM) leave read and write empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    pub name: String,
    pub socket: Option<u32>,
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    pub total_bytes: u64,
    pub read_gb_s: Option<f64>,
    pub write_gb_s: Option<f64>,
    pub total_gb_s: f64,
}

impl Traffic {
    /// A zero place, to add into.
    pub fn empty(name: &str, socket: Option<u32>) -> Traffic {
        Traffic {
            name: name.into(),
            socket,
            read_bytes: None,
            write_bytes: None,
            total_bytes: 0,
            read_gb_s: None,
            write_gb_s: None,
            total_gb_s: 0.0,
        }
    }

    /// Adds another place's bytes (rates are set by [`Traffic::rate`]).
    pub fn add(&mut self, o: &Traffic) {
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.read_bytes = sum(self.read_bytes, o.read_bytes);
        self.write_bytes = sum(self.write_bytes, o.write_bytes);
        self.total_bytes = self.total_bytes.saturating_add(o.total_bytes);
    }

    /// Sets GB/s from the bytes over `duration_s` seconds.
    pub fn rate(&mut self, duration_s: f64) {
        let gb_s = |b: u64| {
            if duration_s > 0.0 {
                b as f64 / duration_s * 1e-9
            } else {
                0.0
            }
        };
        self.read_gb_s = self.read_bytes.map(gb_s);
        self.write_gb_s = self.write_bytes.map(gb_s);
        self.total_gb_s = gb_s(self.total_bytes);
    }
}

/// Memory traffic the controllers' counters saw over a measurement's timed rounds,
/// beside the bytes the program counted over the same rounds. The counters see the
/// whole machine: write-allocate reads, prefetches, page walks and anything else
/// running show up as a ratio above 1; streaming stores that skip the read show as a
/// read ratio near the program's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DramTraffic {
    /// The counter source, as `monitor` names it.
    pub source: String,
    /// Timed rounds the counters spanned (the warm-up is not counted).
    pub rounds: usize,
    /// Seconds from the counters' first reading to their last.
    pub window_s: f64,
    /// What the counters saw, per socket and for the system.
    pub sockets: Vec<Traffic>,
    pub system: Traffic,
    /// Bytes the program read and wrote over the same rounds, as its mix counts them.
    pub program_read_bytes: u64,
    pub program_write_bytes: u64,
    /// Counted over programmed bytes, all traffic together.
    pub ratio: Option<f64>,
    /// The same for reads and for writes, where the source tells them apart.
    pub read_ratio: Option<f64>,
    pub write_ratio: Option<f64>,
}

impl DramTraffic {
    /// Sets the ratios from the counted and programmed bytes.
    pub fn with_ratios(mut self) -> DramTraffic {
        let ratio = |counted: Option<u64>, program: u64| match counted {
            Some(c) if program > 0 => Some(c as f64 / program as f64),
            _ => None,
        };
        self.ratio = ratio(
            Some(self.system.total_bytes),
            self.program_read_bytes + self.program_write_bytes,
        );
        self.read_ratio = ratio(self.system.read_bytes, self.program_read_bytes);
        self.write_ratio = ratio(self.system.write_bytes, self.program_write_bytes);
        self
    }
}

impl MonitorMeasurement {
    /// The places every interval reports: the system, each socket, each channel.
    pub(crate) fn places(i: &MonitorInterval) -> impl Iterator<Item = (&'static str, &Traffic)> {
        let system = std::iter::once(("system", &i.system));
        system
            .chain(i.sockets.iter().map(|t| ("socket", t)))
            .chain(i.channels.iter().map(|t| ("channel", t)))
    }

    /// Per place, its GB/s in each interval, in order: the time series of a run.
    pub fn series(&self, pick: impl Fn(&Traffic) -> Option<f64>) -> Vec<(String, Vec<(f64, f64)>)> {
        let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for i in &self.intervals {
            for (_, t) in Self::places(i) {
                let Some(v) = pick(t) else { continue };
                let end = i.start_s + i.duration_s;
                match out.iter_mut().find(|(n, _)| *n == t.name) {
                    Some((_, points)) => points.push((end, v)),
                    None => out.push((t.name.clone(), vec![(end, v)])),
                }
            }
        }
        out
    }
}

impl MonitorReport {
    /// One line for `runs list`: the source and the traffic it counted.
    pub fn summary(&self) -> String {
        match &self.outcome {
            Outcome::Ok(m) => format!(
                "monitor: {} {:.1} GB over {:.1} s ({:.2} GB/s)",
                self.source.as_deref().unwrap_or("?"),
                m.total.system.total_bytes as f64 * 1e-9,
                m.total.duration_s,
                m.total.system.total_gb_s
            ),
            _ => "monitor: skipped".into(),
        }
    }
}
