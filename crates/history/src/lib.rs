//! # benchlab-history
//!
//! benchlab's results database (docs/history.md): every run can be recorded
//! (`benchlab history add DIR`, `benchlab run --record`) in SQLite — a file
//! in the user's data directory, the default — or in PostgreSQL
//! (`--db postgres://…`, a team's). `list`, `show` and `trend` read it, and
//! `compare --against last:N` takes the last N runs of a suite as the base,
//! their spread as the noise.
//!
//! One connection type ([`store`]) serves both databases with the same
//! queries, and all the text is written here from plain rows, so the same
//! command prints the same bytes on either.

mod record;
mod store;
pub mod trend;

pub use record::{MixRecord, PhaseRecord, RunRecord, NOT_DISCLOSED};
pub use store::SCHEMA_VERSION;

use benchlab_results::Results;
use std::path::{Path, PathBuf};
use store::{Conn, V};

/// What a history command could not do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--db` is neither a path nor a `postgres://` URL benchlab can use.
    #[error("--db {db}: {why}")]
    BadDb { db: String, why: String },
    /// The database could not be opened or reached.
    #[error("history database {db}: cannot open it: {why}")]
    Open { db: String, why: String },
    /// A query failed.
    #[error("history database {db}: {why}")]
    Db { db: String, why: String },
    /// A database written by a newer benchlab.
    #[error(
        "history database {db} has schema version {found}; this benchlab reads schema versions up to \
         {supported}: use the newer benchlab that wrote it (or another --db)"
    )]
    NewerSchema { db: String, found: i64, supported: i64 },
    /// A results directory that cannot be read.
    #[error("{0}")]
    Results(#[from] benchlab_results::load::LoadError),
    /// `show ID` of a run not recorded.
    #[error("history database {db} has no run #{id} (benchlab history list shows the recorded ones)")]
    NoRun { db: String, id: i64 },
    /// `trend SUITE` or `compare --against` of a suite with no runs.
    #[error("history database {db} has no run of suite `{suite}`{known}")]
    NoSuite { db: String, suite: String, known: String },
    /// The HTML page could not be written.
    #[error("cannot write {path}: {why}")]
    Write { path: PathBuf, why: String },
}

impl benchlab_input::Classify for Error {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        use benchlab_input::ExitClass::{CannotRun, Usage};
        match self {
            Error::BadDb { .. } | Error::NoRun { .. } | Error::NoSuite { .. } => Usage,
            Error::Open { .. }
            | Error::Db { .. }
            | Error::NewerSchema { .. }
            | Error::Results(_)
            | Error::Write { .. } => CannotRun,
        }
    }
}

/// A `postgres://` URL with its password replaced by `***`, for messages:
/// a password never reaches the terminal.
pub fn redact(db: &str) -> String {
    let Some((scheme, rest)) = db.split_once("://") else {
        return db.to_string();
    };
    // The userinfo ends at the last `@` before the host's path.
    let auth_end = rest.find('/').unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let masked = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                user.to_string()
            };
            let mut out = format!("{scheme}://{masked}{}", &rest[at..]);
            // A `password=` query parameter too.
            if let Some(i) = out.find("password=") {
                let end = out[i..].find('&').map_or(out.len(), |j| i + j);
                out.replace_range(i + "password=".len()..end, "***");
            }
            out
        }
        None => {
            let mut out = db.to_string();
            if let Some(i) = out.find("password=") {
                let end = out[i..].find('&').map_or(out.len(), |j| i + j);
                out.replace_range(i + "password=".len()..end, "***");
            }
            out
        }
    }
}

/// A command line's arguments with the password of any `postgres://` URL
/// in them replaced by `***` (`--db postgres://…` is recorded in
/// results.json with the command).
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| match a.find("postgres://").or_else(|| a.find("postgresql://")) {
            Some(i) => format!("{}{}", &a[..i], redact(&a[i..])),
            None => a,
        })
        .collect()
}

