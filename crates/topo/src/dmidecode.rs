//! Memory devices from the text of `dmidecode -t 17`: the fallback where the
//! raw dmi-sysfs entries cannot be read, and a way to audit a machine from a
//! saved copy of that text.
//!
//! dmidecode prints one block per structure, `Handle 0x0040, DMI type 17, 92
//! bytes`, then tab-indented `Key: Value` lines. It writes "Not Specified"
//! for an absent string and "Unknown" for values the firmware left unknown;
//! both become `None`, as in the raw decoder. Versions before 3.0 wrote
//! speeds in "MHz" (meaning MT/s) and "Configured Clock Speed"; both
//! spellings are read.

use crate::smbios::{Dimm, MemoryDevices, TYPE_DETAIL_NAMES};
use crate::Topology;

/// Parses `dmidecode -t 17` (or full `dmidecode`) output; blocks of other
/// types are skipped. Never panics; a block that is not understood is
/// reported in `problems`.
pub fn parse_dmidecode(text: &str) -> MemoryDevices {
    let mut out = MemoryDevices::default();
    let mut block: Option<(u16, Vec<(String, String)>)> = None;
    for line in text.lines() {
        if let Some(handle) = block_header(line) {
            if let Some((h, fields)) = block.take() {
                push(&mut out, h, &fields);
            }
            block = handle.map(|h| (h, Vec::new()));
            continue;
        }
        if let Some((_, fields)) = block.as_mut() {
            // Continuation lines (two tabs) belong to list attributes this
            // parser does not read.
            if line.starts_with('\t') && !line.starts_with("\t\t") {
                if let Some((k, v)) = line.trim().split_once(':') {
                    fields.push((k.trim().to_string(), v.trim().to_string()));
                }
            }
        }
    }
    if let Some((h, fields)) = block {
        push(&mut out, h, &fields);
    }
    if out.dimms.is_empty() {
        out.unavailable = Some("dmidecode lists no memory devices (type 17)".into());
    } else {
        out.source = Some("dmidecode".into());
    }
    out
}

/// `Some(Some(handle))` for a type 17 header, `Some(None)` for the header of
/// another type, `None` for any other line.
fn block_header(line: &str) -> Option<Option<u16>> {
    let rest = line.strip_prefix("Handle ")?;
    let (handle, rest) = rest.split_once(',')?;
    let handle = u16::from_str_radix(handle.trim().trim_start_matches("0x"), 16).ok();
    let is_17 = rest.trim_start().strip_prefix("DMI type 17,").is_some();
    Some(handle.filter(|_| is_17))
}

fn push(out: &mut MemoryDevices, handle: u16, fields: &[(String, String)]) {
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let Some(size) = get("Size") else {
        out.problems
            .push(format!("dmidecode {handle:#06x}: no Size line"));
        return;
    };
    let speed = |keys: &[&str]| keys.iter().find_map(|k| get(k)).and_then(parse_speed);
    out.dimms.push(Dimm {
        entry: format!("dmidecode {handle:#06x}"),
        handle,
        locator: text_value(get("Locator")),
        bank_locator: text_value(get("Bank Locator")),
        installed: size != "No Module Installed",
        size_bytes: parse_size(size),
        form_factor: text_value(get("Form Factor")),
        memory_type: text_value(get("Type")).filter(|t| t != "Other" && !t.starts_with('<')),
        type_detail: get("Type Detail").map(type_details).unwrap_or_default(),
        speed_mt_s: speed(&["Speed"]),
        configured_speed_mt_s: speed(&["Configured Memory Speed", "Configured Clock Speed"]),
        ranks: get("Rank").and_then(|r| r.parse().ok()).filter(|&r| r != 0),
        total_width_bits: get("Total Width").and_then(parse_bits),
        data_width_bits: get("Data Width").and_then(parse_bits),
        manufacturer: text_value(get("Manufacturer")),
        part_number: text_value(get("Part Number")),
        socket: None,
        channel: None,
        slot: None,
    });
}

/// A string attribute; dmidecode's words for "nothing there" are `None`.
fn text_value(v: Option<&str>) -> Option<String> {
    let v = v?.trim();
    let nothing = v.is_empty() || matches!(v, "Not Specified" | "Unknown" | "<BAD INDEX>" | "<OUT OF SPEC>");
    (!nothing).then(|| v.to_string())
}

/// `16 GB`, `16384 MB`, `512 kB` (binary units, as dmidecode means them).
pub fn parse_size(v: &str) -> Option<u64> {
    let (n, unit) = v.split_once(' ')?;
    let n: u64 = n.parse().ok()?;
    let shift = match unit {
        "bytes" => 0,
        "kB" | "KB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        "PB" => 50,
        _ => return None,
    };
    n.checked_mul(1 << shift).filter(|&b| b > 0)
}

/// `4800 MT/s` or (before dmidecode 3.0) `2400 MHz`.
fn parse_speed(v: &str) -> Option<u32> {
    let (n, unit) = v.split_once(' ')?;
    matches!(unit, "MT/s" | "MHz").then_some(())?;
    n.parse().ok().filter(|&s| s != 0)
}

fn parse_bits(v: &str) -> Option<u16> {
    v.strip_suffix(" bits")?.parse().ok().filter(|&b| b != 0)
}

