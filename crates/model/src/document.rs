//! A stored result, typed: one variant per kind of measurement, read back from the
//! JSON document a command printed and the store kept. Reading checks the schema
//! version first, so a document from a newer memfabric, or one that does not parse,
//! is an error that says which and why, never a result with parts missing.

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;
use thiserror::Error;

use crate::failures::{Failure, Failures};
use crate::noise::Noises;
use crate::suite::RunReport;
use crate::{
    BandwidthReport, C2cReport, ConcurrentReport, DomainScalingReport, Environment, Figure, Figures,
    GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport, GpuInfoReport, GpuInjectionReport,
    GpuLatencyReport, GpuLoadedLatencyReport, LatencyReport, LoadedLatencyReport, MonitorReport,
    StreamReport, SweepReport, SCHEMA_VERSION,
};

/// The result of one command, by kind.
// One document is built per command and moved, never held by the thousand: the
// size of its largest variant costs nothing worth a box on every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    Latency(LatencyReport),
    Bandwidth(BandwidthReport),
    /// `bandwidth --per-domain`.
    BandwidthDomains(DomainScalingReport),
    /// `bandwidth --concurrent`.
    BandwidthConcurrent(ConcurrentReport),
    Stream(StreamReport),
    LoadedLatency(LoadedLatencyReport),
    C2c(C2cReport),
    Sweep(SweepReport),
    Monitor(MonitorReport),
    GpuInfo(GpuInfoReport),
    GpuBandwidth(GpuBandwidthReport),
    GpuLatency(GpuLatencyReport),
    GpuCopy(GpuCopyReport),
    GpuHostLatency(GpuHostLatencyReport),
    GpuLoadedLatency(GpuLoadedLatencyReport),
    GpuInjection(GpuInjectionReport),
    Run(Box<RunReport>),
}

#[derive(Debug, Error, PartialEq)]
pub enum DocumentError {
    #[error("it is not a memfabric JSON document ({0})")]
    NotJson(String),
    #[error("it was stored by a newer memfabric (schema {found}; this one reads up to {supported}): upgrade memfabric to read it")]
    NewerSchema { found: u32, supported: u32 },
    #[error("its command \"{0}\" is not one this memfabric knows")]
    UnknownCommand(String),
    #[error("its {command} result does not parse: {reason}")]
    Unparsable { command: String, reason: String },
}

/// What a stored document holds: its schema version, the machine it ran on, and the
/// result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDocument {
    pub schema_version: u32,
    /// The memfabric that wrote it (`tool.version`; "unknown" where absent).
    pub tool_version: String,
    /// When it was measured (`started_unix_s`; 0 where absent).
    pub started_unix_s: u64,
    pub environment: Option<Environment>,
    pub document: Document,
}

fn typed<T: DeserializeOwned>(command: &str, v: Value) -> Result<T, DocumentError> {
    serde_json::from_value(v).map_err(|e| DocumentError::Unparsable {
        command: command.into(),
        reason: e.to_string(),
    })
}

impl StoredDocument {
    /// Reads a document as `--json` prints it.
    pub fn parse(text: &str) -> Result<StoredDocument, DocumentError> {
        let v: Value = serde_json::from_str(text).map_err(|e| DocumentError::NotJson(e.to_string()))?;
        StoredDocument::from_value(v)
    }

