//! Memory the GPU reads and writes: device memory, and host memory page-locked and
//! mapped into the GPU (allocated pinned, or registered where it already lies).

use std::ffi::c_void;
use std::marker::PhantomData;

use cudarc::driver::{result, sys};

use super::{Context2, Device, GpuError};

/// Device memory.
#[derive(Debug)]
pub struct DeviceMem {
    pub(super) ptr: sys::CUdeviceptr,
    bytes: usize,
}

// SAFETY: a device pointer is a number; access goes through the driver.
unsafe impl Send for DeviceMem {}
unsafe impl Sync for DeviceMem {}

impl DeviceMem {
    pub fn alloc(dev: &Device, bytes: usize) -> Result<DeviceMem, GpuError> {
        dev.bind()?;
        // SAFETY: a plain allocation, freed in Drop.
        let ptr =
            unsafe { result::malloc_sync(bytes.max(1)) }.what(&format!("cuMemAlloc of {bytes} bytes"))?;
        Ok(DeviceMem { ptr, bytes })
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Copies `src` to the start of this memory and waits.
    pub fn upload<T: Copy>(&self, src: &[T]) -> Result<(), GpuError> {
        let n = std::mem::size_of_val(src);
        self.check(n)?;
        // SAFETY: n bytes fit (checked); the call returns once src may be reused.
        unsafe { result::memcpy_htod_sync(self.ptr, src) }.what("cuMemcpyHtoD")?;
        // From pageable memory it returns once the data is staged, not landed, and
        // memfabric's streams do not wait for the legacy stream: wait here.
        result::ctx::synchronize().what("cuCtxSynchronize")
    }

    /// Copies the start of this memory into `dst` and waits.
    pub fn download<T: Copy>(&self, dst: &mut [T]) -> Result<(), GpuError> {
        self.check(std::mem::size_of_val(dst))?;
        // SAFETY: dst fits (checked); the call is synchronous.
        unsafe { result::memcpy_dtoh_sync(dst, self.ptr) }.what("cuMemcpyDtoH")
    }

    pub(super) fn check(&self, n: usize) -> Result<(), GpuError> {
        if n > self.bytes {
            return Err(GpuError::Other(format!("{n} bytes do not fit in {}", self.bytes)));
        }
        Ok(())
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: frees the allocation made in `alloc`; every use was synchronised.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// Host memory the GPU can reach: page-locked and mapped into its address space.
pub trait Mapped: Sync {
    fn host(&self) -> &[u8];
    fn host_mut(&mut self) -> &mut [u8];
    fn device_ptr(&self) -> u64;
}

/// cuMemHostAlloc'd memory, portable and mapped.
#[derive(Debug)]
pub struct Pinned {
    ptr: *mut u8,
    len: usize,
    dptr: u64,
}

// SAFETY: plain page-locked memory owned by this value.
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    pub fn alloc(dev: &Device, len: usize) -> Result<Pinned, GpuError> {
        dev.bind()?;
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: allocation freed in Drop; zeroed below so it is never read uninitialised.
        let ptr = unsafe { result::malloc_host(len.max(1), flags) }
            .what(&format!("cuMemHostAlloc of {len} bytes"))? as *mut u8;
        // SAFETY: len bytes were just allocated at ptr.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        let dptr = device_ptr_of(ptr)?;
        Ok(Pinned { ptr, len, dptr })
    }
}

impl Mapped for Pinned {
    fn host(&self) -> &[u8] {
        // SAFETY: len initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn host_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn device_ptr(&self) -> u64 {
        self.dptr
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: frees what `alloc` allocated; every GPU use was synchronised.
        let _ = unsafe { result::free_host(self.ptr as *mut c_void) };
    }
}

/// Memory already placed (a memfabric Buffer), page-locked and mapped with
/// cuMemHostRegister for as long as this value lives.
pub struct Registered<'a> {
    ptr: *mut u8,
    len: usize,
    dptr: u64,
    _buf: PhantomData<&'a mut [u8]>,
}

// SAFETY: holds the exclusive borrow of the registered memory.
unsafe impl Send for Registered<'_> {}
unsafe impl Sync for Registered<'_> {}

impl<'a> Registered<'a> {
    pub fn new(dev: &Device, mem: &'a mut [u8]) -> Result<Registered<'a>, GpuError> {
        dev.bind()?;
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        let ptr = mem.as_mut_ptr();
        // SAFETY: mem is borrowed for 'a, so the range stays mapped until Drop unregisters it.
        unsafe { sys::cuMemHostRegister_v2(ptr as *mut c_void, mem.len(), flags) }
            .result()
            .what(&format!("cuMemHostRegister of {} bytes", mem.len()))?;
        let dptr = match device_ptr_of(ptr) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: undoes the registration just made.
                let _ = unsafe { sys::cuMemHostUnregister(ptr as *mut c_void) };
                return Err(e);
            }
        };
        Ok(Registered {
            ptr,
            len: mem.len(),
            dptr,
            _buf: PhantomData,
        })
    }
}

impl Mapped for Registered<'_> {
    fn host(&self) -> &[u8] {
        // SAFETY: the borrowed range, alive for 'a.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    fn host_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn device_ptr(&self) -> u64 {
        self.dptr
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        // SAFETY: undoes `new`'s registration; every GPU use was synchronised.
        let _ = unsafe { sys::cuMemHostUnregister(self.ptr as *mut c_void) };
    }
}

fn device_ptr_of(ptr: *mut u8) -> Result<u64, GpuError> {
    let mut d: sys::CUdeviceptr = 0;
    // SAFETY: ptr is page-locked and mapped (DEVICEMAP); the driver writes one pointer.
    unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, ptr as *mut c_void, 0) }
        .result()
        .what("cuMemHostGetDevicePointer")?;
    Ok(d)
}
