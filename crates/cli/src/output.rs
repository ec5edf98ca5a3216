//! What every command shares: error classes that map to exit codes, and the JSON
//! envelope.

use std::fmt;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use memfabric_model::{Document, Envelope, StoredDocument, Tool, SCHEMA_VERSION};
use memfabric_store::{NewRun, Store};
use memfabric_topo::{Roots, Topology};
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

/// The reader of stdout went away (`memfabric ... | head`): the command stops
/// without a message and exits 141, as a process killed by SIGPIPE would.
#[derive(Debug)]
pub struct ClosedStdout;

impl fmt::Display for ClosedStdout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("standard output was closed by its reader")
    }
}

impl std::error::Error for ClosedStdout {}

/// Writes `text` to stdout and flushes it; a closed pipe is `ClosedStdout`.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ClosedStdout.into()),
        r => r.context("writing to stdout"),
    }
}

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
    /// Keep the result in the run database (--save, --label, and `run`).
    pub save: Option<SaveTo>,
    /// --store or --db, for the commands that read the run database.
    pub store: Option<String>,
}

/// Where and under what label a result is kept.
#[derive(Debug, Clone)]
pub struct SaveTo {
    /// An SQLite file or a PostgreSQL URL.
    pub location: String,
    pub label: Option<String>,
}

/// What a finished measurement hands over to be saved and printed: its document,
/// which names its command, and its text.
pub struct Finished<'a> {
    /// The machine it ran on; None for a result read from a saved tree.
    pub topo: Option<&'a Topology>,
    pub document: Document,
    pub text: String,
}

/// A command-line argument as documents and JSON keep it: a store URL (alone
/// or as `--store=URL`) without its password.
pub fn without_password(arg: &str) -> String {
    match arg.split_once('=') {
        Some((flag, url)) if flag.starts_with("--") && memfabric_store::is_url(url) => {
            format!("{flag}={}", memfabric_store::redact(url))
        }
        _ if memfabric_store::is_url(arg) => memfabric_store::redact(arg),
        _ => arg.to_string(),
    }
}

impl Ctx {
    pub fn new(json: bool, quiet: bool) -> Ctx {
        Ctx {
            save: None,
            store: None,
            json,
            args: std::env::args().map(|a| without_password(&a)).collect(),
            started_unix_s: memfabric_store::now_unix_s(),
            progress: Progress::new(!quiet),
        }
    }

    /// Saves the result when asked (one transaction: all or nothing), then prints it as
    /// JSON or text. A stop signal before this point withholds both. Returns the id of
    /// the saved run, if it was saved.
    pub fn finish(&self, f: Finished<'_>) -> Result<Option<i64>> {
        if let Some(sig) = memfabric_measure::sys::stop_signal() {
            return Err(Interrupted(sig).into());
        }
        // One environment for the document and the saved run: reading it measures the
        // clock, which is not worth doing twice.
        let envelope = self.envelope(f.document.command(), f.topo, &f.document);
        let text = encode(&envelope)?;
        let mut saved = None;
        if let Some(to) = &self.save {
            // One parse serves the check and the hash.
            let value = match check(&text) {
                Ok(v) => v,
                Err(e) => {
                    self.print(&text, &f.text)?;
                    return Err(anyhow::anyhow!("the result was not saved: {e}"));
                }
            };
            let mut store = Store::open_location(&to.location)?;
            let stored = StoredDocument {
                schema_version: SCHEMA_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").into(),
                started_unix_s: self.started_unix_s,
                environment: envelope.environment,
                document: f.document,
            };
            let mut run = NewRun::of(&stored, text.clone(), memfabric_store::value_hash(&value));
            run.label.clone_from(&to.label);
            let id = store.save(&run)?;
            eprintln!("memfabric: saved as run {id} in {}", store.location());
            saved = Some(id);
        }
        self.print(&text, &f.text)?;
        Ok(saved)
    }

    fn print(&self, document: &str, text: &str) -> Result<()> {
        print_all(if self.json { document } else { text })
    }

    /// Saves and prints a measurement's report; exit status 1 when any of its cells
    /// failed. `text` renders it, and is called only when text is wanted.
    pub fn conclude<T: Into<Document>>(
        &self,
        topo: &Topology,
        report: T,
        text: impl FnOnce(&T) -> String,
    ) -> Result<Status> {
        let text = if self.json { String::new() } else { text(&report) };
        let document = report.into();
        let failed = !document.failures().is_empty();
        self.finish(Finished {
            topo: Some(topo),
            document,
            text,
        })?;
        Ok(Status::from_failures(failed))
    }

    /// Writes the JSON document in one piece, so stdout never holds half a document.
    pub fn print_json<T: Serialize>(&self, command: &str, topo: Option<&Topology>, result: T) -> Result<()> {
        let text = self.document(command, topo, &result)?;
        print_all(&text)
    }

