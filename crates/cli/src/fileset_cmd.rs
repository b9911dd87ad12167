//! `benchlab fileset`: generate a document tree with its manifest, or check
//! a tree against its manifest. The work is in `benchlab-fileset`; this is
//! flags, refusal of unsafe output directories, the progress bar and the
//! one-line summaries.

use crate::{CliError, Outcome};
use benchlab_fileset::{self as fileset, Kind, Spec, MANIFEST_FILE, SPECWEB_DEFAULT_DIRS};
use benchlab_format::{fixed, mbytes_per_sec, plural, seconds, thousands};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct FilesetArgs {
    #[command(subcommand)]
    command: FilesetCommand,
}

#[derive(Debug, Subcommand)]
enum FilesetCommand {
    /// Write a document tree and its `manifest` (URL path, size, XXH3,
    /// class, request weight), byte-identical for a kind and seed.
    Generate(GenerateArgs),
    /// Check every file a tree's `manifest` lists: present, same size, same
    /// XXH3. Exit 0 when all match, 1 otherwise.
    Verify(VerifyArgs),
}

/// The file sets benchlab generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KindArg {
    /// SPECweb99-like: --dirs directories × 36 files, 102 B … 900 KiB,
    /// Zipf-weighted (mean response 14.7 KB).
    Specweb99,
    /// c't 1999: one 4 KB page (/4k.html) and one 8 KB page (/8k.html).
    #[value(name = "ct-single")]
    CtSingle,
    /// c't 1999: 10,000 pages of 4,096 bytes.
    #[value(name = "ct-10k")]
    Ct10k,
    /// c't 1999: 1,000,000 pages of 4,096 bytes (4.1 GB); its first 10,000
    /// are ct-10k.
    #[value(name = "ct-1m")]
    Ct1m,
    /// c't 1999: ct-1m and ct-single in one root with one manifest (4.1 GB),
    /// for all of suites/ct-1999.toml.
    #[value(name = "ct-1999")]
    Ct1999,
    /// Seed 002's log: 6,400 URLs, the 704 most requested carry 94.3 % of
    /// the requests, each other one 1 of 100,330; mean response 14,757 bytes.
    #[value(name = "mindcraft-1998")]
    Mindcraft1998,
    /// --count pages of --size bytes.
    Custom,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Layouts (the URL path of a file is its path under --out):
  specweb99   /dirNNNNN/classC_K: class C = 0-3, file K = 0-8, size (K+1) x \
102.4 B (rounded to nearest: ((K+1)*1024+5)/10), 1 KiB, 10 KiB, 100 KiB; \
5,119,488 bytes per directory. Request weight = class share (35/50/14/1 %) \
x file share (3.9 5.9 8.8 17.7 35.3 11.8 7.1 5.0 4.4 %, normalised) x \
directory Zipf 1/(d+1) (normalised); weights sum to 1, weighted mean size \
14,726 bytes (the 14,712 sometimes quoted is the same sum before \
normalising the file shares, which add up to 99.9 %; see docs/filesets.md).
  mindcraft-1998   /dNN/rNNNN.html for request rank r = 1..6400 (100 a \
directory), in rank order: the log seed 002 describes. Rank r <= 704 is \
requested floor(13313 / r) times, every other URL once, in 100,330 requests \
(weight = count / 100,330): the top 704 carry 94.32 %, each other URL \
0.000997 %. Sizes are SPECweb99's (class `classC`), given so that the top \
704 and the other 5,696 each follow SPECweb99's request-weighted size mix: \
mean response 14,757 bytes (14,754 over the top 704). See docs/filesets.md.
  ct-single   /4k.html (4,096 B) and /8k.html (8,192 B), weight 0.5 each, \
class `ct-single`.
  ct-10k, ct-1m, custom   /dNNNN/pNNNNNN.html, 1,000 pages per directory, \
