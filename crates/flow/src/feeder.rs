//! Feeders: data files whose rows give each virtual user its values (a
//! login, a product). A CSV file (RFC 4180; the header row names the
//! columns) or JSON lines (one flat object a line; strings, numbers and
//! booleans, as text). Read once, bounded, into one byte buffer with cell
//! offsets; shared by every user of a run on every thread, the `next`
//! cursor an atomic.

use crate::template::{valid_name, MAX_VALUE_BYTES};
use benchlab_rng::SplitMix64;
use serde::Deserialize;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes of a feeder file.
pub const MAX_FEEDER_BYTES: u64 = 256 << 20;
/// The most columns of a feeder.
pub const MAX_COLUMNS: usize = 256;

/// Which row a user takes when its flow starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The next row not yet taken by any user (one shared counter).
    #[default]
    Next,
    /// A row drawn at random from the user's own stream.
    Random,
    /// User k takes row k (mod the rows with `on_end = "loop"`), at every
    /// start of its flow.
    Index,
}

/// What happens when the rows run out (`next` and `index`; `random` never
/// runs out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnEnd {
    /// Start again from the first row.
    #[default]
    Loop,
    /// The user gets no row and its flow ends.
    Stop,
}

/// The file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// The format a file's name says: `.jsonl`/`.ndjson` JSON lines, anything
    /// else CSV.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl" | "ndjson") => Format::Jsonl,
            _ => Format::Csv,
        }
    }
}

/// A feeder file that cannot be used: the line (1-based) and what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeederError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FeederError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

fn err(line: usize, message: impl Into<String>) -> FeederError {
    FeederError {
        line,
        message: message.into(),
    }
}

/// A feeder's rows, shared by the users of a run.
#[derive(Debug)]
pub struct Feeder {
    columns: Vec<Box<str>>,
    /// Every cell's bytes, row after row.
    data: Vec<u8>,
    /// Cell boundaries: cell i of the table is `data[ends[i-1]..ends[i]]`.
    ends: Vec<u32>,
    rows: usize,
    mode: Mode,
    on_end: OnEnd,
    cursor: AtomicU64,
}

/// One row of a feeder.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    feeder: &'a Feeder,
    index: usize,
}

impl<'a> Row<'a> {
    /// The row's index in the file (0 for the first after the header).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Column `col`'s value (empty for a column the feeder has not).
    pub fn get(&self, col: usize) -> &'a [u8] {
        let n = self.feeder.columns.len();
        if col >= n {
            return &[];
        }
        let cell = self.index * n + col;
        let start = if cell == 0 {
            0
        } else {
            self.feeder.ends[cell - 1] as usize
        };
        &self.feeder.data[start..self.feeder.ends[cell] as usize]
    }
}

