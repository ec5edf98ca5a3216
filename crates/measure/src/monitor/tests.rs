//! Discovery against fixture event_source trees, and the arithmetic on recorded counts.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/event_source")
        .join(name)
}

fn found(name: &str) -> Vec<Candidate> {
    discover(&fixture(name).join("sys"), &fixture(name).join("resctrl"))
}

fn best(c: &[Candidate]) -> &Candidate {
    c.iter().find(|c| !c.specs.is_empty()).expect("a source")
}

fn config(s: &CounterSpec) -> (u32, [u64; 3], u32) {
    match &s.origin {
        Origin::Perf {
            pmu_type,
            config,
            cpu,
            ..
        } => (*pmu_type, *config, *cpu),
        Origin::File(p) => panic!("a file: {}", p.display()),
    }
}

#[test]
fn intel_spr_cas_counts_per_channel_and_socket() {
    let c = found("intel-spr");
    let b = best(&c);
    assert_eq!(b.name, "intel-imc");
    // 4 IMCs x (read, write) x 2 sockets
    assert_eq!(b.specs.len(), 16);
    let s = &b.specs[0];
    assert_eq!(
        (s.channel.as_str(), s.socket, s.dir, s.bytes_per_count),
        ("uncore_imc_0", Some(0), Dir::Read, 64.0)
    );
    assert_eq!(config(s), (40, [0xcf05, 0, 0], 0));
    let w = &b.specs[3];
    assert_eq!(
        (w.dir, w.socket, config(w)),
        (Dir::Write, Some(1), (40, [0xf005, 0, 0], 56))
    );
}

#[test]
fn amd_umc_uses_perfs_encoding_without_sysfs_events() {
    let c = found("amd-genoa-umc");
    let b = best(&c);
    assert_eq!(b.name, "amd-umc");
    let cfg: Vec<_> = b
        .specs
        .iter()
        .map(|s| (s.socket, s.dir, config(s).1[0]))
        .collect();
    assert_eq!(
        cfg,
        vec![
            (Some(0), Dir::Read, 0x10a),
            (Some(0), Dir::Write, 0x20a),
            (Some(1), Dir::Read, 0x10a),
            (Some(1), Dir::Write, 0x20a)
        ]
    );
}

#[test]
fn amd_df_channels_use_the_split_event_field() {
    let c = found("amd-zen3-df");
    let b = best(&c);
    assert_eq!((b.name, b.specs.len()), ("amd-df", 16));
    let ch4 = b.specs.iter().find(|s| s.channel == "socket1-channel4").unwrap();
    // event 0x107: low 8 bits at 0-7, bit 8 at 32
    assert_eq!(
        (ch4.dir, config(ch4)),
        (Dir::Total, (11, [0x1_0000_3807, 0, 0], 64))
    );
}

#[test]
fn grace_scf_read_beats_and_write_bytes() {
    let c = found("grace-scf");
    let b = best(&c);
    assert_eq!(b.name, "nvidia-scf");
    let s: Vec<_> = b
        .specs
        .iter()
        .map(|s| (s.channel.as_str(), s.socket, s.bytes_per_count, config(s).1[0]))
        .collect();
    assert_eq!(
        s,
        vec![
            ("nvidia_scf_pmu_0", Some(0), 32.0, 0x1a5),
            ("nvidia_scf_pmu_0", Some(0), 1.0, 0x1db),
            ("nvidia_scf_pmu_1", Some(1), 32.0, 0x1a5),
            ("nvidia_scf_pmu_1", Some(1), 1.0, 0x1db)
        ]
    );
}

#[test]
fn resctrl_domains_and_unavailable() {
    let c = found("resctrl");
    let b = best(&c);
    assert_eq!((b.name, b.specs.len()), ("resctrl-mbm", 2));
    let mut live = Live::default();
    let m = Monitor::start(b.specs.clone(), &mut live).unwrap();
    assert_eq!(m.finish().total.system.total_bytes, 0);
    let mut live = Live::default();
    live.open(&b.specs).unwrap();
    assert_eq!(live.read().unwrap(), vec![Some(123456789), None]);
}

#[test]
fn none_says_what_is_missing() {
    let c = found("none");
    assert!(c.iter().all(|c| c.specs.is_empty()));
    let access = Access {
        paranoid: Some(2),
        cap_perfmon: false,
        cap_sys_admin: false,
    };
    let m = missing(
        &c,
        &access,
        Path::new("/sys/fs/resctrl"),
        &["msr".into(), "software".into()],
    );
    assert_eq!(m.len(), 4, "{m:#?}");
    assert!(m[0].contains("found: msr, software"));
    assert!(m[1].contains("perf_event_paranoid is 2"));
    assert!(m[2].contains("CAP_PERFMON"));
    assert!(m[3].contains("is not mounted at /sys/fs/resctrl: mount -t resctrl resctrl /sys/fs/resctrl"));
    let root = Access {
        paranoid: Some(2),
        cap_perfmon: false,
        cap_sys_admin: true,
    };
    let m = missing(&c, &root, Path::new("/x"), &[]);
    assert_eq!(m.len(), 3, "{m:#?}");
    assert!(m[1].contains("perf_event_paranoid is 2: no obstacle"));
}

#[test]
fn cap_eff_bits() {
    let s = "Name:\tx\nCapEff:\t000001ffffffffff\n";
    assert_eq!(cap_eff(s), Some(0x1ff_ffff_ffff));
    assert_eq!(cap_eff("CapEff:\t0000000000000000"), Some(0));
}

