//! Every unsafe call of the GPU crate: the CUDA driver API through cudarc's bindings,
//! loaded at run time, and NVML, loaded by name. The types here own what they create
//! and free it on drop; every operation that hands memory to the GPU waits for the
//! GPU to finish with it before returning, so no borrow outlives its use.

use std::ffi::{c_void, CStr, CString};
use std::marker::PhantomData;

use cudarc::driver::{result, sys, DriverError};
use thiserror::Error;

pub use sys::CUdevice_attribute as Attribute;

mod mem;
mod nvml;
pub use mem::{DeviceMem, Mapped, Pinned, Registered};
pub use nvml::{Nvml, NvmlDevice};

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no NVIDIA driver found (libcuda.so could not be loaded)")]
    NoDriver,
    #[error("no CUDA device {0}: the NVIDIA driver sees {1} GPU(s)")]
    NoDevice(u32, i32),
    #[error("{what}: {source}")]
    Driver { what: String, source: DriverError },
    #[error("{0}")]
    Other(String),
}

/// Adds what was being done to a driver error.
pub trait Context2<T> {
    fn what(self, what: &str) -> Result<T, GpuError>;
}

impl<T> Context2<T> for Result<T, DriverError> {
    fn what(self, what: &str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver {
            what: what.to_string(),
            source,
        })
    }
}

/// Whether libcuda can be loaded at all.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { sys::is_culib_present() }
}

/// One device's primary context, current on the thread that opened it.
#[derive(Debug)]
pub struct Device {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    pub ordinal: u32,
}

// SAFETY: a CUDA context may be made current on any thread (cuCtxSetCurrent, done by
// `bind` on every thread that uses it); the handles are plain identifiers.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    pub fn open(ordinal: u32) -> Result<Device, GpuError> {
        if !driver_present() {
            return Err(GpuError::NoDriver);
        }
        // A driver with no device (a container with libcuda but no /dev/nvidia*) fails
        // cuInit itself: that is no device, not a failure.
        match result::init() {
            Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => {
                return Err(GpuError::NoDevice(ordinal, 0))
            }
            r => r.what("cuInit")?,
        }
        let count = result::device::get_count().what("cuDeviceGetCount")?;
        if ordinal as i32 >= count {
            return Err(GpuError::NoDevice(ordinal, count));
        }
        let dev = result::device::get(ordinal as i32).what("cuDeviceGet")?;
        // SAFETY: dev is a valid device; the retained context is released in Drop.
        let ctx = unsafe { result::primary_ctx::retain(dev) }.what("cuDevicePrimaryCtxRetain")?;
        let d = Device { dev, ctx, ordinal };
        d.bind()?;
        Ok(d)
    }

    /// Makes the context current on the calling thread.
    pub fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: ctx is a retained, live context.
        unsafe { result::ctx::set_current(self.ctx) }.what("cuCtxSetCurrent")
    }

    pub fn attribute(&self, a: Attribute) -> Result<i32, GpuError> {
        // SAFETY: dev is a valid device and `a` a valid attribute.
        unsafe { result::device::get_attribute(self.dev, a) }.what("cuDeviceGetAttribute")
    }

    pub fn name(&self) -> Result<String, GpuError> {
        result::device::get_name(self.dev).what("cuDeviceGetName")
    }

    pub fn total_mem(&self) -> Result<u64, GpuError> {
        // SAFETY: dev is a valid device.
        unsafe { result::device::total_mem(self.dev) }
            .map(|b| b as u64)
            .what("cuDeviceTotalMem")
    }

    /// (free, total) bytes of device memory now.
    pub fn mem_info(&self) -> Result<(u64, u64), GpuError> {
        self.bind()?;
        result::mem_get_info()
            .map(|(f, t)| (f as u64, t as u64))
            .what("cuMemGetInfo")
    }

    /// The CUDA version the driver supports, as 12080 for 12.8.
    pub fn driver_version(&self) -> Result<i32, GpuError> {
        let mut v = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut v) }
            .result()
            .what("cuDriverGetVersion")?;
        Ok(v)
    }

    /// "0000:17:00.0".
    pub fn pci_bus_id(&self) -> Result<String, GpuError> {
        let mut buf = [0 as std::ffi::c_char; 32];
        // SAFETY: the driver writes at most buf.len() bytes, NUL-terminated.
        unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, self.dev) }
            .result()
            .what("cuDeviceGetPCIBusId")?;
        // SAFETY: NUL-terminated by the driver within the buffer.
        let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
        Ok(s.to_string_lossy().to_lowercase())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: releases the retain taken in `open`.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

