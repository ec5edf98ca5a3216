//! Memory devices (DIMMs) from SMBIOS type 17 structures, as the kernel's
//! dmi-sysfs shows them in `firmware/dmi/entries/17-N/raw`.
//!
//! Layout (DMTF SMBIOS 3.x, 7.18 "Memory Device"): a formatted area of
//! `length` bytes, then the string table: NUL-terminated strings numbered
//! from 1, ended by a second NUL. A field is read only when the structure's
//! length covers it, so structures written for older versions (2.1: 0x15
//! bytes, 2.3: 0x1B, 2.6: 0x1C, 2.7: 0x22, 2.8: 0x28, 3.3: 0x5C) decode to
//! what they say and `None` for what they predate. Values the specification
//! reserves for "unknown" are `None` too; nothing is filled in from elsewhere.

use std::io::ErrorKind;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::parse::numbered_name;

/// One SMBIOS memory device: an installed DIMM or an empty slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimm {
    /// Where it was read: `17-3` (a dmi-sysfs entry) or `dmidecode 0x1100`.
    pub entry: String,
    pub handle: u16,
    /// Device Locator: the slot's silkscreen name, e.g. `CPU0_DIMM_A1`.
    pub locator: Option<String>,
    /// Bank Locator, e.g. `P0 CHANNEL A` or `NODE 0`.
    pub bank_locator: Option<String>,
    /// False for "No Module Installed" (size 0).
    pub installed: bool,
    /// `None` when the firmware says "unknown" (and for empty slots).
    pub size_bytes: Option<u64>,
    pub form_factor: Option<String>,
    /// `DDR5`, `DDR4`, `LPDDR5`, `HBM3`, ... as SMBIOS names it.
    pub memory_type: Option<String>,
    /// Type Detail flags, e.g. `Synchronous`, `Registered (Buffered)`.
    pub type_detail: Vec<String>,
    /// Maximum speed the module is rated for, in MT/s (SMBIOS "Speed").
    pub speed_mt_s: Option<u32>,
    /// Speed the memory controller runs it at, in MT/s.
    pub configured_speed_mt_s: Option<u32>,
    pub ranks: Option<u8>,
    /// Bits including ECC.
    pub total_width_bits: Option<u16>,
    /// Bits of data: 64 for a DDR4 or DDR5 DIMM (a DDR5 DIMM's two 32-bit
    /// subchannels together), 72/80 total with ECC.
    pub data_width_bits: Option<u16>,
    pub manufacturer: Option<String>,
    pub part_number: Option<String>,
    /// Socket as the locators number it, renumbered so the lowest is 0;
    /// `None` when the locator does not say (see [`crate::group_dimms`]).
    pub socket: Option<u32>,
    /// Memory channel within the socket, e.g. `A` or `3`; `None` when the
    /// locator does not say.
    pub channel: Option<String>,
    /// Slot within the channel (DIMMs per channel), when the locator says.
    pub slot: Option<u32>,
}

/// Every memory device the firmware lists, or why there are none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDevices {
    /// `smbios` (raw dmi-sysfs entries) or `dmidecode` (its text); `None`
    /// when nothing was read.
    pub source: Option<String>,
    /// Why the list is empty, in plain words; `None` when it is not.
    pub unavailable: Option<String>,
    /// The raw entries could not be read for lack of permission (they are
    /// root-only): a caller may try `dmidecode` instead.
    pub permission_denied: bool,
    /// Entries that were present but could not be decoded, with the reason.
    pub problems: Vec<String>,
    /// In entry order (`17-0`, `17-1`, ...).
    pub dimms: Vec<Dimm>,
}

