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
