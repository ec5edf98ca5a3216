//! GPU measurements through the CUDA driver API, loaded at run time: the same binary
//! runs where no CUDA is installed, and there every GPU measurement is skipped with
//! "no NVIDIA driver found". Kernels ship inside the binary as PTX (see `ptx`).
//!
//! Like the measurement core, nothing here prints: results are memfabric-model types.

#![deny(unsafe_code)]

pub mod bandwidth;
pub mod copy;
pub mod host_latency;
pub mod info;
pub mod injection;
pub mod latency;
pub mod loaded;
pub mod measurements;
pub mod plan;
pub mod ptx;
// The CUDA driver and NVML: the one module that may use unsafe code.
#[allow(unsafe_code)]
pub mod sys;

use std::path::Path;

use memfabric_model::{GpuInfo, GpuRecord, GpuState, Outcome};

pub use sys::GpuError;
use sys::{Device, Function, Module};

/// An opened GPU: its context, the kernels loaded, and what it is.
pub struct Gpu {
    stream: Module,
    chase: Module,
    telemetry: info::Telemetry,
    pub info: GpuInfo,
    /// Last: fields drop in order, and the modules must be unloaded while the
    /// context they live in is still retained.
    pub device: Device,
}

impl Gpu {
    /// Opens device `ordinal`, loads the kernels and reads what the GPU is; `sysfs` is
    /// normally /sys (the PCI slot's NUMA node and link).
    pub fn open(ordinal: u32, sysfs: &Path) -> Result<Gpu, GpuError> {
        guarded(|| {
            let device = Device::open(ordinal)?;
            let telemetry = info::Telemetry::open(&device.pci_bus_id()?);
            let info = info::describe(&device, &telemetry, sysfs)?;
            Ok(Gpu {
                stream: Module::load(&device, ptx::STREAM.text)?,
                chase: Module::load(&device, ptx::CHASE.text)?,
                telemetry,
                info,
                device,
            })
        })
    }

    /// A kernel by name, from whichever PTX file has it.
    pub fn kernel(&self, name: &str) -> Result<Function<'_>, GpuError> {
        if ptx::CHASE.kernels.contains(&name) {
            self.chase.function(name)
        } else {
            self.stream.function(name)
        }
    }

    pub fn state(&self) -> GpuState {
        self.telemetry.state()
    }
}

/// Runs `measure` on GPU `ordinal` and returns the GPU's record (with its state before
/// and after) beside the outcome. No driver or no such device is a skip; any other
/// failure to open the GPU fails the measurement.
pub fn with_gpu<T>(
    ordinal: u32,
    sysfs: &Path,
    measure: impl FnOnce(&Gpu) -> Result<Outcome<T>, GpuError>,
) -> (Option<GpuRecord>, Outcome<T>) {
    let gpu = match Gpu::open(ordinal, sysfs) {
        Ok(g) => g,
        Err(e) => return (None, unavailable(&e)),
    };
    let start = gpu.state();
    let outcome = match guarded(|| measure(&gpu)) {
        Ok(o) => o,
        Err(e) => Outcome::Failed {
            reason: e.to_string(),
        },
    };
    let record = GpuRecord {
        info: gpu.info.clone(),
        start,
        end: gpu.state(),
    };
    (Some(record), outcome)
}

/// The outcome for a GPU that cannot be used: skipped where there is no driver or no
/// such device, failed otherwise.
pub fn unavailable<T>(e: &GpuError) -> Outcome<T> {
    match e {
        GpuError::NoDriver | GpuError::NoDevice(..) => Outcome::Skipped {
            reason: e.to_string(),
        },
        _ => Outcome::Failed {
            reason: e.to_string(),
        },
    }
}

/// Turns a panic inside the CUDA bindings (a driver too old to have a function they
/// load) into an error, so that missing hardware support is a result, not a crash.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Err(GpuError::Other(format!("the CUDA driver cannot be used: {msg}")))
    })
}
