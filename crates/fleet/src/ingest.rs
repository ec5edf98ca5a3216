//! `memfabric fleet ingest`: JSON run documents from many hosts into one store, each
//! stored once however often it is ingested.

use std::io::Read;
use std::path::{Path, PathBuf};

use memfabric_model::StoredDocument;
use memfabric_store::{NewRun, Saved, Store};
use serde::Serialize;
use serde_json::Value;

use crate::{FleetError, Observer};

/// Documents stored per transaction: a kill loses at most this many, never half of one.
pub const BATCH: usize = 64;

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

    fn read(&self) -> std::io::Result<String> {
        match self {
            Source::Stdin => {
                let mut text = String::new();
                std::io::stdin().read_to_string(&mut text)?;
                Ok(text)
            }
            Source::File(p) => std::fs::read_to_string(p),
        }
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

/// The documents in a text: one, or several one after another (e.g. `cat *.json`).
fn documents(text: &str) -> Vec<Result<&str, String>> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    let mut start = 0;
    loop {
        match stream.next() {
            None => break,
            Some(Ok(_)) => {
                let end = stream.byte_offset();
                out.push(Ok(text[start..end].trim()));
                start = end;
            }
            Some(Err(e)) => {
                out.push(Err(format!("it is not JSON ({e})")));
                break;
            }
        }
    }
    if out.is_empty() {
        out.push(Err("it holds no JSON document".into()));
    }
    out
}

/// A document as a run to store, or why it cannot be one.
pub fn new_run(text: &str, campaign: Option<&str>) -> Result<NewRun, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("it is not JSON ({e})"))?;
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

/// One source's documents, named "file" or "file#2" when it holds several.
fn converted(source: &Source, campaign: Option<&str>) -> Vec<(String, Result<NewRun, String>)> {
    let name = source.name();
    let text = match source.read() {
        Ok(t) => t,
        Err(e) => return vec![(name, Err(format!("cannot read it: {e}")))],
    };
    let docs = documents(&text);
    let several = docs.len() > 1;
    docs.into_iter()
        .enumerate()
        .map(|(i, d)| {
            let label = if several {
                format!("{name}#{}", i + 1)
            } else {
                name.clone()
            };
            (label, d.and_then(|t| new_run(t, campaign)))
        })
        .collect()
}

/// Converts a batch of sources on every CPU: parsing dominates ingest.
fn convert_batch(batch: &[Source], campaign: Option<&str>) -> Vec<(String, Result<NewRun, String>)> {
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
                        .flat_map(|src| converted(src, campaign))
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

/// A campaign to ingest into needs a name.
pub fn check_campaign(campaign: Option<&str>) -> Result<(), FleetError> {
    if campaign.is_some_and(|c| c.trim().is_empty()) {
        return Err(FleetError::Usage("--campaign needs a name".into()));
    }
    Ok(())
}

/// Stores every document of `sources` in batches of [`BATCH`], each batch in one
/// transaction. A stop signal between batches ends it with the counts so far:
/// what was stored stays stored, and ingesting again stores only the rest.
pub fn ingest(
    store: &mut Store,
    sources: &[Source],
    campaign: Option<&str>,
    obs: &dyn Observer,
) -> Result<Ingested, FleetError> {
    check_campaign(campaign)?;
    let mut done = Ingested {
        store: store.location().to_string(),
        campaign: campaign.map(str::to_string),
        ..Ingested::default()
    };
    obs.begin("ingest", sources.len() as u64);
    for batch in sources.chunks(BATCH) {
        if let Some(signal) = obs.stop_signal() {
            obs.finish();
            let text = format!(
                "stopped after {} documents ({} new, {} duplicate, {} rejected); the rest were not read",
                done.documents,
                done.new,
                done.duplicate,
                done.rejected.len()
            );
            return Err(FleetError::Interrupted { signal, text });
        }
        let mut runs = Vec::new();
        for (source, run) in convert_batch(batch, campaign) {
            done.documents += 1;
            match run {
                Ok(r) => runs.push(r),
                Err(reason) => done.rejected.push(Rejected { source, reason }),
            }
        }
        for saved in store.save_all(&runs)? {
            match saved {
                Saved::New(_) => done.new += 1,
                Saved::Duplicate(_) => done.duplicate += 1,
            }
        }
        for s in batch {
            obs.advance(&s.name());
        }
    }
    obs.finish();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_one_after_another_are_split_and_a_broken_tail_is_named() {
        let text = "{\"a\": 1}\n{\"b\": [2]}\n{\"c\":";
        let docs = documents(text);
        assert_eq!(docs[0], Ok("{\"a\": 1}"));
        assert_eq!(docs[1], Ok("{\"b\": [2]}"));
        assert!(docs[2].as_ref().is_err_and(|e| e.starts_with("it is not JSON")));
        assert!(documents("  \n").pop().unwrap().is_err());
    }

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
