//! Schema migrations, numbered by SQLite's `user_version`. Each step runs in its own
//! transaction together with the version bump, so a crash leaves the old or the new
//! schema, never half of one. Append steps; never edit one that has shipped.

use rusqlite::{Connection, TransactionBehavior};

/// Each entry takes the schema from version i to i + 1.
const STEPS: &[&str] = &[
    // 1: runs and their figures.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_unix_s INTEGER NOT NULL,
        saved_unix_s INTEGER NOT NULL,
        host TEXT,
        label TEXT,
        command TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        summary TEXT NOT NULL,
        document TEXT NOT NULL
    );
    CREATE TABLE figures (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        measurement TEXT NOT NULL,
        dims TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        min REAL,
        max REAL,
        cv REAL,
        samples INTEGER NOT NULL
    );
    CREATE INDEX figures_by_run ON figures(run_id);",
];

/// The schema version this build writes and reads.
pub const LATEST_VERSION: i64 = STEPS.len() as i64;

#[derive(Debug)]
pub enum Error {
    Newer { found: i64 },
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Sql(e)
    }
}

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the schema to LATEST_VERSION; refuses one that is newer.
pub fn migrate(conn: &mut Connection) -> Result<(), Error> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read inside the write transaction: another process may have migrated meanwhile.
        let v = version(&tx)?;
        if v > LATEST_VERSION {
            return Err(Error::Newer { found: v });
        }
        if v == LATEST_VERSION {
            return Ok(());
        }
        tx.execute_batch(STEPS[v as usize])?;
        tx.pragma_update(None, "user_version", v + 1)?;
        tx.commit()?;
    }
}
