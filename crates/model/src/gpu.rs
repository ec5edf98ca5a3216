//! GPU results: device memory and caches, host<->device copies per NUMA node, GPU
//! loads from host memory, and the CPU's view of memory the GPU's DMA touches. Every
//! report carries the GPU it ran on, with its state at the start and the end.

use serde::{Deserialize, Serialize};

use crate::{LatencyMeasurement, Outcome, Placement, Summary};

/// The GPU a measurement ran on, and its clocks, power and temperature before and
/// after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuRecord {
    pub info: GpuInfo,
    pub start: GpuState,
    pub end: GpuState,
}

/// What the driver (and NVML, where it loads) says about one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// CUDA device ordinal.
    pub ordinal: u32,
    pub name: String,
    /// "9.0" for an H100.
    pub compute_capability: String,
    pub sm_count: u32,
    pub memory_bytes: u64,
    pub l2_bytes: u64,
    pub memory_bus_width_bits: u32,
    /// Highest memory clock the driver reports.
    pub memory_clock_mhz: f64,
    /// Highest SM clock the driver reports.
    pub sm_clock_mhz: f64,
    /// memory_clock_mhz x 2 transfers per clock x bus width / 8, in GB/s; None where
    /// the driver reports no memory clock or bus width.
    pub peak_memory_gb_s: Option<f64>,
    /// "0000:17:00.0".
    pub pci_bus_id: String,
    /// The NUMA node the GPU's PCIe slot is attached to (sysfs); None where the kernel
    /// does not know (-1).
    pub numa_node: Option<u32>,
    pub pcie: Option<PcieLink>,
    /// The kernel driver's version from NVML ("570.86.15"); None without NVML.
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports (cuDriverGetVersion): "12.8".
    pub cuda_version: String,
    /// Why the state fields are empty where they are (NVML missing or failing).
    pub nvml: Option<String>,
}

/// The PCIe link, current and best the device and slot allow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcieLink {
    pub generation: Option<u32>,
    pub width: Option<u32>,
    pub max_generation: Option<u32>,
    pub max_width: Option<u32>,
    /// Where the figures come from: "nvml" or "sysfs".
    pub source: String,
}

/// Clocks, power and temperature at one moment (NVML); None where not readable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    pub sm_clock_mhz: Option<u32>,
    pub memory_clock_mhz: Option<u32>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<u32>,
}

/// The device-memory kernels, counted as BabelStream 5.0 counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuStreamKernel {
    /// sum += a[i]
    Read,
    /// a[i] = s
    Write,
    /// c[i] = a[i] (BabelStream Copy)
    Copy,
    /// a[i] = b[i] + s * c[i] (BabelStream Triad)
    Triad,
}

