//! memfabric's run history: every saved run in an embedded SQLite database (the
//! default, no setup) or in PostgreSQL (a `postgres://` URL), behind one interface.
//!
//! A run is written in one transaction: its JSON document and its figures land
//! together or not at all, so an interrupted or killed save leaves no partial record.
//! SQLite runs in WAL mode with a busy timeout, so two processes saving at once both
//! succeed, one after the other; PostgreSQL takes concurrent writers as it always
//! does. Both keep a schema version, migrated by the same numbered steps; a store from
//! a newer memfabric is refused rather than misread.

#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memfabric_model::fleet::FleetFacts;
pub use memfabric_model::fleet::NodeStatus;
use memfabric_model::{Figure, StoredDocument};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub mod compare;
mod csv;
mod migrate;
mod pg_conn;
mod pg_connect;
mod pg_tls;
mod postgres;
mod sqlite;

pub use compare::{compare, CompareRow, Comparison};
pub use csv::{field as csv_field, figures_csv};
pub use migrate::LATEST_VERSION;
pub use postgres::{is_url, redact};

/// What went wrong, in a line a user can act on. `place` is the file, or the URL
/// without its password.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open the run database {place}: {detail}")]
    Open { place: String, detail: String },
    #[error("cannot reach the PostgreSQL store {place}: {detail}")]
    Unreachable { place: String, detail: String },
    #[error(
        "the PostgreSQL store {place} refused the login: {detail}; check the user, and the password in the URL, PGPASSWORD or the password file"
    )]
    Login { place: String, detail: String },
    #[error("the run database {place} is not a memfabric database or is damaged ({detail}); move it aside to start a new one")]
    Corrupt { place: String, detail: String },
    #[error("the run database {place} is locked by another process and stayed locked for {seconds} s; try again when it finishes")]
    Locked { place: String, seconds: u64 },
    #[error("the run database {place} was written by a newer memfabric (schema {found}, this one reads up to {supported}); upgrade memfabric or choose another store with --db or --store")]
    NewerSchema {
        place: String,
        found: i64,
        supported: i64,
    },
    #[error("no run with id {0} (see `memfabric runs list`)")]
    NotFound(i64),
    #[error("run database {place}: {detail}")]
    Sql { place: String, detail: String },
}

/// How long a writer waits for another one before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A run about to be saved.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub started_unix_s: u64,
    pub host: Option<String>,
    /// The salted hash of the machine's id (`environment.platform.host_id`).
    pub host_id: Option<String>,
    /// The hardware class key (`environment.platform.class.key`).
    pub class_key: Option<String>,
    pub label: Option<String>,
    /// The command that produced it, e.g. "run" or "bandwidth".
    pub command: String,
    pub tool_version: String,
    /// One line: what the run found, for `runs list`.
    pub summary: String,
    /// The whole JSON document the command printed (or would have printed).
    pub document: String,
    /// Its [`document_hash`] (or [`value_hash`], where the caller has parsed it):
    /// a document whose hash is stored already is not stored again.
    pub doc_hash: String,
    pub figures: Vec<Figure>,
    /// The campaign it was gathered in (`fleet ingest --campaign`).
    pub campaign: Option<String>,
    /// What the fleet report reads of it: `memfabric_model::fleet::FleetFacts` as JSON.
    pub facts: Option<String>,
}

impl NewRun {
    /// The row stored for a run document: the one place a stored run's columns,
    /// summary, figures and fleet facts are derived from it, for `--save` and for
    /// `fleet ingest` alike. `text` is the document as printed or received;
    /// `doc_hash` its [`document_hash`] (or [`value_hash`]).
    pub fn of(doc: &StoredDocument, text: String, doc_hash: String) -> NewRun {
        let env = doc.environment.as_ref();
        let platform = env.and_then(|e| e.platform.as_ref());
        let figures = doc.document.figures();
        let facts = FleetFacts::of(env, &figures, doc.document.noise_flags());
        NewRun {
            started_unix_s: doc.started_unix_s,
            host: env.and_then(|e| e.hostname.clone()),
            host_id: platform.and_then(|p| p.host_id.known().cloned()),
            class_key: platform.map(|p| p.class.key.clone()),
            label: None,
            command: doc.document.command().into(),
            tool_version: doc.tool_version.clone(),
            summary: doc.document.summary(),
            document: text,
            doc_hash,
            figures,
            campaign: None,
            facts: Some(serde_json::to_string(&facts).expect("facts encode")),
        }
    }
}