/// Whether `--db` names a PostgreSQL database.
pub fn is_postgres(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// The default database: `$XDG_DATA_HOME/benchlab/history.sqlite`, else
/// `~/.local/share/benchlab/history.sqlite`.
pub fn default_path() -> Result<PathBuf, Error> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    // XDG: a relative XDG_DATA_HOME is invalid and is ignored.
    let base = env("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".local/share")))
        .ok_or_else(|| Error::BadDb {
            db: "(default)".into(),
            why: "neither XDG_DATA_HOME nor HOME is set: say where the database is with --db PATH".into(),
        })?;
    Ok(base.join("benchlab").join("history.sqlite"))
}

/// A recorded run's row (without its results.json).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub suite: String,
    pub started_unix: i64,
    pub recorded_unix: i64,
    pub partial: bool,
    pub kind: String,
    pub server: String,
    pub server_config: String,
    pub benchlab_version: String,
    pub host: String,
    pub target: String,
    pub source: String,
}

/// What `add` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    pub id: i64,
    /// False when the same results.json was recorded before (as `id`).
    pub new: bool,
}

/// An open history database.
pub struct Db {
    conn: Conn,
    /// How messages name it (a path, or a URL without its password).
    name: String,
}

const RUN_COLUMNS: &str = "r.id, r.suite, r.started_unix, r.recorded_unix, r.partial, r.kind, r.server, \
     r.server_config, r.benchlab_version, r.host, r.target, r.source";
const PHASE_COLUMNS: &str = "p.run_id, p.phase, p.mixes, p.requests, p.errors, p.peak_mix, p.peak_rps, \
     p.peak_mbit, p.p99_at_peak_us, p.useful_peak_mix, p.useful_peak_rps, p.useful_peak_mbit";

fn run_row(r: &[V]) -> RunRow {
    RunRow {
        id: r[0].int().unwrap_or(0),
        suite: r[1].text(),
        started_unix: r[2].int().unwrap_or(0),
        recorded_unix: r[3].int().unwrap_or(0),
        partial: r[4].int().unwrap_or(0) != 0,
        kind: r[5].text(),
        server: r[6].text(),
        server_config: r[7].text(),
        benchlab_version: r[8].text(),
        host: r[9].text(),
        target: r[10].text(),
        source: r[11].text(),
    }
}

fn phase_row(r: &[V]) -> (i64, PhaseRecord) {
    let u = |v: &V| v.int().map(|x| x.max(0) as u64);
    (
        r[0].int().unwrap_or(0),
        PhaseRecord {
            phase: r[1].text(),
            mixes: u(&r[2]).unwrap_or(0),
            requests: u(&r[3]).unwrap_or(0),
            errors: u(&r[4]).unwrap_or(0),
            peak_mix: u(&r[5]),
            peak_rps: r[6].real(),
            peak_mbit: r[7].real(),
            p99_at_peak_us: u(&r[8]),
            useful_peak_mix: u(&r[9]),
            useful_peak_rps: r[10].real(),
            useful_peak_mbit: r[11].real(),
        },
    )
}

fn int(v: u64) -> V {
    V::Int(Some(v.min(i64::MAX as u64) as i64))
}

fn opt_int(v: Option<u64>) -> V {
    V::Int(v.map(|x| x.min(i64::MAX as u64) as i64))
}

fn text(s: &str) -> V {
    V::Text(Some(s.to_string()))
}

impl Db {
    /// Opens (and creates or migrates) the database `--db` names, or the
    /// default one; refuses one of a newer schema.
    pub fn open(db: Option<&str>) -> Result<Db, Error> {
        let (conn, name) = match db {
            Some(url) if is_postgres(url) => {
                let name = redact(url);
                let conn = Conn::open_pg(url).map_err(|why| Error::Open {
                    db: name.clone(),
                    why: redact(&why),
                })?;
                (conn, name)
            }
            Some(other) if other.contains("://") => {
                return Err(Error::BadDb {
                    db: redact(other),
                    why: "expected a file path (SQLite) or a postgres:// URL".into(),
                })
            }
            Some(path) if path.trim().is_empty() => {
                return Err(Error::BadDb {
                    db: "\"\"".into(),
                    why: "expected a file path (SQLite) or a postgres:// URL".into(),
                })
            }
            Some(path) => Self::sqlite(Path::new(path))?,
            None => Self::sqlite(&default_path()?)?,
        };
        let mut db = Db { conn, name };
        let name = db.name.clone();
        db.conn.migrate(&name)?;
        Ok(db)
    }

