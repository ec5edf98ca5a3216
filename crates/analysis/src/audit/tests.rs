use std::path::{Path, PathBuf};

use memfabric_model::PopulationClass;
use memfabric_topo::{group_dimms, read_memory_devices};

use super::*;

/// The settings as the CLI reads them, from saved trees.
fn settings(topo: &Topology, sys: &std::path::Path, proc: &std::path::Path) -> Settings {
    Settings::new(
        topo,
        memfabric_topo::governors(topo, sys),
        memfabric_topo::numa_balancing(proc),
    )
}

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

fn topo_with(sysfs: &str, smbios: &str) -> Topology {
    let mut topo = Topology::read(&fixtures().join(sysfs).join("sys")).unwrap();
    topo.memory_devices = read_memory_devices(&fixtures().join("smbios").join(smbios));
    group_dimms(&mut topo.memory_devices.dimms, topo.packages.len());
    topo
}

fn titles(r: &AuditReport) -> Vec<String> {
    r.findings
        .iter()
        .map(|f| format!("{:?}: {}", f.severity, f.title))
        .collect()
}

#[test]
fn full_even_population_is_optimal() {
    let topo = topo_with("snc-2s", "ddr5-2s-16dimm");
    let r = audit(
        &topo,
        &settings(&topo, &fixtures().join("snc-2s/sys"), Path::new("/nonexistent")),
    );
    for s in &r.sockets {
        assert_eq!(
            (s.class, s.expected_loss),
            (PopulationClass::Optimal, Some(0.0)),
            "{s:?}"
        );
        assert_eq!(
            s.estimate,
            "8 of 8 channels populated (x1) at 4800 of the rated 4800 MT/s (x1): 307.2 of 307.2 GB/s, 0% less"
        );
    }
    assert!(
        r.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        titles(&r)
    );
    let t = titles(&r);
    assert!(
        t.contains(&"Info: SMT is off or not supported".to_string()),
        "{t:?}"
    );
    assert!(
        t.contains(&"Info: CPU frequency governor unknown".to_string()),
        "{t:?}"
    );
    assert!(
        !t.iter().any(|x| x.contains("huge pages")),
        "THP always is not a finding: {t:?}"
    );
}

#[test]
fn mixed_population_is_found_and_classed() {
    let topo = topo_with("epyc7601-2s", "ddr4-2s-mixed");
    let proc = fixtures().join("smbios/proc-untuned");
    let r = audit(
        &topo,
        &settings(&topo, &fixtures().join("epyc7601-2s/sys"), &proc),
    );
    let t = titles(&r);
    let want = [
        "Warning: Socket 0: channels hold unequal memory (A, B: 48G; C-H: 32G)",
        "Warning: Socket 1: 2 of 8 memory channels empty (G, H)",
        "Warning: Sockets are populated differently",
        "Warning: Mixed DIMM sizes: 2 x 16G, 14 x 32G",
        "Warning: DIMMs run below their rated speed: 8 x rated 2666 MT/s running at 2400 MT/s",
        "Warning: Automatic NUMA balancing is on",
        "Info: Mixed rated speeds: 2 x 2400 MT/s, 14 x 2666 MT/s",
        "Info: Mixed rank counts: 2 x 1R, 14 x 2R",
        "Info: SMT is on",
    ];
    for w in want {
        assert!(t.iter().any(|x| x == w), "missing {w:?} in {t:#?}");
    }
    assert_eq!(r.findings[0].severity, Severity::Warning, "most severe first");
    let unequal = r
        .findings
        .iter()
        .find(|f| f.title.starts_with("Socket 0: channels"))
        .unwrap();
    assert!(
        unequal
            .why
            .contains("the first 32G of each channel is spread over all 8, the remaining 32G over only 2"),
        "{}",
        unequal.why
    );
    let empty = r
        .findings
        .iter()
        .find(|f| f.title.starts_with("Socket 1: 2 of 8"))
        .unwrap();
    assert_eq!(
        empty.evidence[0],
        "channel G: DIMM 0 (P1 CHANNEL G), DIMM 1 (P1 CHANNEL G) empty"
    );
    assert!(empty.why.contains("peaks at 75% of a full set"), "{}", empty.why);

    let (s0, s1) = (&r.sockets[0], &r.sockets[1]);
    // Socket 0: 2400 of 2666 MT/s, and 32G of its 288G reached through 2 of 8
    // channels (x0.75); socket 1: 2 of 8 channels empty (x0.75).
    assert_eq!(s0.class, PopulationClass::NotRecommended);
    let loss = 1.0 - 0.75 * 2400.0 / 2666.0;
    assert!((s0.expected_loss.unwrap() - loss).abs() < 1e-9, "{s0:?}");
    assert!(
        s0.estimate
            .contains("8 of 8 channels populated (x1) at 2400 of the rated 2666 MT/s (x0.9)"),
        "{}",
        s0.estimate
    );
    assert!(s0.estimate.contains("unequal memory") && s0.estimate.contains("(x0.75 of the listed"));
    assert_eq!(
        (s1.class, s1.expected_loss),
        (PopulationClass::NotRecommended, Some(0.25))
    );
    // One rule for every socket: the class follows from the loss alone.
    for s in &r.sockets {
        assert_eq!(s.class, class::class_of_loss(s.expected_loss.unwrap()), "{s:?}");
    }
}