    /// Reads a document already parsed as JSON.
    pub fn from_value(mut v: Value) -> Result<StoredDocument, DocumentError> {
        let Some(found) = v["schema_version"].as_u64() else {
            return Err(DocumentError::NotJson("no schema_version".into()));
        };
        let found = u32::try_from(found).unwrap_or(u32::MAX);
        if found > SCHEMA_VERSION {
            return Err(DocumentError::NewerSchema {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        let Some(command) = v["command"].as_str().map(str::to_string) else {
            return Err(DocumentError::NotJson("no command".into()));
        };
        let environment = match v["environment"].take() {
            Value::Null => None,
            e => Some(typed(&command, e)?),
        };
        let document = Document::from_result(&command, v["result"].take())?;
        Ok(StoredDocument {
            schema_version: found,
            tool_version: v["tool"]["version"].as_str().unwrap_or("unknown").to_string(),
            started_unix_s: v["started_unix_s"].as_u64().unwrap_or(0),
            environment,
            document,
        })
    }
}

impl Document {
    /// The result of `command`, as its JSON document holds it under "result".
    pub fn from_result(command: &str, result: Value) -> Result<Document, DocumentError> {
        let c = command;
        Ok(match command {
            "latency" => Document::Latency(typed(c, result)?),
            "bandwidth" => match BandwidthShape::of(&result)? {
                BandwidthShape::Cells => Document::Bandwidth(typed(c, result)?),
                BandwidthShape::PerDomain => Document::BandwidthDomains(typed(c, result)?),
                BandwidthShape::Concurrent => Document::BandwidthConcurrent(typed(c, result)?),
            },
            "stream" => Document::Stream(typed(c, result)?),
            "loaded-latency" => Document::LoadedLatency(typed(c, result)?),
            "c2c" => Document::C2c(typed(c, result)?),
            "sweep" => Document::Sweep(typed(c, result)?),
            "monitor" => Document::Monitor(typed(c, result)?),
            "gpu-info" => Document::GpuInfo(typed(c, result)?),
            "gpu-bandwidth" => Document::GpuBandwidth(typed(c, result)?),
            "gpu-latency" => Document::GpuLatency(typed(c, result)?),
            "gpu-copy" => Document::GpuCopy(typed(c, result)?),
            "gpu-host-latency" => Document::GpuHostLatency(typed(c, result)?),
            "gpu-loaded-latency" => Document::GpuLoadedLatency(typed(c, result)?),
            "gpu-injection" => Document::GpuInjection(typed(c, result)?),
            "run" => Document::Run(Box::new(typed(c, result)?)),
            other => return Err(DocumentError::UnknownCommand(other.into())),
        })
    }

    /// The command that makes this kind of document.
    pub fn command(&self) -> &'static str {
        match self {
            Document::Latency(_) => "latency",
            Document::Bandwidth(_) | Document::BandwidthDomains(_) | Document::BandwidthConcurrent(_) => {
                "bandwidth"
            }
            Document::Stream(_) => "stream",
            Document::LoadedLatency(_) => "loaded-latency",
            Document::C2c(_) => "c2c",
            Document::Sweep(_) => "sweep",
            Document::Monitor(_) => "monitor",
            Document::GpuInfo(_) => "gpu-info",
            Document::GpuBandwidth(_) => "gpu-bandwidth",
            Document::GpuLatency(_) => "gpu-latency",
            Document::GpuCopy(_) => "gpu-copy",
            Document::GpuHostLatency(_) => "gpu-host-latency",
            Document::GpuLoadedLatency(_) => "gpu-loaded-latency",
            Document::GpuInjection(_) => "gpu-injection",
            Document::Run(_) => "run",
        }
    }

    fn inner(&self) -> &dyn Result_ {
        match self {
            Document::Latency(r) => r,
            Document::Bandwidth(r) => r,
            Document::BandwidthDomains(r) => r,
            Document::BandwidthConcurrent(r) => r,
            Document::Stream(r) => r,
            Document::LoadedLatency(r) => r,
            Document::C2c(r) => r,
            Document::Sweep(r) => r,
            Document::Monitor(r) => r,
            Document::GpuInfo(r) => r,
            Document::GpuBandwidth(r) => r,
            Document::GpuLatency(r) => r,
            Document::GpuCopy(r) => r,
            Document::GpuHostLatency(r) => r,
            Document::GpuLoadedLatency(r) => r,
            Document::GpuInjection(r) => r,
            Document::Run(r) => r.as_ref(),
        }
    }

    pub fn figures(&self) -> Vec<Figure> {
        self.inner().figures()
    }

    pub fn failures(&self) -> Vec<Failure> {
        self.inner().failures()
    }

    /// One line per measurement the noise guard flagged ([`crate::Noise::flag`]).
    pub fn noise_flags(&self) -> Vec<String> {
        self.inner()
            .noises()
            .into_iter()
            .map(crate::Noise::flag)
            .collect()
    }

    /// One line for `runs list`: what the run found.
    pub fn summary(&self) -> String {
        match self {
            Document::Monitor(m) => m.summary(),
            d => crate::figures::summarize(d.command(), &d.figures()),
        }
    }
}

/// The three results of `memfabric bandwidth`, told apart by the `shape` field of
/// their JSON result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandwidthShape {
    /// Cells of mixes x (CPU node, memory node) x threads.
    Cells,
    /// `--per-domain`: L3 domains alone and together.
    PerDomain,
    /// `--concurrent`: streams run at once.
    Concurrent,
}

impl BandwidthShape {
    /// The shape a result names; a result without the field was written by memfabric
    /// before 0.5, whose shapes are told apart by the one key each has of its own.
    fn of(result: &Value) -> Result<BandwidthShape, DocumentError> {
        match result.get("shape") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| DocumentError::Unparsable {
                command: "bandwidth".into(),
                reason: format!("shape: {e}"),
            }),
            None if result.get("alone").is_some() => Ok(BandwidthShape::PerDomain),
            None if result.get("pattern").is_some() => Ok(BandwidthShape::Concurrent),
            None => Ok(BandwidthShape::Cells),
        }
    }
}

