//! `gpu copy`: host<->device bandwidth through the copy engines and through SM
//! kernels, for pageable, pinned and pinned-on-a-NUMA-node host memory.

use memfabric_measure::observer::{interrupted, Observer};
use memfabric_measure::placement::{allocate_on_node, describe_mismatch};
use memfabric_measure::sys::{current_affinity, Buffer};
use memfabric_model::{
    CopyDirection, CopyEngine, GpuCopyCell, GpuCopyMeasurement, HostMemory, HugePages, NodePages, Outcome,
    Placement, Summary,
};

use crate::plan::{grid_blocks, BLOCK_THREADS};
use crate::sys::{timed, Arg, DeviceMem, Function, GpuError, Mapped, Op, Pinned, Registered, Stream};
use crate::Gpu;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuCopyPlan {
    /// Bytes of each copy, each direction.
    pub size_bytes: u64,
    pub samples: usize,
    /// Nodes with memory for pinned-node buffers.
    pub nodes: Vec<u32>,
    pub memories: Vec<HostMemory>,
    pub engines: Vec<CopyEngine>,
    pub directions: Vec<CopyDirection>,
    pub huge_pages: HugePages,
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub memory: HostMemory,
    pub node: Option<u32>,
    pub engine: CopyEngine,
    pub direction: CopyDirection,
}

/// The host memories a plan sets up, in order: pinned-node once per node.
pub fn groups(plan: &GpuCopyPlan) -> Vec<(HostMemory, Option<u32>)> {
    plan.memories
        .iter()
        .flat_map(|&m| match m {
            HostMemory::PinnedNode => plan.nodes.iter().map(|&n| (m, Some(n))).collect(),
            _ => vec![(m, None)],
        })
        .collect()
}

/// Every cell of a plan, ordered by memory, node, engine, direction. Pageable memory
/// is not mapped into the GPU, so only the copy engines reach it.
pub fn cells(plan: &GpuCopyPlan) -> Vec<Cell> {
    let mut out = Vec::new();
    for (memory, node) in groups(plan) {
        for &engine in &plan.engines {
            if engine == CopyEngine::Sm && memory == HostMemory::Pageable {
                continue;
            }
            for &direction in &plan.directions {
                out.push(Cell {
                    memory,
                    node,
                    engine,
                    direction,
                });
            }
        }
    }
    out
}

/// Bytes one direction of a copy moves: the SM kernel copies whole doubles only.
pub fn bytes_per_direction(engine: CopyEngine, size: u64) -> u64 {
    match engine {
        CopyEngine::CopyEngine => size,
        CopyEngine::Sm => size / 8 * 8,
    }
}

/// Blocks of each SM copy kernel. The full grid fills every SM, so a second kernel
/// could start only as the first drains: both directions at once get half each, and
/// the two kernels are resident together.
pub fn sm_grid(full: u32, direction: CopyDirection) -> u32 {
    match direction {
        CopyDirection::Bidirectional => full.div_ceil(2),
        CopyDirection::HostToDevice | CopyDirection::DeviceToHost => full,
    }
}

/// Whether a sample copies (to the device, to the host).
pub fn ways(direction: CopyDirection) -> (bool, bool) {
    match direction {
        CopyDirection::HostToDevice => (true, false),
        CopyDirection::DeviceToHost => (false, true),
        CopyDirection::Bidirectional => (true, true),
    }
}

pub fn bytes_per_sample(engine: CopyEngine, direction: CopyDirection, size: u64) -> u64 {
    let (up, down) = ways(direction);
    (u64::from(up) + u64::from(down)) * bytes_per_direction(engine, size)
}

/// One placement for the two buffers of a node, verified only where both are.
pub fn merge(a: &Placement, b: &Placement) -> Placement {
    let mut elsewhere: Vec<NodePages> = a.pages_elsewhere.clone();
    for np in &b.pages_elsewhere {
        match elsewhere.iter_mut().find(|e| e.node == np.node) {
            Some(e) => e.pages += np.pages,
            None => elsewhere.push(np.clone()),
        }
    }
    elsewhere.sort_by_key(|np| np.node);
    Placement {
        requested_node: a.requested_node,
        page_size_bytes: a.page_size_bytes,
        pages_total: a.pages_total + b.pages_total,
        pages_sampled: a.pages_sampled + b.pages_sampled,
        pages_on_node: a.pages_on_node + b.pages_on_node,
        pages_elsewhere: elsewhere,
        thread_affinity: a.thread_affinity.clone(),
        verified: a.verified && b.verified,
        method: if a.method == b.method {
            format!("each of two buffers: {}", a.method)
        } else {
            format!("{}; {}", a.method, b.method)
        },
        interleave: None,
    }
}

fn label(c: &Cell) -> String {
    let node = c.node.map(|n| format!(" node {n}")).unwrap_or_default();
    format!("{:?}{node}, {:?}, {:?}", c.memory, c.engine, c.direction)
}

