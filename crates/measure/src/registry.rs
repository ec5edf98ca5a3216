//! The one table of the commands that measure or describe the machine: each
//! subcommand's `--help` line and `memfabric list` are read from it, so the two
//! never disagree.

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

pub const C2C: Entry = Entry {
    name: "c2c",
    about: "Core-to-core latency: one cache line bounced between every pair of CPUs (compare-exchange or read/write ping-pong)",
    reports: "ns one-way (round trip / 2, as core-to-core-latency): median, min, p99, coefficient of variation, samples per pair; pair medians per topology class; mean",
};

pub const SWEEP: Entry = Entry {
    name: "sweep",
    about: "Latency and bandwidth against working-set size, from 4 KiB to past the last-level cache: the cache levels found, beside the sizes the topology reports",
    reports: "ns per load and GB/s per size; plateaus, boundaries (bytes) and their ratio to each reported cache size",
};

pub const THEORY: Entry = Entry {
    name: "theory",
    about: "Theoretical peak bandwidth with its formula: this machine's DIMMs (SMBIOS), or channels x MT/s x bus width, socket links, a machine file",
    reports: "GB/s (10^9 bytes/s) per socket and for the system, per link direction and both; the DIMMs read",
};

pub const AUDIT: Entry = Entry {
    name: "audit",
    about: "Memory-configuration audit: empty or unequal channels, mixed DIMMs, speed below rating, nodes without memory, THP, NUMA balancing, governor, SMT",
    reports: "findings (severity, why, evidence); per socket a class (optimal, reduced, not-recommended) with the expected bandwidth loss",
};

pub const MONITOR: Entry = Entry {
    name: "monitor",
    about: "Live memory traffic from the memory controllers' counters (Intel IMC, AMD UMC/DF, NVIDIA Grace SCF, resctrl MBM), for a time or over one command's lifetime",
    reports: "bytes and GB/s (10^9 bytes/s) read and written per channel, per socket and for the system, per interval and in total; the source used and why",
};

pub const GPU: Entry = Entry {
    name: "gpu",
    about: "GPU memory paths: device-memory bandwidth and latency, host<->device copies per NUMA node, GPU loads from host memory, CPU latency under DMA load, cache injection",
    reports: "GB/s (10^9 bytes/s) and share of the peak from the memory clock and bus width; cycles and ns per load; the GPU's clocks, power and temperature at start and end",
};

pub const ALL: &[Entry] = &[
    TOPOLOGY,
    LATENCY,
    BANDWIDTH,
    STREAM,
    LOADED_LATENCY,
    C2C,
    SWEEP,
    THEORY,
    AUDIT,
    MONITOR,
    GPU,
];
