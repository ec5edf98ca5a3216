//! memfabric-topo: what the machine is.
//!
//! Reads CPUs, caches, NUMA nodes, hugepage pools, firmware (HMAT)
//! memory performance and SMBIOS memory devices (DIMMs) from a sysfs
//! tree. The root is a parameter so that the same code reads `/sys` on a
//! live machine and captured trees under `tests/fixtures/` in tests.
//!
//! ```no_run
//! use std::path::Path;
//! let topo = memfabric_topo::Topology::read(Path::new("/sys"))?;
//! println!("{} CPUs on {} nodes", topo.cpus.len(), topo.nodes.len());
//! # Ok::<(), memfabric_topo::TopoError>(())
//! ```

#![forbid(unsafe_code)]

mod cache;
mod cpu;
mod cpulist;
mod devices;
mod dmidecode;
mod error;
mod fact;
mod hmat;
mod host;
mod identity;
mod locator;
mod node;
pub mod parse;
mod platform;
mod roots;
mod smbios;
mod sysfs;
mod topology;
mod types;

pub use cpulist::{format_cpulist, parse_cpulist, MAX_LIST_IDS};
pub use devices::{cap_eff, parse_numa_node, read_pmu, read_pmus, PciSlot, PerfAccess, PmuFiles};
pub use dmidecode::{dmidecode_fallback, live_memory_devices, parse_dmidecode};
pub use error::{ListError, TopoError};
pub use fact::Fact;
pub use host::{cpuinfo_field, governors, mem_available_bytes, numa_balancing, Host};
pub use identity::{host_id, HardwareClass};
pub use locator::{group_dimms, parse_place, Place};
pub use platform::{memory_options_of, DimmSpeed, NodeSeen, NumaSeen, Platform};
pub use roots::Roots;
pub use smbios::{decode_type17, read_memory_devices, Dimm, MemoryDevices};
pub use types::{CacheDomain, CacheLevel, Cpu, Die, HmatEntry, HugePages, HugePool, Node, Package, Topology};
