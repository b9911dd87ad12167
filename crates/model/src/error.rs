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
        let text = std::fs::read_to_string(path).map_err(|e| ModelError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            message: format!("cannot read: {e}"),
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text,
        })
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
            let message = e.message().trim().to_string();
            match e.span() {
                Some(span) => self.error_at(span.start, message),
                None => self.error(message),
            }
        })
    }
}

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
}
