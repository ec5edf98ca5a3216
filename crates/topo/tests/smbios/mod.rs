//! SMBIOS memory devices against the raw fixtures of
//! `tests/fixtures/smbios/` (written by its `generate.py`), the dmidecode
//! text fallback, and fuzz targets for both decoders.

#[path = "fuzz.rs"]
mod fuzz;

use std::path::PathBuf;

use memfabric_topo::{group_dimms, parse_dmidecode, read_memory_devices, Dimm, MemoryDevices, Topology};

const GIB: u64 = 1 << 30;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

fn entries(name: &str, packages: usize) -> MemoryDevices {
    let mut m = read_memory_devices(&fixtures().join("smbios").join(name));
    group_dimms(&mut m.dimms, packages);
    m
}

fn place(d: &Dimm) -> (Option<u32>, Option<&str>, Option<u32>) {
    (d.socket, d.channel.as_deref(), d.slot)
}

#[test]
fn ddr5_two_sockets_all_channels() {
    let m = entries("ddr5-2s-16dimm", 2);
    assert_eq!(
        (m.source.as_deref(), m.unavailable.clone()),
        (Some("smbios"), None)
    );
    assert!(m.problems.is_empty() && !m.permission_denied);
    assert_eq!(m.dimms.len(), 16);
    for (k, d) in m.dimms.iter().enumerate() {
        let channel = ["A", "B", "C", "D", "E", "F", "G", "H"][k % 8];
        assert_eq!(d.entry, format!("17-{k}"));
        assert_eq!(d.locator, Some(format!("CPU{}_DIMM_{channel}1", k / 8)));
        assert_eq!(place(d), (Some(k as u32 / 8), Some(channel), Some(1)));
        assert!(d.installed);
        assert_eq!(d.size_bytes, Some(32 * GIB), "32 GB needs Extended Size");
        assert_eq!(d.memory_type.as_deref(), Some("DDR5"));
        assert_eq!(d.form_factor.as_deref(), Some("DIMM"));
        assert_eq!(d.type_detail, vec!["Synchronous", "Registered (Buffered)"]);
        assert_eq!((d.speed_mt_s, d.configured_speed_mt_s), (Some(4800), Some(4800)));
        assert_eq!(
            (d.ranks, d.total_width_bits, d.data_width_bits),
            (Some(2), Some(80), Some(64))
        );
        assert_eq!(d.manufacturer.as_deref(), Some("Samsung"));
        assert_eq!(d.part_number.as_deref(), Some("M321R4GA3BB6-CQKET"));
    }
}

#[test]
fn ddr4_empty_slots_and_mixed_modules() {
    let m = entries("ddr4-2s-mixed", 2);
    assert_eq!(m.dimms.len(), 32);
    let installed: Vec<&Dimm> = m.dimms.iter().filter(|d| d.installed).collect();
    assert_eq!(installed.len(), 8 + 2 + 6);
    let first = &m.dimms[0];
    assert_eq!(
        (first.locator.as_deref(), first.bank_locator.as_deref()),
        (Some("DIMM 0"), Some("P0 CHANNEL A"))
    );
    assert_eq!(place(first), (Some(0), Some("A"), Some(0)));
    assert_eq!(
        (first.speed_mt_s, first.configured_speed_mt_s),
        (Some(2666), Some(2400))
    );
    let second = &m.dimms[1];
    assert_eq!(
        (place(second), second.size_bytes, second.ranks),
        ((Some(0), Some("A"), Some(1)), Some(16 * GIB), Some(1))
    );
    let empty = m
        .dimms
        .iter()
        .find(|d| d.bank_locator.as_deref() == Some("P1 CHANNEL G"))
        .unwrap();
    assert!(!empty.installed);
    assert_eq!(
        (empty.size_bytes, empty.speed_mt_s, empty.data_width_bits),
        (None, None, None)
    );
    assert_eq!(
        empty.manufacturer.as_deref(),
        Some("NO DIMM"),
        "strings are passed through"
    );
    assert_eq!(empty.memory_type.as_deref(), Some("DDR4"));
    assert!(empty.type_detail.is_empty(), "Unknown is not a detail");
}

#[test]
fn every_structure_version() {
    let m = entries("versions", 1);
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    let d = &m.dimms;
    assert_eq!(d.len(), 7);
    // 2.3: speed and strings, no rank or configured speed.
    assert_eq!(
        (d[0].size_bytes, d[0].speed_mt_s, d[0].ranks),
        (Some(512 << 20), Some(400), None)
    );
    assert_eq!(d[0].configured_speed_mt_s, None);
    assert_eq!(d[0].part_number.as_deref(), Some("KVR400X64C3A/512"));
    assert_eq!(d[0].memory_type.as_deref(), Some("DDR"));
    // 2.1: nothing past Type Detail.
    assert_eq!(
        (d[1].size_bytes, d[1].speed_mt_s, d[1].manufacturer.clone()),
        (Some(256 << 20), None, None)
    );
    // 2.7: Extended Size and configured speed.
    assert_eq!(
        (d[2].size_bytes, d[2].configured_speed_mt_s, d[2].ranks),
        (Some(32 * GIB), Some(1866), Some(4))
    );
    // 3.3: extended speeds.
    assert_eq!(
        (d[3].speed_mt_s, d[3].configured_speed_mt_s),
        (Some(70000), Some(68000))
    );
    // KiB granularity; unknown size; a bad string index.
    assert_eq!(
        (d[4].size_bytes, d[4].memory_type.as_deref()),
        (Some(512 << 10), Some("RAM"))
    );
    assert_eq!(
        (d[5].size_bytes, d[5].installed, d[5].locator.clone()),
        (None, true, None)
    );
    assert_eq!(
        (d[6].manufacturer.as_deref(), d[6].part_number.clone()),
        (Some("X"), None)
    );
    // One socket: `DIMM_A1` names channel A; `DIMM0` names no channel.
    assert_eq!(place(&d[2]), (Some(0), Some("A"), Some(1)));
    assert_eq!(place(&d[0]), (None, None, Some(0)));
}

