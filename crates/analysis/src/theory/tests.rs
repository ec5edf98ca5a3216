use std::path::PathBuf;

use memfabric_model::{BandwidthCell, BandwidthMeasurement, HugePages, MixInfo, Summary};
use memfabric_topo::{group_dimms, parse_dmidecode, read_memory_devices};
use proptest::prelude::*;

use super::*;

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

fn topo_with(sysfs: &str, smbios: &str) -> Topology {
    let mut topo = Topology::read(&fixtures().join(sysfs).join("sys")).unwrap();
    topo.memory_devices = read_memory_devices(&fixtures().join("smbios").join(smbios));
    group_dimms(&mut topo.memory_devices.dimms, topo.packages.len());
    topo
}

fn described(d: Description) -> Result<Platform, TheoryError> {
    d.validate(&FLAG_NAMES)
}

#[test]
fn dram_calculator_is_exact() {
    let p = described(Description {
        sockets: Some(2),
        channels_per_socket: Some(12),
        mts: Some(4800),
        ..Description::default()
    })
    .unwrap();
    let m = dram_peak(&p.memory.unwrap());
    assert_eq!(m.sockets.len(), 2);
    assert_eq!(m.sockets[0].peak_gb_s, 460.8);
    assert_eq!(m.sockets[1].formula, "12 channels x 4800 MT/s x 8 B = 460.8 GB/s");
    assert_eq!(m.system_gb_s, 921.6);
    assert_eq!(m.formula, "2 sockets x 460.8 GB/s = 921.6 GB/s");
}

#[test]
fn wide_bus_and_links() {
    let p = described(Description {
        bus_bits: Some(256),
        mts: Some(8000),
        links: Some(4),
        lanes: Some(16),
        gbps: Some(32.0),
        ..Description::default()
    })
    .unwrap();
    let m = dram_peak(&p.memory.unwrap());
    assert_eq!(m.system_gb_s, 256.0);
    assert_eq!(m.sockets[0].formula, "256-bit bus (32 B) x 8000 MT/s = 256 GB/s");
    let l = link_peak(&p.links.unwrap());
    assert_eq!((l.per_direction_gb_s, l.both_directions_gb_s), (256.0, 512.0));
    assert_eq!(
        l.formula,
        "4 links x 16 lanes x 32 Gbit/s / 8 = 256 GB/s per direction, 512 GB/s both directions"
    );
}

#[test]
fn descriptions_that_cannot_be_used() {
    let err = |d: Description| described(d).unwrap_err().to_string();
    let base = Description {
        channels_per_socket: Some(8),
        mts: Some(4800),
        ..Description::default()
    };
    assert_eq!(
        err(Description {
            channels_per_socket: Some(0),
            ..base.clone()
        }),
        "--channels must be at least 1"
    );
    assert!(err(Description {
        mts: None,
        ..base.clone()
    })
    .contains("give --mts"));
    assert!(err(Description {
        bus_bits: Some(12),
        ..base.clone()
    })
    .contains("multiple of 8"));
    assert!(err(Description {
        links: Some(2),
        ..base.clone()
    })
    .contains("all three"));
    assert!(err(Description {
        links: Some(2),
        lanes: Some(16),
        gbps: Some(-1.0),
        ..base.clone()
    })
    .contains("positive number"));
    assert!(err(Description {
        mts: Some(4800),
        ..Description::default()
    })
    .contains("needs --channels"));
    assert!(err(Description::default()).contains("nothing to calculate"));
    assert!(err(Description {
        sockets: Some(2),
        links: Some(1),
        lanes: Some(1),
        gbps: Some(1.0),
        ..Description::default()
    })
    .contains("--sockets applies to memory"));
    let file = Description {
        channels_per_socket: Some(0),
        ..base
    };
    assert_eq!(
        file.validate(&FILE_NAMES).unwrap_err().to_string(),
        "channels_per_socket must be at least 1"
    );
}

