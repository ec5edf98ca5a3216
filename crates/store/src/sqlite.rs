//! The SQLite backend: one file, WAL mode, a busy timeout, the schema version in
//! `user_version`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use memfabric_model::Figure;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::migrate::{self, LATEST_VERSION};
use crate::{Backend, CampaignNode, FleetRow, NewRun, NodeStatus, RunSummary, Saved, StoreError};

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    busy: Duration,
}

impl SqliteStore {
    /// Opens (creating it and its directory if needed) and migrates the database,
    /// waiting at most `busy` for another writer.
    pub fn open(path: &Path, busy: Duration) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                place: path.display().to_string(),
                detail: format!("creating {}: {e}", dir.display()),
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| StoreError::Open {
            place: path.display().to_string(),
            detail: e.to_string(),
        })?;
        let mut store = SqliteStore {
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
                .and_then(|()| migrate::migrate_sqlite(&mut store.conn).map_err(|e| store.error(e)))
            {
                Err(StoreError::Locked { .. }) if started.elapsed() < busy => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                done => return done.map(|()| store),
            }
        }
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
                place: self.path.display().to_string(),
                detail: format!("could not switch to WAL mode (journal mode is {mode})"),
            });
        }
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.error(e.into()))
    }

    /// Turns an SQLite failure into the error a user can act on.
    fn error(&self, e: migrate::Error) -> StoreError {
        let place = self.path.display().to_string();
        match e {
            migrate::Error::Newer { found } => StoreError::NewerSchema {
                place,
                found,
                supported: LATEST_VERSION,
            },
            migrate::Error::Sql(e) => match e.sqlite_error_code() {
                Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                    place,
                    detail: e.to_string(),
                },
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                    place,
                    seconds: self.busy.as_secs(),
                },
                _ => StoreError::Sql {
                    place,
                    detail: e.to_string(),
                },
            },
        }
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.error(e.into())
    }

    fn summaries(&self, filter: &str, arg: i64) -> rusqlite::Result<Vec<RunSummary>> {
        let sql = format!(
            "SELECT r.id, r.started_unix_s, r.host, r.label, r.command, r.tool_version, r.summary,
                    (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.id), r.host_id, r.class_key
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
                host_id: r.get(8)?,
                class_key: r.get(9)?,
            })
        })?;
        rows.collect()
    }
}

impl Backend for SqliteStore {
    fn save_all(&mut self, runs: &[NewRun]) -> Result<Vec<Saved>, StoreError> {
        let saved = crate::now_unix_s();
        let result = (|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut out = Vec::with_capacity(runs.len());
            {
                let mut insert_run = tx.prepare(
                    "INSERT INTO runs (started_unix_s, saved_unix_s, host, label, command, tool_version, summary,
                                       document, host_id, class_key, campaign, doc_hash, facts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                     ON CONFLICT (doc_hash) DO NOTHING",
                )?;
                let mut existing = tx.prepare("SELECT id FROM runs WHERE doc_hash = ?1")?;
                let mut insert = tx.prepare(
                    "INSERT INTO figures (run_id, measurement, dims, metric, value, min, max, cv, samples)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?;
                for run in runs {
                    let hash = &run.doc_hash;
                    let added = insert_run.execute(params![
                        run.started_unix_s as i64,
                        saved as i64,
                        run.host,
                        run.label,
                        run.command,
                        run.tool_version,
                        run.summary,
                        run.document,
                        run.host_id,
                        run.class_key,
                        run.campaign,
                        hash,
                        run.facts
                    ])?;
                    if added == 0 {
                        out.push(Saved::Duplicate(existing.query_row([hash], |r| r.get(0))?));
                        continue;
                    }
                    let id = tx.last_insert_rowid();
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
                    out.push(Saved::New(id));
                }
            }
            tx.commit()?;
            Ok(out)
        })();
        result.map_err(|e| self.sql(e))
    }