/// The Type Detail names dmidecode printed ("Other" and "Unknown" say nothing).
fn type_details(v: &str) -> Vec<String> {
    TYPE_DETAIL_NAMES
        .iter()
        .filter(|n| !matches!(**n, "Other" | "Unknown"))
        .filter(|n| v.contains(*n))
        .map(|n| n.to_string())
        .collect()
}

/// `dmidecode -t 17` as a fallback; whatever it says, the original reason
/// stays when it gives nothing.
pub fn dmidecode_fallback(raw: MemoryDevices) -> MemoryDevices {
    let out = match std::process::Command::new("dmidecode")
        .args(["-t", "17"])
        .output()
    {
        Ok(out) => out,
        Err(_) => return raw,
    };
    let parsed = parse_dmidecode(&String::from_utf8_lossy(&out.stdout));
    if out.status.success() && !parsed.dimms.is_empty() {
        return parsed;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .next()
        .unwrap_or("no memory devices")
        .trim()
        .to_string();
    MemoryDevices {
        unavailable: raw.unavailable.map(|u| format!("{u}; dmidecode -t 17: {first}")),
        ..raw
    }
}

/// This machine's memory devices: the raw SMBIOS entries the topology read (already
/// grouped into channels per socket), else `dmidecode -t 17`, grouped here.
pub fn live_memory_devices(topo: &Topology) -> MemoryDevices {
    if !topo.memory_devices.dimms.is_empty() {
        return topo.memory_devices.clone();
    }
    let mut devices = dmidecode_fallback(topo.memory_devices.clone());
    crate::group_dimms(&mut devices.dimms, topo.packages.len());
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.3.0 present.\n\n\
Handle 0x0040, DMI type 17, 92 bytes\nMemory Device\n\tArray Handle: 0x003F\n\
\tTotal Width: 72 bits\n\tData Width: 64 bits\n\tSize: 32 GB\n\tForm Factor: DIMM\n\
\tLocator: CPU0_DIMM_A1\n\tBank Locator: NODE 0\n\tType: DDR5\n\
\tType Detail: Synchronous Registered (Buffered)\n\tSpeed: 5600 MT/s\n\
\tManufacturer: Samsung\n\tPart Number: M321R4GA3PB0-CWMKH   \n\tRank: 2\n\
\tConfigured Memory Speed: 4800 MT/s\n\n\
Handle 0x0041, DMI type 17, 40 bytes\nMemory Device\n\tTotal Width: Unknown\n\
\tData Width: Unknown\n\tSize: No Module Installed\n\tLocator: CPU0_DIMM_B1\n\
\tBank Locator: Not Specified\n\tType: Unknown\n\tSpeed: Unknown\n\
\tManufacturer: Not Specified\n\tConfigured Clock Speed: Unknown\n\n\
Handle 0x0001, DMI type 16, 23 bytes\nPhysical Memory Array\n\tSize: 1 GB\n";

    #[test]
    fn reads_devices_and_skips_other_types() {
        let m = parse_dmidecode(TEXT);
        assert_eq!(m.source.as_deref(), Some("dmidecode"));
        assert_eq!(m.dimms.len(), 2, "{m:?}");
        let a = &m.dimms[0];
        assert_eq!((a.handle, a.entry.as_str()), (0x40, "dmidecode 0x0040"));
        assert_eq!(a.size_bytes, Some(32 << 30));
        assert_eq!(a.memory_type.as_deref(), Some("DDR5"));
        assert_eq!(a.type_detail, vec!["Synchronous", "Registered (Buffered)"]);
        assert_eq!((a.speed_mt_s, a.configured_speed_mt_s), (Some(5600), Some(4800)));
        assert_eq!(
            (a.total_width_bits, a.data_width_bits, a.ranks),
            (Some(72), Some(64), Some(2))
        );
        assert_eq!(a.part_number.as_deref(), Some("M321R4GA3PB0-CWMKH"));
        let b = &m.dimms[1];
        assert!(!b.installed);
        assert_eq!(
            (b.size_bytes, b.memory_type.clone(), b.speed_mt_s),
            (None, None, None)
        );
        assert_eq!((b.bank_locator.clone(), b.manufacturer.clone()), (None, None));
    }

    #[test]
    fn old_spellings_and_nothing() {
        let old = "Handle 0x0011, DMI type 17, 27 bytes\nMemory Device\n\tSize: 16384 MB\n\
                   \tSpeed: 2400 MHz\n\tConfigured Clock Speed: 2133 MHz\n";
        let m = parse_dmidecode(old);
        assert_eq!(m.dimms[0].size_bytes, Some(16 << 30));
        assert_eq!(
            (m.dimms[0].speed_mt_s, m.dimms[0].configured_speed_mt_s),
            (Some(2400), Some(2133))
        );
        let none = parse_dmidecode("# No SMBIOS nor DMI entry point found, sorry.\n");
        assert!(none.dimms.is_empty() && none.unavailable.is_some());
        let bad = parse_dmidecode("Handle 0x0011, DMI type 17, 27 bytes\nMemory Device\n");
        assert_eq!(bad.problems.len(), 1);
        assert_eq!(parse_size("512 kB"), Some(512 << 10));
        assert_eq!(parse_size("99999999999 PB"), None);
        assert_eq!(parse_size("12 parsecs"), None);
    }
}
