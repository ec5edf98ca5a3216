//! Error types of the topology reader.

use std::path::PathBuf;

/// Why a CPU or node list such as `0-3,8,10-11` could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// Two commas in a row, or a comma at the start or end.
    #[error("empty entry at position {position} of list {list:?} (stray comma)")]
    EmptyEntry { list: String, position: usize },
    /// A token that is not a non-negative decimal integer.
    #[error("{token:?} is not a non-negative integer")]
    NotANumber { token: String },
    /// A number that does not fit in 32 bits.
    #[error("{token:?} is too large (the largest id is {max})", max = u32::MAX)]
    Overflow { token: String },
    /// A range like `0-` or `-3` with one end missing.
    #[error("range {token:?} is missing a bound")]
    MissingBound { token: String },
    /// A range like `3-1` whose end is below its start.
    #[error("range {token:?} ends before it starts")]
    ReversedRange { token: String },
    /// A list naming more ids than any machine has; refusing it keeps a
    /// typo like `0-4000000000` from exhausting memory.
    #[error("list names more than {max} ids (at {token:?})")]
    TooManyIds { token: String, max: usize },
}

/// Why the topology could not be read from a sysfs tree.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// A file the reader needs could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file held a CPU or node list that does not parse.
    #[error("{path}: {source}")]
    List {
        path: PathBuf,
        #[source]
        source: ListError,
    },
    /// A file held something other than what the kernel writes there.
    #[error("{path}: {reason}")]
    Format { path: PathBuf, reason: String },
}

impl TopoError {
    pub(crate) fn format(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        TopoError::Format {
            path: path.into(),
            reason: reason.into(),
        }
    }
}