impl Feeder {
    /// Reads a feeder file (bounded by [`MAX_FEEDER_BYTES`]). An error
    /// names the file, and the line where there is one.
    pub fn load(path: &Path, format: Format, mode: Mode, on_end: OnEnd) -> Result<Feeder, String> {
        let bytes = benchlab_input::read_bounded(path, "feeder", MAX_FEEDER_BYTES).map_err(|e| e.to_string())?;
        Feeder::parse(&bytes, format, mode, on_end).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A feeder from a file's bytes.
    pub fn parse(bytes: &[u8], format: Format, mode: Mode, on_end: OnEnd) -> Result<Feeder, FeederError> {
        let mut f = Feeder {
            columns: Vec::new(),
            data: Vec::with_capacity(bytes.len()),
            ends: Vec::new(),
            rows: 0,
            mode,
            on_end,
            cursor: AtomicU64::new(0),
        };
        match format {
            Format::Csv => f.parse_csv(bytes)?,
            Format::Jsonl => f.parse_jsonl(bytes)?,
        }
        if f.rows == 0 {
            return Err(err(0, "no rows: a feeder needs at least one row of data"));
        }
        if f.data.len() > u32::MAX as usize {
            return Err(err(0, "more than 4 GiB of values"));
        }
        f.data.shrink_to_fit();
        f.ends.shrink_to_fit();
        Ok(f)
    }

    fn set_columns(&mut self, line: usize, names: Vec<String>) -> Result<(), FeederError> {
        if names.len() > MAX_COLUMNS {
            return Err(err(line, format!("more than {MAX_COLUMNS} columns")));
        }
        for (i, n) in names.iter().enumerate() {
            if !valid_name(n) {
                return Err(err(
                    line,
                    format!(
                        "column `{}` is no variable name: expected a letter or `_`, then letters, digits and `_`",
                        benchlab_input::excerpt(n)
                    ),
                ));
            }
            if names[..i].contains(n) {
                return Err(err(line, format!("column `{n}` appears twice")));
            }
        }
        self.columns = names.into_iter().map(String::into_boxed_str).collect();
        Ok(())
    }

    fn push_cell(&mut self, line: usize, value: &[u8]) -> Result<(), FeederError> {
        if value.len() > MAX_VALUE_BYTES {
            return Err(err(line, format!("a value longer than {} KiB", MAX_VALUE_BYTES >> 10)));
        }
        self.data.extend_from_slice(value);
        self.ends.push(self.data.len().min(u32::MAX as usize) as u32);
        Ok(())
    }

    fn parse_csv(&mut self, bytes: &[u8]) -> Result<(), FeederError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut reader = CsvReader { bytes, pos: 0, line: 1 };
        let mut record = Vec::new();
        let Some(header_line) = reader.record(&mut record)? else {
            return Err(err(1, "empty: expected a header row naming the columns"));
        };
        let names = record
            .iter()
            .map(|c| String::from_utf8(c.clone()).map_err(|_| err(header_line, "a column name is not UTF-8")))
            .collect::<Result<Vec<_>, _>>()?;
        self.set_columns(header_line, names)?;
        while let Some(line) = reader.record(&mut record)? {
            // A blank line (a lone empty field where there are more columns)
            // is no record.
            if record.len() == 1 && record[0].is_empty() && self.columns.len() != 1 {
                continue;
            }
            if record.len() != self.columns.len() {
                return Err(err(
                    line,
                    format!(
                        "{} fields: expected {} as the header row names",
                        record.len(),
                        self.columns.len()
                    ),
                ));
            }
            for cell in &record {
                self.push_cell(line, cell)?;
            }
            self.rows += 1;
        }
        Ok(())
    }

    fn parse_jsonl(&mut self, bytes: &[u8]) -> Result<(), FeederError> {
        let mut values: Vec<Option<Vec<u8>>> = Vec::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // In the line's key order (a `Map` would sort the columns).
            let obj: crate::ordered::Ordered<serde_json::Value> = serde_json::from_slice(line)
                .map_err(|e| err(n, format!("expected a flat JSON object on one line: {e}")))?;
            if self.columns.is_empty() && self.rows == 0 {
                self.set_columns(n, obj.0.iter().map(|(k, _)| k.clone()).collect())?;
                if self.columns.is_empty() {
                    return Err(err(n, "an empty object: expected the columns as its keys"));
                }
            }
            values.clear();
            values.resize(self.columns.len(), None);
            for (k, v) in &obj.0 {
                let Some(col) = self.columns.iter().position(|c| &**c == k) else {
                    return Err(err(
                        n,
                        format!(
                            "key `{}` is not among the first line's keys",
                            benchlab_input::excerpt(k)
                        ),
                    ));
                };
                let text = match v {
                    serde_json::Value::String(s) => s.clone().into_bytes(),
                    serde_json::Value::Number(x) => x.to_string().into_bytes(),
                    serde_json::Value::Bool(b) => b.to_string().into_bytes(),
                    _ => {
                        return Err(err(
                            n,
                            format!("`{k}` is null, an array or an object: expected a string, number or boolean"),
                        ))
                    }
                };
                values[col] = Some(text);
            }
            for (col, v) in values.iter().enumerate() {
                let Some(v) = v else {
                    return Err(err(
                        n,
                        format!("key `{}` is missing (the first line has it)", self.columns[col]),
                    ));
                };
                let v = v.clone();
                self.push_cell(n, &v)?;
            }
            self.rows += 1;
        }
        Ok(())
    }

    /// The columns, in the file's order.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.columns.iter().map(|c| &**c)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn on_end(&self) -> OnEnd {
        self.on_end
    }

    /// The row for a flow that starts: `user` is the user's index in its
    /// run, `rng` its own stream. `None` when the rows ran out and the
    /// feeder says `stop`.
    pub fn take(&self, user: u64, rng: &mut SplitMix64) -> Option<Row<'_>> {
        let n = self.rows as u64;
        let k = match self.mode {
            Mode::Next => self.cursor.fetch_add(1, Ordering::Relaxed),
            Mode::Random => rng.below(n),
            Mode::Index => user,
        };
        if k >= n && self.on_end == OnEnd::Stop {
            return None;
        }
        Some(Row {
            feeder: self,
            index: (k % n) as usize,
        })
    }

    /// Row `index` (< [`Feeder::rows`]).
    pub fn row(&self, index: usize) -> Option<Row<'_>> {
        (index < self.rows).then_some(Row { feeder: self, index })
    }
}