#[test]
fn smbios_full_ddr5() {
    let topo = topo_with("snc-2s", "ddr5-2s-16dimm");
    let Outcome::Ok(m) = smbios_peak(&topo.memory_devices) else {
        panic!()
    };
    assert_eq!(m.sockets.len(), 2);
    let s0 = &m.sockets[0];
    assert_eq!(
        (s0.populated_channels, s0.listed_channels, s0.mt_s, s0.bus_bits),
        (8, 8, Some(4800), Some(64))
    );
    assert_eq!(s0.peak_gb_s, 307.2);
    assert_eq!(s0.formula, "8 channels x 4800 MT/s x 8 B = 307.2 GB/s");
    assert_eq!(s0.channels[2].dimms, vec!["CPU0_DIMM_C1"]);
    assert_eq!(m.system_gb_s, 614.4);
    assert_eq!(m.formula, "2 sockets x 307.2 GB/s = 614.4 GB/s");
    // SNC2: two nodes per socket, each half of its socket's channels.
    let n1 = node_peak(&topo, &m, 1).unwrap();
    assert_eq!((n1.socket, n1.peak_gb_s), (0, 153.6));
    assert_eq!(n1.basis, "socket 0's 307.2 GB/s over its 2 nodes (SNC/NPS)");
    let (remote, basis) = path_peak(&topo, &m, None, (0, 3), Mix::Read).unwrap();
    assert_eq!(remote, 153.6);
    assert!(basis.contains("not described"));
    let links = link_peak(&LinkSpec {
        links: 2,
        lanes: 20,
        gbps: 16.0,
    });
    let (remote, basis) = path_peak(&topo, &m, Some(&links), (0, 3), Mix::Read).unwrap();
    assert_eq!(remote, 80.0, "{basis}");
    // A copy reads remote memory one way and writes it the other: both directions
    // carry half its bytes. A triad moves two of every three bytes the busier way.
    let (copy, basis) = path_peak(&topo, &m, Some(&links), (0, 3), Mix::Copy).unwrap();
    assert_eq!(copy, 153.6, "the memory is the limit now: {basis}");
    let slow = link_peak(&LinkSpec {
        links: 1,
        lanes: 16,
        gbps: 16.0,
    });
    let per_direction = slow.per_direction_gb_s;
    let (copy, basis) = path_peak(&topo, &m, Some(&slow), (0, 3), Mix::Copy).unwrap();
    assert_eq!(copy, 2.0 * per_direction, "{basis}");
    assert!(
        basis.contains("copy moves 50% of its bytes the busier way"),
        "{basis}"
    );
    let (triad, _) = path_peak(&topo, &m, Some(&slow), (0, 3), Mix::Triad).unwrap();
    assert!((triad - 1.5 * per_direction).abs() < 1e-9, "{triad}");
    let (write, _) = path_peak(&topo, &m, Some(&slow), (0, 3), Mix::WriteNt).unwrap();
    assert_eq!(write, per_direction);
}

#[test]
fn smbios_mixed_ddr4() {
    let topo = topo_with("epyc7601-2s", "ddr4-2s-mixed");
    let Outcome::Ok(m) = smbios_peak(&topo.memory_devices) else {
        panic!()
    };
    let (s0, s1) = (&m.sockets[0], &m.sockets[1]);
    assert_eq!(
        (s0.populated_channels, s0.listed_channels, s0.mt_s),
        (8, 8, Some(2400))
    );
    assert_eq!(s0.peak_gb_s, 153.6);
    assert_eq!(s0.channels[0].dimms, vec!["DIMM 0", "DIMM 1"]);
    assert_eq!(
        (s1.populated_channels, s1.listed_channels, s1.mt_s),
        (6, 8, Some(2666))
    );
    assert_eq!(s1.peak_gb_s, 127.968);
    assert_eq!(m.system_gb_s, 281.568);
    assert_eq!(m.formula, "153.6 + 127.968 = 281.568 GB/s");
    // Four nodes per socket (Naples dies): a quarter each.
    assert_eq!(node_peak(&topo, &m, 5).unwrap().peak_gb_s, 127.968 / 4.0);
}