/// What every cell shares: device buffers for each direction, two streams, the kernel.
struct Rig<'g> {
    /// First, so that dropping a Rig waits for its streams before freeing memory.
    streams: [Stream; 2],
    size: usize,
    samples: usize,
    to_device: DeviceMem,
    to_host: DeviceMem,
    copy: Function<'g>,
    /// The grid that fills every SM.
    grid: u32,
}

/// Host memory of one kind: the H2D source and the D2H destination are distinct, so
/// a bidirectional sample never reads and writes the same pages.
struct Hosts<'a> {
    up: Host<'a>,
    down: Host<'a>,
}

enum Host<'a> {
    Pageable(Vec<u8>),
    Pinned(Pinned),
    Registered(Registered<'a>),
}

impl Host<'_> {
    fn bytes(&self, n: usize) -> &[u8] {
        match self {
            Host::Pageable(v) => &v[..n],
            Host::Pinned(p) => &p.host()[..n],
            Host::Registered(r) => &r.host()[..n],
        }
    }

    fn bytes_mut(&mut self, n: usize) -> &mut [u8] {
        match self {
            Host::Pageable(v) => &mut v[..n],
            Host::Pinned(p) => &mut p.host_mut()[..n],
            Host::Registered(r) => &mut r.host_mut()[..n],
        }
    }

    fn mapped(&self) -> Result<&dyn Mapped, GpuError> {
        match self {
            Host::Pageable(_) => Err(GpuError::Other(
                "pageable memory is not mapped into the GPU".into(),
            )),
            Host::Pinned(p) => Ok(p),
            Host::Registered(r) => Ok(r),
        }
    }
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuCopyPlan,
    obs: &dyn Observer,
) -> Result<Outcome<Vec<GpuCopyCell>>, GpuError> {
    let all = cells(plan);
    obs.begin("gpu copy", all.len() as u64);
    let size = plan.size_bytes as usize;
    let rig = Rig {
        size,
        samples: plan.samples.max(1),
        to_device: DeviceMem::alloc(&gpu.device, size)?,
        to_host: DeviceMem::alloc(&gpu.device, size)?,
        streams: [Stream::new(&gpu.device)?, Stream::new(&gpu.device)?],
        copy: gpu.kernel("mf_copy")?,
        grid: grid_blocks(plan.size_bytes / 8, gpu.info.sm_count, BLOCK_THREADS),
    };
    let mut out = Vec::with_capacity(all.len());
    for (memory, node) in groups(plan) {
        let group: Vec<Cell> = all
            .iter()
            .filter(|c| c.memory == memory && c.node == node)
            .copied()
            .collect();
        if !group.is_empty() && !measure_group(gpu, &rig, plan.huge_pages, &group, obs, &mut out) {
            obs.finish();
            return Ok(interrupted());
        }
    }
    obs.finish();
    Ok(Outcome::Ok(out))
}

/// Sets up one kind of host memory and measures its cells; false when cancelled.
fn measure_group(
    gpu: &Gpu,
    rig: &Rig<'_>,
    huge: HugePages,
    group: &[Cell],
    obs: &dyn Observer,
    out: &mut Vec<GpuCopyCell>,
) -> bool {
    let (memory, node) = (group[0].memory, group[0].node);
    let (mut backing, placement) = match node.map(|n| place(rig.size, n, huge)) {
        None => (None, None),
        Some(Ok((up, down, p))) => (Some([up, down]), Some(p)),
        Some(Err(reason)) => return fail_all(group, &reason, obs, out),
    };
    let hosts = match backing.as_mut() {
        Some([up, down]) => register(gpu, up, down),
        None => allocate(gpu, memory, rig.size),
    };
    let mut hosts = match hosts {
        Ok(h) => h,
        Err(e) => return fail_all(group, &e.to_string(), obs, out),
    };
    for &cell in group {
        if obs.cancelled() {
            return false;
        }
        let outcome = match run(rig, &mut hosts, cell) {
            Ok(samples) => measurement(
                samples,
                bytes_per_sample(cell.engine, cell.direction, rig.size as u64),
                &placement,
            ),
            Err(e) => Outcome::Failed {
                reason: e.to_string(),
            },
        };
        out.push(copy_cell(cell, outcome));
        obs.advance(&label(&cell));
    }
    true
}

fn fail_all(group: &[Cell], reason: &str, obs: &dyn Observer, out: &mut Vec<GpuCopyCell>) -> bool {
    for &cell in group {
        let reason = reason.to_string();
        out.push(copy_cell(cell, Outcome::Failed { reason }));
        obs.advance(&label(&cell));
    }
    true
}

fn copy_cell(c: Cell, outcome: Outcome<GpuCopyMeasurement>) -> GpuCopyCell {
    GpuCopyCell {
        memory: c.memory,
        node: c.node,
        engine: c.engine,
        direction: c.direction,
        outcome,
    }
}