#[test]
fn without_smbios_nothing_is_guessed() {
    let topo = topo_with("epyc7601-2s", "nonexistent");
    let r = audit(&topo, &Settings::default());
    let first = r
        .findings
        .iter()
        .find(|f| f.title.starts_with("SMBIOS gives no memory devices"))
        .unwrap();
    assert_eq!(first.severity, Severity::Info);
    assert!(first.evidence[0].contains("absent"));
    assert_eq!(r.sockets.len(), 2);
    assert!(r
        .sockets
        .iter()
        .all(|s| s.class == PopulationClass::Unknown && s.expected_loss.is_none()));

    let topo = topo_with("this-machine", "qemu-default");
    let r = audit(&topo, &Settings::default());
    let t = titles(&r);
    assert!(
        t.contains(&"Info: 1 of 1 DIMMs cannot be placed on a channel".to_string()),
        "{t:?}"
    );
    assert_eq!(r.sockets[0].class, PopulationClass::Unknown);
    assert!(
        r.sockets[0].estimate.contains("name no socket and channel"),
        "{}",
        r.sockets[0].estimate
    );
}

#[test]
fn settings_and_nodes() {
    let mut topo = topo_with("epyc7601-2s", "nonexistent");
    topo.nodes[3].mem_total_bytes = 0;
    topo.nodes[5].mem_total_bytes /= 2;
    let mut s = Settings {
        thp_enabled: Some("never".into()),
        numa_balancing: Some("1".into()),
        smt_active: None,
        ..Settings::default()
    };
    s.governors.insert("powersave".into(), vec![0, 1, 2]);
    s.governors.insert("performance".into(), vec![3]);
    let r = audit(&topo, &s);
    let t = titles(&r);
    for w in [
        "Warning: NUMA node(s) 3 have CPUs but no memory",
        "Warning: NUMA nodes with CPUs hold unequal memory",
        "Warning: Transparent huge pages are off (never)",
        "Warning: Automatic NUMA balancing is on",
        "Warning: CPU governor is 'powersave', not 'performance'",
        "Info: SMT state unknown",
    ] {
        assert!(t.iter().any(|x| x == w), "missing {w:?} in {t:#?}");
    }
    let g = r
        .findings
        .iter()
        .find(|f| f.title.starts_with("CPU governor"))
        .unwrap();
    assert_eq!(g.evidence, vec!["CPUs 3: performance", "CPUs 0-2: powersave"]);
}