fn spec(channel: &str, socket: Option<u32>, dir: Dir, bytes: f64, width: u32) -> CounterSpec {
    CounterSpec {
        channel: channel.into(),
        socket,
        dir,
        event: "e".into(),
        bytes_per_count: bytes,
        width_bits: width,
        origin: Origin::File(PathBuf::new()),
    }
}

#[test]
fn replay_deltas_wrap_scale_and_sum() {
    let specs = vec![
        spec("a", Some(0), Dir::Read, 64.0, 48),
        spec("a", Some(0), Dir::Write, 64.0, 48),
        spec("b", Some(1), Dir::Read, 64.0, 48),
        spec("b", Some(1), Dir::Write, 64.0, 48),
    ];
    let top = (1u64 << 48) - 10;
    let mut r = Replay::new(vec![
        vec![Some(top), Some(0), Some(100), Some(5)],
        vec![Some(20), Some(1_000), Some(200), Some(5)],
        vec![Some(40), Some(2_000), None, Some(15)],
        vec![Some(60), Some(3_000), Some(400), Some(25)],
    ]);
    let mut m = Monitor::start(specs, &mut r).unwrap();
    let i = m.sample(&mut r, 0.5).unwrap().clone();
    assert_eq!(i.channels[0].read_bytes, Some(30 * 64), "wrapped at 48 bits");
    assert_eq!(i.channels[0].write_bytes, Some(1_000 * 64));
    assert_eq!(i.sockets[1].total_bytes, 100 * 64);
    assert_eq!(i.system.total_bytes, (30 + 1_000 + 100) * 64);
    assert_eq!(i.system.read_gb_s, Some((130 * 64) as f64 / 0.5 * 1e-9));
    let i = m.sample(&mut r, 1.0).unwrap().clone();
    assert_eq!(
        i.channels[1].read_bytes,
        Some(0),
        "unavailable counts nothing now"
    );
    let i = m.sample(&mut r, 1.0).unwrap().clone();
    assert_eq!(
        i.channels[1].read_bytes,
        Some(200 * 64),
        "and the next reading spans both"
    );
    assert_eq!(i.start_s, 1.5);
    let t = m.finish();
    assert_eq!(t.intervals.len(), 3);
    assert_eq!(t.total.duration_s, 2.5);
    assert_eq!(t.total.channels[1].read_bytes, Some(300 * 64));
    assert_eq!(
        t.total.system.total_bytes,
        t.intervals.iter().map(|i| i.system.total_bytes).sum::<u64>()
    );
    assert!(Monitor::start(
        vec![spec("a", None, Dir::Total, 1.0, 64)],
        &mut Replay::new(vec![])
    )
    .is_err());
}

proptest! {
    #[test]
    fn wraparound_recovers_the_increment(width in 8u32..=64, start in any::<u64>(), inc in any::<u64>()) {
        let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
        let (start, inc) = (start & mask, inc & mask);
        let now = start.wrapping_add(inc) & mask;
        prop_assert_eq!(delta(start, now, width), inc);
    }

    #[test]
    fn sums_agree_across_channel_socket_system(
        rows in prop::collection::vec(prop::collection::vec(0u64..1_000_000, 6), 2..8),
    ) {
        let specs: Vec<CounterSpec> = (0..6)
            .map(|k| spec(&format!("ch{}", k / 2), Some((k / 4) as u32), if k % 2 == 0 { Dir::Read } else { Dir::Write }, 64.0, 64))
            .collect();
        // cumulative counts, as counters give them
        let mut acc = [0u64; 6];
        let recorded: Vec<Vec<Option<u64>>> = rows.iter().map(|r| {
            for (a, d) in acc.iter_mut().zip(r) { *a += d; }
            acc.iter().map(|&v| Some(v)).collect()
        }).collect();
        let mut src = Replay::new(recorded);
        let mut m = Monitor::start(specs, &mut src).unwrap();
        for _ in 1..rows.len() { m.sample(&mut src, 1.0).unwrap(); }
        let t = m.finish();
        for i in t.intervals.iter().chain([&t.total]) {
            let ch: u64 = i.channels.iter().map(|c| c.total_bytes).sum();
            let so: u64 = i.sockets.iter().map(|c| c.total_bytes).sum();
            prop_assert_eq!(ch, i.system.total_bytes);
            prop_assert_eq!(so, i.system.total_bytes);
            let rw = i.system.read_bytes.unwrap() + i.system.write_bytes.unwrap();
            prop_assert_eq!(rw, i.system.total_bytes);
        }
        let want: u64 = rows[1..].iter().flatten().sum::<u64>() * 64;
        prop_assert_eq!(t.total.system.total_bytes, want);
    }
}

#[test]
fn one_pmu_on_two_sockets_is_two_channels() {
    let c = found("intel-spr");
    let b = best(&c);
    let i = interval(&b.specs, &vec![1; b.specs.len()], 0, 0.0, 1.0);
    assert_eq!(i.channels.len(), 8, "4 IMCs on each of 2 sockets");
    let imc0: Vec<_> = i.channels.iter().filter(|c| c.name == "uncore_imc_0").collect();
    assert_eq!(
        imc0.iter()
            .map(|c| (c.socket, c.read_bytes, c.write_bytes))
            .collect::<Vec<_>>(),
        vec![(Some(0), Some(64), Some(64)), (Some(1), Some(64), Some(64))]
    );
    assert_eq!(
        i.sockets.iter().map(|s| s.total_bytes).collect::<Vec<_>>(),
        vec![512, 512]
    );
}
