//! The column header of a nccl-tests result table, and rows read by its names.
//!
//! nccl-tests prints the names of its columns in a `#` line before the rows
//! (`writeResultHeader` in `src/util.cu` from 2.17, `src/common.cu` from 2.13, and each
//! collective's own `print_header` before that). What that line names changed across versions
//! and flags, so rows are read by the names it gives, not by position:
//!
//! * before 2.13 each collective names only what it has: `all_gather`, `sendrecv` and
//!   `hypercube` no `redop` and no `root`, `broadcast` a `root` only, `reduce` both; the last
//!   column of each section is `error` (the largest difference from the expected values,
//!   `%5.0le`), not a count of wrong elements;
//! * from 2.13 every collective names `size count type redop root` and `#wrong`; a collective
//!   without a reduction prints `none` there, `hypercube` prints an empty name (a blank field,
//!   so its rows have one word fewer than the header);
//! * `-C 1` names the time column `cputime`; `-S 1` (2.17+) adds a `timestamp` after the
//!   in-place section, printed as two words (`%Y-%m-%d %H:%M:%S`); per-iteration timing (2.19+)
//!   adds `i_min i_max i_p99 i_cv%` to each section;
//! * `-c 0` prints `N/A` where the wrong count would be.
//!
//! Columns a header names that gpuplane does not read are skipped by name.

use super::keep;

/// Which half of a row a measurement column belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Section {
    OutOfPlace,
    InPlace,
}

/// What a column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Field {
    Size,
    Count,
    Type,
    Redop,
    Root,
    /// `time` or `cputime`, in microseconds.
    Time(Section),
    Algbw(Section),
    Busbw(Section),
    /// `#wrong`: wrong elements, or `N/A` when validation was off.
    Wrong(Section),
    /// `error` (before 2.13): the largest difference from the expected values.
    MaxError(Section),
    /// Two words: date and time.
    Timestamp,
    /// A column gpuplane does not read (`i_min`, … and whatever later versions add).
    Other(String),
}

impl Field {
    /// Words a value of this column takes in a row.
    fn words(&self) -> usize {
        if *self == Field::Timestamp { 2 } else { 1 }
    }

    /// Text columns printed with `%Ns` that a collective may leave empty.
    fn may_be_blank(&self) -> bool {
        matches!(self, Field::Redop)
    }
}

#[derive(Debug, Clone)]
pub(super) struct Column {
    pub field: Field,
    /// Byte span of the name in its header line (names are right-aligned over their values).
    pub span: Option<(usize, usize)>,
}

/// A column header: the columns in order, and the line it was read from (0 for the default).
#[derive(Debug, Clone)]
pub(super) struct Header {
    pub line: usize,
    pub columns: Vec<Column>,
}

/// At most this many columns in a header (nccl-tests prints 13 to 23).
const MAX_COLUMNS: usize = 64;

/// Words of `line` with their byte offsets.
pub(super) fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let base = line.as_ptr() as usize;
    line.split_whitespace().map(move |w| (w.as_ptr() as usize - base, w))
}

/// Whether a `#` line names the columns: its first word is `size` and it names a time.
pub(super) fn is_header(line: &str) -> bool {
    let mut it = line.trim_start().trim_start_matches('#').split_whitespace();
    it.next() == Some("size") && it.any(|w| w == "time" || w == "cputime")
}

impl Header {
    /// The layout of nccl-tests 2.13 and later, for rows that come without their header (an
    /// excerpt). No positions, so no blank field can be recognised.
    pub fn default_layout() -> Header {
        let line = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
        let mut h = Header::read(line, 0).unwrap_or(Header { line: 0, columns: Vec::new() });
        for c in &mut h.columns {
            c.span = None;
        }
        h
    }

