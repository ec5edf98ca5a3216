//! Counter sources and the pure arithmetic of monitoring: deltas with wraparound at
//! the counter's width, scaling to bytes, and sums per channel, socket and system.

use std::collections::VecDeque;
use std::fs;

use memfabric_model::{MonitorInterval, MonitorMeasurement, Traffic};

use super::{CounterSpec, Dir, MonitorError, Origin};
use crate::sys::PerfCounter;

/// Where raw counts come from: the kernel (perf, resctrl) or a recording.
pub trait CounterSource {
    /// Opens one counter per spec, in order.
    fn open(&mut self, specs: &[CounterSpec]) -> Result<(), MonitorError>;
    /// The raw count of every counter, in the order opened; None where the counter
    /// could not be read this time (resctrl's "Unavailable").
    fn read(&mut self) -> Result<Vec<Option<u64>>, MonitorError>;
    fn close(&mut self);
}

/// Recorded counts, one row per read.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    rows: VecDeque<Vec<Option<u64>>>,
    opened: usize,
}

impl Replay {
    pub fn new(rows: Vec<Vec<Option<u64>>>) -> Replay {
        Replay {
            rows: rows.into(),
            opened: 0,
        }
    }
}

impl CounterSource for Replay {
    fn open(&mut self, specs: &[CounterSpec]) -> Result<(), MonitorError> {
        self.opened = specs.len();
        Ok(())
    }

    fn read(&mut self) -> Result<Vec<Option<u64>>, MonitorError> {
        let row = self.rows.pop_front().ok_or(MonitorError::ReplayEnded)?;
        if row.len() != self.opened {
            return Err(MonitorError::ReplayWidth(row.len(), self.opened));
        }
        Ok(row)
    }

    fn close(&mut self) {
        self.rows.clear();
    }
}

/// The live kernel: perf_event_open counters and resctrl files.
#[derive(Debug, Default)]
pub struct Live {
    counters: Vec<LiveCounter>,
}

#[derive(Debug)]
enum LiveCounter {
    Perf(PerfCounter),
    File(std::path::PathBuf),
}

impl CounterSource for Live {
    fn open(&mut self, specs: &[CounterSpec]) -> Result<(), MonitorError> {
        self.counters.clear();
        for s in specs {
            let c = match &s.origin {
                Origin::Perf {
                    pmu,
                    pmu_type,
                    config,
                    cpu,
                } => {
                    let c = PerfCounter::open(*pmu_type, *config, *cpu).map_err(|e| MonitorError::Open {
                        what: format!("{pmu} {} on CPU {cpu}", s.event),
                        source: e,
                    })?;
                    LiveCounter::Perf(c)
                }
                Origin::File(p) => LiveCounter::File(p.clone()),
            };
            self.counters.push(c);
        }
        Ok(())
    }

    fn read(&mut self) -> Result<Vec<Option<u64>>, MonitorError> {
        self.counters
            .iter()
            .map(|c| match c {
                LiveCounter::Perf(p) => p.read().map(Some).map_err(MonitorError::Read),
                LiveCounter::File(path) => Ok(read_mbm(&fs::read_to_string(path).unwrap_or_default())),
            })
            .collect()
    }

    fn close(&mut self) {
        self.counters.clear();
    }
}