impl GpuStreamKernel {
    pub const ALL: [GpuStreamKernel; 4] = [
        GpuStreamKernel::Read,
        GpuStreamKernel::Write,
        GpuStreamKernel::Copy,
        GpuStreamKernel::Triad,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GpuStreamKernel::Read => "read",
            GpuStreamKernel::Write => "write",
            GpuStreamKernel::Copy => "copy",
            GpuStreamKernel::Triad => "triad",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            GpuStreamKernel::Read => "sum += a[i]",
            GpuStreamKernel::Write => "a[i] = s",
            GpuStreamKernel::Copy => "c[i] = a[i]",
            GpuStreamKernel::Triad => "a[i] = b[i] + s*c[i]",
        }
    }

    /// Arrays read and written per element, as BabelStream counts them (Copy 2,
    /// Triad 3 arrays of 8-byte doubles).
    pub fn arrays(self) -> u64 {
        match self {
            GpuStreamKernel::Read | GpuStreamKernel::Write => 1,
            GpuStreamKernel::Copy => 2,
            GpuStreamKernel::Triad => 3,
        }
    }

    /// Bytes counted per element of an array: read + written, 8 bytes each.
    pub fn bytes_per_element(self) -> u64 {
        8 * self.arrays()
    }

    pub fn parse(s: &str) -> Option<GpuStreamKernel> {
        GpuStreamKernel::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// `gpu bandwidth`: device-memory bandwidth per kernel and array size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuBandwidthReport {
    pub gpu: Option<GpuRecord>,
    pub kernels: Vec<GpuStreamKernel>,
    /// Bytes of each array, one measurement per size per kernel.
    pub array_bytes: Vec<u64>,
    pub block_threads: u32,
    /// Timed launches per point, after one untimed warm-up launch.
    pub samples: usize,
    pub outcome: Outcome<GpuBandwidthMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuBandwidthMeasurement {
    pub points: Vec<GpuBandwidthPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuBandwidthPoint {
    pub kernel: GpuStreamKernel,
    pub array_bytes: u64,
    /// Bytes one launch moves: elements x bytes_per_element.
    pub bytes_per_launch: u64,
    pub grid_blocks: u32,
    /// GB/s (10^9 B/s) of each timed launch, from CUDA events around it.
    pub samples_gb_s: Vec<f64>,
    pub bandwidth_gb_s: Summary,
    /// The best launch's share of the peak memory bandwidth, where one is known
    /// (BabelStream reports its best launch too).
    pub best_fraction_of_peak: Option<f64>,
    /// Elements of the written array checked after timing (0 for read).
    pub validated_elements: u64,
}

/// `gpu latency`: one GPU thread chasing pointers through buffers of growing size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLatencyReport {
    pub gpu: Option<GpuRecord>,
    pub stride_bytes: u64,
    pub seed: u64,
    pub outcome: Outcome<GpuLatencyMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLatencyMeasurement {
    pub points: Vec<GpuLatencyPoint>,
    /// The plateaus found on the curve, named from the smallest: L1, L2 (near and far
    /// where two are found below device memory), device memory.
    pub levels: Vec<GpuLevel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLatencyPoint {
    pub size_bytes: u64,
    /// Dependent loads timed (after one untimed walk of the whole cycle).
    pub loads: u64,
    /// SM clock cycles per load (clock64 around the timed loop).
    pub latency_cycles: f64,
    /// ns per load (the GPU's global timer around the same loop).
    pub latency_ns: f64,
    /// Cycles over ns: the SM clock the loop ran at.
    pub sm_clock_mhz: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLevel {
    pub name: String,
    pub first_bytes: u64,
    pub last_bytes: u64,
    pub latency_cycles: f64,
    pub latency_ns: f64,
}

/// Host memory a copy reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostMemory {
    /// Ordinary (pageable) memory: the driver stages it through its own pinned buffers.
    Pageable,
    /// cuMemAllocHost: page-locked, wherever the kernel put it.
    Pinned,
    /// mmap + mbind to a NUMA node, first-touched there and verified, then
    /// page-locked with cuMemHostRegister.
    PinnedNode,
}

/// Who moves the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyEngine {
    /// cuMemcpy*Async on a stream: the GPU's DMA copy engines.
    CopyEngine,
    /// A kernel whose threads load and store through the host memory's device mapping.
    Sm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyDirection {
    HostToDevice,
    DeviceToHost,
    /// Both at once on two streams; bytes of both directions counted.
    Bidirectional,
}

/// `gpu copy`: host<->device bandwidth per host memory kind and NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuCopyReport {
    pub gpu: Option<GpuRecord>,
    /// Bytes of each copy (each direction).
    pub size_bytes: u64,
    pub samples: usize,
    /// Nodes with memory that pinned-node buffers were placed on.
    pub nodes: Vec<u32>,
    /// Skipped as a whole where no GPU is usable; otherwise Ok with cells.
    pub outcome: Outcome<Vec<GpuCopyCell>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuCopyCell {
    pub memory: HostMemory,
    /// The node of a pinned-node buffer.
    pub node: Option<u32>,
    pub engine: CopyEngine,
    pub direction: CopyDirection,
    pub outcome: Outcome<GpuCopyMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuCopyMeasurement {
    pub bandwidth_gb_s: Summary,
    pub samples_gb_s: Vec<f64>,
    /// Bytes one sample moves (both directions for bidirectional).
    pub bytes_per_sample: u64,
    /// Where a pinned-node buffer's pages are.
    pub placement: Option<Placement>,
}

/// `gpu host-latency`: one GPU thread chasing pointers through host memory mapped
/// into the GPU (zero-copy), per NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHostLatencyReport {
    pub gpu: Option<GpuRecord>,
    pub size_bytes: u64,
    pub stride_bytes: u64,
    pub nodes: Vec<u32>,
    pub outcome: Outcome<Vec<GpuHostLatencyCell>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHostLatencyCell {
    pub node: u32,
    pub outcome: Outcome<GpuHostLatencyMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuHostLatencyMeasurement {
    pub latency_ns: Summary,
    pub samples_ns: Vec<f64>,
    pub latency_cycles: Summary,
    pub loads_per_sample: u64,
    pub placement: Placement,
}

/// `gpu loaded-latency`: a CPU's pointer-chase latency on a node while the copy
/// engines stream to and from pinned buffers on the same node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLoadedLatencyReport {
    pub gpu: Option<GpuRecord>,
    pub cpu: u32,
    pub node: u32,
    pub chase_bytes: u64,
    /// Bytes of each DMA copy.
    pub copy_bytes: u64,
    pub direction: CopyDirection,
    pub outcome: Outcome<Vec<GpuLoadedPoint>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuLoadedPoint {
    /// Microseconds the feeding thread waits after each copy (None: no DMA at all).
    pub gap_us: Option<u64>,
    /// DMA bandwidth achieved while the CPU chased, both directions counted.
    pub dma_gb_s: f64,
    pub latency: Outcome<LatencyMeasurement>,
}

/// Who wrote the buffer last before the CPU reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InjectionCase {
    /// The GPU's copy engine wrote it (DMA into pinned host memory).
    GpuWritten,
    /// The CPU flushed every line (clflush / dc civac): it comes from DRAM.
    Flushed,
    /// The CPU wrote it just before: in its own caches.
    CpuWritten,
}

/// `gpu injection`: does a DMA write from the GPU land in the CPU's cache?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInjectionReport {
    pub gpu: Option<GpuRecord>,
    pub cpu: u32,
    pub node: u32,
    pub buffer_bytes: u64,
    pub outcome: Outcome<GpuInjection>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInjection {
    /// One cold walk over the buffer per sample, for each case.
    pub cases: Vec<GpuInjectionCase>,
    /// Whether GPU-written lines are read at cache speed rather than DRAM speed.
    pub lands_in_cache: bool,
    /// Flushed minus GPU-written median ns per load: what injection saves.
    pub saved_ns: f64,
    pub explanation: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInjectionCase {
    pub case: InjectionCase,
    /// ns per load of one walk over every line, one value per sample.
    pub samples_ns: Vec<f64>,
    pub latency_ns: Summary,
}

impl HostMemory {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            HostMemory::Pageable => "pageable",
            HostMemory::Pinned => "pinned",
            HostMemory::PinnedNode => "pinned-node",
        }
    }
}

impl CopyEngine {
    pub fn name(self) -> &'static str {
        match self {
            CopyEngine::CopyEngine => "copy-engine",
            CopyEngine::Sm => "sm",
        }
    }
}

impl CopyDirection {
    pub fn name(self) -> &'static str {
        match self {
            CopyDirection::HostToDevice => "host-to-device",
            CopyDirection::DeviceToHost => "device-to-host",
            CopyDirection::Bidirectional => "bidirectional",
        }
    }
}

impl InjectionCase {
    pub fn name(self) -> &'static str {
        match self {
            InjectionCase::GpuWritten => "gpu-written",
            InjectionCase::Flushed => "flushed",
            InjectionCase::CpuWritten => "cpu-written",
        }
    }
}

/// `gpu info`: what the GPU is, and its state now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfoReport {
    pub outcome: Outcome<GpuRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_json_names() {
        fn json<T: Serialize>(v: &T) -> String {
            serde_json::to_string(v).unwrap().trim_matches('"').to_string()
        }
        for m in [HostMemory::Pageable, HostMemory::Pinned, HostMemory::PinnedNode] {
            assert_eq!(json(&m), m.name());
        }
        for e in [CopyEngine::CopyEngine, CopyEngine::Sm] {
            assert_eq!(json(&e), e.name());
        }
        for d in [
            CopyDirection::HostToDevice,
            CopyDirection::DeviceToHost,
            CopyDirection::Bidirectional,
        ] {
            assert_eq!(json(&d), d.name());
        }
        for c in [
            InjectionCase::GpuWritten,
            InjectionCase::Flushed,
            InjectionCase::CpuWritten,
        ] {
            assert_eq!(json(&c), c.name());
        }
        for k in GpuStreamKernel::ALL {
            assert_eq!(json(&k), k.name());
            assert_eq!(GpuStreamKernel::parse(k.name()), Some(k));
        }
    }
}