fn measurement(
    samples_gb_s: Vec<f64>,
    bytes: u64,
    placement: &Option<Placement>,
) -> Outcome<GpuCopyMeasurement> {
    match Summary::of(&samples_gb_s) {
        Some(bandwidth_gb_s) => Outcome::Ok(GpuCopyMeasurement {
            bandwidth_gb_s,
            samples_gb_s,
            bytes_per_sample: bytes,
            placement: placement.clone(),
        }),
        None => Outcome::Failed {
            reason: "no finite samples".into(),
        },
    }
}

/// Two buffers bound to `node`, each checked page by page. The thread is not pinned:
/// MPOL_BIND places the pages whichever CPU touches them, and pinning here would
/// leave the caller's thread pinned afterwards; its affinity is recorded as it is.
fn place(size: usize, node: u32, huge: HugePages) -> Result<(Buffer, Buffer, Placement), String> {
    let affinity = current_affinity().unwrap_or_default();
    let (up, a) = allocate_on_node(size, node, huge, affinity.clone()).map_err(|e| e.to_string())?;
    let (down, b) = allocate_on_node(size, node, huge, affinity).map_err(|e| e.to_string())?;
    let placement = merge(&a, &b);
    if !placement.verified {
        return Err(describe_mismatch(&placement));
    }
    Ok((up, down, placement))
}

fn register<'a>(gpu: &Gpu, up: &'a mut Buffer, down: &'a mut Buffer) -> Result<Hosts<'a>, GpuError> {
    Ok(Hosts {
        up: Host::Registered(Registered::new(&gpu.device, up.as_mut_slice())?),
        down: Host::Registered(Registered::new(&gpu.device, down.as_mut_slice())?),
    })
}

fn allocate(gpu: &Gpu, memory: HostMemory, size: usize) -> Result<Hosts<'static>, GpuError> {
    match memory {
        // Filled so that every page is touched and backed before the first copy.
        HostMemory::Pageable => Ok(Hosts {
            up: Host::Pageable(vec![0x5a; size]),
            down: Host::Pageable(vec![0xa5; size]),
        }),
        HostMemory::Pinned => Ok(Hosts {
            up: Host::Pinned(Pinned::alloc(&gpu.device, size)?),
            down: Host::Pinned(Pinned::alloc(&gpu.device, size)?),
        }),
        HostMemory::PinnedNode => Err(GpuError::Other("pinned-node memory needs a node".into())),
    }
}

/// One untimed warm-up, then the timed samples in GB/s.
fn run(rig: &Rig<'_>, hosts: &mut Hosts<'_>, cell: Cell) -> Result<Vec<f64>, GpuError> {
    let bytes = bytes_per_sample(cell.engine, cell.direction, rig.size as u64) as f64;
    timed(ops(rig, hosts, cell)?)?;
    let mut samples = Vec::with_capacity(rig.samples);
    for _ in 0..rig.samples {
        let secs = timed(ops(rig, hosts, cell)?)?;
        samples.push(bytes / secs.max(1e-9) * 1e-9);
    }
    Ok(samples)
}

/// The ops of one sample; the two directions run on different streams.
fn ops<'a>(
    rig: &'a Rig<'_>,
    hosts: &'a mut Hosts<'_>,
    cell: Cell,
) -> Result<Vec<(Op<'a>, &'a Stream)>, GpuError> {
    let (up, down) = ways(cell.direction);
    let mut v = Vec::with_capacity(2);
    if up {
        v.push((to_device(rig, &hosts.up, cell)?, &rig.streams[0]));
    }
    if down {
        v.push((to_host(rig, &mut hosts.down, cell)?, &rig.streams[1]));
    }
    Ok(v)
}

fn to_device<'a>(rig: &'a Rig<'_>, src: &'a Host<'_>, cell: Cell) -> Result<Op<'a>, GpuError> {
    Ok(match cell.engine {
        CopyEngine::CopyEngine => Op::ToDevice {
            dst: &rig.to_device,
            src: src.bytes(rig.size),
        },
        CopyEngine::Sm => sm_copy(rig, cell, Arg::Dev(&rig.to_device), Arg::Mapped(src.mapped()?)),
    })
}

fn to_host<'a>(rig: &'a Rig<'_>, dst: &'a mut Host<'_>, cell: Cell) -> Result<Op<'a>, GpuError> {
    Ok(match cell.engine {
        CopyEngine::CopyEngine => Op::ToHost {
            dst: dst.bytes_mut(rig.size),
            src: &rig.to_host,
        },
        CopyEngine::Sm => sm_copy(rig, cell, Arg::Mapped(dst.mapped()?), Arg::Dev(&rig.to_host)),
    })
}

/// mf_copy(c = dst, a = src, n doubles).
fn sm_copy<'a>(rig: &Rig<'a>, cell: Cell, dst: Arg<'a>, src: Arg<'a>) -> Op<'a> {
    Op::Launch {
        f: rig.copy,
        grid: sm_grid(rig.grid, cell.direction),
        block: BLOCK_THREADS,
        args: vec![dst, src, Arg::U64(rig.size as u64 / 8)],
    }
}

#[cfg(test)]
mod tests;