/// A bandwidth result with its shape first, as the document is written.
#[derive(Serialize)]
struct Shaped<'a, T: Serialize> {
    shape: BandwidthShape,
    #[serde(flatten)]
    result: &'a T,
}

/// A document serialises as its result alone: what the JSON document holds under
/// "result" (a bandwidth result with its `shape`).
impl Serialize for Document {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use BandwidthShape::{Cells, Concurrent, PerDomain};
        match self {
            Document::Latency(r) => r.serialize(s),
            Document::Bandwidth(r) => Shaped {
                shape: Cells,
                result: r,
            }
            .serialize(s),
            Document::BandwidthDomains(r) => Shaped {
                shape: PerDomain,
                result: r,
            }
            .serialize(s),
            Document::BandwidthConcurrent(r) => Shaped {
                shape: Concurrent,
                result: r,
            }
            .serialize(s),
            Document::Stream(r) => r.serialize(s),
            Document::LoadedLatency(r) => r.serialize(s),
            Document::C2c(r) => r.serialize(s),
            Document::Sweep(r) => r.serialize(s),
            Document::Monitor(r) => r.serialize(s),
            Document::GpuInfo(r) => r.serialize(s),
            Document::GpuBandwidth(r) => r.serialize(s),
            Document::GpuLatency(r) => r.serialize(s),
            Document::GpuCopy(r) => r.serialize(s),
            Document::GpuHostLatency(r) => r.serialize(s),
            Document::GpuLoadedLatency(r) => r.serialize(s),
            Document::GpuInjection(r) => r.serialize(s),
            Document::Run(r) => r.serialize(s),
        }
    }
}

macro_rules! into_document {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for Document {
            fn from(r: $t) -> Document {
                Document::$variant(r)
            }
        }
    )*};
}

into_document!(
    LatencyReport => Latency,
    BandwidthReport => Bandwidth,
    DomainScalingReport => BandwidthDomains,
    ConcurrentReport => BandwidthConcurrent,
    StreamReport => Stream,
    LoadedLatencyReport => LoadedLatency,
    C2cReport => C2c,
    SweepReport => Sweep,
    MonitorReport => Monitor,
    GpuInfoReport => GpuInfo,
    GpuBandwidthReport => GpuBandwidth,
    GpuLatencyReport => GpuLatency,
    GpuCopyReport => GpuCopy,
    GpuHostLatencyReport => GpuHostLatency,
    GpuLoadedLatencyReport => GpuLoadedLatency,
    GpuInjectionReport => GpuInjection,
);

impl From<RunReport> for Document {
    fn from(r: RunReport) -> Document {
        Document::Run(Box::new(r))
    }
}

/// What every result answers, whatever its kind.
trait Result_: Figures + Failures + Noises {}

impl<T: Figures + Failures + Noises> Result_ for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_schema_is_refused_before_the_result_is_read() {
        let text = r#"{"schema_version": 99, "command": "latency", "result": {"what": "ever"}}"#;
        assert_eq!(
            StoredDocument::parse(text),
            Err(DocumentError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION
            })
        );
    }

    #[test]
    fn a_result_that_does_not_parse_says_which_command_and_why() {
        let text = r#"{"schema_version": 2, "command": "latency", "result": {"cells": 3}}"#;
        let e = StoredDocument::parse(text).unwrap_err();
        assert!(
            matches!(&e, DocumentError::Unparsable { command, .. } if command == "latency"),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("its latency result does not parse: "),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_command_is_named() {
        let text = r#"{"schema_version": 2, "command": "frobnicate", "result": {}}"#;
        assert_eq!(
            StoredDocument::parse(text).unwrap_err().to_string(),
            "its command \"frobnicate\" is not one this memfabric knows"
        );
    }
}
