//! `benchlab workload`: make workload files. `from-log` turns a real
//! server's access log into a workload that covers a chosen share of its
//! requests, the way seed 002 built its workload (704 of 6,400 URLs covered
//! 94 %). The work is in `benchlab-logs`; this is flags, files and output.

use crate::{CliError, Outcome};
use benchlab_logs::{Cover, Settings};
use clap::{Args, Subcommand};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    #[command(subcommand)]
    command: WorkloadCommand,
}

#[derive(Debug, Subcommand)]
enum WorkloadCommand {
    /// Rank the URLs of a Common/Combined Log Format access log (plain or
    /// gzip) by successful GETs and write a workload of the most requested.
    FromLog(FromLogArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "\
Successful GETs (2xx and 304) are ranked by URL; other methods, other \
statuses and malformed lines are counted and reported, never ranked. Each \
URL's weight is its request count; its size is the most frequent body size \
of its 200 responses (none when it only had 304s or '-').

With neither --cover nor --max-urls every URL is kept. With both, the list \
stops at whichever is reached first.

A proxy's absolute URLs (`GET http://HOST/p`) count under their paths (a \
workload's URLs are paths on its target); `*` and `host:port` targets are \
counted and skipped.

The report goes to stdout (stderr with --out -), the parse rate to stderr. \
Exit status: 0 written; 1 the log could not be read or held no successful \
GET; 2 bad usage, or no access log (64 MiB without one log line); 141 \
stdout closed by its reader.")]
pub struct FromLogArgs {
    /// The access log, plain or gzip (told apart by content); `-` for stdin.
    #[arg(value_name = "ACCESS_LOG")]
    log: PathBuf,

    /// Keep the most requested URLs until they cover this share of the
    /// successful GETs: `94%` or `94` (seed 002's figure).
    #[arg(long, value_name = "PERCENT", value_parser = Cover::parse)]
    cover: Option<Cover>,

    /// Keep at most N URLs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_urls: Option<u64>,

    /// Drop query strings, so `/a?x=1` and `/a?x=2` count as `/a`.
    #[arg(long)]
    strip_query: bool,

    /// Where to write the workload (TOML); `-` for stdout. Over 10,000 URLs
    /// go to a URL file beside it (W.urls for W.toml), read a line at a time.
    #[arg(short, long, value_name = "FILE")]
    out: PathBuf,
}

/// Above this many URLs `from-log` writes them to a URL file beside the
/// workload (`W.urls` for `W.toml`) instead of `[[class.url]]` tables: a
/// TOML document is held and parsed whole (nearly 2 KB a URL), a URL file
/// is read a line at a time into the run's compact URL list.
pub const URL_FILE_FROM: usize = 10_000;

pub fn run(args: WorkloadArgs) -> Result<Outcome, CliError> {
    match args.command {
        WorkloadCommand::FromLog(a) => from_log(a),
    }
}

fn from_log(a: FromLogArgs) -> Result<Outcome, CliError> {
    let to_stdout = a.out.as_os_str() == "-";
    // Fail before reading a large log when the output cannot be written.
    if !to_stdout {
        check_out_dir(&a.out)?;
    }
    let settings = Settings {
        cover: a.cover.unwrap_or(Cover::ALL),
        max_urls: a.max_urls.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        strip_query: a.strip_query,
    };
    let source = a.log.display().to_string();
    let result = if a.log.as_os_str() == "-" {
        benchlab_logs::from_log(io::stdin().lock(), &settings)
    } else {
        let file =
            File::open(&a.log).map_err(|e| CliError::Usage(format!("cannot open access log `{source}`: {e}")))?;
        benchlab_logs::from_log(file, &settings)
    };
    let (scan, selection) =
        result.map_err(|e| CliError::CannotRun(format!("cannot read access log `{source}`: {e}")))?;

    if scan.not_a_log {
        return Err(CliError::Usage(format!(
            "`{}`: the first {} MiB hold no Common or Combined Log Format line: expected an access log",
            benchlab_model::input::excerpt(&source),
            benchlab_logs::NOT_A_LOG_BYTES >> 20
        )));
    }
    let report = benchlab_logs::report(&source, &scan, &selection, &settings);
    eprintln!("{}", benchlab_logs::rate_line(&scan));
    if selection.kept.is_empty() {
        eprint!("{report}");
        return Err(CliError::CannotRun(format!(
            "no successful GET (2xx or 304) in `{source}`: nothing to make a workload of"
        )));
    }

    if to_stdout {
        let stdout = io::stdout().lock();
        // A reader that stops early (`--out - | head`) ends benchlab quietly.
        if let Err(e) =
            benchlab_logs::write_workload(BufWriter::new(stdout), &source, &scan, &selection, &settings, None)
        {
            crate::output::stdout_failed(&e);
        }
        eprint!("{report}");
    } else {
        // A large workload's URLs go to a file of their own beside it,
        // read a line at a time when loaded (docs/workloads.md).
        let url_file = (selection.kept.len() > URL_FILE_FROM).then(|| a.out.with_extension("urls"));
        if let Some(path) = &url_file {
            write_file(path, |w| {
                benchlab_model::write_url_file_header(w)?;
                for r in &selection.kept {
                    benchlab_model::write_url_file_line(w, r.requests, r.size, &r.path)?;
                }
                Ok(())
            })?;
        }
        let name = url_file
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        write_file(&a.out, |w| {
            benchlab_logs::write_workload(w, &source, &scan, &selection, &settings, name.as_deref())
        })?;
        print!("{report}");
        println!("workload written to {}", a.out.display());
    }
    Ok(Outcome::Completed)
}

/// The output's directory must exist; the file itself is made at the end.
fn check_out_dir(out: &Path) -> Result<(), CliError> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "cannot write `{}`: directory `{}` does not exist",
            out.display(),
            dir.display()
        )));
    }
    if out.is_dir() {
        return Err(CliError::Usage(format!(
            "cannot write `{}`: it is a directory",
            out.display()
        )));
    }
    Ok(())
}

/// Writes `out` through a temporary file beside it and renames it into
/// place, so an interrupted run never leaves half a workload behind.
fn write_file(out: &Path, write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<(), CliError> {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let fail = |e: io::Error| CliError::CannotRun(format!("cannot write `{}`: {e}", out.display()));
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        write(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all()?;
        drop(w);
        std::fs::rename(&tmp, out)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}