    fn fleet(&mut self, campaign: Option<&str>) -> Result<Vec<FleetRow>, StoreError> {
        let read = || -> rusqlite::Result<Vec<FleetRow>> {
            let mut stmt = self.conn.prepare(
                "SELECT id, started_unix_s, host, host_id, class_key, campaign, facts, saved_unix_s FROM runs
                 WHERE facts IS NOT NULL AND (?1 IS NULL OR campaign = ?1) ORDER BY started_unix_s DESC, id DESC",
            )?;
            let rows = stmt.query_map([campaign], |r| {
                Ok(FleetRow {
                    id: r.get(0)?,
                    started_unix_s: r.get::<_, i64>(1)? as u64,
                    host: r.get(2)?,
                    host_id: r.get(3)?,
                    class_key: r.get(4)?,
                    campaign: r.get(5)?,
                    facts: r.get(6)?,
                    saved_unix_s: r.get::<_, i64>(7)? as u64,
                })
            })?;
            rows.collect()
        };
        read().map_err(|e| self.sql(e))
    }

    fn without_facts(&mut self) -> Result<Vec<(i64, String)>, StoreError> {
        let read = || -> rusqlite::Result<Vec<(i64, String)>> {
            let mut stmt = self
                .conn
                .prepare("SELECT id, document FROM runs WHERE facts IS NULL ORDER BY id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        };
        read().map_err(|e| self.sql(e))
    }

    fn set_facts(&mut self, id: i64, facts: &str, hash: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET facts = ?1,
                     doc_hash = CASE WHEN EXISTS (SELECT 1 FROM runs WHERE doc_hash = ?2) THEN doc_hash ELSE ?2 END
                 WHERE id = ?3",
                params![facts, hash, id],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    fn set_node(&mut self, n: &CampaignNode) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO campaign_nodes (campaign, node, status, reason, run_id, updated_unix_s)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (campaign, node) DO UPDATE SET status = excluded.status, reason = excluded.reason,
                 run_id = excluded.run_id, updated_unix_s = excluded.updated_unix_s",
                params![
                    n.campaign,
                    n.node,
                    n.status.name(),
                    n.reason,
                    n.run_id,
                    n.updated_unix_s as i64
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    fn nodes(&mut self, campaign: &str) -> Result<Vec<CampaignNode>, StoreError> {
        let read = || -> rusqlite::Result<Vec<CampaignNode>> {
            let mut stmt = self.conn.prepare(
                "SELECT campaign, node, status, reason, run_id, updated_unix_s FROM campaign_nodes
                 WHERE campaign = ?1 ORDER BY node",
            )?;
            let rows = stmt.query_map([campaign], |r| {
                Ok(CampaignNode {
                    campaign: r.get(0)?,
                    node: r.get(1)?,
                    status: {
                        let text: String = r.get(2)?;
                        NodeStatus::from_name(&text).ok_or_else(|| {
                            rusqlite::Error::FromSqlConversionFailure(
                                2,
                                rusqlite::types::Type::Text,
                                format!("unknown node status {text:?}").into(),
                            )
                        })?
                    },
                    reason: r.get(3)?,
                    run_id: r.get(4)?,
                    updated_unix_s: r.get::<_, i64>(5)? as u64,
                })
            })?;
            rows.collect()
        };
        read().map_err(|e| self.sql(e))
    }

    /// Every run, newest first.
    fn list(&mut self) -> Result<Vec<RunSummary>, StoreError> {
        self.summaries("WHERE 1 = ?1", 1).map_err(|e| self.sql(e))
    }

    fn summary(&mut self, id: i64) -> Result<RunSummary, StoreError> {
        let mut v = self.summaries("WHERE r.id = ?1", id).map_err(|e| self.sql(e))?;
        v.pop().ok_or(StoreError::NotFound(id))
    }

    /// The newest run's id, if any.
    fn last(&mut self) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// The JSON document of a run, as the command printed it.
    fn document(&mut self, id: i64) -> Result<String, StoreError> {
        let found = self
            .conn
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |r| r.get(0));
        match found {
            Err(rusqlite::Error::QueryReturnedNoRows) => Err(StoreError::NotFound(id)),
            other => other.map_err(|e| self.sql(e)),
        }
    }

    /// A run's figures, in the order they were saved.
    fn figures(&mut self, id: i64) -> Result<Vec<Figure>, StoreError> {
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
    fn delete(&mut self, id: i64) -> Result<(), StoreError> {
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
