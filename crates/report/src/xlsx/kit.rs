//! The workbook's kit: typed cells, tables, a sheet writer that sizes its
//! columns, and the CSV and A1 helpers the sheets ([`super`]) are built
//! with. Nothing here knows a results file.

use benchlab_format::{column_quantity, column_title};
use rust_xlsxwriter::{ColNum, ExcelDateTime, Format, Formula, RowNum, Worksheet};

/// Excel's limit on the characters of a cell; longer text is cut so one odd
/// field cannot make the whole workbook fail.
pub(super) const MAX_CELL_CHARS: usize = 32_767;

/// Column widths, in characters: wide enough for the header or the widest
/// value (plus a margin), but never so wide that one long value (a command
/// line, a description) pushes the rest of the table off screen.
pub(super) const MIN_WIDTH: usize = 6;
pub(super) const MAX_WIDTH: usize = 60;

pub(super) fn xlsx_err(what: &'static str) -> impl Fn(rust_xlsxwriter::XlsxError) -> String {
    move |e| format!("{what}: {e}")
}

/// One cell's value, typed: numbers are written as numbers so that Excel
/// can sum, sort and chart them.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Blank,
    Text(String),
    Num(f64),
    Bool(bool),
    /// A Unix time (seconds), shown as a UTC date and time.
    Time(i64),
    /// A formula (`=J2/C2`) and the value it gives, stored as its cached
    /// result so readers that do not calculate still see the number.
    Formula(String, f64),
}

impl Cell {
    pub(super) fn text(s: impl Into<String>) -> Cell {
        let s = s.into();
        if s.is_empty() {
            Cell::Blank
        } else {
            Cell::Text(s)
        }
    }

    /// A count. Counts beyond 2⁵³ would lose digits as f64; no run comes near.
    pub(super) fn count(n: u64) -> Cell {
        Cell::Num(n as f64)
    }

    pub(super) fn opt_text(s: Option<&str>) -> Cell {
        s.map_or(Cell::Blank, Cell::text)
    }

    /// How many characters the value shows, for the column's width.
    pub(super) fn shown_chars(&self) -> usize {
        match self {
            Cell::Blank => 0,
            Cell::Text(s) => s.chars().count(),
            Cell::Num(x) => x.to_string().len(),
            Cell::Bool(b) => b.to_string().len(),
            Cell::Time(_) => TIME_FORMAT.len(),
            Cell::Formula(_, x) => x.to_string().len().min(10),
        }
    }

    /// A CSV field as written by `summary_csv`/`clients_csv`, typed: empty is
    /// blank, the text columns stay text, `true`/`false` are booleans, and a
    /// finite number is a number (Excel cannot hold NaN or infinity, and
    /// `str::parse` would accept "inf"). Rust prints an f64 with the fewest
    /// digits that read back to the same value, so the number in the cell is
    /// exactly the one behind the CSV text.
    pub(super) fn of_csv(column: &str, value: &str) -> Cell {
        if value.is_empty() {
            return Cell::Blank;
        }
        if TEXT_COLUMNS.contains(&column) {
            return Cell::text(value);
        }
        match value {
            "true" => return Cell::Bool(true),
            "false" => return Cell::Bool(false),
            _ => {}
        }
        match value.parse::<f64>() {
            Ok(x) if x.is_finite() && value.bytes().any(|b| b.is_ascii_digit()) => Cell::Num(x),
            _ => Cell::text(value),
        }
    }
}

pub(super) const TIME_FORMAT: &str = "yyyy-mm-dd hh:mm:ss";

/// A header row and rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Table {
    pub(super) header: Vec<String>,
    pub(super) rows: Vec<Vec<Cell>>,
}

impl Table {
    pub(super) fn column(&self, name: &str) -> Result<ColNum, String> {
        self.header
            .iter()
            .position(|h| h == name)
            .and_then(|i| ColNum::try_from(i).ok())
            .ok_or_else(|| format!("the summary has no `{name}` column"))
    }
}

/// A worksheet being written: remembers each column's widest value, so the
/// columns can be sized at the end.
pub(super) struct Sheet<'a> {
    pub(super) ws: &'a mut Worksheet,
    pub(super) bold: &'a Format,
    pub(super) time: Format,
    pub(super) widths: Vec<usize>,
    /// Per column of the table being written: the number format of its
    /// quantity (thousands separators, the quantity's decimals).
    pub(super) number_formats: Vec<Option<Format>>,
}