#[test]
fn smbios_that_says_too_little_is_skipped() {
    let topo = topo_with("this-machine", "qemu-default");
    let Outcome::Skipped { reason } = smbios_peak(&topo.memory_devices) else {
        panic!()
    };
    assert!(
        reason.contains("'DIMM 0'") && reason.contains("name no socket and channel"),
        "{reason}"
    );
    let topo = topo_with("this-machine", "nonexistent");
    let Outcome::Skipped { reason } = smbios_peak(&topo.memory_devices) else {
        panic!()
    };
    assert!(reason.contains("absent"), "{reason}");
}

#[test]
fn dmidecode_desktop_and_rated_speed_fallback() {
    let text = std::fs::read_to_string(fixtures().join("smbios/dmidecode-1s.txt")).unwrap();
    let mut devices = parse_dmidecode(&text);
    group_dimms(&mut devices.dimms, 1);
    let Outcome::Ok(m) = smbios_peak(&devices) else {
        panic!()
    };
    assert_eq!(m.sockets[0].formula, "2 channels x 2933 MT/s x 8 B = 46.928 GB/s");
    for d in &mut devices.dimms {
        d.configured_speed_mt_s = None;
    }
    let Outcome::Ok(m) = smbios_peak(&devices) else {
        panic!()
    };
    assert_eq!(m.system_gb_s, 51.2);
    assert!(m.sockets[0].channels[0]
        .note
        .as_deref()
        .unwrap()
        .contains("upper bound"));
    for d in &mut devices.dimms {
        d.data_width_bits = None;
    }
    let Outcome::Skipped { reason } = smbios_peak(&devices) else {
        panic!()
    };
    assert!(reason.contains("data width"), "{reason}");
}

#[test]
fn efficiency_of_cells() {
    let topo = topo_with("snc-2s", "ddr5-2s-16dimm");
    let Outcome::Ok(m) = smbios_peak(&topo.memory_devices) else {
        panic!()
    };
    let cell = |cpu_node, mem_node, median: f64| BandwidthCell {
        mix: Mix::Read,
        cpu_node,
        mem_node,
        cpus: vec![0],
        outcome: Outcome::Ok(BandwidthMeasurement {
            bandwidth_gb_s: Summary::of(&[median]).unwrap(),
            samples_gb_s: vec![median],
            bytes_per_sample: 1,
            validated_elements: 0,
            placement: Vec::new(),
            noise: None,
            dram: None,
        }),
        efficiency: None,
    };
    let mut r = BandwidthReport {
        kernel: "avx2".into(),
        huge_pages: HugePages::Off,
        array_bytes_per_thread: 1,
        mixes: vec![MixInfo::of(Mix::Read)],
        cpu_nodes: vec![0],
        mem_nodes: vec![0, 2],
        thread_counts: Vec::new(),
        cells: vec![cell(0, 0, 76.8), cell(0, 2, 38.4)],
        firmware: None,
        dram_counting: Default::default(),
        peak_unknown: None,
        cache_caveat: None,
        interleave: None,
    };
    annotate_bandwidth(&mut r, &topo, &m, None);
    let e = r.cells[0].efficiency.as_ref().unwrap();
    assert_eq!((e.peak_gb_s, e.fraction), (153.6, 0.5));
    assert_eq!(r.cells[1].efficiency.as_ref().unwrap().fraction, 0.25);
    assert_eq!(comparison_mix(&r), Some(Mix::Read));
}

#[test]
fn numbers_print_plainly() {
    assert_eq!(num(460.8), "460.8");
    assert_eq!(num(256.0), "256");
    assert_eq!(num(127.968), "127.968");
    assert_eq!(num(0.1 + 0.2), "0.3");
}

proptest! {
    /// The integer formula agrees with the float one and scales linearly.
    #[test]
    fn dram_formula_scales(channels in 1u32..64, mt_s in 1u32..20000, bytes in 1u32..128) {
        let one = dram_gb_s(1, mt_s, bytes * 8);
        let all = dram_gb_s(channels, mt_s, bytes * 8);
        let float = f64::from(channels) * f64::from(mt_s) * f64::from(bytes) / 1000.0;
        prop_assert!((all - float).abs() <= 1e-9 * float);
        prop_assert!((all - one * f64::from(channels)).abs() <= 1e-9 * all);
    }
}