/// Formatted-area offsets of the Memory Device fields this module reads.
mod off {
    pub const TOTAL_WIDTH: usize = 0x08;
    pub const DATA_WIDTH: usize = 0x0A;
    pub const SIZE: usize = 0x0C;
    pub const FORM_FACTOR: usize = 0x0E;
    pub const LOCATOR: usize = 0x10;
    pub const BANK_LOCATOR: usize = 0x11;
    pub const MEMORY_TYPE: usize = 0x12;
    pub const TYPE_DETAIL: usize = 0x13;
    pub const SPEED: usize = 0x15;
    pub const MANUFACTURER: usize = 0x17;
    pub const PART_NUMBER: usize = 0x1A;
    pub const ATTRIBUTES: usize = 0x1B;
    pub const EXTENDED_SIZE: usize = 0x1C;
    pub const CONFIGURED_SPEED: usize = 0x20;
    pub const EXTENDED_SPEED: usize = 0x54;
    pub const EXTENDED_CONFIGURED_SPEED: usize = 0x58;
}

/// The shortest Memory Device structure (SMBIOS 2.1).
const MIN_LENGTH: usize = 0x15;

/// A structure's formatted area and string table.
struct Structure<'a> {
    formatted: &'a [u8],
    strings: Vec<&'a [u8]>,
}