    fn sqlite(path: &Path) -> Result<(Conn, String), Error> {
        let name = path.display().to_string();
        if path.is_dir() {
            return Err(Error::BadDb {
                db: name,
                why: "is a directory: expected the database file's path".into(),
            });
        }
        let conn = Conn::open_sqlite(path).map_err(|why| Error::Open { db: name.clone(), why })?;
        Ok((conn, name))
    }

    /// How messages name the database.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn err(&self, why: String) -> Error {
        Error::Db {
            db: self.name.clone(),
            why: redact(&why),
        }
    }

    fn rows(&mut self, sql: &str, params: &[V]) -> Result<Vec<Vec<V>>, Error> {
        match self.conn.rows(sql, params) {
            Ok(r) => Ok(r),
            Err(why) => Err(self.err(why)),
        }
    }

    /// Records a run in one transaction: all of it or nothing. The same
    /// results.json recorded before is not recorded again.
    pub fn add(&mut self, rec: &RunRecord, recorded_unix: u64) -> Result<Added, Error> {
        self.conn.begin().map_err(|w| self.err(w))?;
        let r = self
            .add_in_transaction(rec, recorded_unix)
            .and_then(|a| self.conn.batch("COMMIT").map(|_| a).map_err(|w| self.err(w)));
        match r {
            Ok(a) => Ok(a),
            Err(e) => {
                self.conn.rollback();
                // Another process recorded the same results.json between
                // our look and our insert (PostgreSQL's transactions do not
                // serialise the two): the run is recorded, once.
                match self.rows("SELECT id FROM runs WHERE digest = ?", &[text(&rec.digest)]) {
                    Ok(rows) => match rows.first().and_then(|r| r.first()).and_then(V::int) {
                        Some(id) => Ok(Added { id, new: false }),
                        None => Err(e),
                    },
                    Err(_) => Err(e),
                }
            }
        }
    }

    fn add_in_transaction(&mut self, rec: &RunRecord, recorded_unix: u64) -> Result<Added, Error> {
        let before = self.rows("SELECT id FROM runs WHERE digest = ?", &[text(&rec.digest)])?;
        if let Some(id) = before.first().and_then(|r| r.first()).and_then(V::int) {
            return Ok(Added { id, new: false });
        }
        let row = self.rows(
            "INSERT INTO runs (digest, suite, started_unix, recorded_unix, partial, kind, server, server_config, \
             benchlab_version, host, target, source, results) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             RETURNING id",
            &[
                text(&rec.digest),
                text(&rec.suite),
                int(rec.started_unix),
                int(recorded_unix),
                int(rec.partial as u64),
                text(&rec.kind),
                text(&rec.server),
                text(&rec.server_config),
                text(&rec.benchlab_version),
                text(&rec.host),
                text(&rec.target),
                text(&rec.source),
                text(&rec.results),
            ],
        )?;
        let id = row
            .first()
            .and_then(|r| r.first())
            .and_then(V::int)
            .ok_or_else(|| self.err("the new run got no id".into()))?;
        for (i, p) in rec.phases.iter().enumerate() {
            self.rows(
                "INSERT INTO phases (run_id, position, phase, mixes, requests, errors, peak_mix, peak_rps, \
                 peak_mbit, p99_at_peak_us, useful_peak_mix, useful_peak_rps, useful_peak_mbit) \
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &[
                    V::Int(Some(id)),
                    int(i as u64),
                    text(&p.phase),
                    int(p.mixes),
                    int(p.requests),
                    int(p.errors),
                    opt_int(p.peak_mix),
                    V::Real(p.peak_rps),
                    V::Real(p.peak_mbit),
                    opt_int(p.p99_at_peak_us),
                    opt_int(p.useful_peak_mix),
                    V::Real(p.useful_peak_rps),
                    V::Real(p.useful_peak_mbit),
                ],
            )?;
        }
        for m in &rec.mixes {
            self.rows(
                "INSERT INTO mixes (run_id, mix, phase, threads, clients, partial, requests, errors, \
                 requests_per_sec, mbit_per_sec, p99_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &[
                    V::Int(Some(id)),
                    int(m.mix),
                    text(&m.phase),
                    int(m.threads),
                    int(m.clients),
                    int(m.partial as u64),
                    int(m.requests),
                    int(m.errors),
                    V::Real(Some(m.requests_per_sec)),
                    V::Real(Some(m.mbit_per_sec)),
                    int(m.p99_us),
                ],
            )?;
        }
        Ok(Added { id, new: true })
    }

    /// The recorded runs (of `suite`), oldest first.
    pub fn runs(&mut self, suite: Option<&str>) -> Result<Vec<RunRow>, Error> {
        let rows = match suite {
            Some(s) => self.rows(
                &format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.suite = ? ORDER BY r.started_unix, r.id"),
                &[text(s)],
            )?,
            None => self.rows(
                &format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.started_unix, r.id"),
                &[],
            )?,
        };
        Ok(rows.iter().map(|r| run_row(r)).collect())
    }

    /// The phases of the recorded runs (of `suite`), by run id, in the order
    /// of [`Db::runs`] and each run's phase order.
    pub fn phases(&mut self, suite: Option<&str>) -> Result<Vec<(i64, PhaseRecord)>, Error> {
        let rows = match suite {
            Some(s) => self.rows(
                &format!(
                    "SELECT {PHASE_COLUMNS} FROM runs r JOIN phases p ON p.run_id = r.id WHERE r.suite = ? \
                     ORDER BY r.started_unix, r.id, p.position"
                ),
                &[text(s)],
            )?,
            None => self.rows(
                &format!(
                    "SELECT {PHASE_COLUMNS} FROM runs r JOIN phases p ON p.run_id = r.id \
                     ORDER BY r.started_unix, r.id, p.position"
                ),
                &[],
            )?,
        };
        Ok(rows.iter().map(|r| phase_row(r)).collect())
    }

    /// One run: its row, phases, mixes and results.json text.
    pub fn run(&mut self, id: i64) -> Result<(RunRow, Vec<PhaseRecord>, Vec<MixRecord>, String), Error> {
        let rows = self.rows(
            &format!("SELECT {RUN_COLUMNS}, r.results FROM runs r WHERE r.id = ?"),
            &[V::Int(Some(id))],
        )?;
        let Some(r) = rows.first() else {
            return Err(Error::NoRun {
                db: self.name.clone(),
                id,
            });
        };
        let row = run_row(r);
        let results = r[12].text();
        let phases = self
            .rows(
                &format!("SELECT {PHASE_COLUMNS} FROM phases p WHERE p.run_id = ? ORDER BY p.position"),
                &[V::Int(Some(id))],
            )?
            .iter()
            .map(|r| phase_row(r).1)
            .collect();
        let mixes = self
            .rows(
                "SELECT mix, phase, threads, clients, partial, requests, errors, requests_per_sec, mbit_per_sec, \
                 p99_us FROM mixes WHERE run_id = ? ORDER BY mix",
                &[V::Int(Some(id))],
            )?
            .iter()
            .map(|r| {
                let u = |v: &V| v.int().unwrap_or(0).max(0) as u64;
                MixRecord {
                    mix: u(&r[0]),
                    phase: r[1].text(),
                    threads: u(&r[2]),
                    clients: u(&r[3]),
                    partial: u(&r[4]) != 0,
                    requests: u(&r[5]),
                    errors: u(&r[6]),
                    requests_per_sec: r[7].real().unwrap_or(0.0),
                    mbit_per_sec: r[8].real().unwrap_or(0.0),
                    p99_us: u(&r[9]),
                }
            })
            .collect();
        Ok((row, phases, mixes, results))
    }

    /// The last `n` complete runs of `suite` (newest first), with their
    /// results.json, leaving out the run whose digest is `except` (the run
    /// being compared, when it was recorded too). Partial runs are left out:
    /// a run stopped early is no baseline.
    pub fn last(&mut self, suite: &str, n: usize, except: &str) -> Result<Vec<(RunRow, String)>, Error> {
        let rows = self.rows(
            &format!(
                "SELECT {RUN_COLUMNS}, r.results FROM runs r WHERE r.suite = ? AND r.partial = 0 AND r.digest <> ? \
                 ORDER BY r.started_unix DESC, r.id DESC LIMIT ?"
            ),
            &[text(suite), text(except), int(n as u64)],
        )?;
        Ok(rows.iter().map(|r| (run_row(r), r[12].text())).collect())
    }

    /// The suites recorded, for a message naming what there is.
    pub fn suites(&mut self) -> Result<Vec<String>, Error> {
        Ok(self
            .rows("SELECT DISTINCT suite FROM runs ORDER BY suite", &[])?
            .iter()
            .map(|r| r[0].text())
            .collect())
    }

    /// [`Error::NoSuite`] naming the suites there are.
    pub fn no_suite(&mut self, suite: &str) -> Error {
        let known = match self.suites() {
            Ok(s) if s.is_empty() => " (it has no run yet: benchlab history add DIR records one)".to_string(),
            Ok(s) => format!(" (suites recorded: {})", s.join(", ")),
            Err(_) => String::new(),
        };
        Error::NoSuite {
            db: self.name.clone(),
            suite: suite.to_string(),
            known,
        }
    }
}