/// A loaded PTX module and the functions taken from it.
#[derive(Debug)]
pub struct Module {
    m: sys::CUmodule,
}

// SAFETY: module and function handles are valid in any thread where their context is current.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

/// A kernel of a [`Module`]; valid while the module is.
#[derive(Debug, Clone, Copy)]
pub struct Function<'m> {
    f: sys::CUfunction,
    _m: PhantomData<&'m Module>,
}

// SAFETY: as for Module.
unsafe impl Send for Function<'_> {}
unsafe impl Sync for Function<'_> {}

impl Module {
    /// JIT-compiles PTX for the current context's device.
    pub fn load(dev: &Device, ptx: &str) -> Result<Module, GpuError> {
        dev.bind()?;
        let text = CString::new(ptx).map_err(|_| GpuError::Other("PTX holds a NUL byte".into()))?;
        // SAFETY: a NUL-terminated PTX image; the driver copies what it needs.
        let m =
            unsafe { result::module::load_data(text.as_ptr() as *const c_void) }.what("cuModuleLoadData")?;
        Ok(Module { m })
    }

    pub fn function(&self, name: &str) -> Result<Function<'_>, GpuError> {
        let c = CString::new(name).map_err(|_| GpuError::Other("bad kernel name".into()))?;
        // SAFETY: m is loaded; the function lives as long as the module (PhantomData).
        let f = unsafe { result::module::get_function(self.m, c) }.what(&format!("kernel {name}"))?;
        Ok(Function { f, _m: PhantomData })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: unloads the module loaded in `load`; no Function outlives it.
        let _ = unsafe { result::module::unload(self.m) };
    }
}

/// A non-blocking stream.
#[derive(Debug)]
pub struct Stream {
    s: sys::CUstream,
}

// SAFETY: a stream handle may be used from any thread with its context current.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    pub fn new(dev: &Device) -> Result<Stream, GpuError> {
        dev.bind()?;
        let s = result::stream::create(result::stream::StreamKind::NonBlocking).what("cuStreamCreate")?;
        Ok(Stream { s })
    }

    pub fn sync(&self) -> Result<(), GpuError> {
        // SAFETY: s is a live stream.
        unsafe { result::stream::synchronize(self.s) }.what("cuStreamSynchronize")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: waits for the stream's work, then destroys it.
        unsafe {
            let _ = result::stream::synchronize(self.s);
            let _ = result::stream::destroy(self.s);
        }
    }
}

/// A timing event.
struct Event {
    e: sys::CUevent,
}

