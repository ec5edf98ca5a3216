//! The PostgreSQL backend: one connection per process, every save one transaction,
//! the schema version in `memfabric_schema`, migrations serialised by an advisory
//! lock so that many processes starting at once migrate once.

use std::time::Duration;

use memfabric_model::Figure;
use postgres::Client;

use crate::migrate::{LATEST_VERSION, STEPS};
use crate::pg_conn::{self, Conninfo};
use crate::pg_connect::connect;
use crate::{Backend, CampaignNode, FleetRow, NewRun, NodeStatus, RunSummary, Saved, StoreError};

/// How long the liveness check before an operation may take.
const LIVENESS_TIMEOUT: Duration = Duration::from_secs(5);

/// Any number, the same in every memfabric: the advisory lock migrations take.
const MIGRATION_LOCK: i64 = 0x006d_6661_6272_6963; // "mfabric"

pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// The URL with its password (in the user part or a `password=` parameter) replaced
/// by `***`, for messages and listings.
pub fn redact(url: &str) -> String {
    let url = match url.split_once('?') {
        Some((base, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some(("password", _)) => "password=***".to_string(),
                    _ => p.to_string(),
                })
                .collect();
            format!("{base}?{}", params.join("&"))
        }
        None => url.to_string(),
    };
    let Some((scheme, rest)) = url.split_once("://") else {
        return url;
    };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => {
            let user = &rest[..at];
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            let masked = if rest[..at].contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{masked}{}", &rest[at..])
        }
        None => url.clone(),
    }
}

pub struct PgStore {
    client: Client,
    place: String,
    /// Kept to connect again when the server closed the connection.
    info: Conninfo,
}

impl PgStore {
    /// Connects and migrates. Nothing is written anywhere else: a store that cannot be
    /// reached is an error, never a fallback to a local file. The URL's missing parts
    /// come from libpq's environment variables and password file (see `pg_conn`).
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let place = redact(url);
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let info = pg_conn::resolve(url, &|k| std::env::var(k).ok(), home.as_deref()).map_err(|detail| {
            StoreError::Open {
                place: place.clone(),
                detail,
            }
        })?;
        for w in &info.warnings {
            eprintln!("memfabric: warning: {w}");
        }
        let client = connect(&info, &place)?;
        let mut store = PgStore { client, place, info };
        store.migrate()?;
        Ok(store)
    }

    /// A connection the server closed (a restart, an idle timeout) is made
    /// again before the next statement, so a long campaign survives a restart
    /// between two of its writes. The sync client notices a closed connection
    /// only when it next talks to the server, so it is asked (one empty
    /// query, a round trip) before each operation.
    fn live(&mut self) -> Result<(), StoreError> {
        if self.client.is_closed() || self.client.is_valid(LIVENESS_TIMEOUT).is_err() {
            self.client = connect(&self.info, &self.place)?;
        }
        Ok(())
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        StoreError::Sql {
            place: self.place.clone(),
            detail: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string()),
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let place = self.place.clone();
        let sql = |e: postgres::Error| StoreError::Sql {
            place: place.clone(),
            detail: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string()),
        };
        let mut tx = self.client.transaction().map_err(&sql)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(&sql)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS memfabric_schema (version BIGINT NOT NULL)")
            .map_err(&sql)?;
        let found: Option<i64> = tx
            .query_opt("SELECT version FROM memfabric_schema", &[])
            .map_err(&sql)?
            .map(|r| r.get(0));
        let v = match found {
            Some(v) => v,
            None => {
                tx.execute("INSERT INTO memfabric_schema (version) VALUES (0)", &[])
                    .map_err(&sql)?;
                0
            }
        };
        if v > LATEST_VERSION {
            return Err(StoreError::NewerSchema {
                place: self.place.clone(),
                found: v,
                supported: LATEST_VERSION,
            });
        }
        for step in &STEPS[v as usize..] {
            tx.batch_execute(step.postgres).map_err(&sql)?;
        }
        tx.execute("UPDATE memfabric_schema SET version = $1", &[&LATEST_VERSION])
            .map_err(&sql)?;
        tx.commit().map_err(&sql)
    }
}

fn summary_of(r: &postgres::Row) -> RunSummary {
    RunSummary {
        id: r.get(0),
        started_unix_s: r.get::<_, i64>(1) as u64,
        host: r.get(2),
        label: r.get(3),
        command: r.get(4),
        tool_version: r.get(5),
        summary: r.get(6),
        figures: r.get::<_, i64>(7) as u64,
        host_id: r.get(8),
        class_key: r.get(9),
    }
}