    /// The JSON document of a result, as `--json` prints it.
    pub fn document<T: Serialize>(
        &self,
        command: &str,
        topo: Option<&Topology>,
        result: T,
    ) -> Result<String> {
        encode(&self.envelope(command, topo, result))
    }

    /// The envelope every JSON document shares, around `result`.
    fn envelope<T: Serialize>(&self, command: &str, topo: Option<&Topology>, result: T) -> Envelope<T> {
        Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "memfabric".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command: command.into(),
            args: self.args.clone(),
            started_unix_s: self.started_unix_s,
            environment: topo.map(|t| memfabric_measure::env::environment(t, &Roots::live())),
            result,
        }
    }
}

/// What `fleet ingest` would hold against the document, held against it before it
/// is saved: a figure no memory gives is not stored from either path.
fn check(document: &str) -> Result<serde_json::Value, String> {
    let value: serde_json::Value = serde_json::from_str(document).map_err(|e| e.to_string())?;
    memfabric_model::validate::validate(&value, memfabric_store::now_unix_s()).map_err(|e| e.to_string())?;
    Ok(value)
}

/// A JSON document as printed: pretty, ending in a newline.
fn encode<T: Serialize>(envelope: &Envelope<T>) -> Result<String> {
    let mut text = serde_json::to_string_pretty(envelope).context("encoding JSON")?;
    text.push('\n');
    Ok(text)
}

/// Prints a finished text in one write, unless a stop signal came: then results of
/// a cut-short run are withheld rather than passed off as complete.
pub fn print_all(text: &str) -> Result<()> {
    if let Some(sig) = memfabric_measure::sys::stop_signal() {
        return Err(Interrupted(sig).into());
    }
    write_stdout(text)
}

/// Reads the topology of the machine this process runs on.
pub fn this_machine() -> Result<Topology> {
    let sys = Roots::live().sys;
    Topology::read(&sys).with_context(|| format!("reading the topology from {}", sys.display()))
}

/// Where runs are kept: --store, else --db, else $MEMFABRIC_STORE, else $MEMFABRIC_DB,
/// else a file under $XDG_DATA_HOME or ~/.local/share.
pub fn store_location(store: Option<&str>, db: Option<&Path>) -> Result<String, Usage> {
    let location = store_location_unchecked(store, db)?;
    memfabric_store::check_location(&location).map_err(Usage)?;
    Ok(location)
}

fn store_location_unchecked(store: Option<&str>, db: Option<&Path>) -> Result<String, Usage> {
    // Set but empty is a mistake (MEMFABRIC_DB= in a script), not a request for the
    // default store: say so rather than silently open another one.
    let var = |k: &str| match std::env::var(k) {
        Ok(v) if v.is_empty() => Err(Usage(format!(
            "{k} is set but empty: unset it for the default store, or give a path"
        ))),
        Ok(v) => Ok(Some(v)),
        Err(_) => Ok(None),
    };
    match (store, db) {
        (Some(""), _) => return Err(Usage("--store needs a location".into())),
        (_, Some(p)) if p.as_os_str().is_empty() => return Err(Usage("--db needs a path".into())),
        (Some(s), _) => return Ok(s.to_string()),
        _ => {}
    }
    if db.is_none() {
        if let Some(s) = var("MEMFABRIC_STORE")? {
            return Ok(s);
        }
    }
    let env_db = if db.is_none() { var("MEMFABRIC_DB")? } else { None };
    let (xdg, home) = (std::env::var("XDG_DATA_HOME").ok(), std::env::var("HOME").ok());
    memfabric_store::default_path(db, env_db.as_deref(), xdg.as_deref(), home.as_deref())
        .map(|p| p.display().to_string())
        .ok_or_else(|| {
            Usage(
                "no place for the run database: set --store, --db, MEMFABRIC_STORE, MEMFABRIC_DB or HOME"
                    .into(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_keep_no_password() {
        assert_eq!(
            without_password("postgres://u:s3cret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            without_password("--store=postgresql://u:s3cret@h/db"),
            "--store=postgresql://u:***@h/db"
        );
        assert_eq!(
            without_password("postgres://h/db?password=s3cret"),
            "postgres://h/db?password=***"
        );
        assert_eq!(without_password("--size=1G"), "--size=1G");
        assert_eq!(without_password("runs.sqlite"), "runs.sqlite");
    }

    /// What `--save` refuses is what `fleet ingest` refuses: the same rules.
    #[test]
    fn a_result_no_machine_gives_is_not_saved() {
        let doc = crate::cmd::common::stored_v040(2);
        let ctx = Ctx::new(true, true);
        let text = ctx.document(doc.command(), None, &doc).unwrap();
        assert!(check(&text).is_ok());
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["result"]["cells"][0]["outcome"]["latency_ns"]["median"] = serde_json::json!(-1.0);
        let e = check(&v.to_string()).unwrap_err();
        assert_eq!(
            e,
            "result.cells[0].outcome.latency_ns.median is -1.0: no memory answers in under 0.1 ns"
        );
    }
}