#[test]
fn qemu_default_is_ungrouped() {
    let m = entries("qemu-default", 2);
    let d = &m.dimms[0];
    assert_eq!(
        (d.locator.as_deref(), d.bank_locator.clone()),
        (Some("DIMM 0"), None)
    );
    assert_eq!(
        (d.size_bytes, d.memory_type.as_deref()),
        (Some(3 * GIB), Some("RAM"))
    );
    assert_eq!((d.speed_mt_s, d.configured_speed_mt_s), (Some(4800), Some(4800)));
    assert_eq!(
        (d.data_width_bits, d.total_width_bits, d.ranks),
        (None, None, None)
    );
    assert_eq!(
        (d.manufacturer.as_deref(), d.part_number.as_deref()),
        (Some("Acme"), Some("ACME-DDR5-16G"))
    );
    assert_eq!(place(d), (None, None, Some(0)));
}

#[test]
fn missing_and_empty_directories_say_why() {
    let m = read_memory_devices(&fixtures().join("smbios/nonexistent"));
    assert!(m.dimms.is_empty() && m.source.is_none());
    assert!(m.unavailable.unwrap().contains("absent"));
    let dir = std::env::temp_dir().join(format!("memfabric-smbios-empty-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("4-0")).unwrap();
    std::fs::write(dir.join("4-0/raw"), [4u8, 0x2a]).unwrap();
    std::fs::create_dir_all(dir.join("17-0")).unwrap();
    std::fs::write(dir.join("17-0/raw"), [17u8, 0x05, 0, 0, 0, 0, 0]).unwrap();
    let m = read_memory_devices(&dir);
    assert_eq!(m.problems.len(), 1, "{m:?}");
    assert!(m.problems[0].starts_with("17-0: length 0x5"), "{:?}", m.problems);
    assert_eq!(
        m.unavailable.as_deref(),
        Some("no SMBIOS memory device could be decoded")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dmidecode_text_fixture() {
    let text = std::fs::read_to_string(fixtures().join("smbios/dmidecode-1s.txt")).unwrap();
    let mut m = parse_dmidecode(&text);
    group_dimms(&mut m.dimms, 1);
    assert_eq!(m.source.as_deref(), Some("dmidecode"));
    assert_eq!(m.dimms.len(), 4);
    let installed: Vec<&Dimm> = m.dimms.iter().filter(|d| d.installed).collect();
    assert_eq!(installed.len(), 2);
    for (d, ch) in installed.iter().zip(["A", "B"]) {
        assert_eq!(place(d), (Some(0), Some(ch), Some(1)));
        assert_eq!(
            (d.size_bytes, d.memory_type.as_deref()),
            (Some(16 * GIB), Some("DDR4"))
        );
        assert_eq!(
            (d.speed_mt_s, d.configured_speed_mt_s, d.ranks),
            (Some(3200), Some(2933), Some(2))
        );
        assert_eq!(d.part_number.as_deref(), Some("KF3200C16D4/16GX"));
        assert_eq!(d.type_detail, vec!["Synchronous", "Unbuffered (Unregistered)"]);
    }
    assert_eq!(m.dimms[0].form_factor, None);
}

/// Topology::read picks the entries up from `<root>/firmware/dmi/entries`.
#[test]
fn topology_reads_and_groups_its_dimms() {
    let root = std::env::temp_dir().join(format!("memfabric-smbios-topo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |rel: &str, text: &[u8]| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("devices/system/cpu/online", b"0-1\n");
    for cpu in 0..2 {
        write(
            &format!("devices/system/cpu/cpu{cpu}/topology/physical_package_id"),
            format!("{cpu}\n").as_bytes(),
        );
        write(&format!("devices/system/cpu/cpu{cpu}/topology/core_id"), b"0\n");
    }
    let src = fixtures().join("smbios/ddr5-2s-16dimm");
    for n in 0..16 {
        write(
            &format!("firmware/dmi/entries/17-{n}/raw"),
            &std::fs::read(src.join(format!("17-{n}/raw"))).unwrap(),
        );
    }
    let topo = Topology::read(&root).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(topo.packages.len(), 2);
    let m = &topo.memory_devices;
    assert_eq!(m.dimms.len(), 16);
    assert_eq!(place(&m.dimms[9]), (Some(1), Some("B"), Some(1)));
    let json = serde_json::to_string(&topo).unwrap();
    assert_eq!(serde_json::from_str::<Topology>(&json).unwrap(), topo);
}
