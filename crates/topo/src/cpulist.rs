//! The Linux list syntax used for CPU and node sets: `0-3,8,10-11`.
//!
//! The kernel writes these lists in sysfs (`cpulist`, `online`,
//! `shared_cpu_list`, ...) and users type them on the command line, so the
//! parser accepts what the kernel writes plus the whitespace people add.

use std::num::IntErrorKind;

use crate::error::ListError;

/// Upper bound on the number of ids one list may expand to. Linux caps
/// NR_CPUS at 8192, so a million leaves ample room while keeping a range
/// like `0-4000000000` from allocating gigabytes.
pub const MAX_LIST_IDS: usize = 1 << 20;

/// Parses a list such as `"0-3,8,10-11\n"` into sorted, deduplicated ids.
///
/// Whitespace around the list and around each entry is ignored; an empty or
/// all-whitespace string is the empty set (the kernel writes `"\n"` for a
/// node without CPUs).
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, ListError> {
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::new();
    for (position, entry) in trimmed.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(ListError::EmptyEntry {
                list: trimmed.to_string(),
                position,
            });
        }
        let (first, last) = parse_entry(entry)?;
        let count = (last - first) as usize + 1;
        if ids.len() + count > MAX_LIST_IDS {
            return Err(ListError::TooManyIds {
                token: entry.to_string(),
                max: MAX_LIST_IDS,
            });
        }
        ids.extend(first..=last);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// Parses one entry, `7` or `3-5`, into an inclusive range.
fn parse_entry(entry: &str) -> Result<(u32, u32), ListError> {
    let Some((start, end)) = entry.split_once('-') else {
        let id = parse_id(entry, entry)?;
        return Ok((id, id));
    };
    let (start, end) = (start.trim(), end.trim());
    if start.is_empty() || end.is_empty() {
        return Err(ListError::MissingBound {
            token: entry.to_string(),
        });
    }
    let first = parse_id(start, entry)?;
    let last = parse_id(end, entry)?;
    if last < first {
        return Err(ListError::ReversedRange {
            token: entry.to_string(),
        });
    }
    Ok((first, last))
}

/// Parses one decimal id; `entry` is the whole entry, named in errors so
/// the user sees the context of a bad number inside a range.
fn parse_id(text: &str, entry: &str) -> Result<u32, ListError> {
    // `u32::from_str` accepts a leading `+`, which the kernel never writes.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ListError::NotANumber {
            token: entry.to_string(),
        });
    }
    text.parse::<u32>().map_err(|e| match e.kind() {
        IntErrorKind::PosOverflow => ListError::Overflow {
            token: entry.to_string(),
        },
        _ => ListError::NotANumber {
            token: entry.to_string(),
        },
    })
}

/// Formats ids as the kernel does: runs of two or more become `a-b`.
///
/// The input need not be sorted or unique; the output always is, so
/// `parse_cpulist(&format_cpulist(x))` is `x` sorted and deduplicated.
pub fn format_cpulist(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            end = sorted[i + 1];
            i += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_lists() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("0-7,64-71\n").unwrap().len(), 16);
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("2-2").unwrap(), vec![2]);
    }

    #[test]
    fn empty_and_whitespace_are_empty_sets() {
        assert!(parse_cpulist("").unwrap().is_empty());
        assert!(parse_cpulist("\n").unwrap().is_empty());
        assert!(parse_cpulist("  \t\n").unwrap().is_empty());
    }

    #[test]
    fn tolerates_whitespace_around_entries() {
        assert_eq!(parse_cpulist(" 0 - 2 , 8\n").unwrap(), vec![0, 1, 2, 8]);
    }

    #[test]
    fn sorts_and_dedups() {
        assert_eq!(parse_cpulist("8,0-2,1,8").unwrap(), vec![0, 1, 2, 8]);
    }

    #[test]
    fn rejects_malformed_entries() {
        let cases: [(&str, ListError); 8] = [
            ("0-", ListError::MissingBound { token: "0-".into() }),
            ("-3", ListError::MissingBound { token: "-3".into() }),
            ("3-1", ListError::ReversedRange { token: "3-1".into() }),
            ("a", ListError::NotANumber { token: "a".into() }),
            ("+1", ListError::NotANumber { token: "+1".into() }),
            (
                "1-2-3",
                ListError::NotANumber {
                    token: "1-2-3".into(),
                },
            ),
            (
                ",",
                ListError::EmptyEntry {
                    list: ",".into(),
                    position: 0,
                },
            ),
            (
                "1,,2",
                ListError::EmptyEntry {
                    list: "1,,2".into(),
                    position: 1,
                },
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_cpulist(input).unwrap_err(), expected, "input {input:?}");
        }
    }

    #[test]
    fn rejects_overflow_and_huge_ranges() {
        assert_eq!(
            parse_cpulist("4294967296").unwrap_err(),
            ListError::Overflow {
                token: "4294967296".into()
            }
        );
        assert!(matches!(
            parse_cpulist("0-4294967295").unwrap_err(),
            ListError::TooManyIds { .. }
        ));
        assert_eq!(parse_cpulist("4294967295").unwrap(), vec![u32::MAX]);
    }

    #[test]
    fn error_names_the_bad_token() {
        let message = parse_cpulist("0-3,x7").unwrap_err().to_string();
        assert!(message.contains("\"x7\""), "{message}");
    }

    #[test]
    fn formats_runs_like_the_kernel() {
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpulist(&[11, 10, 8, 8]), "8,10-11");
        assert_eq!(format_cpulist(&[]), "");
        assert_eq!(format_cpulist(&[u32::MAX - 1, u32::MAX]), "4294967294-4294967295");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ids in proptest::collection::vec(0u32..5000, 0..200)) {
            let mut expected = ids.clone();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(parse_cpulist(&format_cpulist(&ids)).unwrap(), expected);
        }

        #[test]
        fn parse_never_panics(s in "\\PC*") {
            let _ = parse_cpulist(&s);
        }

        #[test]
        fn parse_never_panics_on_list_like_input(s in "[0-9, \\-\n]{0,40}") {
            if let Ok(ids) = parse_cpulist(&s) {
                prop_assert!(ids.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
