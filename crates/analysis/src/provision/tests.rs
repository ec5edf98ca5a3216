use super::*;

fn genoa() -> Platform {
    toml::from_str(include_str!("../../../../platforms/epyc-9004-2s.toml")).expect("parses")
}

#[test]
fn the_shipped_file_is_valid() {
    genoa().validate().expect("valid");
}

#[test]
fn a_bad_platform_says_what_is_wrong() {
    let mut p = genoa();
    p.memory.groups = 5;
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("groups = 5 does not divide"));
    let mut p = genoa();
    p.links = None;
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("2 sockets need a [links] table"));
    let mut p = genoa();
    p.memory.rule = Rule::Soldered;
    assert!(p.validate().unwrap_err().to_string().contains("soldered"));
    let mut p = genoa();
    p.sources = vec![" ".into()];
    assert!(p.validate().unwrap_err().to_string().contains("cite"));
    let mut p = genoa();
    p.efficiency.link = 1.5;
    assert!(p.validate().is_err());
    let mut p = genoa();
    p.ras.insert(
        "chipkill".into(),
        RasSpec {
            source: "x".into(),
            write_copies: None,
            spare_ranks_per_channel: None,
            channel_pairs: false,
            triad_factor: None,
        },
    );
    assert!(p.validate().unwrap_err().to_string().contains("ras.chipkill"));
}

#[test]
fn mode_names() {
    let p = genoa();
    assert_eq!(p.numa.mode_name(0), "NPS0");
    let mut n = p.numa.clone();
    n.interleaved_name = Some("node interleaving".into());
    assert_eq!(n.mode_name(0), "node interleaving");
    assert_eq!(n.mode_name(2), "NPS2");
}

#[test]
fn numbered_channels_keep_their_numeric_order() {
    use super::check::{check, CheckInput};
    let p = genoa();
    // Channels named 0..11, as some boards' locators number them; one DIMM in
    // the first channel of each quadrant (0, 3, 6, 9): near-balanced.
    let dimm = |socket: u32, channel: u32| -> memfabric_topo::Dimm {
        let installed = channel.is_multiple_of(3);
        let size = if installed { 64u64 << 30 } else { 0 };
        toml::from_str(&format!(
            "entry = \"17-{socket}-{channel}\"\nhandle = 0\ninstalled = {installed}\nsize_bytes = {size}\ntype_detail = []\nspeed_mt_s = 4800\nconfigured_speed_mt_s = 4800\nsocket = {socket}\nchannel = \"{channel}\"\n"
        ))
        .expect("a DIMM")
    };
    let devices = memfabric_topo::MemoryDevices {
        source: Some("smbios".into()),
        dimms: (0..2)
            .flat_map(|s| (0..12).map(move |c| (s, c)))
            .map(|(s, c)| dimm(s, c))
            .collect(),
        ..memfabric_topo::MemoryDevices::default()
    };
    let topo = memfabric_topo::Topology::read(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/snc-2s/sys"
    )))
    .expect("fixture");
    let m = CheckInput::of(&topo, &devices);
    assert_eq!(m.unreadable, None);
    let r = check(&p, &m);
    assert_eq!(r.sockets[0].per_channel, vec![1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0]);
    assert_eq!(r.sockets[0].class, super::Class::NearBalanced);
    assert!(
        r.deviations
            .iter()
            .any(|d| d.fix.contains("add 8 DIMM(s) of 64 GiB for 12 per socket")),
        "{:?}",
        r.deviations
    );
}

#[test]
fn the_link_model_refuses_what_it_cannot_mean() {
    let mut p = genoa();
    p.efficiency.link_mixed = Some(0.9);
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("commands only add bytes"));
    let mut p = genoa();
    p.calibration.insert("efficiency.tirad".into(), "x".into());
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("efficiency.tirad is not a model key"));
    let mut p = genoa();
    p.latency = None;
    assert!(p
        .validate()
        .unwrap_err()
        .to_string()
        .contains("needs a [latency] table"));
}

#[test]
fn a_command_defaults_to_a_header() {
    let e = Efficiencies::default();
    assert!((e.header_bytes() - 16.0).abs() < 1e-9);
    assert!((e.command_bytes() - 16.0).abs() < 1e-9);
    let g = genoa().efficiency;
    assert!((g.header_bytes() - 19.44).abs() < 0.01, "{}", g.header_bytes());
    assert!((g.command_bytes() - 12.37).abs() < 0.01, "{}", g.command_bytes());
}

proptest::proptest! {
    /// Bending never gives more than either limit, and a calibration's unbend
    /// undoes it where it is well conditioned.
    #[test]
    fn bend_is_below_both_limits_and_unbend_undoes_it(a in 1.0f64..1000.0, b in 1.0f64..1000.0) {
        let r = numa::bend(a, Some(b));
        proptest::prop_assert!(r <= a.min(b) + 1e-9);
        proptest::prop_assert!(r >= a.min(b) / 2f64.powf(1.0 / numa::BEND) - 1e-9);
        // Undoing the bend is well conditioned only where `a` is not far
        // above `b` (a calibration's link term never is: it is refused where
        // the rate reaches the requests' limit).
        if a < 5.0 * b {
            let back = numa::unbend(r, Some(b)).unwrap();
            proptest::prop_assert!((back / a - 1.0).abs() < 1e-6, "{} {}", back, a);
        }
    }
}
