//! A fact about the machine, or why it could not be read: what every platform and
//! identity field holds, so a missing fact is recorded with its reason, not left out.

use serde::{Deserialize, Serialize};

/// A fact, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    Known(T),
    Unknown(String),
}

impl<T> Fact<T> {
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(v) => Some(v),
            Fact::Unknown(_) => None,
        }
    }
}