/// What saving a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// Stored under this id.
    New(i64),
    /// The same document was already stored, under this id; nothing was written.
    Duplicate(i64),
}

impl Saved {
    pub fn id(self) -> i64 {
        match self {
            Saved::New(id) | Saved::Duplicate(id) => id,
        }
    }
}

/// A run as the fleet report reads it: who, where, and its facts.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRow {
    pub id: i64,
    pub started_unix_s: u64,
    pub host: Option<String>,
    pub host_id: Option<String>,
    pub class_key: Option<String>,
    pub campaign: Option<String>,
    /// `FleetFacts` as JSON.
    pub facts: String,
    /// When it was stored (saved or ingested).
    pub saved_unix_s: u64,
}

/// What became of one node of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignNode {
    pub campaign: String,
    /// The scheduler's name for it (Slurm's node name).
    pub node: String,
    pub status: NodeStatus,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    /// The run it stored, when it did.
    pub run_id: Option<i64>,
    pub updated_unix_s: u64,
}

/// Seconds since the Unix epoch now (0 on a clock set before 1970): the time
/// every run, campaign and saved row is stamped with.
pub fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What makes two documents the same run: a SHA-256 of the document with its
/// formatting removed (parsed and written back compactly, keys in order), so a
/// document pretty-printed or reformatted by another tool still matches itself.
/// A text that is not JSON is hashed as it is.
pub fn document_hash(document: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(document) {
        Ok(v) => value_hash(&v),
        Err(_) => sha256_hex(document),
    }
}

/// `document_hash` of a document already parsed: no second parse.
pub fn value_hash(document: &serde_json::Value) -> String {
    sha256_hex(&document.to_string())
}

fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A saved run, without its document and figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub started_unix_s: u64,
    pub host: Option<String>,
    #[serde(default)]
    pub host_id: Option<String>,
    #[serde(default)]
    pub class_key: Option<String>,
    pub label: Option<String>,
    pub command: String,
    pub tool_version: String,
    pub summary: String,
    pub figures: u64,
}

/// What a store does, whichever database holds it.
pub trait Backend {
    /// Saves runs and their figures in one transaction: all of them or none. A run
    /// whose document is already stored is not stored again.
    fn save_all(&mut self, runs: &[NewRun]) -> Result<Vec<Saved>, StoreError>;
    /// The runs that carry fleet facts, the newest measured first (then the newest
    /// stored); only one campaign's if given.
    fn fleet(&mut self, campaign: Option<&str>) -> Result<Vec<FleetRow>, StoreError>;
    /// Runs stored without fleet facts (before schema 3): id and document.
    fn without_facts(&mut self) -> Result<Vec<(i64, String)>, StoreError>;
    /// Gives a run its fleet facts and document hash (the hash only where no other
    /// run has it: two identical documents stored before schema 3 keep one hash).
    fn set_facts(&mut self, id: i64, facts: &str, hash: &str) -> Result<(), StoreError>;
    /// Records (or updates) what became of a node of a campaign.
    fn set_node(&mut self, node: &CampaignNode) -> Result<(), StoreError>;
    /// A campaign's nodes, by name.
    fn nodes(&mut self, campaign: &str) -> Result<Vec<CampaignNode>, StoreError>;
    /// Every run, newest first.
    fn list(&mut self) -> Result<Vec<RunSummary>, StoreError>;
    fn summary(&mut self, id: i64) -> Result<RunSummary, StoreError>;
    /// The newest run's id, if any.
    fn last(&mut self) -> Result<Option<i64>, StoreError>;
    /// The JSON document of a run, as the command printed it.
    fn document(&mut self, id: i64) -> Result<String, StoreError>;
    /// A run's figures, in the order they were saved.
    fn figures(&mut self, id: i64) -> Result<Vec<Figure>, StoreError>;
    /// Deletes a run and its figures.
    fn delete(&mut self, id: i64) -> Result<(), StoreError>;
}

/// The run history: SQLite (a file) or PostgreSQL (a `postgres://` URL), the same
/// schema, versions and operations on both.
pub struct Store {
    backend: RefCell<Box<dyn Backend>>,
    location: String,
}

