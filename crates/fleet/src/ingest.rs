//! `memfabric fleet ingest`: JSON run documents from many hosts into one store, each
//! stored once however often it is ingested.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use memfabric_model::StoredDocument;
use memfabric_store::{NewRun, Saved, Store};
use serde::Serialize;
use serde_json::Value;

use crate::{FleetError, Observer};

/// Documents stored per transaction: a kill loses at most this many, never half of one.
pub const BATCH: usize = 64;
/// A batch also ends once its documents hold this many bytes, so that memory stays
/// bounded by the document limit, not by the number of documents or files.
const BATCH_BYTES: usize = 64 << 20;
/// The largest document read by default (`--max-document-size`).
pub const MAX_DOCUMENT_BYTES: usize = 16 << 20;

/// Where documents come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "stdin".into(),
            Source::File(p) => p.display().to_string(),
        }
    }

    fn open(&self) -> std::io::Result<Box<dyn BufRead>> {
        Ok(match self {
            Source::Stdin => Box::new(std::io::stdin().lock()),
            Source::File(p) => Box::new(std::io::BufReader::new(std::fs::File::open(p)?)),
        })
    }
}

/// Every input as sources: a directory is every *.json file under it, in name order.
pub fn sources(inputs: &[String]) -> Result<Vec<Source>, FleetError> {
    let mut out = Vec::new();
    for input in inputs {
        if input == "-" {
            if out.contains(&Source::Stdin) {
                return Err(FleetError::Usage("- (standard input) is given twice".into()));
            }
            out.push(Source::Stdin);
            continue;
        }
        let path = Path::new(input);
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files)
                .map_err(|e| FleetError::Usage(format!("cannot read the directory {input}: {e}")))?;
            if files.is_empty() {
                return Err(FleetError::Usage(format!("no *.json file under {input}")));
            }
            files.sort();
            out.extend(files.into_iter().map(Source::File));
        } else if path.exists() {
            out.push(Source::File(path.to_path_buf()));
        } else {
            return Err(FleetError::Usage(format!("{input}: no such file or directory")));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    Ok(())
}

/// A document as a run to store, or why it cannot be one.
pub fn new_run(text: &str, campaign: Option<&str>) -> Result<NewRun, String> {
    let mut value: Value = serde_json::from_str(text).map_err(|e| format!("it is not JSON ({e})"))?;
    // `runs export` adds the run's label; it names the run, it is not the document.
    let label = match value.as_object_mut().and_then(|m| m.remove("label")) {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) if !l.trim().is_empty() => Some(l),
        Some(other) => return Err(format!("its label {other} is not a name")),
    };
    if value["tool"]["name"] != "memfabric" {
        return Err("it is not a memfabric document (no tool.name \"memfabric\")".into());
    }
    memfabric_model::validate::validate(&value, memfabric_store::now_unix_s()).map_err(|e| e.to_string())?;
    let doc_hash = memfabric_store::value_hash(&value);
    let doc = StoredDocument::from_value(value).map_err(|e| e.to_string())?;
    if doc.environment.is_none() {
        return Err(format!(
            "its {} document has no environment: only measurement documents say which host they describe",
            doc.document.command()
        ));
    }
    let mut run = NewRun::of(&doc, text.to_string(), doc_hash);
    run.campaign = campaign.map(str::to_string);
    run.label = label;
    Ok(run)
}

/// What an ingest stored and refused.
#[derive(Debug, Default, Serialize)]
pub struct Ingested {
    /// The store, without a password.
    pub store: String,
    pub campaign: Option<String>,
    /// Documents read.
    pub documents: usize,
    pub new: usize,
    /// Already stored: not stored again.
    pub duplicate: usize,
    pub rejected: Vec<Rejected>,
}

/// A document that was not stored, and why.
#[derive(Debug, Serialize)]
pub struct Rejected {
    /// The file, `stdin`, or `file#N` for the N-th document of a file.
    pub source: String,
    pub reason: String,
}

/// A document read from a source, named "file" or "file#2" when it holds several.
struct Read {
    name: String,
    text: Result<String, String>,
}

/// Converts a batch of documents on every CPU: parsing dominates ingest.
fn convert_batch(batch: &[Read], campaign: Option<&str>) -> Vec<Result<NewRun, String>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(batch.len().max(1));
    let per = batch.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = batch
            .chunks(per)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|r| {
                            r.text
                                .as_ref()
                                .map_err(Clone::clone)
                                .and_then(|t| new_run(t, campaign))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a conversion thread panicked"))
            .collect()
    })
}

/// How an ingest goes: what it stores in, the counts so far, the batch being read.
struct Batches<'a> {
    store: &'a mut Store,
    campaign: Option<&'a str>,
    obs: &'a dyn Observer,
    done: Ingested,
    batch: Vec<Read>,
    bytes: usize,
}

