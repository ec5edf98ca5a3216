//! NVML, loaded by name (libnvidia-ml.so.1), for what the driver API does not give:
//! current clocks, power, temperature, the PCIe link and the kernel driver's version.

use std::ffi::{c_void, CStr, CString};

/// NVML, loaded by name, for clocks, power, temperature and the PCIe link.
pub struct Nvml {
    lib: libloading::Library,
}

/// An NVML device handle.
#[derive(Clone, Copy)]
pub struct NvmlDevice(*mut c_void);

type NvmlFn0 = unsafe extern "C" fn() -> i32;
type NvmlU32 = unsafe extern "C" fn(*mut c_void, *mut u32) -> i32;
type NvmlU32Arg = unsafe extern "C" fn(*mut c_void, u32, *mut u32) -> i32;

impl Nvml {
    pub fn load() -> Result<Nvml, String> {
        // SAFETY: loading NVIDIA's NVML runs its (trusted) initialisers only.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML not found (libnvidia-ml.so.1): {e}"))?;
        let n = Nvml { lib };
        // SAFETY: nvmlInit_v2 takes no arguments.
        let rc = unsafe { n.sym::<NvmlFn0>("nvmlInit_v2").map(|f| f()) }?;
        if rc != 0 {
            return Err(format!("nvmlInit failed: {} (NVML error {rc})", n.error(rc)));
        }
        Ok(n)
    }

    /// NVML's own text for an error code.
    fn error(&self, rc: i32) -> String {
        type F = unsafe extern "C" fn(i32) -> *const std::ffi::c_char;
        // SAFETY: nvmlErrorString's signature; it returns a static NUL-terminated
        // string (or null, handled).
        unsafe {
            match self.sym::<F>("nvmlErrorString").map(|f| f(rc)) {
                Ok(p) if !p.is_null() => CStr::from_ptr(p).to_string_lossy().into_owned(),
                _ => "unknown error".into(),
            }
        }
    }

    /// # Safety
    /// `T` must be the C signature of `name`.
    unsafe fn sym<T: Copy>(&self, name: &str) -> Result<T, String> {
        self.lib
            .get::<T>(name.as_bytes())
            .map(|s| *s)
            .map_err(|e| format!("NVML lacks {name}: {e}"))
    }

    pub fn device(&self, pci_bus_id: &str) -> Result<NvmlDevice, String> {
        type F = unsafe extern "C" fn(*const std::ffi::c_char, *mut *mut c_void) -> i32;
        let id = CString::new(pci_bus_id).map_err(|_| "bad PCI bus id".to_string())?;
        let mut d = std::ptr::null_mut();
        // SAFETY: the signature of nvmlDeviceGetHandleByPciBusId_v2; writes one handle.
        let rc = unsafe { self.sym::<F>("nvmlDeviceGetHandleByPciBusId_v2")?(id.as_ptr(), &mut d) };
        if rc != 0 {
            return Err(format!("NVML does not know PCI device {pci_bus_id} (error {rc})"));
        }
        Ok(NvmlDevice(d))
    }

    /// A u32 query of the form f(device, *out); None where it fails.
    pub fn get(&self, d: NvmlDevice, name: &str) -> Option<u32> {
        let mut v = 0;
        // SAFETY: every name passed here has the signature NvmlU32.
        let rc = unsafe { self.sym::<NvmlU32>(name).ok()?(d.0, &mut v) };
        (rc == 0).then_some(v)
    }

    /// A u32 query of the form f(device, kind, *out).
    pub fn get_of(&self, d: NvmlDevice, name: &str, kind: u32) -> Option<u32> {
        let mut v = 0;
        // SAFETY: every name passed here has the signature NvmlU32Arg.
        let rc = unsafe { self.sym::<NvmlU32Arg>(name).ok()?(d.0, kind, &mut v) };
        (rc == 0).then_some(v)
    }

    pub fn driver_version(&self) -> Option<String> {
        type F = unsafe extern "C" fn(*mut std::ffi::c_char, u32) -> i32;
        let mut buf = [0 as std::ffi::c_char; 96];
        // SAFETY: NVML writes a NUL-terminated string of at most buf.len() bytes.
        let rc =
            unsafe { self.sym::<F>("nvmlSystemGetDriverVersion").ok()?(buf.as_mut_ptr(), buf.len() as u32) };
        // SAFETY: NUL-terminated on success.
        (rc == 0).then(|| {
            unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: pairs the nvmlInit_v2 of `load`.
        if let Ok(f) = unsafe { self.sym::<NvmlFn0>("nvmlShutdown") } {
            // SAFETY: no arguments.
            unsafe { f() };
        }
    }
}