/// Reads a results directory (or a results.json) for recording: its text
/// (bounded) and the parsed, upgraded results.
pub fn read_run(dir: &Path) -> Result<(Results, String, PathBuf), Error> {
    // A results directory, or a results file named as such.
    let file = if dir.extension().is_some_and(|e| e == "json") && !dir.is_dir() {
        dir.to_path_buf()
    } else {
        dir.join("results.json")
    };
    let text = benchlab_input::read_bounded_text(&file, "results.json", benchlab_results::MAX_RESULTS_BYTES)
        .map_err(benchlab_results::load::LoadError::from)?;
    let results = benchlab_results::load::parse(&text).map_err(|e| match e {
        benchlab_results::load::LoadError::NotJson { source, .. } => benchlab_results::load::LoadError::NotJson {
            file: Some(file.clone()),
            source,
        },
        benchlab_results::load::LoadError::Mismatch { schema, source, .. } => {
            benchlab_results::load::LoadError::Mismatch {
                file: Some(file.clone()),
                schema,
                source,
            }
        }
        benchlab_results::load::LoadError::UnknownSchema { schema, known, .. } => {
            benchlab_results::load::LoadError::UnknownSchema {
                file: Some(file.clone()),
                schema,
                known,
            }
        }
        other => other,
    })?;
    let source = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    Ok((results, text, source))
}

