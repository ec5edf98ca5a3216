//! The access mixes of the bandwidth engine and how each one's bytes are counted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What each thread does to its own arrays, element by element (8-byte doubles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mix {
    /// Loads only.
    #[serde(rename = "read")]
    Read,
    /// Regular stores of a constant: each written line is first read (write-allocate).
    #[serde(rename = "write")]
    Write,
    /// Non-temporal (streaming) stores of a constant, then a store fence.
    #[serde(rename = "write-nt")]
    WriteNt,
    /// Three read streams and one write stream, independent of each other.
    #[serde(rename = "3:1")]
    Ratio3to1,
    #[serde(rename = "2:1")]
    Ratio2to1,
    #[serde(rename = "1:1")]
    Ratio1to1,
    /// x[i] += s: each line read, then written back.
    #[serde(rename = "rmw")]
    Rmw,
    /// a[i] = b[i].
    #[serde(rename = "copy")]
    Copy,
    #[serde(rename = "copy-nt")]
    CopyNt,
    /// a[i] = b[i] + s * c[i].
    #[serde(rename = "triad")]
    Triad,
    #[serde(rename = "triad-nt")]
    TriadNt,
}

impl Mix {
    pub const ALL: [Mix; 11] = [
        Mix::Read,
        Mix::Write,
        Mix::WriteNt,
        Mix::Ratio3to1,
        Mix::Ratio2to1,
        Mix::Ratio1to1,
        Mix::Rmw,
        Mix::Copy,
        Mix::CopyNt,
        Mix::Triad,
        Mix::TriadNt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mix::Read => "read",
            Mix::Write => "write",
            Mix::WriteNt => "write-nt",
            Mix::Ratio3to1 => "3:1",
            Mix::Ratio2to1 => "2:1",
            Mix::Ratio1to1 => "1:1",
            Mix::Rmw => "rmw",
            Mix::Copy => "copy",
            Mix::CopyNt => "copy-nt",
            Mix::Triad => "triad",
            Mix::TriadNt => "triad-nt",
        }
    }

    /// One line for `--help` and tables.
    pub fn describe(self) -> &'static str {
        match self {
            Mix::Read => "loads only",
            Mix::Write => "a[i] = s with regular stores",
            Mix::WriteNt => "a[i] = s with non-temporal stores",
            Mix::Ratio3to1 => "3 read streams, 1 write stream",
            Mix::Ratio2to1 => "2 read streams, 1 write stream",
            Mix::Ratio1to1 => "1 read stream, 1 write stream",
            Mix::Rmw => "a[i] += s",
            Mix::Copy => "a[i] = b[i]",
            Mix::CopyNt => "a[i] = b[i], non-temporal stores",
            Mix::Triad => "a[i] = b[i] + s*c[i]",
            Mix::TriadNt => "a[i] = b[i] + s*c[i], non-temporal stores",
        }
    }

    /// Arrays each thread reads from (an array read and written counts once here and
    /// once in `written_arrays`).
    pub fn read_arrays(self) -> u64 {
        match self {
            Mix::Write | Mix::WriteNt => 0,
            Mix::Read | Mix::Ratio1to1 | Mix::Rmw | Mix::Copy | Mix::CopyNt => 1,
            Mix::Ratio2to1 | Mix::Triad | Mix::TriadNt => 2,
            Mix::Ratio3to1 => 3,
        }
    }

    pub fn written_arrays(self) -> u64 {
        u64::from(self != Mix::Read)
    }

    /// Distinct arrays each thread allocates.
    pub fn arrays(self) -> u64 {
        match self {
            Mix::Rmw => 1,
            m => m.read_arrays() + m.written_arrays(),
        }
    }

    pub fn non_temporal(self) -> bool {
        matches!(self, Mix::WriteNt | Mix::CopyNt | Mix::TriadNt)
    }

    /// Bytes counted per element of an array: read plus written (STREAM's convention).
    pub fn bytes_per_element(self) -> u64 {
        8 * (self.read_arrays() + self.written_arrays())
    }

    /// How the bytes are counted, and what traffic the count leaves out.
    pub fn byte_counting(self) -> String {
        let counted = format!(
            "{} bytes per element: {} read + {} written (STREAM convention)",
            self.bytes_per_element(),
            8 * self.read_arrays(),
            8 * self.written_arrays()
        );
        let extra = if self.written_arrays() == 0 {
            "no stores, so no write-allocate traffic"
        } else if self.non_temporal() {
            "streaming stores skip the write-allocate read"
        } else if self == Mix::Rmw {
            "the written line was just read, so no extra write-allocate traffic"
        } else {
            "not counted: the write-allocate read of each written line, which adds 8 bytes of DRAM traffic per element written"
        };
        format!("{counted}; {extra}")
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMix(pub String);

impl fmt::Display for UnknownMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Mix::ALL.iter().map(|m| m.name()).collect();
        write!(
            f,
            "unknown mix '{}' (valid: {}, or all)",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownMix {}

impl FromStr for Mix {
    type Err = UnknownMix;

    fn from_str(s: &str) -> Result<Mix, UnknownMix> {
        Mix::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMix(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for m in Mix::ALL {
            assert_eq!(m.name().parse::<Mix>(), Ok(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Mix>(&json).unwrap(), m);
        }
        let err = "4:1".parse::<Mix>().unwrap_err().to_string();
        assert!(err.contains("valid: read, write, write-nt, 3:1"), "{err}");
    }

    #[test]
    fn stream_kernels_count_as_stream_does() {
        assert_eq!(Mix::Copy.bytes_per_element(), 16);
        assert_eq!(Mix::Triad.bytes_per_element(), 24);
        assert_eq!(Mix::Rmw.bytes_per_element(), 16);
        assert_eq!(Mix::Rmw.arrays(), 1);
        assert_eq!(Mix::Ratio3to1.arrays(), 4);
        assert_eq!(Mix::Ratio3to1.bytes_per_element(), 32);
        assert_eq!(Mix::WriteNt.bytes_per_element(), 8);
    }
}