/// An RFC 4180 reader: fields separated by `,`, records by CRLF or LF, a
/// field in double quotes may hold commas, line breaks and `""` for a quote.
struct CsvReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl CsvReader<'_> {
    /// The next record into `out`; its first line, or `None` at the end.
    fn record(&mut self, out: &mut Vec<Vec<u8>>) -> Result<Option<usize>, FeederError> {
        out.clear();
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        let first = self.line;
        let b = self.bytes;
        let mut field = Vec::new();
        loop {
            if self.pos < b.len() && b[self.pos] == b'"' {
                self.pos += 1;
                let open = self.line;
                loop {
                    match b.get(self.pos) {
                        None => return Err(err(open, "a quoted field is not closed: expected `\"`")),
                        Some(b'"') if b.get(self.pos + 1) == Some(&b'"') => {
                            field.push(b'"');
                            self.pos += 2;
                        }
                        Some(b'"') => {
                            self.pos += 1;
                            break;
                        }
                        Some(&c) => {
                            if c == b'\n' {
                                self.line += 1;
                            }
                            field.push(c);
                            self.pos += 1;
                        }
                    }
                }
                match b.get(self.pos) {
                    None | Some(b',' | b'\n') => {}
                    Some(b'\r') if matches!(b.get(self.pos + 1), None | Some(b'\n')) => {}
                    Some(_) => return Err(err(
                        self.line,
                        "text after a closing quote: expected `,` or the end of the line (write `\"\"` for a quote)",
                    )),
                }
            } else {
                while let Some(&c) = b.get(self.pos) {
                    if c == b',' || c == b'\n' || (c == b'\r' && matches!(b.get(self.pos + 1), None | Some(b'\n'))) {
                        break;
                    }
                    if c == b'"' {
                        return Err(err(
                            self.line,
                            "a `\"` inside an unquoted field: quote the field and write `\"\"` for a quote",
                        ));
                    }
                    field.push(c);
                    self.pos += 1;
                }
            }
            out.push(std::mem::take(&mut field));
            match b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'\r') => {
                    self.pos += if b.get(self.pos + 1) == Some(&b'\n') { 2 } else { 1 };
                    self.line += 1;
                    return Ok(Some(first));
                }
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                    return Ok(Some(first));
                }
                _ => return Ok(Some(first)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> Result<Feeder, FeederError> {
        Feeder::parse(text.as_bytes(), Format::Csv, Mode::Next, OnEnd::Loop)
    }

    fn cells(f: &Feeder) -> Vec<Vec<String>> {
        (0..f.rows())
            .map(|r| {
                let row = f.row(r).unwrap();
                (0..f.columns.len())
                    .map(|c| String::from_utf8(row.get(c).to_vec()).unwrap())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn csv_reads_rfc4180() {
        // (file, columns, rows)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a [&'a str]]);
        let cases: &[Case] = &[
            (
                "user,pass\nann,1\nbob,2\n",
                &["user", "pass"],
                &[&["ann", "1"], &["bob", "2"]],
            ),
            (
                "user,pass\r\nann,1\r\nbob,2",
                &["user", "pass"],
                &[&["ann", "1"], &["bob", "2"]],
            ),
            (
                "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n",
                &["a", "b"],
                &[&["x,y", "say \"hi\""]],
            ),
            ("a,b\n\"two\nlines\",\n", &["a", "b"], &[&["two\nlines", ""]]),
            ("\u{feff}a\nx\n\ny\n", &["a"], &[&["x"], &[""], &["y"]]),
            ("a,b\n1,2\n\n3,4\n", &["a", "b"], &[&["1", "2"], &["3", "4"]]),
            ("a,b\n,\n", &["a", "b"], &[&["", ""]]),
        ];
        for (text, cols, rows) in cases {
            let f = csv(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(f.columns().collect::<Vec<_>>(), *cols, "{text:?}");
            let want: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect();
            assert_eq!(cells(&f), want, "{text:?}");
        }
    }

    #[test]
    fn csv_errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "empty"),
            ("a,b\n", 0, "no rows"),
            ("a,b\n1,2\n3\n", 3, "1 fields: expected 2"),
            ("a,b\n1,\"open\n\n", 2, "not closed"),
            ("a,b\n1,\"x\"y\n", 2, "after a closing quote"),
            ("a,b\n1,x\"y\n", 2, "inside an unquoted"),
            ("a,a\n1,2\n", 1, "appears twice"),
            ("a,b c\n1,2\n", 1, "no variable name"),
            ("a,b\n\"multi\nline\",1\n1\n", 4, "1 fields"),
        ];
        for (text, line, msg) in cases {
            let e = csv(text).err().unwrap_or_else(|| panic!("{text:?} accepted"));
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(e.message.contains(msg), "{text:?}: {e}");
        }
    }

    #[test]
    fn jsonl_reads_flat_objects() {
        let text = "{\"user\":\"ann\",\"n\":1,\"ok\":true}\n\n{\"n\":2.5,\"ok\":false,\"user\":\"b\\\"x\"}\r\n";
        let f = Feeder::parse(text.as_bytes(), Format::Jsonl, Mode::Next, OnEnd::Loop).unwrap();
        assert_eq!(f.columns().collect::<Vec<_>>(), ["user", "n", "ok"]);
        assert_eq!(cells(&f), [["ann", "1", "true"], ["b\"x", "2.5", "false"]]);
        let cases: &[(&str, usize, &str)] = &[
            ("{\"a\":1}\n{\"a\":[1]}\n", 2, "expected a string, number or boolean"),
            ("{\"a\":1}\n{\"a\":null}\n", 2, "null"),
            ("{\"a\":1}\n{\"b\":1}\n", 2, "not among"),
            ("{\"a\":1,\"b\":2}\n{\"a\":1}\n", 2, "`b` is missing"),
            ("{\"a\":1}\nnot json\n", 2, "flat JSON object"),
            ("{}\n", 1, "empty object"),
        ];
        for (text, line, msg) in cases {
            let e = Feeder::parse(text.as_bytes(), Format::Jsonl, Mode::Next, OnEnd::Loop).unwrap_err();
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(e.message.contains(msg), "{text:?}: {e}");
        }
    }

    fn taken(mode: Mode, on_end: OnEnd, users: &[u64]) -> Vec<Option<usize>> {
        let f = Feeder::parse(b"a\n0\n1\n2\n", Format::Csv, mode, on_end).unwrap();
        let mut rng = SplitMix64::new(7);
        users.iter().map(|&u| f.take(u, &mut rng).map(|r| r.index())).collect()
    }

    #[test]
    fn modes_and_ends() {
        let users = [0, 5, 1, 4, 2];
        assert_eq!(
            taken(Mode::Next, OnEnd::Loop, &users),
            [Some(0), Some(1), Some(2), Some(0), Some(1)]
        );
        assert_eq!(
            taken(Mode::Next, OnEnd::Stop, &users),
            [Some(0), Some(1), Some(2), None, None]
        );
        assert_eq!(
            taken(Mode::Index, OnEnd::Loop, &users),
            [Some(0), Some(2), Some(1), Some(1), Some(2)]
        );
        assert_eq!(
            taken(Mode::Index, OnEnd::Stop, &users),
            [Some(0), None, Some(1), None, Some(2)]
        );
        let random = taken(Mode::Random, OnEnd::Stop, &[0; 300]);
        for i in 0..3 {
            assert!(random.contains(&Some(i)), "row {i} never drawn");
        }
        assert_eq!(
            random,
            taken(Mode::Random, OnEnd::Stop, &[0; 300]),
            "the same seed draws the same rows"
        );
    }

    #[test]
    fn next_is_shared_across_threads() {
        let f = Feeder::parse(b"a\n0\n1\n2\n3\n", Format::Csv, Mode::Next, OnEnd::Stop).unwrap();
        let got: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let f = &f;
                    s.spawn(move || {
                        let mut rng = SplitMix64::new(t);
                        let mut mine = Vec::new();
                        while let Some(r) = f.take(t, &mut rng) {
                            mine.push(r.index());
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3], "every row taken exactly once");
    }

    #[test]
    fn load_is_bounded_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("users.csv");
        std::fs::write(&p, "user\nann\nbob,x\n").unwrap();
        let e = Feeder::load(&p, Format::of_path(&p), Mode::Next, OnEnd::Loop).unwrap_err();
        assert!(
            e.ends_with("users.csv: line 3: 2 fields: expected 1 as the header row names"),
            "{e}"
        );
        let e = Feeder::load(&dir.path().join("none.csv"), Format::Csv, Mode::Next, OnEnd::Loop).unwrap_err();
        assert!(e.contains("none.csv") && e.contains("cannot read"), "{e}");
        assert_eq!(Format::of_path(Path::new("a.jsonl")), Format::Jsonl);
        assert_eq!(Format::of_path(Path::new("a.csv")), Format::Csv);
    }
}
