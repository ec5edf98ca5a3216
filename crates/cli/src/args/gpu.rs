//! Arguments of `gpu` and its subcommands.

use clap::{Args, Subcommand, ValueEnum};
use memfabric_model::{CopyDirection, CopyEngine, GpuStreamKernel, HostMemory};

use super::{parse_list, parse_size, IdList, DEFAULT_SEED};

pub const GPU_HELP: &str = "\
GPU measurements through the NVIDIA driver, loaded at run time: the same binary runs
where no CUDA is installed, and there every GPU command reports \"skipped: no NVIDIA
driver found\" and exits 0. Kernels are built into the binary as PTX, compiled for the
GPU by the driver. Every result records the GPU's name, clocks, power and temperature
at the start and the end, the driver and CUDA versions, and the PCIe link (NVML where
libnvidia-ml loads, else sysfs for the link).

Examples:
  memfabric gpu info
  memfabric gpu bandwidth --kernels triad --sizes 2G     BabelStream's Triad at 2^28 doubles
  memfabric gpu latency                                   1 KiB to 4x the L2
  memfabric gpu copy --memory pinned,pinned-node          host<->device per NUMA node
  memfabric gpu host-latency                              GPU loads from host memory
  memfabric gpu loaded-latency --node 0                   CPU latency under DMA load
  memfabric gpu injection                                 do DMA writes land in the LLC?";

#[derive(Debug, Args)]
pub struct GpuArgs {
    #[command(flatten)]
    pub keep: super::Keep,
    /// CUDA device ordinal
    #[arg(long, global = true, value_name = "N", default_value_t = 0)]
    pub gpu: u32,
    #[command(subcommand)]
    pub command: GpuCommand,
}

