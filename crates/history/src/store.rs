//! The two databases behind one connection type: SQLite (a file in the
//! user's data directory, the default) and PostgreSQL (`postgres://…`, a
//! team's). Every query is written once, with `?` placeholders that become
//! `$1, $2 …` for PostgreSQL, and every value crosses as one of three types
//! (64-bit integer, double, text) that both store exactly: the same
//! commands therefore print the same bytes on either.
//!
//! The schema is versioned: `schema_version` holds the highest migration
//! applied, and a database whose version is newer than this benchlab's
//! [`SCHEMA_VERSION`] is refused before anything is read or written (an
//! older benchlab cannot know what a newer schema means).

use crate::Error;
use std::path::Path;
use std::time::Duration;

/// The schema this benchlab writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a writer waits for another's SQLite lock before giving up: long
/// enough for a busy machine and many concurrent `history add`s.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The migrations in order: (version, SQL). `{id}` is the backend's
/// auto-numbered primary key. Types are BIGINT, DOUBLE PRECISION and TEXT
/// only (SQLite's INTEGER, REAL and TEXT affinities), so a value reads back
/// the same from either database.
const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE runs (
        id {id},
        digest TEXT NOT NULL UNIQUE,
        suite TEXT NOT NULL,
        started_unix BIGINT NOT NULL,
        recorded_unix BIGINT NOT NULL,
        partial BIGINT NOT NULL,
        kind TEXT NOT NULL,
        server TEXT NOT NULL,
        server_config TEXT NOT NULL,
        benchlab_version TEXT NOT NULL,
        host TEXT NOT NULL,
        target TEXT NOT NULL,
        source TEXT NOT NULL,
        results TEXT NOT NULL
    );
    CREATE INDEX runs_by_suite ON runs (suite, started_unix, id);
    CREATE INDEX runs_by_time ON runs (started_unix, id);
    CREATE TABLE phases (
        run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        position BIGINT NOT NULL,
        phase TEXT NOT NULL,
        mixes BIGINT NOT NULL,
        requests BIGINT NOT NULL,
        errors BIGINT NOT NULL,
        peak_mix BIGINT,
        peak_rps DOUBLE PRECISION,
        peak_mbit DOUBLE PRECISION,
        p99_at_peak_us BIGINT,
        useful_peak_mix BIGINT,
        useful_peak_rps DOUBLE PRECISION,
        useful_peak_mbit DOUBLE PRECISION,
        PRIMARY KEY (run_id, position)
    );
    CREATE TABLE mixes (
        run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        mix BIGINT NOT NULL,
        phase TEXT NOT NULL,
        threads BIGINT NOT NULL,
        clients BIGINT NOT NULL,
        partial BIGINT NOT NULL,
        requests BIGINT NOT NULL,
        errors BIGINT NOT NULL,
        requests_per_sec DOUBLE PRECISION NOT NULL,
        mbit_per_sec DOUBLE PRECISION NOT NULL,
        p99_us BIGINT NOT NULL,
        PRIMARY KEY (run_id, mix)
    );",
)];

/// A value passed to or read from a query.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
}

impl V {
    pub fn int(&self) -> Option<i64> {
        match self {
            V::Int(v) => *v,
            V::Real(v) => v.map(|x| x as i64),
            V::Text(_) => None,
        }
    }
    pub fn real(&self) -> Option<f64> {
        match self {
            V::Real(v) => *v,
            // SQLite stores a whole double as an integer only when asked;
            // read either.
            V::Int(v) => v.map(|x| x as f64),
            V::Text(_) => None,
        }
    }
    pub fn text(&self) -> String {
        match self {
            V::Text(Some(s)) => s.clone(),
            _ => String::new(),
        }
    }
}

pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Pg(Box<postgres::Client>),
}

