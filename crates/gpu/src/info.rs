//! What a GPU is (driver attributes, the PCI slot in sysfs, NVML) and its state now.

use std::path::Path;

use memfabric_model::{GpuInfo, GpuState, PcieLink};

use crate::sys::{Attribute, Device, GpuError, Nvml, NvmlDevice};

/// NVML's clock kinds and temperature sensor (nvml.h).
const NVML_CLOCK_SM: u32 = 1;
const NVML_CLOCK_MEM: u32 = 2;
const NVML_TEMPERATURE_GPU: u32 = 0;

/// NVML for one device, or why there is none.
pub struct Telemetry {
    nvml: Result<(Nvml, NvmlDevice), String>,
}

impl Telemetry {
    pub fn open(pci_bus_id: &str) -> Telemetry {
        let nvml = Nvml::load().and_then(|n| {
            let d = n.device(pci_bus_id)?;
            Ok((n, d))
        });
        Telemetry { nvml }
    }

    /// Why the state is empty, where it is.
    pub fn note(&self) -> Option<String> {
        self.nvml.as_ref().err().cloned()
    }

    pub fn state(&self) -> GpuState {
        let Ok((n, d)) = &self.nvml else {
            return GpuState::default();
        };
        GpuState {
            sm_clock_mhz: n.get_of(*d, "nvmlDeviceGetClockInfo", NVML_CLOCK_SM),
            memory_clock_mhz: n.get_of(*d, "nvmlDeviceGetClockInfo", NVML_CLOCK_MEM),
            power_w: n
                .get(*d, "nvmlDeviceGetPowerUsage")
                .map(|mw| f64::from(mw) / 1000.0),
            temperature_c: n.get_of(*d, "nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU),
        }
    }

    fn pcie(&self) -> Option<PcieLink> {
        let (n, d) = self.nvml.as_ref().ok()?;
        Some(PcieLink {
            generation: n.get(*d, "nvmlDeviceGetCurrPcieLinkGeneration"),
            width: n.get(*d, "nvmlDeviceGetCurrPcieLinkWidth"),
            max_generation: n.get(*d, "nvmlDeviceGetMaxPcieLinkGeneration"),
            max_width: n.get(*d, "nvmlDeviceGetMaxPcieLinkWidth"),
            source: "nvml".into(),
        })
    }

    fn driver_version(&self) -> Option<String> {
        self.nvml.as_ref().ok()?.0.driver_version()
    }
}

/// Everything about the device, from the driver, sysfs (under `sysfs`) and NVML.
pub fn describe(dev: &Device, t: &Telemetry, sysfs: &Path) -> Result<GpuInfo, GpuError> {
    let attr = |a| dev.attribute(a);
    let memory_clock_mhz = f64::from(attr(Attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?) / 1000.0;
    let bus = attr(Attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32;
    let pci_bus_id = dev.pci_bus_id()?;
    let slot = memfabric_topo::PciSlot::read(sysfs, &pci_bus_id);
    Ok(GpuInfo {
        ordinal: dev.ordinal,
        name: dev.name()?,
        compute_capability: format!(
            "{}.{}",
            attr(Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?
        ),
        sm_count: attr(Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        memory_bytes: dev.total_mem()?,
        l2_bytes: attr(Attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        memory_bus_width_bits: bus,
        memory_clock_mhz,
        sm_clock_mhz: f64::from(attr(Attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?) / 1000.0,
        peak_memory_gb_s: peak_memory_gb_s(memory_clock_mhz, bus),
        numa_node: slot.numa_node,
        pcie: t.pcie().or_else(|| sysfs_pcie(&slot)),
        pci_bus_id,
        driver_version: t.driver_version(),
        cuda_version: cuda_version(dev.driver_version()?),
        nvml: t.note(),
    })
}

/// Double data rate: two transfers per memory clock, `bus_bits` wide.
pub fn peak_memory_gb_s(memory_clock_mhz: f64, bus_bits: u32) -> Option<f64> {
    (memory_clock_mhz > 0.0 && bus_bits > 0)
        .then(|| memory_clock_mhz * 1e6 * 2.0 * f64::from(bus_bits) / 8.0 * 1e-9)
}

/// 12080 -> "12.8".
pub fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// "32.0 GT/s PCIe" -> 5: the generation of a link speed as sysfs writes it.
pub fn pcie_generation(speed: &str) -> Option<u32> {
    let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
    [(2.5, 1), (5.0, 2), (8.0, 3), (16.0, 4), (32.0, 5), (64.0, 6)]
        .iter()
        .find(|(g, _)| (gts - g).abs() < 0.01)
        .map(|&(_, gen)| gen)
}

/// The link sysfs describes for a PCI slot, where it describes one.
fn sysfs_pcie(slot: &memfabric_topo::PciSlot) -> Option<PcieLink> {
    let gen = |s: &Option<String>| s.as_deref().and_then(pcie_generation);
    let link = PcieLink {
        generation: gen(&slot.current_link_speed),
        width: slot.current_link_width,
        max_generation: gen(&slot.max_link_speed),
        max_width: slot.max_link_width,
        source: "sysfs".into(),
    };
    (link.generation.is_some() || link.width.is_some()).then_some(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_peak_from_its_memory_clock_and_bus() {
        // ANCHORS: 2619 MHz x 5120 bit = 3352 GB/s
        let p = peak_memory_gb_s(2619.0, 5120).unwrap();
        assert!((p - 3352.3).abs() < 0.1, "{p}");
        assert_eq!(peak_memory_gb_s(0.0, 5120), None);
    }

    #[test]
    fn versions_links_and_nodes_parse_as_the_kernel_writes_them() {
        assert_eq!(cuda_version(12080), "12.8");
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(pcie_generation("32.0 GT/s PCIe"), Some(5));
        assert_eq!(pcie_generation("2.5 GT/s PCIe"), Some(1));
        assert_eq!(pcie_generation("Unknown"), None);
    }

    /// No NVML, an NVML without its kernel driver (tests/gpu/run.sh runs this with
    /// Debian's libnvidia-ml), or no GPU at that slot: a note, and empty state.
    #[test]
    fn telemetry_without_a_usable_nvml_is_a_note_and_an_empty_state() {
        let t = Telemetry::open("0000:ff:1f.7");
        let note = t.note().expect("no GPU sits at this bus id");
        eprintln!("NVML: {note}");
        assert!(note.contains("NVML"), "{note}");
        assert_eq!(t.state(), GpuState::default());
        assert!(t.pcie().is_none() && t.driver_version().is_none());
    }

    #[test]
    fn sysfs_link_of_a_fixture_slot() {
        let d = std::env::temp_dir().join(format!("memfabric-pcie-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for (f, v) in [
            ("current_link_speed", "16.0 GT/s PCIe\n"),
            ("current_link_width", "16\n"),
            ("max_link_speed", "32.0 GT/s PCIe\n"),
            ("max_link_width", "16\n"),
        ] {
            std::fs::write(d.join(f), v).unwrap();
        }
        let l = sysfs_pcie(&memfabric_topo::PciSlot::read_dir(&d)).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(
            (l.generation, l.width, l.max_generation, l.max_width),
            (Some(4), Some(16), Some(5), Some(16))
        );
        let none = memfabric_topo::PciSlot::read_dir(Path::new("/no/such/slot"));
        assert_eq!(sysfs_pcie(&none), None);
    }
}
