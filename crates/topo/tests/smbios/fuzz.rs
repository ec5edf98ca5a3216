//! Fuzz targets for the SMBIOS decoders: random and mutated type 17 bytes,
//! dmidecode text and locator strings must give `Ok`/`Err` (or a result with
//! problems listed), never a panic. Case count as in `fixtures/fuzz.rs`:
//! `MEMFABRIC_FUZZ_CASES`, 512 by default.

use std::path::PathBuf;

use memfabric_topo::{decode_type17, group_dimms, parse_dmidecode, parse_place};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestRunner;

fn config() -> ProptestConfig {
    let cases = match std::env::var("MEMFABRIC_FUZZ_CASES") {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("MEMFABRIC_FUZZ_CASES must be a whole number, found {v:?}")),
        Err(_) => 512,
    };
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every raw entry of every fixture: the seeds mutations start from.
fn seeds() -> Vec<Vec<u8>> {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/smbios"
    ));
    let mut out = Vec::new();
    for fixture in ["ddr5-2s-16dimm", "ddr4-2s-mixed", "versions", "qemu-default"] {
        for entry in std::fs::read_dir(root.join(fixture)).unwrap() {
            out.push(std::fs::read(entry.unwrap().path().join("raw")).unwrap());
        }
    }
    out.sort();
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Overwrite one byte: a length, a string index, a size or speed byte...
    Set(Index, u8),
    Truncate(Index),
    /// Set the length byte, the one that decides which fields exist.
    Length(u8),
    Insert(Index, Vec<u8>),
    /// Remove every NUL of the string table, or add a few.
    StripNuls,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        2 => prop_oneof![Just(0x15u8), Just(0x1B), Just(0x1C), Just(0x22), Just(0x28), Just(0x5C), any::<u8>()]
            .prop_map(Mutation::Length),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 0..8)).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => Just(Mutation::StripNuls),
    ]
}

fn apply(raw: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Set(i, b) if !raw.is_empty() => {
            let at = i.index(raw.len());
            raw[at] = *b;
        }
        Mutation::Set(..) => {}
        Mutation::Truncate(i) => raw.truncate(i.index(raw.len() + 1)),
        Mutation::Length(n) if raw.len() > 1 => raw[1] = *n,
        Mutation::Length(_) => {}
        Mutation::Insert(i, bytes) => {
            let at = i.index(raw.len() + 1);
            raw.splice(at..at, bytes.iter().copied());
        }
        Mutation::StripNuls => {
            let keep = usize::from(raw.get(1).copied().unwrap_or(0)).min(raw.len());
            let tail: Vec<u8> = raw[keep..].iter().copied().filter(|&b| b != 0).collect();
            raw.truncate(keep);
            raw.extend(tail);
        }
    }
}

/// What every decoded device must satisfy.
fn check(raw: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(d) = decode_type17("fuzz", raw) {
        prop_assert!(d.ranks.is_none_or(|r| (1..=15).contains(&r)));
        prop_assert!(d.installed || d.size_bytes.is_none(), "an empty slot has no size");
        prop_assert!(d.speed_mt_s != Some(0) && d.configured_speed_mt_s != Some(0));
        prop_assert!(d.data_width_bits != Some(0xFFFF));
        for s in [&d.locator, &d.bank_locator, &d.manufacturer, &d.part_number]
            .into_iter()
            .flatten()
        {
            prop_assert!(!s.is_empty() && s.trim() == s);
        }
    }
    Ok(())
}

#[test]
fn fuzz_type17_random_bytes() {
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        // A plausible header, then anything.
        (prop::collection::vec(any::<u8>(), 0..120), any::<u8>()).prop_map(|(rest, len)| [
            vec![17u8, len],
            rest
        ]
        .concat()),
    ];
    let mut runner = TestRunner::new(config());
    runner.run(&bytes, |raw| check(&raw)).unwrap();
}

#[test]
fn fuzz_type17_mutated_fixtures() {
    let seeds = seeds();
    let cases = (any::<Index>(), prop::collection::vec(mutation(), 1..=4));
    let mut runner = TestRunner::new(config());
    runner
        .run(&cases, |(seed, mutations)| {
            let mut raw = seeds[seed.index(seeds.len())].clone();
            for m in &mutations {
                apply(&mut raw, m);
            }
            check(&raw)
        })
        .unwrap();
}

#[test]
fn fuzz_dmidecode_text() {
    let fixture = include_str!("../../../../tests/fixtures/smbios/dmidecode-1s.txt");
    let lines: Vec<&str> = fixture.lines().collect();
    let value = prop_oneof![
        Just(String::new()),
        "[0-9]{0,25}( (MT/s|MHz|GB|MB|kB|TB|PB|bits|bytes))?",
        "(?s:.){0,24}",
    ];
    let edited = prop::collection::vec((any::<Index>(), value), 0..6).prop_map(move |edits| {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for (at, v) in edits {
            let i = at.index(out.len());
            let key = out[i].split(':').next().unwrap_or("").to_string();
            out[i] = format!("{key}: {v}");
        }
        out.join("\n")
    });
    let text = prop_oneof![edited, "(?s:.){0,300}"];
    let mut runner = TestRunner::new(config());
    runner
        .run(&text, |t| {
            let m = parse_dmidecode(&t);
            prop_assert!(m.dimms.is_empty() == m.source.is_none());
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_locators() {
    let word = prop_oneof![
        "(CPU|PROC|P|SOCKET|NODE|CHANNEL|DIMM|Channel|Dimm|BANK)?[A-Z]?[0-9]{0,12}",
        "(?s:.){0,12}",
    ];
    let text = prop::collection::vec((word, "[ _./-]{0,2}"), 0..6)
        .prop_map(|parts| parts.into_iter().map(|(w, s)| w + &s).collect::<String>());
    let cases = prop::collection::vec((text.clone(), text), 0..8);
    let mut runner = TestRunner::new(config());
    runner
        .run(&cases, |pairs| {
            let mut dimms = Vec::new();
            for (loc, bank) in &pairs {
                let place = parse_place(Some(loc), Some(bank));
                prop_assert!(place.channel.as_ref().is_none_or(|c| !c.is_empty()));
                let mut raw = vec![0u8; 0x15];
                raw[0] = 17;
                raw[1] = 0x15;
                raw[0x10] = 1;
                raw[0x11] = 2;
                raw.extend(loc.replace('\0', "").bytes().chain([0]));
                raw.extend(bank.replace('\0', "").bytes().chain([0, 0]));
                dimms.push(decode_type17("fuzz", &raw).unwrap());
            }
            group_dimms(&mut dimms, pairs.len() % 3);
            for d in &dimms {
                prop_assert!(d.channel.is_none() || d.socket.is_some());
            }
            Ok(())
        })
        .unwrap();
}
