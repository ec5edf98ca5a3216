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

pub const LOADED_LATENCY: Entry = Entry {
    name: "loaded-latency",
    about: "Latency of one CPU while the others load the same memory, from full load to near idle (or one L3 domain at a time)",
    reports: "(GB/s of the load, ns per load) pairs: median, min, p99, coefficient of variation of the latency",
};

pub const ALL: &[Entry] = &[TOPOLOGY, LATENCY, BANDWIDTH, STREAM, LOADED_LATENCY];