weight 1/count each; class `page` (custom), or `ct-10k` for pages 0-9,999 and \
`ct-1m` for the rest: ct-10k is ct-1m's first 10,000 pages, byte for byte.
  ct-1999     ct-1m's pages then ct-single's two files, one manifest, each \
file with the bytes it has in its own set (same seed); weight 1/1,000,002.

Content is HTML-like text (title, headings, paragraphs, lists, links) drawn \
word by word from SplitMix64, so it compresses like real pages, not like \
zeros. The same kind and seed give byte-identical trees on any machine and \
any number of threads (RAYON_NUM_THREADS sets how many write).

The manifest (`manifest` at the root of --out) is text, one file per line: \
path TAB size TAB xxh3-64 (16 hex digits, seed 0) TAB class TAB weight, \
after a `# benchlab-manifest 1` line and a `# kind=… seed=…` line.

Exit status: 0 written; 1 the tree could not be written; 2 bad usage \
(including a non-empty --out without --force).")]
pub struct GenerateArgs {
    /// Which file set.
    #[arg(value_enum)]
    kind: KindArg,

    /// Directory to write the tree and its manifest into (created if missing;
    /// a directory this creates gets `chattr +T` on ext2/3/4, so its
    /// subdirectories spread over the disk: docs/filesets.md).
    #[arg(long, short = 'o', value_name = "DIR")]
    out: PathBuf,

    /// PRNG seed: the same seed gives the same bytes.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,

    /// specweb99 only: number of directories (36 files, 5.1 MB each) [default: 10, ≈51 MB].
    #[arg(long, value_name = "N")]
    dirs: Option<u32>,

    /// custom only: number of pages (required for custom).
    #[arg(long, value_name = "N")]
    count: Option<u64>,

    /// custom only: bytes per page [default: 4096].
    #[arg(long, value_name = "BYTES")]
    size: Option<u64>,

    /// Write into a non-empty --out: files of the same names are
    /// overwritten, other files are left as they are.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Reads DIR/manifest and checks each file it lists, in parallel. Files in DIR \
that the manifest does not list are ignored.

Exit status: 0 every file matches; 1 a file differs, is missing or \
unreadable, or the manifest cannot be read (the message names its line).")]
pub struct VerifyArgs {
    /// Root of the tree (holds `manifest`).
    #[arg(value_name = "DIR")]
    dir: PathBuf,

