//! What every command shares: error classes that map to exit codes, and the JSON
//! envelope.

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use memfabric_model::{Envelope, Tool, SCHEMA_VERSION};
use memfabric_topo::Topology;
use serde::Serialize;

use crate::progress::Progress;

/// Bad input or usage: exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// SIGINT or SIGTERM stopped the command: exit 128 + signal, nothing on stdout.
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "a signal",
        };
        write!(f, "interrupted by {name}: stopped cleanly, no results printed")
    }
}

impl std::error::Error for Interrupted {}

/// How a command ended when it did not return an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// Results were printed but at least one measurement failed: exit code 1.
    MeasurementFailed,
}

impl Status {
    pub fn from_failures(any_failed: bool) -> Status {
        if any_failed {
            Status::MeasurementFailed
        } else {
            Status::Ok
        }
    }
}

/// Options every command gets.
pub struct Ctx {
    pub json: bool,
    pub args: Vec<String>,
    pub started_unix_s: u64,
    pub progress: Progress,
}

impl Ctx {
    pub fn new(json: bool, quiet: bool) -> Ctx {
        Ctx {
            json,
            args: std::env::args().collect(),
            started_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            progress: Progress::new(!quiet),
        }
    }

    /// Writes the JSON document in one piece, so stdout never holds half a document.
    pub fn print_json<T: Serialize>(&self, command: &str, topo: Option<&Topology>, result: T) -> Result<()> {
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "memfabric".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command: command.into(),
            args: self.args.clone(),
            started_unix_s: self.started_unix_s,
            environment: topo.map(|t| memfabric_measure::env::environment(t, Path::new("/sys"))),
            result,
        };
        let mut text = serde_json::to_string_pretty(&envelope).context("encoding JSON")?;
        text.push('\n');
        print_all(&text)
    }
}

/// Prints a finished text in one write, unless a stop signal came: then results of
/// a cut-short run are withheld rather than passed off as complete.
pub fn print_all(text: &str) -> Result<()> {
    if let Some(sig) = memfabric_measure::sys::stop_signal() {
        return Err(Interrupted(sig).into());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).context("writing to stdout")?;
    out.flush().context("writing to stdout")
}

/// Reads the topology of the machine this process runs on.
pub fn this_machine() -> Result<Topology> {
    Topology::read(Path::new("/sys")).context("reading the topology from /sys")
}