impl Batches<'_> {
    fn push(&mut self, r: Read) -> Result<(), FleetError> {
        self.bytes += r.text.as_ref().map_or(0, String::len);
        self.batch.push(r);
        if self.batch.len() >= BATCH || self.bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Stores the batch in one transaction, after a last look for a stop signal.
    fn flush(&mut self) -> Result<(), FleetError> {
        if let Some(signal) = self.obs.stop_signal() {
            self.obs.finish();
            let d = &self.done;
            let text = format!(
                "stopped after {} documents: {} stored, {} duplicate, {} rejected; the rest were not read. Ingesting the same inputs again stores only the rest",
                d.documents,
                d.new,
                d.duplicate,
                d.rejected.len()
            );
            return Err(FleetError::Interrupted { signal, text });
        }
        let batch = std::mem::take(&mut self.batch);
        self.bytes = 0;
        let mut runs = Vec::new();
        for (r, run) in batch.iter().zip(convert_batch(&batch, self.campaign)) {
            self.done.documents += 1;
            match run {
                Ok(run) => runs.push(run),
                Err(reason) => self.done.rejected.push(Rejected {
                    source: r.name.clone(),
                    reason,
                }),
            }
        }
        let saved = self.store.save_all(&runs).map_err(|error| {
            let d = &self.done;
            FleetError::StoreFailed {
                error,
                text: format!(
                    "{} documents were stored before the fault ({} new, {} duplicate) and stay stored; the {} being written were rolled back. Ingesting the same inputs again stores only the rest",
                    d.new + d.duplicate,
                    d.new,
                    d.duplicate,
                    runs.len()
                ),
            }
        })?;
        for saved in saved {
            match saved {
                Saved::New(_) => self.done.new += 1,
                Saved::Duplicate(_) => self.done.duplicate += 1,
            }
        }
        Ok(())
    }

    /// Every document of one source, each at most `limit` bytes.
    fn source(&mut self, source: &Source, limit: usize) -> Result<(), FleetError> {
        let name = source.name();
        let reader = match source.open() {
            Ok(r) => r,
            Err(e) => {
                return self.push(Read {
                    name,
                    text: Err(format!("cannot read it: {e}")),
                })
            }
        };
        let mut docs = crate::reader::Documents::new(reader, limit).peekable();
        if docs.peek().is_none() {
            return self.push(Read {
                name,
                text: Err("it holds no JSON document".into()),
            });
        }
        let mut i = 0;
        while let Some(text) = docs.next() {
            i += 1;
            let several = i > 1 || docs.peek().is_some();
            let name = if several {
                format!("{name}#{i}")
            } else {
                name.clone()
            };
            self.push(Read { name, text })?;
        }
        Ok(())
    }
}

/// A campaign to ingest into needs a name.
pub fn check_campaign(campaign: Option<&str>) -> Result<(), FleetError> {
    if campaign.is_some_and(|c| c.trim().is_empty()) {
        return Err(FleetError::Usage("--campaign needs a name".into()));
    }
    Ok(())
}

/// Stores every document of `sources`, each at most `limit` bytes, in batches of
/// [`BATCH`] documents (or 64 MiB), each batch in one transaction. A stop signal
/// between batches ends it with the counts so far: what was stored stays stored, and
/// ingesting again stores only the rest.
pub fn ingest(
    store: &mut Store,
    sources: &[Source],
    campaign: Option<&str>,
    limit: usize,
    obs: &dyn Observer,
) -> Result<Ingested, FleetError> {
    check_campaign(campaign)?;
    let done = Ingested {
        store: store.location().to_string(),
        campaign: campaign.map(str::to_string),
        ..Ingested::default()
    };
    let mut b = Batches {
        store,
        campaign,
        obs,
        done,
        batch: Vec::new(),
        bytes: 0,
    };
    obs.begin("ingest", sources.len() as u64);
    for s in sources {
        b.source(s, limit)?;
        obs.advance(&s.name());
    }
    b.flush()?;
    obs.finish();
    Ok(b.done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_memfabric_measurement_documents_are_runs() {
        let not_ours = new_run("{\"tool\": {\"name\": \"stream\"}}", None).unwrap_err();
        assert!(not_ours.contains("not a memfabric document"), "{not_ours}");
        let listing = r#"{"schema_version": 2, "tool": {"name": "memfabric", "version": "0.5.0"}, "command": "runs",
                          "args": [], "started_unix_s": 1, "environment": null, "result": []}"#;
        let e = new_run(listing, None).unwrap_err();
        assert!(e.contains("not one this memfabric knows"), "{e}");
    }
}
