//! `memfabric fleet ingest`: JSON run documents from many hosts into one store, each
//! stored once however often it is ingested.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memfabric_measure::Observer;
use memfabric_model::fleet::{noise_flags, FleetFacts};
use memfabric_model::StoredDocument;
use memfabric_store::{NewRun, Saved, Store};
use serde::Serialize;
use serde_json::Value;

use crate::args::IngestArgs;
use crate::output::{print_all, store_location, summarize, Ctx, Interrupted, Status, Usage};

/// Documents stored per transaction: a kill loses at most this many, never half of one.
const BATCH: usize = 64;

/// Where documents come from.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    fn name(&self) -> String {
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
fn sources(inputs: &[String]) -> Result<Vec<Source>, Usage> {
    let mut out = Vec::new();
    for input in inputs {
        if input == "-" {
            if out.contains(&Source::Stdin) {
                return Err(Usage("- (standard input) is given twice".into()));
            }
            out.push(Source::Stdin);
            continue;
        }
        let path = Path::new(input);
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files).map_err(|e| Usage(format!("cannot read the directory {input}: {e}")))?;
            if files.is_empty() {
                return Err(Usage(format!("no *.json file under {input}")));
            }
            files.sort();
            out.extend(files.into_iter().map(Source::File));
        } else if path.exists() {
            out.push(Source::File(path.to_path_buf()));
        } else {
            return Err(Usage(format!("{input}: no such file or directory")));
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
    let noise = noise_flags(&value["result"]);
    let tool_version = value["tool"]["version"].as_str().unwrap_or("unknown").to_string();
    let started_unix_s = value["started_unix_s"].as_u64().unwrap_or(0);
    let doc_hash = memfabric_store::value_hash(&value);
    let doc = StoredDocument::from_value(value).map_err(|e| e.to_string())?;
    let Some(env) = doc.environment.as_ref() else {
        return Err(format!(
            "its {} document has no environment: only measurement documents say which host they describe",
            doc.document.command()
        ));
    };
    let command = doc.document.command();
    let figures = doc.document.figures();
    let facts = FleetFacts::of(Some(env), &figures, noise);
    let platform = env.platform.as_ref();
    Ok(NewRun {
        started_unix_s,
        host: env.hostname.clone(),
        host_id: platform.and_then(|p| p.host_id.known().cloned()),
        class_key: platform.map(|p| p.class.key.clone()),
        label: None,
        command: command.into(),
        tool_version,
        summary: summarize(command, &figures),
        document: text.to_string(),
        doc_hash,
        figures,
        campaign: campaign.map(str::to_string),
        facts: Some(serde_json::to_string(&facts).expect("facts encode")),
    })
}

#[derive(Debug, Default, Serialize)]
struct Ingested {
    store: String,
    campaign: Option<String>,
    documents: usize,
    new: usize,
    duplicate: usize,
    rejected: Vec<Rejected>,
}

#[derive(Debug, Serialize)]
struct Rejected {
    source: String,
    reason: String,
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

pub fn ingest(ctx: &Ctx, a: &IngestArgs) -> Result<Status> {
    if a.campaign.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(Usage("--campaign needs a name".into()).into());
    }
    let sources = sources(&a.inputs)?;
    let location = store_location(ctx.store.as_deref(), None)?;
    let mut store = Store::open_location(&location)?;
    super::report::backfill(&mut store)?;
    let mut done = Ingested {
        store: store.location().to_string(),
        campaign: a.campaign.clone(),
        ..Ingested::default()
    };
    ctx.progress.begin("ingest", sources.len() as u64);
    for batch in sources.chunks(BATCH) {
        if let Some(sig) = memfabric_measure::sys::stop_signal() {
            ctx.progress.finish();
            eprintln!(
                "memfabric: stopped after {} documents ({} new, {} duplicate, {} rejected); the rest were not read",
                done.documents,
                done.new,
                done.duplicate,
                done.rejected.len()
            );
            return Err(Interrupted(sig).into());
        }
        let mut runs = Vec::new();
        for (source, run) in convert_batch(batch, a.campaign.as_deref()) {
            done.documents += 1;
            match run {
                Ok(r) => runs.push(r),
                Err(reason) => done.rejected.push(Rejected { source, reason }),
            }
        }
        for saved in store.save_all(&runs).context("storing the batch")? {
            match saved {
                Saved::New(_) => done.new += 1,
                Saved::Duplicate(_) => done.duplicate += 1,
            }
        }
        for s in batch {
            ctx.progress.advance(&s.name());
        }
    }
    ctx.progress.finish();
    if ctx.json {
        ctx.print_json("fleet-ingest", None, &done)?;
    } else {
        print_all(&text(&done))?;
    }
    Ok(Status::from_failures(!done.rejected.is_empty()))
}

fn text(d: &Ingested) -> String {
    let campaign = d
        .campaign
        .as_ref()
        .map_or(String::new(), |c| format!(" (campaign {c})"));
    let mut out = format!(
        "Ingested {} documents into {}{campaign}: {} new, {} duplicate, {} rejected\n",
        d.documents,
        d.store,
        d.new,
        d.duplicate,
        d.rejected.len()
    );
    if !d.rejected.is_empty() {
        out += "Rejected:\n";
        for r in &d.rejected {
            out += &format!("  {}: {}\n", r.source, r.reason);
        }
    }
    out
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
