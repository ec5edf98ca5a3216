//! Sizes as users type them: binary multiples, Linux style.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("empty size")]
    Empty,
    #[error("'{0}' is not a size: use a number with an optional K, M, G or T suffix (binary: 1K = 1024 bytes), e.g. 64K, 256M, 1G, 1GiB")]
    Malformed(String),
    #[error("size '{0}' is too large")]
    Overflow(String),
}

/// Parses `4096`, `64K`, `64k`, `256M`, `1G`, `1GiB`, `2MB`, `512B`.
/// Every suffix is a binary multiple (K = 1024): memory sizes are never decimal here.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::Malformed(s.to_string()));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(SizeError::Malformed(s.to_string())),
    };
    let n: u64 = digits.parse().map_err(|_| SizeError::Overflow(s.to_string()))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError::Overflow(s.to_string()))
}

/// Formats bytes in the largest binary unit they reach: exact when it divides them
/// (`64K`, `1G`, so `parse_size` reads it back), else with one decimal (`63.3G`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "T"), (30, "G"), (20, "M"), (10, "K")];
    for (shift, unit) in UNITS {
        let m = 1u64 << shift;
        if bytes >= m {
            return if bytes.is_multiple_of(m) {
                format!("{}{unit}", bytes >> shift)
            } else {
                format!("{:.1}{unit}", bytes as f64 / m as f64)
            };
        }
    }
    format!("{bytes}B")
}

/// A Unix time as "YYYY-MM-DD HH:MM UTC".
pub fn utc(unix_s: u64) -> String {
    // Days since 1970 to a civil date (Howard Hinnant's algorithm), UTC.
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// A Unix time's day, "YYYY-MM-DD" (UTC).
pub fn utc_date(unix_s: u64) -> String {
    utc(unix_s)[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn suffixes_are_binary() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size(" 2MB "), Ok(2 << 20));
        assert_eq!(parse_size("512B"), Ok(512));
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        for bad in ["K", "1X", "1.5G", "-1", "1 G", "G1", "0x10"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(matches!(parse_size("99999999999T"), Err(SizeError::Overflow(_))));
        assert!(matches!(
            parse_size("99999999999999999999999"),
            Err(SizeError::Overflow(_))
        ));
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(1 << 30), "1G");
        assert_eq!(format_size(48 << 10), "48K");
        assert_eq!(format_size(1536 << 10), "1.5M");
        assert_eq!(format_size(1000), "1000B");
        assert_eq!(format_size(1500), "1.5K");
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,24}") {
            let _ = parse_size(&s);
        }

        #[test]
        fn round_trips(n in 0u64..(1 << 20), shift in prop::sample::select(vec![0u32, 10, 20, 30])) {
            let bytes = n << shift;
            let text = format_size(bytes);
            if !text.contains('.') {
                prop_assert_eq!(parse_size(&text), Ok(bytes));
            }
        }

        #[test]
        fn suffix_matches_multiplier(n in 0u64..1_000_000, unit in prop::sample::select(vec![("K", 10u32), ("M", 20), ("G", 30)])) {
            prop_assert_eq!(parse_size(&format!("{n}{}", unit.0)), Ok(n << unit.1));
        }
    }

    /// Cases for the fuzz target: `MEMFABRIC_FUZZ_CASES` for long runs
    /// (docs/RELIABILITY.md), 512 so that a plain `cargo test` stays fast.
    /// A malformed value stops the run rather than pass off a short run as
    /// a long one.
    fn fuzz_config() -> ProptestConfig {
        let cases = match std::env::var("MEMFABRIC_FUZZ_CASES") {
            Ok(v) => v
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("MEMFABRIC_FUZZ_CASES must be a whole number, found {v:?}")),
            Err(_) => 512,
        };
        // A finding becomes a named test above; a regressions file in the
        // source tree would only duplicate it.
        ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// `64K`, ` 1 GiB`, `99999999999T`, `1.5G`, `٣K`: sizes and near misses,
    /// around the edges of the digit/suffix split and of 64-bit overflow.
    fn size_text() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            4 => (0u64..5000).prop_map(|n| n.to_string()),
            1 => any::<u64>().prop_map(|n| n.to_string()),
            1 => (0u64..(1 << 24)).prop_map(|n| n.to_string()),
            1 => "[0-9]{18,30}",
            1 => "[+-]?[0-9]{0,4}[.,_x ٣０-９e][0-9]{0,3}",
            1 => Just(String::new()),
        ];
        let suffix = prop::sample::select(
            "|b|B|k|K|kb|KB|KiB|kib|KIB|m|M|MB|MiB|g|G|GB|GiB|t|T|TB|TiB|P|PiB|i|iB|K\u{301}|\u{1e31}| K|KK|K\0"
                .split('|')
                .collect::<Vec<_>>(),
        );
        let space = prop::sample::select(vec!["", "", " ", "\t", "\n", "\u{a0}", "\u{3000}"]);
        (space.clone(), number, suffix, space).prop_map(|(a, n, unit, b)| format!("{a}{n}{unit}{b}"))
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn fuzz_parse_size(text in prop_oneof![
            "(?s:.){0,32}",
            size_text(),
            prop::collection::vec(any::<u8>(), 0..32).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ]) {
            match parse_size(&text) {
                Ok(bytes) => {
                    prop_assert_eq!(parse_size(&bytes.to_string()), Ok(bytes));
                    let short = format_size(bytes);
                    if !short.contains('.') {
                        prop_assert_eq!(parse_size(&short), Ok(bytes));
                    }
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
