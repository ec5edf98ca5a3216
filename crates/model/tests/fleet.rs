//! The fleet report's rule: who is an outlier, in which class, and why.

use memfabric_model::fleet::{judge, FleetFacts, FleetHost, Rule};
use memfabric_topo::HardwareClass;
use proptest::prelude::*;

fn class(channels: usize, mt_s: u32, nodes: usize) -> HardwareClass {
    HardwareClass {
        cpu_model: Some("AMD EPYC 9654".into()),
        sockets: 2,
        cores: 192,
        channels_populated: Some(channels),
        dimm_mt_s: Some(mt_s),
        numa_nodes: nodes,
        key: format!("AMD EPYC 9654/2S/192C/{channels}ch/{mt_s}MT/{nodes}N"),
    }
}

fn host(i: usize, triad: f64, latency: f64) -> FleetHost {
    let mut facts = FleetFacts {
        class: Some(class(24, 4800, 2)),
        dimms: Some(24),
        numa_mode: Some("2 sockets, 1 node with CPUs per socket".into()),
        ..FleetFacts::default()
    };
    facts.settings.insert("bios_version".into(), "1.9".into());
    facts.settings.insert("thp".into(), "always".into());
    facts.settings.insert("governor".into(), "performance".into());
    facts.headlines.insert("triad_per_node_gb_s".into(), triad);
    facts.headlines.insert("local_latency_ns".into(), latency);
    FleetHost {
        run_id: i as i64,
        measured_unix_s: 1_796_000_000,
        stored_unix_s: 1_796_000_100,
        name: format!("node{i:03}"),
        host_id: Some(format!("machine-id:{i:016x}")),
        facts,
    }
}

/// 20 hosts spread around 400 GB/s and 110 ns by a few tenths of a percent.
fn class_of_20() -> Vec<FleetHost> {
    (0..20)
        .map(|i| host(i, 400.0 + (i % 5) as f64, 110.0 + (i % 3) as f64 * 0.5))
        .collect()
}

#[test]
fn a_host_with_a_missing_dimm_is_judged_in_its_class_and_the_dimm_named() {
    let mut hosts = class_of_20();
    hosts[3].facts.class = Some(class(23, 4800, 2));
    hosts[3].facts.dimms = Some(23);
    hosts[3]
        .facts
        .headlines
        .insert("triad_per_node_gb_s".into(), 330.0);
    let r = judge(&hosts, Rule::default());
    assert_eq!(r.classes.len(), 1, "the 23-channel host is folded into its class");
    assert_eq!(
        r.classes[0].folded[0].value,
        "AMD EPYC 9654/2S/192C/23ch/4800MT/2N"
    );
    assert_eq!(r.outliers.len(), 1);
    let o = &r.outliers[0];
    assert_eq!(
        (o.host.as_str(), o.headline.as_str()),
        ("node003", "triad_per_node_gb_s")
    );
    assert!(
        (o.worse_pct - 100.0 * (402.0 - 330.0) / 402.0).abs() < 1.0,
        "{}",
        o.worse_pct
    );
    assert!(
        o.causes[0].starts_with("memory channels populated 23, its class 24 (19 of 20 hosts)"),
        "{:?}",
        o.causes
    );
    assert!(o.causes[0].ends_with("(a missing or failed DIMM)"));
    assert!(o.causes[1].starts_with("DIMMs 23, its class 24"));
    let drift: Vec<&str> = r.drift.iter().map(|d| d.fact.as_str()).collect();
    assert_eq!(drift, ["DIMMs", "memory channels populated"]);
}

#[test]
fn latency_is_worse_upwards_and_a_different_bios_is_the_cause() {
    let mut hosts = class_of_20();
    hosts[7]
        .facts
        .settings
        .insert("bios_version".into(), "1.4".into());
    hosts[7].facts.headlines.insert("local_latency_ns".into(), 135.0);
    // Better than the class is never an outlier.
    hosts[8].facts.headlines.insert("local_latency_ns".into(), 80.0);
    let r = judge(&hosts, Rule::default());
    assert_eq!(r.outliers.len(), 1, "{:?}", r.outliers);
    assert_eq!(r.outliers[0].host, "node007");
    assert_eq!(
        r.outliers[0].causes,
        ["bios_version 1.4, its class 1.9 (19 of 20 hosts)"]
    );
    assert!(r.outliers[0].worse_pct > 20.0);
}

#[test]
fn both_conditions_must_hold() {
    // 15 % worse, but the class itself spreads widely: not beyond 3 MADs.
    let mut hosts: Vec<FleetHost> = (0..20).map(|i| host(i, 300.0 + 10.0 * i as f64, 110.0)).collect();
    hosts[0]
        .facts
        .headlines
        .insert("triad_per_node_gb_s".into(), 0.85 * 395.0);
    assert!(judge(&hosts, Rule::default()).outliers.is_empty());
    // Far beyond 3 MADs of a tight class, but only 5 % worse.
    let mut hosts = class_of_20();
    hosts[0]
        .facts
        .headlines
        .insert("triad_per_node_gb_s".into(), 0.95 * 402.0);
    assert!(judge(&hosts, Rule::default()).outliers.is_empty());
}