const SUMMARY: &str = "SELECT r.id, r.started_unix_s, r.host, r.label, r.command, r.tool_version, r.summary,
        (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.id), r.host_id, r.class_key
     FROM runs r";

impl Backend for PgStore {
    fn save_all(&mut self, runs: &[NewRun]) -> Result<Vec<Saved>, StoreError> {
        self.live()?;
        let saved = crate::now_unix_s() as i64;
        let result = (|| {
            let mut tx = self.client.transaction()?;
            let insert_run = tx.prepare(
                "INSERT INTO runs (started_unix_s, saved_unix_s, host, label, command, tool_version, summary,
                                   document, host_id, class_key, campaign, doc_hash, facts)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (doc_hash) DO NOTHING RETURNING id",
            )?;
            // A run's figures in one statement: one round trip per run, not per figure.
            // WITH ORDINALITY keeps their order in `seq`.
            let insert = tx.prepare(
                "INSERT INTO figures (run_id, measurement, dims, metric, value, min, max, cv, samples)
                 SELECT $1, m, d, k, v, lo, hi, c, n
                 FROM UNNEST($2::TEXT[], $3::TEXT[], $4::TEXT[], $5::FLOAT8[], $6::FLOAT8[], $7::FLOAT8[],
                             $8::FLOAT8[], $9::INT8[]) WITH ORDINALITY AS f(m, d, k, v, lo, hi, c, n, i)
                 ORDER BY i",
            )?;
            let mut out = Vec::with_capacity(runs.len());
            for run in runs {
                let hash = &run.doc_hash;
                let added = tx.query_opt(
                    &insert_run,
                    &[
                        &(run.started_unix_s as i64),
                        &saved,
                        &run.host,
                        &run.label,
                        &run.command,
                        &run.tool_version,
                        &run.summary,
                        &run.document,
                        &run.host_id,
                        &run.class_key,
                        &run.campaign,
                        hash,
                        &run.facts,
                    ],
                )?;
                let Some(row) = added else {
                    let id = tx.query_one("SELECT id FROM runs WHERE doc_hash = $1", &[hash])?;
                    out.push(Saved::Duplicate(id.get(0)));
                    continue;
                };
                let id: i64 = row.get(0);
                let f = &run.figures;
                let col = |get: fn(&Figure) -> String| f.iter().map(get).collect::<Vec<String>>();
                let num = |get: fn(&Figure) -> Option<f64>| f.iter().map(get).collect::<Vec<Option<f64>>>();
                let dims = col(|f| serde_json::to_string(&f.dims).expect("string map encodes"));
                tx.execute(
                    &insert,
                    &[
                        &id,
                        &col(|f| f.measurement.clone()),
                        &dims,
                        &col(|f| f.metric.clone()),
                        &f.iter().map(|f| f.value).collect::<Vec<f64>>(),
                        &num(|f| f.min),
                        &num(|f| f.max),
                        &num(|f| f.cv),
                        &f.iter().map(|f| f.samples as i64).collect::<Vec<i64>>(),
                    ],
                )?;
                out.push(Saved::New(id));
            }
            tx.commit()?;
            Ok(out)
        })();
        result.map_err(|e| self.err(e))
    }

    fn fleet(&mut self, campaign: Option<&str>) -> Result<Vec<FleetRow>, StoreError> {
        self.live()?;
        let rows = self.client.query(
            "SELECT id, started_unix_s, host, host_id, class_key, campaign, facts, saved_unix_s FROM runs
             WHERE facts IS NOT NULL AND ($1::TEXT IS NULL OR campaign = $1) ORDER BY started_unix_s DESC, id DESC",
            &[&campaign],
        );
        let rows = rows.map_err(|e| self.err(e))?;
        Ok(rows
            .iter()
            .map(|r| FleetRow {
                id: r.get(0),
                started_unix_s: r.get::<_, i64>(1) as u64,
                host: r.get(2),
                host_id: r.get(3),
                class_key: r.get(4),
                campaign: r.get(5),
                facts: r.get(6),
                saved_unix_s: r.get::<_, i64>(7) as u64,
            })
            .collect())
    }

    fn without_facts(&mut self) -> Result<Vec<(i64, String)>, StoreError> {
        self.live()?;
        let rows = self.client.query(
            "SELECT id, document FROM runs WHERE facts IS NULL ORDER BY id",
            &[],
        );
        let rows = rows.map_err(|e| self.err(e))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn set_facts(&mut self, id: i64, facts: &str, hash: &str) -> Result<(), StoreError> {
        self.live()?;
        self.client
            .execute(
                "UPDATE runs SET facts = $1,
                     doc_hash = CASE WHEN EXISTS (SELECT 1 FROM runs WHERE doc_hash = $2) THEN doc_hash ELSE $2 END
                 WHERE id = $3",
                &[&facts, &hash, &id],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn set_node(&mut self, n: &CampaignNode) -> Result<(), StoreError> {
        self.live()?;
        self.client
            .execute(
                "INSERT INTO campaign_nodes (campaign, node, status, reason, run_id, updated_unix_s)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (campaign, node) DO UPDATE SET status = excluded.status, reason = excluded.reason,
                     run_id = excluded.run_id, updated_unix_s = excluded.updated_unix_s",
                &[&n.campaign, &n.node, &n.status.name(), &n.reason, &n.run_id, &(n.updated_unix_s as i64)],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn nodes(&mut self, campaign: &str) -> Result<Vec<CampaignNode>, StoreError> {
        self.live()?;
        let rows = self.client.query(
            "SELECT campaign, node, status, reason, run_id, updated_unix_s FROM campaign_nodes
             WHERE campaign = $1 ORDER BY node",
            &[&campaign],
        );
        let rows = rows.map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let status: String = r.get(2);
                Ok(CampaignNode {
                    campaign: r.get(0),
                    node: r.get(1),
                    status: NodeStatus::from_name(&status).ok_or_else(|| StoreError::Sql {
                        place: self.place.clone(),
                        detail: format!("unknown node status {status:?} in campaign_nodes"),
                    })?,
                    reason: r.get(3),
                    run_id: r.get(4),
                    updated_unix_s: r.get::<_, i64>(5) as u64,
                })
            })
            .collect()
    }

    fn list(&mut self) -> Result<Vec<RunSummary>, StoreError> {
        self.live()?;
        let rows = self.client.query(&format!("{SUMMARY} ORDER BY r.id DESC"), &[]);
        rows.map(|rows| rows.iter().map(summary_of).collect())
            .map_err(|e| self.err(e))
    }

    fn summary(&mut self, id: i64) -> Result<RunSummary, StoreError> {
        self.live()?;
        let row = self
            .client
            .query_opt(&format!("{SUMMARY} WHERE r.id = $1"), &[&id]);
        match row.map_err(|e| self.err(e))? {
            Some(r) => Ok(summary_of(&r)),
            None => Err(StoreError::NotFound(id)),
        }
    }

    fn last(&mut self) -> Result<Option<i64>, StoreError> {
        self.live()?;
        let row = self.client.query_one("SELECT MAX(id) FROM runs", &[]);
        row.map(|r| r.get(0)).map_err(|e| self.err(e))
    }

    fn document(&mut self, id: i64) -> Result<String, StoreError> {
        self.live()?;
        let row = self
            .client
            .query_opt("SELECT document FROM runs WHERE id = $1", &[&id]);
        match row.map_err(|e| self.err(e))? {
            Some(r) => Ok(r.get(0)),
            None => Err(StoreError::NotFound(id)),
        }
    }

    fn figures(&mut self, id: i64) -> Result<Vec<Figure>, StoreError> {
        self.live()?;
        self.summary(id)?;
        let rows = self.client.query(
            "SELECT measurement, dims, metric, value, min, max, cv, samples
             FROM figures WHERE run_id = $1 ORDER BY seq",
            &[&id],
        );
        let rows = rows.map_err(|e| self.err(e))?;
        Ok(rows
            .iter()
            .map(|r| Figure {
                measurement: r.get(0),
                dims: serde_json::from_str(r.get::<_, &str>(1)).unwrap_or_default(),
                metric: r.get(2),
                value: r.get(3),
                min: r.get(4),
                max: r.get(5),
                cv: r.get(6),
                samples: r.get::<_, i64>(7) as usize,
            })
            .collect())
    }

    fn delete(&mut self, id: i64) -> Result<(), StoreError> {
        self.live()?;
        let n = self.client.execute("DELETE FROM runs WHERE id = $1", &[&id]);
        match n.map_err(|e| self.err(e))? {
            0 => Err(StoreError::NotFound(id)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            redact("postgres://fleet:s3cret@db:5432/runs"),
            "postgres://fleet:***@db:5432/runs"
        );
        assert_eq!(redact("postgresql://fleet@db/runs"), "postgresql://fleet@db/runs");
        assert_eq!(redact("postgres://db/runs?user=a"), "postgres://db/runs?user=a");
        assert_eq!(redact("postgres://a:b@c@host/x"), "postgres://a:***@host/x");
        assert_eq!(
            redact("postgres://h/db?user=u&password=p&sslmode=disable"),
            "postgres://h/db?user=u&password=***&sslmode=disable"
        );
        assert!(is_url("postgresql://x") && is_url("postgres://x") && !is_url("/tmp/runs.sqlite"));
    }
}
