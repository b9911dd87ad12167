//! `benchlab history add/list/show/trend`, `run --record` and the base of
//! `compare --against last:N`: flags → `benchlab_history` (docs/history.md).

use crate::{CliError, Outcome};
use benchlab_history::{trend, Db, RunRecord};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

/// `--db`: where the history is.
#[derive(Debug, Args)]
pub struct DbArg {
    /// The history database: a SQLite file, or postgres://USER@HOST:PORT/DB
    /// (the password from PGPASSWORD) [default:
    /// $XDG_DATA_HOME/benchlab/history.sqlite, else
    /// ~/.local/share/benchlab/history.sqlite].
    #[arg(long, value_name = "PATH|postgres://…")]
    pub db: Option<String>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Debug, Subcommand)]
enum HistoryCommand {
    /// Record results directories (each in its own transaction; one
    /// recorded before is not recorded again).
    Add {
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// The recorded runs, oldest first.
    List {
        /// Only the runs of this suite.
        #[arg(long, value_name = "SUITE")]
        suite: Option<String>,
        #[command(flatten)]
        db: DbArg,
    },
    /// What was recorded of one run (ID as `list` shows it, with or
    /// without its `#`).
    Show {
        #[arg(value_name = "ID", value_parser = run_id)]
        id: i64,
        /// Print the run's whole results.json instead.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DbArg,
    },
    /// A suite's peak, p99 at the peak, useful peak and errors over its
    /// runs, per server version and configuration.
    Trend {
        #[arg(value_name = "SUITE")]
        suite: String,
        /// Write a page with charts to FILE instead of the table.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
}

/// `12` or `#12`.
fn run_id(s: &str) -> Result<i64, String> {
    s.trim()
        .trim_start_matches('#')
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| format!("`{s}`: expected a run's number as `benchlab history list` shows it, e.g. 12"))
}

fn err(e: benchlab_history::Error) -> CliError {
    CliError::of("", e)
}

fn open(db: &DbArg) -> Result<Db, CliError> {
    Db::open(db.db.as_deref()).map_err(err)
}

/// Records one results directory; the line that says so.
fn add_one(db: &mut Db, dir: &Path) -> Result<String, CliError> {
    let (results, text, source) = benchlab_history::read_run(dir).map_err(err)?;
    let rec = RunRecord::of(&results, &text, &source);
    let a = db.add(&rec, benchlab_history::now_unix()).map_err(err)?;
    Ok(if a.new {
        format!(
            "recorded #{}: suite `{}`, started {} UTC{}, from {}",
            a.id,
            rec.suite,
            benchlab_history::utc_minute(rec.started_unix as i64),
            if rec.partial { ", partial" } else { "" },
            source.display()
        )
    } else {
        format!("already recorded as #{}: {}", a.id, source.display())
    })
}

pub fn run(a: HistoryArgs) -> Result<Outcome, CliError> {
    match a.command {
        HistoryCommand::Add { dirs, db } => {
            let mut db = open(&db)?;
            for d in &dirs {
                let line = add_one(&mut db, d)?;
                println!("{line}");
            }
        }
        HistoryCommand::List { suite, db } => {
            let mut db = open(&db)?;
            let runs = db.runs(suite.as_deref()).map_err(err)?;
            let phases = db.phases(suite.as_deref()).map_err(err)?;
            print!("{}", trend::list_text(&runs, &phases));
        }
        HistoryCommand::Show { id, json, db } => {
            let mut db = open(&db)?;
            let (row, phases, mixes, results) = db.run(id).map_err(err)?;
            if json {
                print!("{results}");
                if !results.ends_with('\n') {
                    println!();
                }
            } else {
                print!("{}", trend::show_text(&row, &phases, &mixes));
            }
        }
        HistoryCommand::Trend { suite, html, db } => {
            let mut db = open(&db)?;
            let runs = db.runs(Some(&suite)).map_err(err)?;
            if runs.is_empty() {
                return Err(err(db.no_suite(&suite)));
            }
            let phases = db.phases(Some(&suite)).map_err(err)?;
            match html {
                Some(file) => {
                    let page = trend::trend_html(&suite, &runs, &phases);
                    std::fs::write(&file, page).map_err(|e| {
                        err(benchlab_history::Error::Write {
                            path: file.clone(),
                            why: e.to_string(),
                        })
                    })?;
                    println!("wrote {}", file.display());
                }
                None => print!("{}", trend::trend_text(&suite, &runs, &phases)),
            }
        }
    }
    Ok(Outcome::Completed)
}

/// `run --record [--db …]`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Record the run in the history database when it ends (a run stopped
    /// early too, marked partial); see `benchlab history`.
    #[arg(long)]
    pub record: bool,
    /// The history database of --record: a SQLite file or a postgres:// URL
    /// [default: $XDG_DATA_HOME/benchlab/history.sqlite].
    #[arg(long, value_name = "PATH|postgres://…", requires = "record")]
    pub db: Option<String>,
}