/// A resctrl mbm_*_bytes file: a byte count, or "Unavailable" while the hardware
/// has no valid value.
pub fn read_mbm(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Counts between two reads of a counter `width_bits` wide that may have wrapped once.
pub fn delta(prev: u64, now: u64, width_bits: u32) -> u64 {
    let d = now.wrapping_sub(prev);
    if width_bits >= 64 {
        d
    } else {
        d & ((1u64 << width_bits) - 1)
    }
}

/// Traffic over one interval from each counter's delta (in counts).
pub fn interval(
    specs: &[CounterSpec],
    deltas: &[u64],
    index: usize,
    start_s: f64,
    duration_s: f64,
) -> MonitorInterval {
    let mut channels: Vec<Traffic> = Vec::new();
    for (s, &d) in specs.iter().zip(deltas) {
        let bytes = (d as f64 * s.bytes_per_count).round() as u64;
        // One PMU may serve a channel on every socket (Intel's uncore_imc_0 counts
        // on one CPU per socket): a channel is its name and its socket.
        let pos = match channels
            .iter()
            .position(|c| c.name == s.channel && c.socket == s.socket)
        {
            Some(p) => p,
            None => {
                channels.push(Traffic::empty(&s.channel, s.socket));
                channels.len() - 1
            }
        };
        let c = &mut channels[pos];
        let add = |v: &mut Option<u64>| *v = Some(v.unwrap_or(0).saturating_add(bytes));
        match s.dir {
            Dir::Read => add(&mut c.read_bytes),
            Dir::Write => add(&mut c.write_bytes),
            Dir::Total => {}
        }
        c.total_bytes = c.total_bytes.saturating_add(bytes);
    }
    let mut sockets: Vec<Traffic> = Vec::new();
    let mut system = Traffic::empty("system", None);
    for c in &mut channels {
        c.rate(duration_s);
        system.add(c);
        let Some(sock) = c.socket else { continue };
        match sockets.iter_mut().find(|t| t.socket == Some(sock)) {
            Some(t) => t.add(c),
            None => {
                let mut t = Traffic::empty(&format!("socket {sock}"), Some(sock));
                t.add(c);
                sockets.push(t);
            }
        }
    }
    sockets.sort_by_key(|t| t.socket);
    sockets.iter_mut().for_each(|t| t.rate(duration_s));
    system.rate(duration_s);
    MonitorInterval {
        index,
        start_s,
        duration_s,
        channels,
        sockets,
        system,
    }
}

/// Monitoring in progress: the last counts and the sums so far.
#[derive(Debug)]
pub struct Monitor {
    specs: Vec<CounterSpec>,
    prev: Vec<Option<u64>>,
    sums: Vec<u64>,
    elapsed_s: f64,
    intervals: Vec<MonitorInterval>,
}

impl Monitor {
    /// Opens the counters and takes the first reading.
    pub fn start(specs: Vec<CounterSpec>, source: &mut dyn CounterSource) -> Result<Monitor, MonitorError> {
        source.open(&specs)?;
        let prev = source.read()?;
        Ok(Monitor {
            sums: vec![0; specs.len()],
            specs,
            prev,
            elapsed_s: 0.0,
            intervals: Vec::new(),
        })
    }

    /// Reads every counter again: the traffic since the last reading, `duration_s` ago.
    pub fn sample(
        &mut self,
        source: &mut dyn CounterSource,
        duration_s: f64,
    ) -> Result<&MonitorInterval, MonitorError> {
        let now = source.read()?;
        let mut deltas = vec![0; self.specs.len()];
        for (k, s) in self.specs.iter().enumerate() {
            // An unreadable value counts nothing now; the next good one spans both.
            if let (Some(p), Some(n)) = (self.prev[k], now[k]) {
                deltas[k] = delta(p, n, s.width_bits);
                self.sums[k] = self.sums[k].saturating_add(deltas[k]);
            }
            if now[k].is_some() {
                self.prev[k] = now[k];
            }
        }
        let i = interval(
            &self.specs,
            &deltas,
            self.intervals.len(),
            self.elapsed_s,
            duration_s,
        );
        self.elapsed_s += duration_s;
        self.intervals.push(i);
        Ok(self.intervals.last().expect("just pushed"))
    }

    /// Everything sampled, and the whole run as one interval.
    pub fn finish(self) -> MonitorMeasurement {
        let total = interval(&self.specs, &self.sums, self.intervals.len(), 0.0, self.elapsed_s);
        MonitorMeasurement {
            intervals: self.intervals,
            total,
        }
    }
}