#[test]
fn a_noisy_run_and_an_unexplained_one_say_so() {
    let mut hosts = class_of_20();
    hosts[1].facts.noise =
        vec!["cv 9.0 % over the 5.0 % threshold: other load: 1-minute load average 5.00".into()];
    hosts[1]
        .facts
        .headlines
        .insert("triad_per_node_gb_s".into(), 300.0);
    hosts[2]
        .facts
        .headlines
        .insert("triad_per_node_gb_s".into(), 300.0);
    let r = judge(&hosts, Rule::default());
    assert_eq!(r.outliers.len(), 2);
    assert!(r.outliers[0].causes[0].starts_with("noisy run: 1 measurement(s) flagged"));
    assert!(r.outliers[1].causes[0].starts_with("none of its recorded facts differs"));
}

#[test]
fn small_classes_are_summarised_not_judged_and_big_variants_stand_alone() {
    let mut hosts = class_of_20();
    // Eight hosts in NPS4: a configuration of its own, not a fault of the others.
    for h in &mut hosts[..8] {
        h.facts.class = Some(class(24, 4800, 8));
    }
    // Two hosts of another platform.
    for h in &mut hosts[8..10] {
        let mut c = class(24, 4800, 2);
        c.cpu_model = Some("Intel Xeon 8480+".into());
        c.key = "Intel Xeon 8480+/2S/112C/16ch/4800MT/2N".into();
        h.facts.class = Some(c);
        h.facts.headlines.insert("triad_per_node_gb_s".into(), 100.0);
    }
    let r = judge(&hosts, Rule::default());
    let classes: Vec<(usize, bool)> = r.classes.iter().map(|c| (c.hosts, c.judged)).collect();
    assert_eq!(classes, [(10, true), (8, true), (2, false)]);
    assert!(
        r.outliers.is_empty(),
        "the small class is not judged: {:?}",
        r.outliers
    );
    assert_eq!(r.rows.len(), 20);
}

#[test]
fn numa_mode_thp_and_governor_are_named() {
    let mut hosts = class_of_20();
    // NPS4 on one host: a class key of its own, judged with its platform's class.
    hosts[4].facts.class = Some(class(24, 4800, 8));
    hosts[4].facts.numa_mode = Some("2 sockets, 4 nodes with CPUs per socket".into());
    hosts[4].facts.headlines.insert("local_latency_ns".into(), 140.0);
    hosts[9].facts.settings.insert("thp".into(), "never".into());
    hosts[9]
        .facts
        .settings
        .insert("governor".into(), "powersave".into());
    hosts[9].facts.headlines.insert("local_latency_ns".into(), 140.0);
    let r = judge(&hosts, Rule::default());
    assert_eq!(r.classes.len(), 1);
    let causes = |h: &str| r.outliers.iter().find(|o| o.host == h).unwrap().causes.clone();
    let nps = causes("node004");
    assert!(
        nps[0].starts_with("NUMA nodes 8, its class 2 (19 of 20 hosts)"),
        "{nps:?}"
    );
    assert!(nps[0].ends_with("(a different NPS/SNC setting in the BIOS)"));
    assert!(nps[1].starts_with("NUMA mode 2 sockets, 4 nodes with CPUs per socket, its class"));
    assert_eq!(
        causes("node009"),
        [
            "thp never, its class always (19 of 20 hosts)",
            "governor powersave, its class performance (19 of 20 hosts)"
        ]
    );
}

proptest! {
    /// Scaling every host's figures by one factor changes no verdict.
    #[test]
    fn verdicts_do_not_depend_on_units(
        triads in prop::collection::vec(100.0f64..500.0, 3..40),
        scale in 0.01f64..100.0,
    ) {
        let hosts: Vec<FleetHost> = triads.iter().enumerate().map(|(i, &t)| host(i, t, 100.0)).collect();
        let scaled: Vec<FleetHost> = triads.iter().enumerate().map(|(i, &t)| host(i, t * scale, 100.0 * scale)).collect();
        let names = |r: &memfabric_model::fleet::FleetReport| r.outliers.iter().map(|o| o.host.clone()).collect::<Vec<_>>();
        prop_assert_eq!(names(&judge(&hosts, Rule::default())), names(&judge(&scaled, Rule::default())));
    }

    /// A host more than 10 % below a class whose others are within 1 % of each other
    /// is always found, and nobody else is.
    #[test]
    fn a_clear_outlier_is_always_found(
        n in 4usize..60,
        spread in prop::collection::vec(0.0f64..1.0, 60),
        drop in 10.5f64..80.0,
        which in 0usize..60,
    ) {
        let mut hosts: Vec<FleetHost> = (0..n).map(|i| host(i, 400.0 + 4.0 * spread[i], 100.0)).collect();
        let bad = which % n;
        // The others lie in 400-404, so their median is at least 400: the planted host
        // is `drop` % below it or more (404 here left it 9.6 % below 400, inside the rule).
        hosts[bad].facts.headlines.insert("triad_per_node_gb_s".into(), 400.0 * (1.0 - drop / 100.0));
        let r = judge(&hosts, Rule::default());
        let found: Vec<&str> = r.outliers.iter().map(|o| o.host.as_str()).collect();
        prop_assert_eq!(found, vec![hosts[bad].name.as_str()]);
    }
}
