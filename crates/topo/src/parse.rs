//! Pure parsers for the formats of individual sysfs files.
//!
//! Each takes the file's text as the kernel writes it (usually with a
//! trailing newline) and never panics; the caller attaches the file path to
//! any error.

/// Parses a decimal integer file such as `nr_hugepages` (`"512\n"`).
pub fn parse_u64(text: &str) -> Result<u64, String> {
    let t = text.trim();
    t.parse::<u64>()
        .map_err(|e| format!("expected a non-negative integer, found {t:?} ({e})"))
}

/// Parses a topology id such as `physical_package_id` or `core_id`.
///
/// The kernel prints these with `%d`, and some arm64 kernels write `-1`
/// when firmware gives no package information; such a CPU is put in
/// package (or die) 0, which is what tools like lscpu show for it.
pub fn parse_topology_id(text: &str) -> Result<u32, String> {
    let t = text.trim();
    match t.parse::<i64>() {
        Ok(v) if v < 0 => Ok(0),
        Ok(v) => u32::try_from(v).map_err(|_| format!("id {t:?} does not fit in 32 bits")),
        Err(e) => Err(format!("expected an integer id, found {t:?} ({e})")),
    }
}

/// Parses a cache `size` file, which the kernel writes as KiB with a `K`
/// suffix (`"48K\n"`, `"491520K\n"`). `M` and `G` (binary) and a bare byte
/// count are accepted too, for trees written by other tools.
pub fn parse_cache_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, multiplier) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1u64 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1u64 << 30),
        _ => (t, 1),
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("expected a size like \"48K\", found {t:?}"))?;
    value
        .checked_mul(multiplier)
        .ok_or_else(|| format!("size {t:?} overflows 64 bits"))
}

/// Finds `key` in a meminfo text and returns its value, converted to bytes
/// when the line ends in `kB` (which the kernel means as KiB).
///
/// Accepts both the node layout (`Node 0 MemTotal:       24598016 kB`) and
/// the `/proc/meminfo` layout (`MemTotal:       24598016 kB`). Lines without
/// a unit (`HugePages_Total:     0`) are returned as plain counts.
pub fn meminfo_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let line = strip_node_prefix(line);
        let (name, rest) = line.split_once(':')?;
        if name.trim() != key {
            return None;
        }
        let mut words = rest.split_whitespace();
        let value: u64 = words.next()?.parse().ok()?;
        match words.next() {
            None => Some(value),
            Some("kB") => value.checked_mul(1024),
            Some(_) => None,
        }
    })
}