impl Event {
    fn new() -> Result<Event, GpuError> {
        let e = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).what("cuEventCreate")?;
        Ok(Event { e })
    }

    fn record(&self, s: &Stream) -> Result<(), GpuError> {
        // SAFETY: both handles are live.
        unsafe { result::event::record(self.e, s.s) }.what("cuEventRecord")
    }

    fn wait_on(&self, s: &Stream) -> Result<(), GpuError> {
        // SAFETY: both handles are live.
        unsafe { result::stream::wait_event(s.s, self.e, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .what("cuStreamWaitEvent")
    }

    fn ms_since(&self, start: &Event) -> Result<f64, GpuError> {
        // SAFETY: both events were recorded and have completed (streams synchronised).
        unsafe { result::event::elapsed(start.e, self.e) }
            .map(f64::from)
            .what("cuEventElapsedTime")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: destroys the event created in `new`.
        let _ = unsafe { result::event::destroy(self.e) };
    }
}

/// A kernel argument. References keep the memory alive for the call, and every call
/// that launches waits for the kernel to finish.
pub enum Arg<'a> {
    Dev(&'a DeviceMem),
    Mapped(&'a dyn Mapped),
    U64(u64),
    U32(u32),
    F64(f64),
}

/// What one stream does in a timed step.
pub enum Op<'a> {
    Launch {
        f: Function<'a>,
        grid: u32,
        block: u32,
        args: Vec<Arg<'a>>,
    },
    /// Host (any memory: pageable, pinned or registered) to device.
    ToDevice {
        dst: &'a DeviceMem,
        src: &'a [u8],
    },
    ToHost {
        dst: &'a mut [u8],
        src: &'a DeviceMem,
    },
}

/// Runs the ops in order on their streams, every stream starting together (the others
/// wait on an event recorded on the first), waits for all, and returns the seconds
/// from the start to the last stream's end, timed by CUDA events. Ops on one stream run
/// one after another; each stream is waited for, also when an op fails to enqueue, so
/// no borrowed memory is still in use when this returns.
pub fn timed(ops: Vec<(Op<'_>, &Stream)>) -> Result<f64, GpuError> {
    timed_held(None, ops)
}

/// As [`timed`], with the first stream first held by `hold` (a kernel and its one u64
/// argument, e.g. a spin of so many ns) before the clock starts: the ops are queued
/// while it runs, so many short launches run back to back rather than at the host's
/// launch rate.
pub fn timed_held(hold: Option<(Function<'_>, u64)>, ops: Vec<(Op<'_>, &Stream)>) -> Result<f64, GpuError> {
    let mut streams: Vec<&Stream> = Vec::new();
    for (_, s) in &ops {
        if !streams.iter().any(|x| std::ptr::eq(*x, *s)) {
            streams.push(s);
        }
    }
    let Some(first) = streams.first().copied() else {
        return Ok(0.0);
    };
    let _wait = SyncOnDrop(&streams);
    let start = Event::new()?;
    let ends = streams
        .iter()
        .map(|_| Event::new())
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((f, arg)) = hold {
        launch(f, 1, 1, &[Arg::U64(arg)], first)?;
    }
    start.record(first)?;
    for s in &streams[1..] {
        start.wait_on(s)?;
    }
    let mut ops = ops;
    for (op, s) in &mut ops {
        enqueue(op, s)?;
    }
    for (e, s) in ends.iter().zip(&streams) {
        e.record(s)?;
    }
    for s in &streams {
        s.sync()?;
    }
    let mut ms: f64 = 0.0;
    for e in &ends {
        ms = ms.max(e.ms_since(&start)?);
    }
    Ok(ms * 1e-3)
}

/// Waits for every stream when dropped: on an early return or an unwind, the GPU is
/// done with the memory the ops borrowed before the borrows end.
struct SyncOnDrop<'a, 's>(&'a [&'s Stream]);

impl Drop for SyncOnDrop<'_, '_> {
    fn drop(&mut self) {
        for s in self.0 {
            let _ = s.sync();
        }
    }
}

fn enqueue(op: &mut Op<'_>, s: &Stream) -> Result<(), GpuError> {
    match op {
        Op::Launch { f, grid, block, args } => launch(*f, *grid, *block, args, s),
        Op::ToDevice { dst, src } => {
            dst.check(src.len())?;
            // SAFETY: src and dst outlive the call's caller (`timed`), which syncs the
            // stream before returning; sizes were checked.
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst.ptr, src.as_ptr() as *const c_void, src.len(), s.s) }
                .result()
                .what("cuMemcpyHtoDAsync")
        }
        Op::ToHost { dst, src } => {
            src.check(dst.len())?;
            // SAFETY: as above.
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr() as *mut c_void, src.ptr, dst.len(), s.s) }
                .result()
                .what("cuMemcpyDtoHAsync")
        }
    }
}

fn launch(f: Function<'_>, grid: u32, block: u32, args: &[Arg<'_>], s: &Stream) -> Result<(), GpuError> {
    // Each parameter's value lives in `values`; the driver copies them at launch.
    let mut values: Vec<u64> = args
        .iter()
        .map(|a| match a {
            Arg::Dev(m) => m.ptr,
            Arg::Mapped(m) => m.device_ptr(),
            Arg::U64(v) => *v,
            Arg::U32(v) => u64::from(*v),
            Arg::F64(v) => v.to_bits(),
        })
        .collect();
    let mut params: Vec<*mut c_void> = values.iter_mut().map(|v| v as *mut u64 as *mut c_void).collect();
    // SAFETY: the kernel's pointer arguments come from live DeviceMem and Mapped
    // borrows that outlive `timed`, which waits for the stream; a u32 parameter reads
    // the low 4 bytes of its little-endian u64 slot.
    unsafe { result::launch_kernel(f.f, (grid, 1, 1), (block, 1, 1), 0, s.s, &mut params) }
        .what("cuLaunchKernel")
}