impl RecordArgs {
    /// Opens the database before the run, so that a database that cannot be
    /// used (unreachable, a newer schema) stops the run before its load.
    pub fn open(&self) -> Result<Option<Db>, CliError> {
        if !self.record {
            return Ok(None);
        }
        Db::open(self.db.as_deref()).map(Some).map_err(err)
    }
}

/// Records the results directory `out` of a run that started at `started`
/// and ended with `outcome`. A run that wrote nothing records nothing (nor
/// an older results.json left in `out`). When recording fails the results
/// stay on disk and the run's own outcome stands (a breach or an interrupt
/// is never hidden), except that a completed run exits 1.
pub fn record_after_run(
    db: Option<Db>,
    out: &Path,
    started: std::time::SystemTime,
    outcome: Result<Outcome, CliError>,
) -> Result<Outcome, CliError> {
    let Some(mut db) = db else {
        return outcome;
    };
    // A file's time comes from the kernel's coarse clock, a tick behind
    // SystemTime::now(); a mix lasts far longer than the margin.
    let since = started
        .checked_sub(std::time::Duration::from_secs(1))
        .unwrap_or(started);
    let written = std::fs::metadata(out.join("results.json"))
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if outcome.is_err() || !written {
        return outcome;
    }
    match add_one(&mut db, out) {
        Ok(line) => {
            eprintln!("history: {line}");
            outcome
        }
        Err(e) => {
            let msg = format!(
                "history: the run was not recorded ({e}); its results are in {}",
                out.display()
            );
            match outcome {
                Ok(Outcome::Completed) => Err(CliError::CannotRun(msg)),
                other => {
                    eprintln!("benchlab: {msg}");
                    other
                }
            }
        }
    }
}

/// The base of `compare --against last:N NEW`: the last N complete recorded
/// runs of NEW's suite (NEW itself left out when it was recorded), folded
/// into one run whose mixes hold each recorded run as a repeat — their
/// spread is the compare's noise.
pub fn baseline(db: &DbArg, against: usize, new: &benchlab_report::Run) -> Result<benchlab_report::Run, CliError> {
    let mut db = open(db)?;
    // NEW is left out by the digest of its file as recorded (it was read
    // a moment ago: unreadable now, nothing is left out).
    let file = new.dir.join("results.json");
    let digest = benchlab_model::input::read_bounded_text(&file, "results.json", benchlab_results::MAX_RESULTS_BYTES)
        .map(|t| benchlab_history::digest(&t))
        .unwrap_or_default();
    let suite = &new.results.suite.name;
    let rows = db.last(suite, against, &digest).map_err(err)?;
    if rows.is_empty() {
        return Err(err(db.no_suite(suite)));
    }
    let mut runs = Vec::with_capacity(rows.len());
    for (row, text) in rows {
        let r = benchlab_results::load::parse(&text)
            .map_err(|e| CliError::CannotRun(format!("history database {}: run #{}: {e}", db.name(), row.id)))?;
        runs.push((row, r));
    }
    let ids: Vec<String> = runs.iter().map(|(r, _)| format!("#{}", r.id)).collect();
    let n = runs.len();
    let results = benchlab_history::baseline(runs)
        .ok_or_else(|| CliError::CannotRun(format!("history database {}: no run to compare with", db.name())))?;
    Ok(benchlab_report::Run {
        label: format!(
            "last {} of {}",
            benchlab_format::plural(n as u64, "recorded run", "recorded runs"),
            ids.join(", ")
        ),
        dir: PathBuf::from(db.name()),
        results,
    })
}