    /// Print at most N mismatches (all are counted).
    #[arg(long, default_value_t = 10, value_name = "N")]
    max_report: usize,
}

pub fn run(args: FilesetArgs) -> Result<Outcome, CliError> {
    match args.command {
        FilesetCommand::Generate(a) => generate(a),
        FilesetCommand::Verify(a) => verify(a),
    }
}

/// Turns the flags into a kind, refusing flags that do not apply to it (a
/// silently ignored `--dirs` would make a set other than the one meant).
fn kind(a: &GenerateArgs) -> Result<Kind, CliError> {
    let only = |flag: &str, set: bool, kind: &str| -> Result<(), CliError> {
        if set {
            return Err(CliError::Usage(format!(
                "{flag} applies to {kind} only, not to {}",
                a.kind
                    .to_possible_value()
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            )));
        }
        Ok(())
    };
    if a.kind != KindArg::Specweb99 {
        only("--dirs", a.dirs.is_some(), "specweb99")?;
    }
    if a.kind != KindArg::Custom {
        only("--count", a.count.is_some(), "custom")?;
        only("--size", a.size.is_some(), "custom")?;
    }
    Ok(match a.kind {
        KindArg::Specweb99 => Kind::Specweb99 {
            dirs: a.dirs.unwrap_or(SPECWEB_DEFAULT_DIRS),
        },
        KindArg::CtSingle => Kind::CtSingle,
        KindArg::Ct10k => Kind::Ct10k,
        KindArg::Ct1m => Kind::Ct1m,
        KindArg::Ct1999 => Kind::Ct1999,
        KindArg::Mindcraft1998 => Kind::Mindcraft1998,
        KindArg::Custom => Kind::Custom {
            count: a
                .count
                .ok_or_else(|| CliError::Usage("custom needs --count N (and optionally --size BYTES)".into()))?,
            size: a.size.unwrap_or(4096),
        },
    })
}

/// Refuses an --out that is a file, or a non-empty directory without
/// --force: generating over someone's documents must be asked for.
fn check_out(out: &Path, force: bool) -> Result<(), CliError> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !force {
                return Err(CliError::Usage(format!(
                    "{} is not empty (use --force to write into it anyway)",
                    out.display()
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CliError::Usage(format!("--out {}: {e}", out.display()))),
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal so logs
/// and pipes stay clean.
fn progress_bar(files: u64, verb: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(files), target);
    let template = format!("{verb} [{{bar:40}}] {{human_pos}}/{{human_len}} files, {{msg}}, eta {{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The bar's message: MB so far and the rates.
fn progress_message(files: u64, bytes: u64, elapsed: Duration) -> String {
    format!("{} MB, {}", fixed(bytes as f64 / 1e6, 1), rates(files, bytes, elapsed))
}

/// Files/s and MB/s (MB = 10⁶ bytes, as everywhere in benchlab).
fn rates(files: u64, bytes: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    format!(
        "{} files/s, {} MB/s",
        thousands((files as f64 / secs).round() as u64),
        mbytes_per_sec(bytes as f64 / secs)
    )
}

fn generate(a: GenerateArgs) -> Result<Outcome, CliError> {
    let kind = kind(&a)?;
    let spec = Spec::new(kind, a.seed).map_err(|e| CliError::Usage(e.to_string()))?;
    check_out(&a.out, a.force)?;
    let bar = progress_bar(spec.files(), "generate");
    let summary = fileset::generate(&spec, &a.out, &mut |files, bytes| {
        bar.set_position(files);
        bar.set_message(progress_message(files, bytes, bar.elapsed()));
    });
    bar.finish_and_clear();
    let s = summary.map_err(|e| CliError::CannotRun(format!("fileset generate: {e}")))?;
    println!(
        "{} seed {}: wrote {}, {} bytes ({} MB) and {} in {} s: {}",
        spec.kind().name(),
        spec.seed(),
        plural(s.files, "file", "files"),
        thousands(s.bytes),
        fixed(s.bytes as f64 / 1e6, 1),
        a.out.join(MANIFEST_FILE).display(),
        seconds(s.elapsed.as_secs_f64()),
        rates(s.files, s.bytes, s.elapsed)
    );
    Ok(Outcome::Completed)
}

fn verify(a: VerifyArgs) -> Result<Outcome, CliError> {
    // The bar's length is known once the manifest is read.
    let bar = progress_bar(0, "verify");
    let report = fileset::verify(&a.dir, a.max_report, &mut |files, bytes, total| {
        bar.set_length(total);
        bar.set_position(files);
        bar.set_message(progress_message(files, bytes, bar.elapsed()));
    });
    bar.finish_and_clear();
    let r = report.map_err(|e| CliError::CannotRun(format!("fileset verify: {e}")))?;
    let totals = format!(
        "{}, {} bytes in {} s ({})",
        plural(r.files, "file", "files"),
        thousands(r.bytes),
        seconds(r.elapsed.as_secs_f64()),
        rates(r.files, r.bytes, r.elapsed)
    );
    if r.mismatches == 0 {
        println!("{}: all match: {totals}", r.manifest.display());
        return Ok(Outcome::Completed);
    }
    for m in &r.first {
        eprintln!(
            "{}: {}",
            a.dir.join(m.path.trim_start_matches('/')).display(),
            m.problem
        );
    }
    let shown = if r.first.len() as u64 == r.mismatches {
        String::new()
    } else {
        format!(", the first {} shown", r.first.len())
    };
    Err(CliError::CannotRun(format!(
        "fileset verify: {} of {} files differ from {}{shown}; checked {totals}",
        thousands(r.mismatches),
        thousands(r.files),
        r.manifest.display()
    )))
}