impl<'a> Sheet<'a> {
    pub(super) fn new(ws: &'a mut Worksheet, bold: &'a Format) -> Sheet<'a> {
        Sheet {
            ws,
            bold,
            time: Format::new().set_num_format(TIME_FORMAT),
            widths: Vec::new(),
            number_formats: Vec::new(),
        }
    }

    pub(super) fn measure(&mut self, col: ColNum, chars: usize) {
        let i = usize::from(col);
        if self.widths.len() <= i {
            self.widths.resize(i + 1, 0);
        }
        self.widths[i] = self.widths[i].max(chars);
    }

    pub(super) fn cell(&mut self, row: RowNum, col: ColNum, cell: &Cell) -> Result<(), String> {
        self.put(row, col, cell, false)?;
        self.measure(col, cell.shown_chars());
        Ok(())
    }

    /// A cell that does not widen its column: a line of the suite's text
    /// may run on over the empty cells to its right.
    pub(super) fn overflowing(&mut self, row: RowNum, col: ColNum, text: &str) -> Result<(), String> {
        self.put(row, col, &Cell::text(text), false)
    }

    pub(super) fn put(&mut self, row: RowNum, col: ColNum, cell: &Cell, bold: bool) -> Result<(), String> {
        let ws = &mut *self.ws;
        let r = match cell {
            Cell::Blank => return Ok(()),
            Cell::Text(s) if bold => ws.write_string_with_format(row, col, excel_text(s), self.bold),
            Cell::Text(s) => ws.write_string(row, col, excel_text(s)),
            Cell::Num(x) => match self.number_formats.get(usize::from(col)) {
                Some(Some(f)) => ws.write_number_with_format(row, col, *x, f),
                _ => ws.write_number(row, col, *x),
            },
            Cell::Bool(b) => ws.write_boolean(row, col, *b),
            Cell::Formula(f, x) => {
                let formula = Formula::new(f.as_str()).set_result(x.to_string());
                match self.number_formats.get(usize::from(col)) {
                    Some(Some(fmt)) => ws.write_formula_with_format(row, col, formula, fmt),
                    _ => ws.write_formula(row, col, formula),
                }
            }
            Cell::Time(t) => match ExcelDateTime::from_timestamp(*t) {
                Ok(t) => ws.write_datetime_with_format(row, col, &t, &self.time),
                // Outside Excel's years 1900–9999: the number of seconds itself.
                Err(_) => ws.write_number(row, col, *t as f64),
            },
        };
        r.map(|_| ()).map_err(|e| format!("cell ({row}, {col}): {e}"))
    }

    /// A bold row of column names.
    pub(super) fn header<S: AsRef<str>>(&mut self, row: RowNum, names: &[S]) -> Result<(), String> {
        for (col, name) in (0..).zip(names) {
            self.put(row, col, &Cell::text(name.as_ref()), true)?;
            self.measure(col, name.as_ref().chars().count());
        }
        Ok(())
    }

    /// A bold title in the first column, not widening it.
    pub(super) fn title(&mut self, row: RowNum, text: &str) -> Result<(), String> {
        self.put(row, 0, &Cell::text(text), true)
    }

    /// The table's header at `row` (its columns' names in words, with
    /// units), its rows below, numbers shown with their quantity's
    /// separators and decimals. Returns the row after it.
    pub(super) fn table(&mut self, row: RowNum, table: &Table) -> Result<RowNum, String> {
        let titles: Vec<String> = table.header.iter().map(|k| column_title(k)).collect();
        self.header(row, &titles)?;
        self.number_formats = table
            .header
            .iter()
            .map(|k| column_quantity(k).map(|q| Format::new().set_num_format(q.excel_format())))
            .collect();
        let mut r = row;
        for cells in &table.rows {
            r = next_row(r)?;
            for (col, cell) in (0..).zip(cells) {
                self.cell(r, col, cell)?;
            }
        }
        self.number_formats.clear();
        next_row(r)
    }

    /// Sizes the columns and, for a table, freezes its header row so it stays
    /// in view while scrolling.
    pub(super) fn finish(self, freeze_header: bool) {
        for (col, w) in (0..).zip(&self.widths) {
            let width = (w + 2).clamp(MIN_WIDTH, MAX_WIDTH);
            // Column widths cannot fail for columns the sheet already holds.
            let _ = self.ws.set_column_width(col, width as f64);
        }
        if freeze_header {
            let _ = self.ws.set_freeze_panes(1, 0);
        }
    }
}

pub(super) fn next_row(r: RowNum) -> Result<RowNum, String> {
    r.checked_add(1).ok_or_else(|| "too many rows".to_string())
}

/// `s`, cut to Excel's limit on a cell's characters.
pub(super) fn excel_text(s: &str) -> &str {
    match s.char_indices().nth(MAX_CELL_CHARS) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Parses CSV text as `summary_csv`/`clients_csv` write it: comma separated,
/// a field with a comma, quote or newline in double quotes with its quotes
/// doubled, a newline after every record.
pub(super) fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            '\r' => {}
            _ => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

/// Column letters of a 0-based column (`0` → `A`, `27` → `AB`).
pub(super) fn col_name(col: ColNum) -> String {
    let mut n = u32::from(col) + 1;
    let mut s = Vec::new();
    while n > 0 {
        let r = (n - 1) % 26;
        s.push(char::from(b'A' + r as u8));
        n = (n - 1) / 26;
    }
    s.iter().rev().collect()
}

/// The A1 name of a cell.
pub(super) fn a1(row: RowNum, col: ColNum) -> String {
    format!("{}{}", col_name(col), row + 1)
}

/// `num ÷ den` as a formula over two cells of the row, with its value; blank
/// where either number is missing or the divisor is 0.
pub(super) fn ratio_cell(row: RowNum, num: (ColNum, Option<f64>), den: (ColNum, Option<f64>)) -> Cell {
    match (num.1, den.1) {
        (Some(n), Some(d)) if d != 0.0 => Cell::Formula(format!("={}/{}", a1(row, num.0), a1(row, den.0)), n / d),
        _ => Cell::Blank,
    }
}

pub(super) fn opt_num(v: Option<f64>) -> Cell {
    v.map_or(Cell::Blank, Cell::Num)
}

/// CSV columns that hold text even when a value looks like a number (a
/// phase named "2", an address).
pub(super) const TEXT_COLUMNS: &[&str] = &["phase", "address", "search_kind"];