#[derive(Debug, Subcommand)]
pub enum GpuCommand {
    /// What the GPU is: name, memory, L2, clocks, peak memory bandwidth, PCIe link, NUMA node, driver and CUDA versions
    Info,
    /// Device-memory bandwidth: read, write, copy and triad over array sizes, counted as BabelStream counts them
    Bandwidth(GpuBandwidthArgs),
    /// One GPU thread's pointer-chase latency from 1 KiB to past the L2, in cycles and ns; L1, L2 and device memory found on the curve
    Latency(GpuLatencyArgs),
    /// Host<->device bandwidth through the copy engines and SM kernels, for pageable, pinned and pinned-per-NUMA-node memory
    Copy(GpuCopyArgs),
    /// Latency of GPU loads from host memory mapped into the GPU (zero-copy), per NUMA node
    #[command(name = "host-latency")]
    HostLatency(GpuHostLatencyArgs),
    /// A CPU's memory latency on a node while the copy engines stream to and from that node at increasing rates
    #[command(name = "loaded-latency")]
    LoadedLatency(GpuLoadedArgs),
    /// Whether the GPU's DMA writes into host memory land in the CPU's cache (DDIO-style injection), and the latency it saves
    Injection(GpuInjectionArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelChoice {
    Read,
    Write,
    Copy,
    Triad,
    All,
}

#[derive(Debug, Args)]
pub struct GpuBandwidthArgs {
    /// Kernels, comma-separated: read (sum += a[i]), write (a[i] = s), copy (c[i] = a[i]), triad (a[i] = b[i] + s*c[i]), or all
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub kernels: Vec<KernelChoice>,
    /// Bytes of each array, comma-separated, one point each (default: 4M,16M,64M,256M,1G,2G; sizes that do not fit are left out)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// Timed samples per point (each about 1 GB of traffic), after one warm-up launch
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    /// Threads per block
    #[arg(long, value_name = "N", default_value_t = memfabric_gpu::plan::BLOCK_THREADS, value_parser = crate::args::positive::<u32>, allow_negative_numbers = true)]
    pub block_threads: u32,
}

impl GpuBandwidthArgs {
    pub fn kernels(&self) -> Vec<GpuStreamKernel> {
        if self.kernels.contains(&KernelChoice::All) {
            return GpuStreamKernel::ALL.to_vec();
        }
        let mut out: Vec<GpuStreamKernel> = Vec::new();
        for k in &self.kernels {
            let k = match k {
                KernelChoice::Read => GpuStreamKernel::Read,
                KernelChoice::Write => GpuStreamKernel::Write,
                KernelChoice::Copy => GpuStreamKernel::Copy,
                KernelChoice::Triad | KernelChoice::All => GpuStreamKernel::Triad,
            };
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }
}

#[derive(Debug, Args)]
pub struct GpuLatencyArgs {
    /// Smallest chase
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1K")]
    pub min: u64,
    /// Largest chase (default: 4x the L2)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max: Option<u64>,
    /// Points per doubling of the size
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = crate::args::positive::<u32>, allow_negative_numbers = true)]
    pub points_per_octave: u32,
    /// Bytes between chase elements, a multiple of 4 (128: one GPU cache line per load)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "128")]
    pub stride: u64,
    /// Timed chases per point (the median is reported)
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MemoryChoice {
    Pageable,
    Pinned,
    PinnedNode,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineChoice {
    CopyEngine,
    Sm,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DirectionChoice {
    H2d,
    D2h,
    Bidir,
    All,
}

#[derive(Debug, Args)]
pub struct GpuCopyArgs {
    /// Bytes of each copy (each direction)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1G")]
    pub size: u64,
    /// Host memory, comma-separated: pageable, pinned (cuMemAllocHost), pinned-node (mmap + mbind per NUMA node + cuMemHostRegister), or all
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub memory: Vec<MemoryChoice>,
    /// Who copies: copy-engine (cuMemcpyAsync), sm (a kernel through the host mapping; pinned memory only), or all
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub engine: Vec<EngineChoice>,
    /// h2d, d2h, bidir (both at once on two streams; from pageable memory the driver stages each copy, so they mostly run one after the other), or all
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub direction: Vec<DirectionChoice>,
    /// NUMA nodes for pinned-node memory (default: every node with memory)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub nodes: Option<IdList>,
    /// Timed copies per cell, after one warm-up
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
}

fn pick<C: Copy + PartialEq, T: Copy + PartialEq>(given: &[C], all: C, map: &[(C, T)]) -> Vec<T> {
    let every = given.contains(&all);
    map.iter()
        .filter(|(c, _)| every || given.contains(c))
        .map(|&(_, t)| t)
        .collect()
}

impl GpuCopyArgs {
    pub fn memories(&self) -> Vec<HostMemory> {
        pick(
            &self.memory,
            MemoryChoice::All,
            &[
                (MemoryChoice::Pageable, HostMemory::Pageable),
                (MemoryChoice::Pinned, HostMemory::Pinned),
                (MemoryChoice::PinnedNode, HostMemory::PinnedNode),
            ],
        )
    }

    pub fn engines(&self) -> Vec<CopyEngine> {
        pick(
            &self.engine,
            EngineChoice::All,
            &[
                (EngineChoice::CopyEngine, CopyEngine::CopyEngine),
                (EngineChoice::Sm, CopyEngine::Sm),
            ],
        )
    }

    pub fn directions(&self) -> Vec<CopyDirection> {
        directions(&self.direction)
    }
}

pub fn directions(given: &[DirectionChoice]) -> Vec<CopyDirection> {
    pick(
        given,
        DirectionChoice::All,
        &[
            (DirectionChoice::H2d, CopyDirection::HostToDevice),
            (DirectionChoice::D2h, CopyDirection::DeviceToHost),
            (DirectionChoice::Bidir, CopyDirection::Bidirectional),
        ],
    )
}

#[derive(Debug, Args)]
pub struct GpuHostLatencyArgs {
    /// Bytes of host memory the GPU chases through
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64M")]
    pub size: u64,
    /// Bytes between chase elements, a multiple of 4
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "128")]
    pub stride: u64,
    /// NUMA nodes to place the memory on (default: every node with memory)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub nodes: Option<IdList>,
    /// Timed chases per node
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct GpuLoadedArgs {
    /// The node whose memory the CPU chases and the GPU streams (default: the GPU's own NUMA node, else 0)
    #[arg(long, value_name = "NODE")]
    pub node: Option<u32>,
    /// The CPU that chases (default: the node's first allowed CPU)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Bytes of the CPU's chase (default: 4x the total last-level cache, at least 256M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub chase_size: Option<u64>,
    /// Bytes of each DMA copy
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64M")]
    pub copy_size: u64,
    /// DMA direction: h2d (the GPU reads host memory), d2h (it writes), bidir
    #[arg(long, value_enum, default_value = "bidir")]
    pub direction: DirectionChoice,
    /// Microseconds the feeding thread waits after each copy, one point each (default: 10000,3000,1000,300,100,30,10,0)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub gaps: Vec<u64>,
    /// Latency samples per point
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    /// Time per latency sample in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 20, value_parser = crate::args::positive::<u64>, allow_negative_numbers = true)]
    pub sample_ms: u64,
}

#[derive(Debug, Args)]
pub struct GpuInjectionArgs {
    /// The node of the pinned buffer (default: the GPU's own NUMA node, else 0)
    #[arg(long, value_name = "NODE")]
    pub node: Option<u32>,
    /// The CPU that reads the buffer (default: the node's first allowed CPU)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Bytes of the buffer: small enough for the share of the LLC that DMA may fill
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "2M")]
    pub size: u64,
    /// Walks per case (each after a fresh write or flush)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}