    /// Reads the header line `line` (the whole line, `#` included, so positions match rows).
    pub fn read(line: &str, n: usize) -> Result<Header, String> {
        let mut columns = Vec::new();
        let mut section: Option<Section> = None;
        for (at, word) in words(line) {
            let name = word.trim_start_matches('#');
            if name.is_empty() {
                continue;
            }
            let field = match name {
                "size" => Field::Size,
                "count" => Field::Count,
                "type" => Field::Type,
                "redop" => Field::Redop,
                "root" => Field::Root,
                "time" | "cputime" => {
                    let s = match section {
                        None => Section::OutOfPlace,
                        Some(Section::OutOfPlace) => Section::InPlace,
                        Some(Section::InPlace) => {
                            return Err(format!("the column header at line {n} names a time three times"));
                        }
                    };
                    section = Some(s);
                    Field::Time(s)
                }
                "algbw" | "busbw" | "wrong" | "error" => {
                    let Some(s) = section else {
                        return Err(format!("the column header at line {n} names {name} before any time"));
                    };
                    match name {
                        "algbw" => Field::Algbw(s),
                        "busbw" => Field::Busbw(s),
                        "wrong" => Field::Wrong(s),
                        _ => Field::MaxError(s),
                    }
                }
                "timestamp" => Field::Timestamp,
                other => Field::Other(keep(other)),
            };
            if !matches!(field, Field::Other(_)) && columns.iter().any(|c: &Column| c.field == field) {
                return Err(format!("the column header at line {n} names {} twice", keep(name)));
            }
            // Values are right-aligned under their names: the name's span is where they end.
            columns.push(Column { field, span: Some((at, at + word.len())) });
            if columns.len() > MAX_COLUMNS {
                return Err(format!("the column header at line {n} names more than {MAX_COLUMNS} columns"));
            }
        }
        let h = Header { line: n, columns };
        let need = [
            (Field::Size, "size"),
            (Field::Count, "count"),
            (Field::Type, "type"),
            (Field::Time(Section::OutOfPlace), "out-of-place time"),
            (Field::Algbw(Section::OutOfPlace), "out-of-place algbw"),
            (Field::Busbw(Section::OutOfPlace), "out-of-place busbw"),
            (Field::Time(Section::InPlace), "in-place time"),
            (Field::Algbw(Section::InPlace), "in-place algbw"),
            (Field::Busbw(Section::InPlace), "in-place busbw"),
        ];
        for (f, what) in need {
            if !h.columns.iter().any(|c| c.field == f) {
                return Err(format!("the column header at line {n} has no {what} column"));
            }
        }
        Ok(h)
    }

    /// Words a row of this header has when no field is blank.
    pub fn width(&self) -> usize {
        self.columns.iter().map(|c| c.field.words()).sum()
    }

    /// The names of the columns not read, for a note.
    pub fn skipped(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter_map(|c| if let Field::Other(n) = &c.field { Some(n.as_str()) } else { None })
            .collect()
    }

    /// The row's words, one slot per column (`None` for a column left blank), or why the row
    /// does not fit: `(words in the row, words the header names)`.
    pub fn split<'a>(&self, row: &'a str) -> Result<Vec<Option<Vec<&'a str>>>, (usize, usize)> {
        let ws: Vec<(usize, &str)> = words(row).collect();
        let width = self.width();
        let mut blank = vec![false; self.columns.len()];
        if ws.len() < width {
            // The row sits under its header as nccl-tests prints it when its first columns end
            // where their names do (values are right-aligned under their names).
            let mut at = 0;
            let mut aligned = true;
            for c in &self.columns {
                if matches!(c.field, Field::Size | Field::Count) {
                    aligned &= c.span.is_some_and(|(_, e)| ws.get(at).is_some_and(|(s, w)| s + w.len() == e));
                }
                at += c.field.words();
            }
            let empty_under =
                |c: &Column| c.span.is_some_and(|(s, e)| row.get(s..e).is_some_and(|t| t.trim().is_empty()));
            if aligned {
                // A column that is never printed empty is missing from the row.
                if self.columns.iter().any(|c| c.field == Field::Type && empty_under(c)) {
                    return Err((ws.len(), width));
                }
                // A text column under which the row has only spaces was printed empty.
                for (c, b) in self.columns.iter().zip(&mut blank) {
                    *b = c.field.may_be_blank() && empty_under(c);
                }
            }
            if !blank.contains(&true) && ws.len() + 1 == width {
                // No positions to go by (no header, or the spacing was lost in a copy): one word
                // short, and a number where the operation's name should be, followed by the
                // root column (the 2.13+ layout, where hypercube prints no name), is an empty
                // operation.
                let mut at = 0;
                for (i, c) in self.columns.iter().enumerate() {
                    if c.field.may_be_blank() {
                        let root_next = self.columns.get(i + 1).is_some_and(|n| n.field == Field::Root);
                        blank[i] = root_next && ws.get(at).is_some_and(|(_, w)| w.parse::<i64>().is_ok());
                        break;
                    }
                    at += c.field.words();
                }
            }
        }
        let blank_words: usize =
            self.columns.iter().zip(&blank).filter(|(_, b)| **b).map(|(c, _)| c.field.words()).sum();
        if ws.len() != width - blank_words {
            return Err((ws.len(), width));
        }
        let mut it = ws.into_iter().map(|(_, w)| w);
        Ok(self
            .columns
            .iter()
            .zip(blank)
            .map(|(c, b)| if b { None } else { Some(it.by_ref().take(c.field.words()).collect()) })
            .collect())
    }
}
