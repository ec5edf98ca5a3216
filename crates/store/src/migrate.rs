//! Schema migrations, numbered. SQLite keeps the number in `user_version`; PostgreSQL
//! in the one-row table `memfabric_schema`. Each step is written once per dialect and
//! runs in one transaction together with the version bump, so a crash leaves the old
//! or the new schema, never half of one. Append steps; never edit one that has shipped.

use rusqlite::{Connection, TransactionBehavior};

/// One schema step in each dialect: the same tables, columns and meaning.
pub struct Step {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// Each entry takes the schema from version i to i + 1.
pub const STEPS: &[Step] = &[
    // 1: runs and their figures.
    Step {
        sqlite: "CREATE TABLE runs (
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
        // figures.seq keeps the order figures were saved in, as SQLite's rowid does.
        postgres: "CREATE TABLE runs (
            id BIGSERIAL PRIMARY KEY,
            started_unix_s BIGINT NOT NULL,
            saved_unix_s BIGINT NOT NULL,
            host TEXT,
            label TEXT,
            command TEXT NOT NULL,
            tool_version TEXT NOT NULL,
            summary TEXT NOT NULL,
            document TEXT NOT NULL
        );
        CREATE TABLE figures (
            seq BIGSERIAL PRIMARY KEY,
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            measurement TEXT NOT NULL,
            dims TEXT NOT NULL,
            metric TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            min DOUBLE PRECISION,
            max DOUBLE PRECISION,
            cv DOUBLE PRECISION,
            samples BIGINT NOT NULL
        );
        CREATE INDEX figures_by_run ON figures(run_id);",
    },
    // 2: which machine, and which class of machine, each run came from.
    Step {
        sqlite: "ALTER TABLE runs ADD COLUMN host_id TEXT;
        ALTER TABLE runs ADD COLUMN class_key TEXT;
        CREATE INDEX runs_by_class ON runs(class_key);",
        postgres: "ALTER TABLE runs ADD COLUMN host_id TEXT;
        ALTER TABLE runs ADD COLUMN class_key TEXT;
        CREATE INDEX runs_by_class ON runs(class_key);",
    },
    // 3: fleets. The campaign a run was gathered in, a hash of its document (so a
    // document ingested twice is stored once), and the facts the fleet report reads.
    Step {
        sqlite: "ALTER TABLE runs ADD COLUMN campaign TEXT;
        ALTER TABLE runs ADD COLUMN doc_hash TEXT;
        ALTER TABLE runs ADD COLUMN facts TEXT;
        CREATE UNIQUE INDEX runs_by_hash ON runs(doc_hash);
        CREATE INDEX runs_by_campaign ON runs(campaign);",
        postgres: "ALTER TABLE runs ADD COLUMN campaign TEXT;
        ALTER TABLE runs ADD COLUMN doc_hash TEXT;
        ALTER TABLE runs ADD COLUMN facts TEXT;
        CREATE UNIQUE INDEX runs_by_hash ON runs(doc_hash);
        CREATE INDEX runs_by_campaign ON runs(campaign);",
    },
    // 4: what became of each node of a campaign (`fleet run`).
    Step {
        sqlite: "CREATE TABLE campaign_nodes (
            campaign TEXT NOT NULL,
            node TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
            updated_unix_s INTEGER NOT NULL,
            PRIMARY KEY (campaign, node)
        );",
        postgres: "CREATE TABLE campaign_nodes (
            campaign TEXT NOT NULL,
            node TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            run_id BIGINT REFERENCES runs(id) ON DELETE SET NULL,
            updated_unix_s BIGINT NOT NULL,
            PRIMARY KEY (campaign, node)
        );",
    },
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

/// Brings an SQLite schema to LATEST_VERSION; refuses one that is newer.
pub fn migrate_sqlite(conn: &mut Connection) -> Result<(), Error> {
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
        tx.execute_batch(STEPS[v as usize].sqlite)?;
        tx.pragma_update(None, "user_version", v + 1)?;
        tx.commit()?;
    }
}