/// Drops the `Node N ` prefix of per-node meminfo lines.
fn strip_node_prefix(line: &str) -> &str {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed.strip_prefix("Node ") else {
        return trimmed;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.trim_start()
}

/// Parses a node `distance` file: one SLIT row, `"10 16 16 32\n"`.
pub fn parse_distances(text: &str) -> Result<Vec<u32>, String> {
    text.split_whitespace()
        .map(|w| {
            w.parse::<u32>()
                .map_err(|_| format!("expected distances like \"10 21\", found {w:?}"))
        })
        .collect()
}

/// Returns the selected word of a sysfs choice file, the one in brackets:
/// `"always [madvise] never\n"` gives `madvise`.
pub fn parse_bracketed(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let len = text[start + 1..].find(']')?;
    let word = text[start + 1..start + 1 + len].trim();
    (!word.is_empty()).then(|| word.to_string())
}

/// Parses a `0`/`1` flag file such as `smt/active`.
pub fn parse_flag(text: &str) -> Option<bool> {
    match text.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Page size in bytes of a hugepage pool directory named like
/// `hugepages-2048kB` (the kernel names them in KiB).
pub fn hugepage_dir_size_bytes(name: &str) -> Option<u64> {
    let kib: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The number in a sysfs entry name such as `node3`, `cpu12`, `index0` or
/// `access1`; `None` for other names with the same prefix (`cpufreq`).
pub fn numbered_name(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NODE_MEMINFO: &str = "Node 0 MemTotal:       24598016 kB\n\
        Node 0 MemFree:         3893280 kB\n\
        Node 0 MemUsed:        20704736 kB\n\
        Node 0 HugePages_Total:     4\n";

    #[test]
    fn integers() {
        assert_eq!(parse_u64("512\n"), Ok(512));
        assert!(parse_u64("-1\n").is_err());
        assert!(parse_u64("").is_err());
        assert_eq!(parse_topology_id("3\n"), Ok(3));
        assert_eq!(parse_topology_id("-1\n"), Ok(0));
        assert!(parse_topology_id("x").is_err());
        assert!(parse_topology_id("99999999999").is_err());
    }

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_cache_size("48K\n"), Ok(48 * 1024));
        assert_eq!(parse_cache_size("2048K\n"), Ok(2 << 20));
        assert_eq!(parse_cache_size("491520K\n"), Ok(480 << 20));
        assert_eq!(parse_cache_size("8M"), Ok(8 << 20));
        assert_eq!(parse_cache_size("1024"), Ok(1024));
        assert!(parse_cache_size("K").is_err());
        assert!(parse_cache_size("").is_err());
        assert!(parse_cache_size("99999999999999999999K").is_err());
        assert!(parse_cache_size("18014398509481984K").is_err());
    }

    #[test]
    fn meminfo_values() {
        assert_eq!(meminfo_value(NODE_MEMINFO, "MemTotal"), Some(24598016 * 1024));
        assert_eq!(meminfo_value(NODE_MEMINFO, "MemFree"), Some(3893280 * 1024));
        assert_eq!(meminfo_value(NODE_MEMINFO, "HugePages_Total"), Some(4));
        assert_eq!(meminfo_value(NODE_MEMINFO, "Mem"), None);
        let proc = "MemTotal:        4417740 kB\nMemFree:  1 kB\n";
        assert_eq!(meminfo_value(proc, "MemFree"), Some(1024));
        assert_eq!(meminfo_value("Node 12 MemTotal: 2 kB", "MemTotal"), Some(2048));
        assert_eq!(meminfo_value("MemTotal: 2 MB", "MemTotal"), None);
    }

    #[test]
    fn distances() {
        assert_eq!(parse_distances("10 16 16 32\n"), Ok(vec![10, 16, 16, 32]));
        assert_eq!(parse_distances("\n"), Ok(vec![]));
        assert!(parse_distances("10 x").is_err());
    }

    #[test]
    fn bracketed_choices() {
        assert_eq!(
            parse_bracketed("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        let defrag = "always defer defer+madvise [madvise] never\n";
        assert_eq!(parse_bracketed(defrag).as_deref(), Some("madvise"));
        assert_eq!(
            parse_bracketed("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(parse_bracketed("always madvise never"), None);
        assert_eq!(parse_bracketed("[] x"), None);
        assert_eq!(parse_bracketed("[unterminated"), None);
    }

    #[test]
    fn flags_and_names() {
        assert_eq!(parse_flag("1\n"), Some(true));
        assert_eq!(parse_flag("0\n"), Some(false));
        assert_eq!(parse_flag("notsupported\n"), None);
        assert_eq!(hugepage_dir_size_bytes("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(hugepage_dir_size_bytes("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(hugepage_dir_size_bytes("hugepages-2048"), None);
        assert_eq!(numbered_name("node3", "node"), Some(3));
        assert_eq!(numbered_name("cpu127", "cpu"), Some(127));
        assert_eq!(numbered_name("cpufreq", "cpu"), None);
        assert_eq!(numbered_name("node", "node"), None);
        assert_eq!(numbered_name("node+1", "node"), None);
    }

    proptest! {
        #[test]
        fn meminfo_never_panics(text in "\\PC*", key in "[A-Za-z_]{0,12}") {
            let _ = meminfo_value(&text, &key);
        }

        #[test]
        fn meminfo_finds_what_was_written(n in 0u32..4096, kib in 0u64..(1 << 40)) {
            let text = format!("Node {n} MemTotal:       {kib:>8} kB\nNode {n} MemFree: 0 kB\n");
            prop_assert_eq!(meminfo_value(&text, "MemTotal"), Some(kib * 1024));
        }

        #[test]
        fn small_parsers_never_panic(text in "\\PC*") {
            let _ = parse_u64(&text);
            let _ = parse_topology_id(&text);
            let _ = parse_cache_size(&text);
            let _ = parse_distances(&text);
            let _ = parse_bracketed(&text);
            let _ = parse_flag(&text);
            let _ = hugepage_dir_size_bytes(&text);
            let _ = numbered_name(&text, "node");
        }

        #[test]
        fn cache_size_round_trips(kib in 0u64..(1 << 40)) {
            prop_assert_eq!(parse_cache_size(&format!("{kib}K\n")), Ok(kib * 1024));
        }
    }
}
