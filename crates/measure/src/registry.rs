//! The one table of measurements: it drives dispatch, `--help` and `memfabric list`.

/// A measurement the tool offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Subcommand name.
    pub name: &'static str,
    /// One line for `--help` and `memfabric list`.
    pub about: &'static str,
    /// What it reports, with units.
    pub reports: &'static str,
}

pub const TOPOLOGY: Entry = Entry {
    name: "topology",
    about: "Show sockets, dies, L3 domains, NUMA nodes, caches, huge pages and firmware (SLIT/HMAT) figures",
    reports: "structure only; HMAT latency in ns and bandwidth in MB/s where firmware publishes them",
};

pub const LATENCY: Entry = Entry {
    name: "latency",
    about: "Idle memory latency by dependent pointer chase, per CPU node and memory node",
    reports: "ns per load: median, min, p99, coefficient of variation, samples",
};

pub const BANDWIDTH: Entry = Entry {
    name: "bandwidth",
    about: "Bandwidth of read/write mixes (non-temporal stores included) per CPU node and memory node, per thread count, per L3 domain",
    reports: "GB/s (10^9 bytes/s) of bytes read + written: median, min, max, coefficient of variation, samples",
};

pub const STREAM: Entry = Entry {
    name: "stream",
    about: "STREAM's Copy, Scale, Add and Triad, counted and validated as STREAM 5.10 does",
    reports: "GB/s per function: best (STREAM's Best Rate) and median, times, validation",
};

pub const ALL: &[Entry] = &[TOPOLOGY, LATENCY, BANDWIDTH, STREAM];