/// The digest a run is recorded under: xxh3-128 of its results.json text.
pub fn digest(text: &str) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
}

/// Seconds since the Unix epoch now.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `2026-11-26 05:37` (UTC).
pub fn utc_minute(unix: i64) -> String {
    let (y, mo, d, h, mi, _) = benchlab_results::utc_civil(unix.max(0) as u64);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}")
}

/// `compare --against last:N`: the value N.
pub fn parse_against(s: &str) -> Result<usize, String> {
    let bad = || format!("--against `{s}`: expected last:N, N a whole number from 1 to 1000 (e.g. last:5)");
    let n = s.trim().strip_prefix("last:").ok_or_else(bad)?;
    match n.trim().parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

/// The base of `compare --against last:N`: the last runs of a suite (any
/// order) folded mix by mix into one run whose mixes carry every run's
/// figures as repeats ([`benchlab_results::fold_repeats`]), so the compare
/// takes their spread as the noise, as it does for `run --repeat N`. A mix
/// is matched across runs by phase, threads, clients and offered rate; the
/// newest run's mixes are the base's, each with the median run's figures.
pub fn baseline(mut runs: Vec<(RunRow, Results)>) -> Option<Results> {
    // Oldest first: the repeats are numbered in the order run.
    runs.sort_by_key(|(r, _)| (r.started_unix, r.id));
    let (_, newest) = runs.last()?;
    let mut base = newest.clone();
    let key = |m: &benchlab_results::MixResult| {
        (
            m.phase.clone(),
            m.threads,
            m.clients,
            m.open_loop.as_ref().map(|o| o.rate.to_bits()),
        )
    };
    base.mixes = newest
        .mixes
        .iter()
        .filter_map(|m| {
            let k = key(m);
            let same: Vec<benchlab_results::MixResult> = runs
                .iter()
                .filter_map(|(_, r)| r.mixes.iter().find(|x| key(x) == k).cloned())
                .map(|mut x| {
                    // A mix recorded with its own repeats counts once here,
                    // by its median: the noise is between recorded runs.
                    x.repeats = None;
                    x
                })
                .collect();
            let mut folded = benchlab_results::fold_repeats(same)?;
            folded.mix = m.mix;
            Some(folded)
        })
        .collect();
    Some(base)
}

#[cfg(test)]
mod tests;