impl<'a> Structure<'a> {
    fn parse(raw: &'a [u8]) -> Result<Structure<'a>, String> {
        let (&kind, &length) = match raw {
            [kind, length, ..] => (kind, length),
            _ => return Err(format!("{} bytes: too short for a structure header", raw.len())),
        };
        if kind != 17 {
            return Err(format!("type {kind}, not 17 (Memory Device)"));
        }
        let length = usize::from(length);
        if length < MIN_LENGTH {
            return Err(format!(
                "length {length:#x} is below the 2.1 minimum of {MIN_LENGTH:#x}"
            ));
        }
        let formatted = raw
            .get(..length)
            .ok_or_else(|| format!("length {length:#x} but only {} bytes", raw.len()))?;
        let mut strings = Vec::new();
        let mut rest = &raw[length..];
        // Strings end at the first empty one (the double NUL); a missing
        // terminator ends the table at the end of the entry.
        while let Some(end) = rest.iter().position(|&b| b == 0) {
            if end == 0 {
                break;
            }
            strings.push(&rest[..end]);
            rest = &rest[end + 1..];
        }
        Ok(Structure { formatted, strings })
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.formatted.get(at).copied()
    }

    fn word(&self, at: usize) -> Option<u16> {
        let b = self.formatted.get(at..at + 2)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }

    fn dword(&self, at: usize) -> Option<u32> {
        let b = self.formatted.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// String number `index` (from 1); 0, a bad index and blank text are `None`.
    fn string(&self, at: usize) -> Option<String> {
        let index = usize::from(self.byte(at)?);
        let bytes = self.strings.get(index.checked_sub(1)?)?;
        let text = String::from_utf8_lossy(bytes).trim().to_string();
        (!text.is_empty()).then_some(text)
    }
}

/// Decodes one type 17 structure (formatted area and strings, as in a
/// dmi-sysfs `raw` file). `entry` names it in the result. Never panics:
/// anything malformed is an `Err` with the reason.
pub fn decode_type17(entry: &str, raw: &[u8]) -> Result<Dimm, String> {
    let s = Structure::parse(raw)?;
    let handle = s.word(0x02).unwrap_or(0);
    let size_bytes = size_bytes(&s);
    let installed = s.word(off::SIZE) != Some(0);
    let width = |at| s.word(at).filter(|&w| w != 0xFFFF && w != 0);
    Ok(Dimm {
        entry: entry.to_string(),
        handle,
        locator: s.string(off::LOCATOR),
        bank_locator: s.string(off::BANK_LOCATOR),
        installed,
        size_bytes,
        form_factor: s
            .byte(off::FORM_FACTOR)
            .and_then(form_factor_name)
            .map(String::from),
        memory_type: s
            .byte(off::MEMORY_TYPE)
            .and_then(memory_type_name)
            .map(String::from),
        type_detail: s
            .word(off::TYPE_DETAIL)
            .map(type_detail_names)
            .unwrap_or_default(),
        speed_mt_s: speed(&s, off::SPEED, off::EXTENDED_SPEED),
        configured_speed_mt_s: speed(&s, off::CONFIGURED_SPEED, off::EXTENDED_CONFIGURED_SPEED),
        ranks: s.byte(off::ATTRIBUTES).map(|a| a & 0x0F).filter(|&r| r != 0),
        total_width_bits: width(off::TOTAL_WIDTH),
        data_width_bits: width(off::DATA_WIDTH),
        manufacturer: s.string(off::MANUFACTURER),
        part_number: s.string(off::PART_NUMBER),
        socket: None,
        channel: None,
        slot: None,
    })
}

/// Size: 0 is no module, 0xFFFF unknown, 0x7FFF "see Extended Size" (in
/// MB, bits 30:0) when the structure has it; otherwise bits 14:0 count MB,
/// or KB when bit 15 is set.
fn size_bytes(s: &Structure) -> Option<u64> {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    match s.word(off::SIZE)? {
        0 | 0xFFFF => None,
        0x7FFF => match s.dword(off::EXTENDED_SIZE) {
            Some(ext) if ext & 0x7FFF_FFFF != 0 => Some(u64::from(ext & 0x7FFF_FFFF) * MIB),
            // A 2.1-2.6 structure (or an Extended Size of 0): 0x7FFF MB itself.
            _ => Some(0x7FFF * MIB),
        },
        w if w & 0x8000 != 0 => Some(u64::from(w & 0x7FFF) * KIB),
        w => Some(u64::from(w) * MIB),
    }
}

/// A speed in MT/s: 0 is unknown; 0xFFFF means "see the 3.3 extended field"
/// (bits 30:0), itself unknown when 0 or absent.
fn speed(s: &Structure, short: usize, extended: usize) -> Option<u32> {
    match s.word(short)? {
        0 => None,
        0xFFFF => s.dword(extended).map(|v| v & 0x7FFF_FFFF).filter(|&v| v != 0),
        v => Some(u32::from(v)),
    }
}

/// Memory Type names (7.18.2); "Other", "Unknown" and reserved codes are `None`.
pub fn memory_type_name(code: u8) -> Option<&'static str> {
    const NAMES: [&str; 0x24] = [
        "Other",
        "Unknown",
        "DRAM",
        "EDRAM",
        "VRAM",
        "SRAM",
        "RAM",
        "ROM",
        "Flash",
        "EEPROM",
        "FEPROM",
        "EPROM",
        "CDRAM",
        "3DRAM",
        "SDRAM",
        "SGRAM",
        "RDRAM",
        "DDR",
        "DDR2",
        "DDR2 FB-DIMM",
        "",
        "",
        "",
        "DDR3",
        "FBD2",
        "DDR4",
        "LPDDR",
        "LPDDR2",
        "LPDDR3",
        "LPDDR4",
        "Logical non-volatile device",
        "HBM",
        "HBM2",
        "DDR5",
        "LPDDR5",
        "HBM3",
    ];
    let name = *NAMES.get(usize::from(code).checked_sub(1)?)?;
    (!matches!(name, "" | "Other" | "Unknown")).then_some(name)
}

/// Form Factor names (7.18.1); "Other", "Unknown" and reserved codes are `None`.
pub fn form_factor_name(code: u8) -> Option<&'static str> {
    const NAMES: [&str; 0x10] = [
        "Other",
        "Unknown",
        "SIMM",
        "SIP",
        "Chip",
        "DIP",
        "ZIP",
        "Proprietary Card",
        "DIMM",
        "TSOP",
        "Row Of Chips",
        "RIMM",
        "SODIMM",
        "SRIMM",
        "FB-DIMM",
        "Die",
    ];
    let name = *NAMES.get(usize::from(code).checked_sub(1)?)?;
    (!matches!(name, "Other" | "Unknown")).then_some(name)
}

