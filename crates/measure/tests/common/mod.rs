//! What the plan tests share: fixture machines and default options.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use memfabric_measure::kernels::Isa;
use memfabric_measure::plan::loaded::LoadedOptions;
use memfabric_measure::plan::{BandwidthOptions, LatencyOptions, Machine};
use memfabric_model::{HugePages, Mix, Pattern};
use memfabric_topo::Topology;

pub fn fixture(name: &str) -> Topology {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
        .join(name)
        .join("sys");
    Topology::read(&root).expect("fixture reads")
}

pub fn all_cpus(t: &Topology) -> Vec<u32> {
    t.cpus.iter().map(|c| c.id).collect()
}

pub fn lat(size: Option<u64>, huge: HugePages) -> LatencyOptions {
    LatencyOptions {
        size_bytes: size,
        stride_bytes: 64,
        window_bytes: None,
        pattern: Pattern::Random,
        huge_pages: huge,
        samples: 5,
        sample_time: Duration::from_millis(1),
        seed: 1,
    }
}

pub fn bw(threads: Option<usize>) -> BandwidthOptions {
    BandwidthOptions {
        mixes: vec![Mix::Read],
        array_bytes_per_thread: Some(1 << 20),
        threads: threads.into_iter().collect(),
        huge_pages: HugePages::Off,
        samples: 3,
        isa: Isa::Scalar,
    }
}

/// The whole fixture machine, every CPU allowed.
pub fn machine(t: &Topology) -> Machine<'_> {
    Machine {
        allowed_cpus: all_cpus(t),
        topo: t,
        roots: memfabric_topo::Roots::live(),
    }
}

pub fn loaded(f: impl FnOnce(&mut LoadedOptions)) -> LoadedOptions {
    let mut o = LoadedOptions {
        latency_cpu: None,
        latency_domain: None,
        load_cpus: None,
        load_domain: None,
        mem_node: None,
        mix: Mix::Read,
        spread: false,
        points: 16,
        chase_bytes: Some(64 << 20),
        array_bytes_per_thread: Some(1 << 20),
        huge_pages: HugePages::Off,
        samples: 3,
        sample_time: Duration::from_millis(1),
        isa: Isa::Scalar,
        seed: 1,
        load_nodes: None,
        load_mem_nodes: None,
    };
    f(&mut o);
    o
}