/// What a store location may be: a `postgres://` or `postgresql://` URL, an
/// `sqlite://PATH`, or a plain path. Anything else with a scheme (`postgress://`,
/// `mysql://`) is refused, naming the scheme only: the rest may hold a password,
/// and a typo must not become a local file named after it.
pub fn check_location(location: &str) -> Result<(), String> {
    match location.split_once("://") {
        None => Ok(()),
        Some(("postgres" | "postgresql", _)) => Ok(()),
        Some(("sqlite", "")) => Err("sqlite:// needs a path: sqlite:///var/lib/memfabric/runs.sqlite".into()),
        Some(("sqlite", _)) => Ok(()),
        Some((scheme, _)) => Err(format!(
            "{scheme}:// is not a store this memfabric knows: give a postgres:// or postgresql:// URL, an sqlite://PATH, or a file path"
        )),
    }
}

/// A location as it may be shown whatever it holds: its scheme, or the path.
fn scheme_only(location: &str) -> String {
    match location.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://..."),
        None => location.to_string(),
    }
}

/// Where runs are kept: `--db`, else `$MEMFABRIC_DB`, else
/// `$XDG_DATA_HOME/memfabric/runs.sqlite`, else `~/.local/share/memfabric/runs.sqlite`.
pub fn default_path(
    flag: Option<&Path>,
    env_db: Option<&str>,
    xdg_data_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    let nonempty = |s: Option<&str>| s.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(p) = nonempty(env_db) {
        return Some(p);
    }
    let data = nonempty(xdg_data_home).or_else(|| nonempty(home).map(|h| h.join(".local/share")))?;
    Some(data.join("memfabric").join("runs.sqlite"))
}

impl Store {
    /// Opens (creating it and its directory if needed) and migrates an SQLite store.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with_timeout(path, BUSY_TIMEOUT)
    }

    /// As `open`, waiting at most `busy` for another writer.
    pub fn open_with_timeout(path: &Path, busy: Duration) -> Result<Store, StoreError> {
        let backend = sqlite::SqliteStore::open(path, busy)?;
        Ok(Store {
            backend: RefCell::new(Box::new(backend)),
            location: path.display().to_string(),
        })
    }

    /// A `postgres://` or `postgresql://` URL opens a PostgreSQL store; anything else
    /// is an SQLite file.
    pub fn open_location(location: &str) -> Result<Store, StoreError> {
        check_location(location).map_err(|detail| StoreError::Open {
            place: scheme_only(location),
            detail,
        })?;
        if let Some(path) = location.strip_prefix("sqlite://") {
            return Store::open(Path::new(path));
        }
        if postgres::is_url(location) {
            let backend = postgres::PgStore::open(location)?;
            return Ok(Store {
                location: postgres::redact(location),
                backend: RefCell::new(Box::new(backend)),
            });
        }
        Store::open(Path::new(location))
    }

    /// Where the store is: a file path, or the URL without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Saves one run (one transaction); a document already stored keeps its id.
    pub fn save(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let saved = self.backend.get_mut().save_all(std::slice::from_ref(run))?;
        Ok(saved[0].id())
    }

    /// Saves many runs in one transaction: all or none.
    pub fn save_all(&mut self, runs: &[NewRun]) -> Result<Vec<Saved>, StoreError> {
        self.backend.get_mut().save_all(runs)
    }

    pub fn fleet(&self, campaign: Option<&str>) -> Result<Vec<FleetRow>, StoreError> {
        self.backend.borrow_mut().fleet(campaign)
    }

    pub fn without_facts(&self) -> Result<Vec<(i64, String)>, StoreError> {
        self.backend.borrow_mut().without_facts()
    }

    pub fn set_facts(&mut self, id: i64, facts: &str, hash: &str) -> Result<(), StoreError> {
        self.backend.get_mut().set_facts(id, facts, hash)
    }

    pub fn set_node(&mut self, node: &CampaignNode) -> Result<(), StoreError> {
        self.backend.get_mut().set_node(node)
    }

    pub fn nodes(&self, campaign: &str) -> Result<Vec<CampaignNode>, StoreError> {
        self.backend.borrow_mut().nodes(campaign)
    }

    pub fn list(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.backend.borrow_mut().list()
    }

    pub fn summary(&self, id: i64) -> Result<RunSummary, StoreError> {
        self.backend.borrow_mut().summary(id)
    }

    pub fn last(&self) -> Result<Option<i64>, StoreError> {
        self.backend.borrow_mut().last()
    }

    pub fn document(&self, id: i64) -> Result<String, StoreError> {
        self.backend.borrow_mut().document(id)
    }

    pub fn figures(&self, id: i64) -> Result<Vec<Figure>, StoreError> {
        self.backend.borrow_mut().figures(id)
    }

    pub fn delete(&mut self, id: i64) -> Result<(), StoreError> {
        self.backend.get_mut().delete(id)
    }
}
