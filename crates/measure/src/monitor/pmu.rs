//! A PMU as the kernel describes it under /sys/bus/event_source/devices/NAME:
//! `type`, `cpumask`, `format/*` and `events/*`, turned into perf_event_attr config
//! values the way perf does it.

use std::collections::BTreeMap;
use std::path::Path;

use super::MonitorError;

/// Where a format field's bits go: `config:0-7,32-35` is config 0, two ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    /// 0 for config, 1 for config1, 2 for config2.
    pub word: usize,
    /// Inclusive bit ranges, lowest value bits first.
    pub ranges: Vec<(u32, u32)>,
}

/// One named event: its terms and, where the kernel gives them, scale and unit.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDesc {
    pub terms: String,
    pub scale: Option<f64>,
    pub unit: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pmu {
    pub name: String,
    pub type_id: u32,
    /// The CPUs to open the PMU's events on (one per socket or die).
    pub cpus: Vec<u32>,
    pub formats: BTreeMap<String, FormatField>,
    pub events: BTreeMap<String, EventDesc>,
}

/// Parses a format file: `config:0-7`, `config1:0-9`, `config:0-7,32-35`, `config:8`.
pub fn parse_format(s: &str) -> Result<FormatField, MonitorError> {
    let bad = || MonitorError::Format(s.trim().to_string());
    let (word, bits) = s.trim().split_once(':').ok_or_else(bad)?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return Err(bad()),
    };
    let mut ranges = Vec::new();
    for part in bits.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let b: u32 = part.parse().map_err(|_| bad())?;
                (b, b)
            }
        };
        if lo > hi || hi > 63 {
            return Err(bad());
        }
        ranges.push((lo, hi));
    }
    Ok(FormatField { word, ranges })
}

fn parse_value(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Encodes terms such as `event=0x05,umask=0xcf` into config, config1, config2:
/// each value's bits go, lowest first, into its field's ranges. A term without a
/// value is 1, as in perf.
pub fn encode(formats: &BTreeMap<String, FormatField>, terms: &str) -> Result<[u64; 3], MonitorError> {
    let mut config = [0u64; 3];
    for term in terms.trim().split(',').filter(|t| !t.is_empty()) {
        let (name, value) = match term.split_once('=') {
            Some((n, v)) => (
                n.trim(),
                parse_value(v.trim()).ok_or_else(|| MonitorError::Term(term.into()))?,
            ),
            None => (term.trim(), 1),
        };
        let field = formats
            .get(name)
            .ok_or_else(|| MonitorError::Term(format!("{term} (no format/{name})")))?;
        let mut v = value;
        for &(lo, hi) in &field.ranges {
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            config[field.word] |= (v & mask) << lo;
            v = if width == 64 { 0 } else { v >> width };
        }
        if v != 0 {
            return Err(MonitorError::Term(format!(
                "{term} (value wider than format/{name})"
            )));
        }
    }
    Ok(config)
}

/// Bytes per count from an event's `.scale` and `.unit` (`6.103515625e-5` `MiB`: 64).
pub fn bytes_per_count(e: &EventDesc) -> Option<f64> {
    let scale = e.scale?;
    let unit = match e.unit.as_deref().map(str::trim) {
        Some("MiB") => 1024.0 * 1024.0,
        Some("KiB") => 1024.0,
        Some("GiB") => 1024.0 * 1024.0 * 1024.0,
        Some("MB") => 1e6,
        Some("Bytes") | Some("bytes") | Some("B") | None => 1.0,
        Some(_) => return None,
    };
    Some(scale * unit)
}

/// A PMU as memfabric-topo read it, its format fields and events parsed; a format
/// file that does not parse is left out.
pub fn from_files(f: memfabric_topo::PmuFiles) -> Pmu {
    let formats = f
        .formats
        .iter()
        .filter_map(|(n, text)| Some((n.clone(), parse_format(text).ok()?)))
        .collect();
    let mut events = BTreeMap::new();
    for (n, text) in &f.events {
        if n.contains('.') {
            continue;
        }
        let extra = |suffix: &str| {
            f.events
                .get(&format!("{n}.{suffix}"))
                .map(|s| s.trim().to_string())
        };
        events.insert(
            n.clone(),
            EventDesc {
                terms: text.trim().to_string(),
                scale: extra("scale").and_then(|s| s.parse().ok()),
                unit: extra("unit"),
            },
        );
    }
    Pmu {
        name: f.name,
        type_id: f.type_id,
        cpus: f.cpus,
        formats,
        events,
    }
}

/// Every PMU under `<sysfs>/bus/event_source/devices`, sorted by name.
pub fn read_pmus(sysfs: &Path) -> Vec<Pmu> {
    let mut out: Vec<Pmu> = memfabric_topo::read_pmus(sysfs)
        .into_iter()
        .map(from_files)
        .collect();
    out.sort_by_key(|a| natural(&a.name));
    out
}

fn natural(name: &str) -> (String, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = name.split_at(name.len() - digits);
    (stem.to_string(), num.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formats(list: &[(&str, &str)]) -> BTreeMap<String, FormatField> {
        list.iter()
            .map(|(n, f)| (n.to_string(), parse_format(f).unwrap()))
            .collect()
    }

    #[test]
    fn intel_terms_encode_as_perf_does() {
        let f = formats(&[("event", "config:0-7"), ("umask", "config:8-15")]);
        assert_eq!(encode(&f, "event=0x05,umask=0xcf").unwrap(), [0xcf05, 0, 0]);
        assert_eq!(encode(&f, "event=0xff,umask=0x20").unwrap(), [0x20ff, 0, 0]);
    }

    #[test]
    fn split_fields_scatter_high_bits() {
        let f = formats(&[
            ("event", "config:0-7,32-35"),
            ("umask", "config:8-15"),
            ("port", "config1:0-1"),
        ]);
        assert_eq!(
            encode(&f, "event=0x107,umask=0x38").unwrap(),
            [0x1_0000_3807, 0, 0]
        );
        assert_eq!(encode(&f, "port=2").unwrap(), [0, 2, 0]);
        assert!(
            encode(&f, "event=0x1007").is_err(),
            "12 bits into 12 bits is fine, 13 is not"
        );
        assert!(encode(&f, "nosuch=1").is_err());
    }

    #[test]
    fn scale_and_unit_give_bytes() {
        let e = |s: Option<f64>, u: Option<&str>| EventDesc {
            terms: String::new(),
            scale: s,
            unit: u.map(String::from),
        };
        assert_eq!(bytes_per_count(&e(Some(6.103515625e-5), Some("MiB"))), Some(64.0));
        assert_eq!(bytes_per_count(&e(None, Some("MiB"))), None);
        assert!(parse_format("config:9-3").is_err() && parse_format("cfg:0-7").is_err());
    }
}
