//! memfabric's run history: every saved run in an embedded SQLite database.
//!
//! A run is written in one transaction: its JSON document and its figures land
//! together or not at all, so an interrupted or killed save leaves no partial record.
//! The database runs in WAL mode with a busy timeout, so two processes saving at once
//! both succeed, one after the other. The schema version is SQLite's `user_version`;
//! a database from a newer memfabric is refused rather than misread.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use memfabric_model::Figure;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, TransactionBehavior};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub mod compare;
mod csv;
mod migrate;

pub use compare::{compare, CompareRow, Comparison};
pub use csv::figures_csv;
pub use migrate::LATEST_VERSION;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open the run database {path}: {detail}")]
    Open { path: PathBuf, detail: String },
    #[error("the run database {path} is not a memfabric database or is damaged ({detail}); move it aside to start a new one")]
    Corrupt { path: PathBuf, detail: String },
    #[error("the run database {path} is locked by another process and stayed locked for {seconds} s; try again when it finishes")]
    Locked { path: PathBuf, seconds: u64 },
    #[error("the run database {path} was written by a newer memfabric (schema {found}, this one reads up to {supported}); upgrade memfabric or use --db to pick another file")]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("no run with id {0} (see `memfabric runs list`)")]
    NotFound(i64),
    #[error("run database {path}: {detail}")]
    Sql { path: PathBuf, detail: String },
}

/// How long a writer waits for another one before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A run about to be saved.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub started_unix_s: u64,
    pub host: Option<String>,
    pub label: Option<String>,
    /// The command that produced it, e.g. "run" or "bandwidth".
    pub command: String,
    pub tool_version: String,
    /// One line: what the run found, for `runs list`.
    pub summary: String,
    /// The whole JSON document the command printed (or would have printed).
    pub document: String,
    pub figures: Vec<Figure>,
}

/// A saved run, without its document and figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub started_unix_s: u64,
    pub host: Option<String>,
    pub label: Option<String>,
    pub command: String,
    pub tool_version: String,
    pub summary: String,
    pub figures: u64,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    busy: Duration,
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
    /// Opens (creating it and its directory if needed) and migrates the database.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with_timeout(path, BUSY_TIMEOUT)
    }

    /// As `open`, waiting at most `busy` for another writer.
    pub fn open_with_timeout(path: &Path, busy: Duration) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                detail: format!("creating {}: {e}", dir.display()),
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            busy,
        };
        // Two processes opening a new database at once: switching it to WAL can
        // answer "busy" at once, without waiting in SQLite's busy handler, while
        // the other process switches it. Try again until the busy timeout.
        let started = std::time::Instant::now();
        loop {
            match store
                .configure()
                .and_then(|()| migrate::migrate(&mut store.conn).map_err(|e| store.error(e)))
            {
                Err(StoreError::Locked { .. }) if started.elapsed() < busy => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                done => return done.map(|()| store),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&mut self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(self.busy)
            .map_err(|e| self.error(e.into()))?;
        // The first statement that reads the file: a file that is not a database fails here.
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| self.error(e.into()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Sql {
                path: self.path.clone(),
                detail: format!("could not switch to WAL mode (journal mode is {mode})"),
            });
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.error(e.into()))
    }

    /// Turns an SQLite failure into the error a user can act on.
    fn error(&self, e: migrate::Error) -> StoreError {
        let path = self.path.clone();
        match e {
            migrate::Error::Newer { found } => StoreError::NewerSchema {
                path,
                found,
                supported: LATEST_VERSION,
            },
            migrate::Error::Sql(e) => match e.sqlite_error_code() {
                Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                    path,
                    detail: e.to_string(),
                },
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                    path,
                    seconds: self.busy.as_secs(),
                },
                _ => StoreError::Sql {
                    path,
                    detail: e.to_string(),
                },
            },
        }
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.error(e.into())
    }

    /// Saves a run and its figures in one transaction; returns its id.
    pub fn save(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let saved = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let result = (|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "INSERT INTO runs (started_unix_s, saved_unix_s, host, label, command, tool_version, summary, document)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run.started_unix_s as i64,
                    saved as i64,
                    run.host,
                    run.label,
                    run.command,
                    run.tool_version,
                    run.summary,
                    run.document
                ],
            )?;
            let id = tx.last_insert_rowid();
            {
                let mut insert = tx.prepare(
                    "INSERT INTO figures (run_id, measurement, dims, metric, value, min, max, cv, samples)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?;
                for f in &run.figures {
                    let dims = serde_json::to_string(&f.dims).expect("string map encodes");
                    insert.execute(params![
                        id,
                        f.measurement,
                        dims,
                        f.metric,
                        f.value,
                        f.min,
                        f.max,
                        f.cv,
                        f.samples as i64
                    ])?;
                }
            }
            tx.commit()?;
            Ok(id)
        })();
        result.map_err(|e| self.sql(e))
    }

    /// Every run, newest first.
    pub fn list(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.summaries("WHERE 1 = ?1", 1).map_err(|e| self.sql(e))
    }

    pub fn summary(&self, id: i64) -> Result<RunSummary, StoreError> {
        let mut v = self.summaries("WHERE r.id = ?1", id).map_err(|e| self.sql(e))?;
        v.pop().ok_or(StoreError::NotFound(id))
    }

    fn summaries(&self, filter: &str, arg: i64) -> rusqlite::Result<Vec<RunSummary>> {
        let sql = format!(
            "SELECT r.id, r.started_unix_s, r.host, r.label, r.command, r.tool_version, r.summary,
                    (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.id)
             FROM runs r {filter} ORDER BY r.id DESC"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([arg], |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                started_unix_s: r.get::<_, i64>(1)? as u64,
                host: r.get(2)?,
                label: r.get(3)?,
                command: r.get(4)?,
                tool_version: r.get(5)?,
                summary: r.get(6)?,
                figures: r.get::<_, i64>(7)? as u64,
            })
        })?;
        rows.collect()
    }

    /// The newest run's id, if any.
    pub fn last(&self) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// The JSON document of a run, as the command printed it.
    pub fn document(&self, id: i64) -> Result<String, StoreError> {
        let found = self
            .conn
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |r| r.get(0));
        match found {
            Err(rusqlite::Error::QueryReturnedNoRows) => Err(StoreError::NotFound(id)),
            other => other.map_err(|e| self.sql(e)),
        }
    }

    /// A run's figures, in the order they were saved.
    pub fn figures(&self, id: i64) -> Result<Vec<Figure>, StoreError> {
        self.summary(id)?;
        let read = || -> rusqlite::Result<Vec<Figure>> {
            let mut stmt = self.conn.prepare(
                "SELECT measurement, dims, metric, value, min, max, cv, samples
                 FROM figures WHERE run_id = ?1 ORDER BY rowid",
            )?;
            let rows = stmt.query_map([id], |r| {
                let dims: String = r.get(1)?;
                Ok(Figure {
                    measurement: r.get(0)?,
                    dims: serde_json::from_str(&dims).unwrap_or_default(),
                    metric: r.get(2)?,
                    value: r.get(3)?,
                    min: r.get(4)?,
                    max: r.get(5)?,
                    cv: r.get(6)?,
                    samples: r.get::<_, i64>(7)? as usize,
                })
            })?;
            rows.collect()
        };
        read().map_err(|e| self.sql(e))
    }

    /// Deletes a run and its figures.
    pub fn delete(&mut self, id: i64) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(|e| self.sql(e))?;
        if n == 0 {
            return Err(StoreError::NotFound(id));
        }
        Ok(())
    }
}
