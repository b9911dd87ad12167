//! Errors in a user's suite or workload file: always the file, the line and
//! column, what was found and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a suite or workload file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    pub file: PathBuf,
    /// 1-based line and column, when the problem has a place in the file.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.message),
            (Some(l), None) => write!(f, "{}:{l}: {}", self.file.display(), self.message),
            _ => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for ModelError {}

/// The text of one file, to turn byte offsets into lines and columns.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

impl Source {
    pub fn read(path: &Path) -> Result<Source, ModelError> {
        Source::read_bounded(path, "suite or workload", crate::input::MAX_WORKLOAD_BYTES)
    }

    /// [`Source::read`] with the limit of a `what` file
    /// ([`crate::input::read_bounded`]).
    pub fn read_bounded(path: &Path, what: &'static str, limit: u64) -> Result<Source, ModelError> {
        let bytes = crate::input::read_bounded(path, what, limit).map_err(|e| ModelError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            message: e.message(),
        })?;
        Source::from_bytes(path, bytes)
    }

    /// The text of `bytes`, refused with the place of the first byte that is
    /// not UTF-8 (line:column of the valid text before it, and its offset),
    /// or, for an empty file, at 1:1.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Source, ModelError> {
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                let valid = String::from_utf8_lossy(&bytes[..at]).into_owned();
                let (line, column) = line_col(&valid, at);
                return Err(ModelError {
                    file: path.to_path_buf(),
                    line: Some(line),
                    column: Some(column),
                    message: format!(
                        "byte 0x{:02x} at offset {at} is not UTF-8: expected a UTF-8 text file",
                        bytes[at]
                    ),
                });
            }
        };
        let src = Source {
            path: path.to_path_buf(),
            text,
        };
        if src.text.trim().is_empty() {
            return Err(src.error_at(
                0,
                "the file is empty: expected a suite (name, [workloads.NAME], [[mix]]) or a workload ([[class]])",
            ));
        }
        Ok(src)
    }

    /// An error at byte offset `at` (from a `toml::Spanned`).
    pub fn error_at(&self, at: usize, message: impl Into<String>) -> ModelError {
        let (line, column) = line_col(&self.text, at);
        ModelError {
            file: self.path.clone(),
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }

    /// An error at the end of the file, where something missing would go.
    pub fn error_at_end(&self, message: impl Into<String>) -> ModelError {
        self.error_at(self.text.len(), message)
    }

    /// An error with no place in the file.
    pub fn error(&self, message: impl Into<String>) -> ModelError {
        ModelError {
            file: self.path.clone(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// Parses the file as TOML into `T`; syntax errors, unknown keys and
    /// wrong types come back with their place.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ModelError> {
        toml::from_str(&self.text).map_err(|e| {
            // toml's message starts with "TOML parse error at line L, column C"
            // and a snippet; keep only the explanation, and give the place
            // in our own `file:line:col:` form.
            let mut message = shorten_quoted(e.message().trim());
            if message.ends_with("expected a borrowed string") {
                // serde_spanned's words when a table we keep the place of
                // was only implied by a deeper header (`[workloads.w.flow]`
                // without `[workloads.w]`): toml has no place for it.
                message = "a table defined only by the headers of its sub-tables: write its own header line \
                           first (e.g. `[workloads.NAME]` before `[[workloads.NAME.class]]` or \
                           `[workloads.NAME.flow]`)"
                    .to_string();
            }
            match e.span() {
                Some(span) => self.error_at(span.start, message),
                None => self.error(message),
            }
        })
    }
}

/// toml's message with every backtick-quoted part (a key, a value) cut to
/// an [`crate::input::excerpt`]: serde names an unknown key whole, and a 1 MB
/// key made a 1 MB message. The whole message is bounded as well.
fn shorten_quoted(message: &str) -> String {
    let mut out = String::new();
    let mut parts = message.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for (i, part) in parts.enumerate() {
        out.push('`');
        // Odd parts (0, 2, … here) are inside the quotes.
        if i % 2 == 0 {
            out.push_str(&crate::input::excerpt(part));
        } else {
            out.push_str(part);
        }
    }
    if out.chars().count() > MAX_MESSAGE_CHARS {
        out = out.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
    }
    out
}

/// The longest message quoted from the TOML parser, in characters (its
/// lists of expected keys fit).
const MAX_MESSAGE_CHARS: usize = 1000;

/// 1-based line and column (in characters) of byte offset `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..text.floor_char_boundary_compat(at)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while i > 0 && !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let t = "a = 1\nbb = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, 9), (2, 4));
    }

    /// An unknown key of a million characters is quoted in 80 of them.
    #[test]
    fn a_huge_unknown_key_is_quoted_briefly() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            name: Option<String>,
        }
        let key = "k".repeat(1_000_000);
        let src = Source {
            path: "s.toml".into(),
            text: format!("name = \"a\"\n{key} = 1\n"),
        };
        let e = src.parse::<T>().unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(1)));
        assert!(e.message.len() < 400, "{} bytes", e.message.len());
        assert_eq!(
            e.message,
            format!(
                "unknown field `{}… (1000000 characters)`, expected `name`",
                "k".repeat(80)
            )
        );
        assert_eq!(
            shorten_quoted("unknown field `a`, expected `b`"),
            "unknown field `a`, expected `b`"
        );
    }

    #[test]
    fn non_utf8_and_empty_files_have_a_place() {
        let p = Path::new("s.toml");
        let e = Source::from_bytes(p, b"name = \"a\"\nx = \"\xe9t\xe9\"\n".to_vec()).unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(6)));
        assert!(e.message.contains("byte 0xe9 at offset 16"), "{}", e.message);
        let e = Source::from_bytes(p, b" \n".to_vec()).unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(1)));
        assert!(e.message.contains("empty"), "{}", e.message);
    }
}

impl benchlab_input::Classify for ModelError {
    /// A suite or workload file is the user's to fix.
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::Usage
    }
}

/// A command-line flag's value that the suite refuses (`--time-scale`,
/// `--phase`, `--phase-target`): the message starts with the flag and
/// the value as the user gave them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {value}: {reason}")]
pub struct FlagError {
    pub flag: &'static str,
    pub value: String,
    /// What is wrong and what was expected.
    pub reason: String,
}

impl benchlab_input::Classify for FlagError {
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::Usage
    }
}

/// A class's URLs that cannot be resolved against its target
/// ([`crate::Class::resolve`]): a file set missing or too small.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "class `{class}` draws from file set `{fileset}`, but no directory is given for it: \
         pass --fileset {fileset}=DIR (made by `benchlab fileset generate`) or set it in the suite's [filesets]"
    )]
    NoFilesetDir { class: String, fileset: String },
    #[error("{0}")]
    Manifest(#[from] benchlab_fileset::ManifestError),
    #[error("class `{class}`: file set `{fileset}` has no matching files")]
    NoMatchingFiles { class: String, fileset: String },
    #[error(
        "class `{class}`: top = {top}, but file set `{fileset}` ({dir}) has only {found} files{of}: \
         expected a file set of at least {top} files, or a smaller top"
    )]
    TooFewFiles {
        class: String,
        fileset: String,
        dir: String,
        top: usize,
        found: usize,
        /// ` of class A, B` when the class picks file-set classes.
        of: String,
    },
    #[error("class `{class}`: its URLs have no weight")]
    NoWeight { class: String },
    /// A line of a class's URL file that cannot be read.
    #[error("{0}")]
    UrlFile(Box<ModelError>),
}

impl benchlab_input::Classify for ResolveError {
    /// The suite names the file set; a missing or small one is the user's
    /// to fix.
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::Usage
    }
}
