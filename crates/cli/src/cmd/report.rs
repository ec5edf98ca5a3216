//! `memfabric report`: a saved run (or two) as one offline HTML file.

use std::path::PathBuf;

use anyhow::Result;
use memfabric_model::StoredDocument;
use memfabric_report::{render_comparison, render_run, CompareLine, RunInfo};
use memfabric_store::{compare, RunSummary, Store};

use super::helpers::{date, dims_text, open, resolve, write_atomically};
use crate::args::{ReportArgs, RunRef};
use crate::output::{Ctx, Status};

fn info(r: &RunSummary) -> RunInfo {
    RunInfo {
        id: r.id,
        label: r.label.clone(),
        host: r.host.clone(),
        date: date(r.started_unix_s),
        command: r.command.clone(),
        tool_version: r.tool_version.clone(),
    }
}

/// A saved run and its typed document; a document this version cannot read is an
/// error naming the run and why.
fn load(store: &Store, id: i64) -> Result<(RunInfo, StoredDocument)> {
    let doc = StoredDocument::parse(&store.document(id)?)
        .map_err(|e| anyhow::anyhow!("run {id} cannot be reported: {e}"))?;
    Ok((info(&store.summary(id)?), doc))
}

/// The HTML of run `id`, compared with `other` when given.
pub fn html(store: &Store, id: i64, other: Option<i64>) -> Result<String> {
    let (a_info, a_doc) = load(store, id)?;
    let Some(b) = other else {
        return Ok(render_run(&a_info, &a_doc));
    };
    let (b_info, b_doc) = load(store, b)?;
    let c = compare(id, &store.figures(id)?, b, &store.figures(b)?);
    let lines: Vec<CompareLine> = c
        .rows
        .iter()
        .map(|r| CompareLine {
            measurement: r.measurement.clone(),
            what: dims_text(&r.dims),
            metric: r.metric.clone(),
            a: r.a,
            b: r.b,
            percent: r.percent,
            noise: r.noise,
        })
        .collect();
    Ok(render_comparison((&a_info, &a_doc), (&b_info, &b_doc), &lines))
}

pub fn default_file(id: i64) -> PathBuf {
    PathBuf::from(format!("memfabric-run-{id}.html"))
}

pub fn run(ctx: &Ctx, a: &ReportArgs) -> Result<Status> {
    let store = open(ctx)?;
    let id = resolve(&store, a.run.as_ref().unwrap_or(&RunRef::Last))?;
    let other = a.compare.as_ref().map(|r| resolve(&store, r)).transpose()?;
    let text = html(&store, id, other)?;
    let path = a.output.clone().unwrap_or_else(|| default_file(id));
    if path.exists() && !a.force {
        return Err(crate::output::Usage(format!(
            "{} exists: --force overwrites it, -o FILE writes another",
            path.display()
        ))
        .into());
    }
    write_atomically(&path, &text)?;
    if ctx.json {
        let written = serde_json::json!({"run": id, "compare": other, "path": path.display().to_string(), "bytes": text.len()});
        ctx.print_json("report", None, written)?;
    } else {
        eprintln!("memfabric: wrote {}", path.display());
    }
    Ok(Status::Ok)
}