/// Type Detail bit names (7.18.3), bits 1-15 in order; bit 0 is reserved. The
/// dmidecode fallback reads the same names back from its text.
pub(crate) const TYPE_DETAIL_NAMES: [&str; 15] = [
    "Other",
    "Unknown",
    "Fast-paged",
    "Static Column",
    "Pseudo-static",
    "RAMBus",
    "Synchronous",
    "CMOS",
    "EDO",
    "Window DRAM",
    "Cache DRAM",
    "Non-Volatile",
    "Registered (Buffered)",
    "Unbuffered (Unregistered)",
    "LRDIMM",
];

/// The Type Detail bits set, by name, without "Other" and "Unknown".
fn type_detail_names(bits: u16) -> Vec<String> {
    (1..16)
        .filter(|&bit| bits & (1 << bit) != 0)
        .map(|bit| TYPE_DETAIL_NAMES[bit - 1])
        .filter(|name| !matches!(*name, "Other" | "Unknown"))
        .map(String::from)
        .collect()
}

/// Reads every `17-N/raw` under a dmi-sysfs `entries` directory, in entry
/// order. Missing, unreadable or undecodable entries are reported in the
/// result, never as an error: the rest of the machine is still worth reading.
pub fn read_memory_devices(entries_dir: &Path) -> MemoryDevices {
    let shown = "firmware/dmi/entries";
    let listing = match std::fs::read_dir(entries_dir) {
        Ok(listing) => listing,
        Err(e) => {
            return MemoryDevices {
                unavailable: Some(match e.kind() {
                    ErrorKind::NotFound => format!(
                        "no SMBIOS tables: {shown} is absent (no DMI on this platform, or a kernel without CONFIG_DMI_SYSFS)"
                    ),
                    ErrorKind::PermissionDenied => format!("permission denied listing {shown}"),
                    _ => format!("cannot list {shown}: {e}"),
                }),
                permission_denied: e.kind() == ErrorKind::PermissionDenied,
                ..MemoryDevices::default()
            }
        }
    };
    let mut numbers: Vec<u32> = listing
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| numbered_name(&name, "17-"))
        .collect();
    numbers.sort_unstable();
    let mut out = MemoryDevices::default();
    for n in numbers {
        let entry = format!("17-{n}");
        match std::fs::read(entries_dir.join(&entry).join("raw")) {
            Ok(raw) => match decode_type17(&entry, &raw) {
                Ok(dimm) => out.dimms.push(dimm),
                Err(reason) => out.problems.push(format!("{entry}: {reason}")),
            },
            Err(e) if e.kind() == ErrorKind::PermissionDenied => out.permission_denied = true,
            Err(e) => out.problems.push(format!("{entry}: cannot read raw: {e}")),
        }
    }
    if out.dimms.is_empty() {
        out.unavailable = Some(if out.permission_denied {
            format!("permission denied reading {shown}/17-*/raw (readable by root only)")
        } else if out.problems.is_empty() {
            "SMBIOS lists no memory devices (no type 17 structures)".to_string()
        } else {
            "no SMBIOS memory device could be decoded".to_string()
        });
    } else {
        out.source = Some("smbios".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2.3 structure (0x1B bytes) followed by its strings.
    fn v23() -> Vec<u8> {
        let mut raw = vec![0u8; 0x1B];
        raw[0] = 17;
        raw[1] = 0x1B;
        raw[0x02] = 0x34;
        raw[0x03] = 0x12;
        raw[0x08..0x0C].copy_from_slice(&[72, 0, 64, 0]);
        raw[0x0C..0x0E].copy_from_slice(&1024u16.to_le_bytes());
        raw[0x0E] = 0x09;
        raw[0x10] = 1;
        raw[0x11] = 2;
        raw[0x12] = 0x12;
        raw[0x15..0x17].copy_from_slice(&400u16.to_le_bytes());
        raw[0x17] = 3;
        raw[0x1A] = 4;
        raw.extend_from_slice(b"DIMM0\0BANK 0\0Acme  \0P-1\0\0");
        raw
    }

    #[test]
    fn decodes_an_old_short_structure() {
        let d = decode_type17("17-0", &v23()).unwrap();
        assert_eq!(d.handle, 0x1234);
        assert_eq!(d.locator.as_deref(), Some("DIMM0"));
        assert_eq!(d.bank_locator.as_deref(), Some("BANK 0"));
        assert_eq!(d.size_bytes, Some(1 << 30));
        assert!(d.installed);
        assert_eq!(d.memory_type.as_deref(), Some("DDR"));
        assert_eq!(d.form_factor.as_deref(), Some("DIMM"));
        assert_eq!(d.speed_mt_s, Some(400));
        assert_eq!(d.manufacturer.as_deref(), Some("Acme"), "trailing blanks trimmed");
        assert_eq!(d.part_number.as_deref(), Some("P-1"));
        assert_eq!((d.total_width_bits, d.data_width_bits), (Some(72), Some(64)));
        assert_eq!(
            (d.ranks, d.configured_speed_mt_s),
            (None, None),
            "2.3 has neither"
        );
    }

    #[test]
    fn sizes_follow_their_encodings() {
        let with_size = |word: u16, ext: Option<u32>| {
            let mut raw = v23();
            raw[0x0C..0x0E].copy_from_slice(&word.to_le_bytes());
            if let Some(ext) = ext {
                raw[1] = 0x22;
                let mut formatted = raw[..0x1B].to_vec();
                formatted.resize(0x22, 0);
                formatted[0x1C..0x20].copy_from_slice(&ext.to_le_bytes());
                formatted.extend_from_slice(&raw[0x1B..]);
                raw = formatted;
            }
            decode_type17("x", &raw).unwrap()
        };
        assert_eq!(with_size(0x8000 | 512, None).size_bytes, Some(512 << 10));
        assert_eq!(with_size(0xFFFF, None).size_bytes, None);
        assert!(
            with_size(0xFFFF, None).installed,
            "unknown size is not an empty slot"
        );
        let empty = with_size(0, None);
        assert_eq!((empty.size_bytes, empty.installed), (None, false));
        assert_eq!(with_size(0x7FFF, Some(65536)).size_bytes, Some(64 << 30));
        assert_eq!(with_size(0x7FFF, Some(0x8000_0000 | 8)).size_bytes, Some(8 << 20));
        assert_eq!(with_size(0x7FFF, None).size_bytes, Some(0x7FFF << 20));
    }

    #[test]
    fn refuses_what_is_not_a_memory_device() {
        assert!(decode_type17("x", &[]).unwrap_err().contains("too short"));
        assert!(decode_type17("x", &[4, 0x1B]).unwrap_err().contains("type 4"));
        assert!(decode_type17("x", &[17, 0x10]).unwrap_err().contains("below"));
        assert!(decode_type17("x", &[17, 0x1B, 0])
            .unwrap_err()
            .contains("only 3 bytes"));
    }

    #[test]
    fn strings_without_terminator_or_with_bad_index() {
        let mut raw = v23();
        raw.truncate(0x1B + 5); // "DIMM0" with no NUL at all
        let d = decode_type17("x", &raw).unwrap();
        assert_eq!((d.locator, d.bank_locator), (None, None));
        let mut raw = v23();
        raw[0x1A] = 9;
        assert_eq!(decode_type17("x", &raw).unwrap().part_number, None);
    }

    #[test]
    fn code_tables() {
        assert_eq!(memory_type_name(0x22), Some("DDR5"));
        assert_eq!(memory_type_name(0x1A), Some("DDR4"));
        assert_eq!(memory_type_name(0x24), Some("HBM3"));
        assert_eq!(memory_type_name(0x02), None);
        assert_eq!(memory_type_name(0x15), None, "reserved");
        assert_eq!(memory_type_name(0), None);
        assert_eq!(memory_type_name(0x25), None);
        assert_eq!(form_factor_name(0x0D), Some("SODIMM"));
        assert_eq!(form_factor_name(0x11), None);
        assert_eq!(
            type_detail_names((1 << 7) | (1 << 13) | 1),
            vec!["Synchronous", "Registered (Buffered)"]
        );
    }
}