/// `?` placeholders as PostgreSQL's `$1, $2 …` (no query here has a `?`
/// inside a string literal).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl Conn {
    pub(crate) fn open_sqlite(path: &Path) -> Result<Conn, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let c = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
        c.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
        // WAL: readers never block the one writer, and a writer waits (busy
        // timeout) instead of failing; NORMAL is durable across a crash of
        // benchlab, which is what a results database needs. Switching a new
        // file to WAL needs it alone, and SQLite answers "locked" at once
        // (no busy handler) while another process does the same: retry
        // within the busy timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match c.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        c.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| e.to_string())?;
        Ok(Conn::Sqlite(c))
    }

    pub(crate) fn open_pg(url: &str) -> Result<Conn, String> {
        let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| e.to_string())?;
        config.connect_timeout(Duration::from_secs(10));
        // The password from PGPASSWORD, as libpq takes it, so that it need
        // not be on a command line (which results.json records).
        if config.get_password().is_none() {
            if let Some(p) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
                config.password(p.as_encoded_bytes());
            }
        }
        let c = config.connect(postgres::NoTls).map_err(|e| e.to_string())?;
        Ok(Conn::Pg(Box::new(c)))
    }

    pub(crate) fn is_pg(&self) -> bool {
        matches!(self, Conn::Pg(_))
    }

    /// Runs statements without parameters (a migration, BEGIN, COMMIT).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Conn::Pg(c) => c.batch_execute(sql).map_err(|e| e.to_string()),
        }
    }

    /// The rows of a query, each a value per column.
    pub(crate) fn rows(&mut self, sql: &str, params: &[V]) -> Result<Vec<Vec<V>>, String> {
        match self {
            Conn::Sqlite(c) => {
                use rusqlite::types::{Value, ValueRef};
                let values: Vec<Value> = params
                    .iter()
                    .map(|p| match p {
                        V::Int(Some(v)) => Value::Integer(*v),
                        V::Real(Some(v)) => Value::Real(*v),
                        V::Text(Some(v)) => Value::Text(v.clone()),
                        _ => Value::Null,
                    })
                    .collect();
                let mut st = c.prepare_cached(sql).map_err(|e| e.to_string())?;
                let n = st.column_count();
                let mut rows = st
                    .query(rusqlite::params_from_iter(values))
                    .map_err(|e| e.to_string())?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().map_err(|e| e.to_string())? {
                    let mut row = Vec::with_capacity(n);
                    for i in 0..n {
                        row.push(match r.get_ref(i).map_err(|e| e.to_string())? {
                            ValueRef::Null => V::Int(None),
                            ValueRef::Integer(v) => V::Int(Some(v)),
                            ValueRef::Real(v) => V::Real(Some(v)),
                            ValueRef::Text(t) => V::Text(Some(String::from_utf8_lossy(t).into_owned())),
                            ValueRef::Blob(_) => V::Text(None),
                        });
                    }
                    out.push(row);
                }
                Ok(out)
            }
            Conn::Pg(c) => {
                use postgres::types::{ToSql, Type};
                let sql = numbered(sql);
                let boxed: Vec<Box<dyn ToSql + Sync>> = params
                    .iter()
                    .map(|p| -> Box<dyn ToSql + Sync> {
                        match p {
                            V::Int(v) => Box::new(*v),
                            V::Real(v) => Box::new(*v),
                            V::Text(v) => Box::new(v.clone()),
                        }
                    })
                    .collect();
                let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
                let rows = c.query(sql.as_str(), &refs).map_err(|e| e.to_string())?;
                let mut out = Vec::with_capacity(rows.len());
                for r in &rows {
                    let mut row = Vec::with_capacity(r.len());
                    for (i, col) in r.columns().iter().enumerate() {
                        let t = col.type_();
                        let v = if *t == Type::INT8 {
                            V::Int(r.try_get::<_, Option<i64>>(i).map_err(|e| e.to_string())?)
                        } else if *t == Type::INT4 {
                            V::Int(
                                r.try_get::<_, Option<i32>>(i)
                                    .map_err(|e| e.to_string())?
                                    .map(i64::from),
                            )
                        } else if *t == Type::FLOAT8 {
                            V::Real(r.try_get::<_, Option<f64>>(i).map_err(|e| e.to_string())?)
                        } else {
                            V::Text(r.try_get::<_, Option<String>>(i).map_err(|e| e.to_string())?)
                        };
                        row.push(v);
                    }
                    out.push(row);
                }
                Ok(out)
            }
        }
    }

    /// Runs one statement with parameters.
    pub(crate) fn exec(&mut self, sql: &str, params: &[V]) -> Result<(), String> {
        self.rows(sql, params).map(|_| ())
    }

    /// Starts the transaction of one write: SQLite takes the write lock at
    /// once (IMMEDIATE), so two writers queue on the busy timeout instead of
    /// one failing when it upgrades a read lock.
    pub(crate) fn begin(&mut self) -> Result<(), String> {
        match self {
            Conn::Sqlite(_) => self.batch("BEGIN IMMEDIATE"),
            Conn::Pg(_) => self.batch("BEGIN"),
        }
    }

    pub(crate) fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    /// The schema version recorded, 0 for a database without one (new).
    fn version(&mut self) -> Result<i64, String> {
        let exists = match self {
            Conn::Sqlite(_) => self.rows(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                &[],
            )?,
            Conn::Pg(_) => self.rows(
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = 'schema_version'",
                &[],
            )?,
        };
        if exists.first().and_then(|r| r.first()).and_then(V::int).unwrap_or(0) == 0 {
            return Ok(0);
        }
        let v = self.rows("SELECT MAX(version) FROM schema_version", &[])?;
        Ok(v.first().and_then(|r| r.first()).and_then(V::int).unwrap_or(0))
    }

    /// Brings the schema to [`SCHEMA_VERSION`], or refuses a newer one.
    /// Concurrent first opens are safe: SQLite's IMMEDIATE transaction and
    /// PostgreSQL's transaction-scoped advisory lock let one migrate while
    /// the other waits, and the version is read again under the lock.
    pub(crate) fn migrate(&mut self, db: &str) -> Result<(), Error> {
        let e = |why: String| Error::Db {
            db: db.to_string(),
            why,
        };
        let newer = |found: i64| Error::NewerSchema {
            db: db.to_string(),
            found,
            supported: SCHEMA_VERSION,
        };
        let found = self.version().map_err(e)?;
        if found > SCHEMA_VERSION {
            return Err(newer(found));
        }
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        self.begin().map_err(e)?;
        let r = (|| -> Result<(), Error> {
            if self.is_pg() {
                // An arbitrary constant: benchlab's migration lock.
                self.batch("SELECT pg_advisory_xact_lock(7310571)").map_err(e)?;
            }
            self.batch("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
                .map_err(e)?;
            let found = self.version().map_err(e)?;
            if found > SCHEMA_VERSION {
                return Err(newer(found));
            }
            let id = if self.is_pg() {
                "BIGSERIAL PRIMARY KEY"
            } else {
                "INTEGER PRIMARY KEY AUTOINCREMENT"
            };
            for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
                self.batch(&sql.replace("{id}", id)).map_err(e)?;
                self.exec("INSERT INTO schema_version (version) VALUES (?)", &[V::Int(Some(*v))])
                    .map_err(e)?;
            }
            self.batch("COMMIT").map_err(e)
        })();
        if r.is_err() {
            self.rollback();
        }
        r
    }

    /// How SQLite would run `sql` (EXPLAIN QUERY PLAN), for the tests that
    /// keep list and trend on an index.
    #[cfg(test)]
    pub(crate) fn plan(&mut self, sql: &str, params: &[V]) -> String {
        let rows = self
            .rows(&format!("EXPLAIN QUERY PLAN {sql}"), params)
            .expect("explain");
        rows.iter()
            .map(|r| r.last().map(V::text).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres() {
        assert_eq!(numbered("a = ? AND b = ?"), "a = $1 AND b = $2");
        assert_eq!(numbered("no params"), "no params");
    }
}
