//! nccl-tests output (`all_reduce_perf` and friends) → a typed [`NcclRun`].
//!
//! The text is untrusted: it comes from a job on the cluster (and from any file an operator
//! points `gpuplane acceptance parse` at). Every string kept is sanitised, lines are bounded,
//! and nothing here panics: output that is cut short or garbled gives a [`ParseError`] that
//! carries everything read up to the problem.
//!
//! Layout (nccl-tests `src/util.cu`): `#`-prefixed header lines (version, parameters, the
//! device table), the column header, one data row per size and data type and operation (no
//! `#`), then a footer with `# Out of bounds values` and `# Avg bus bandwidth`. `NCCL
//! INFO`/`NCCL WARN` lines may be interleaved; a file may hold several sweeps (concatenated
//! logs). Rows are read by the names of the column header before them ([`header`]), so every
//! collective and every nccl-tests version from 2.0 reads; a row that does not fit its header
//! is an error naming the line and both column counts. Rows without any header (an excerpt)
//! are read with the layout of 2.13 and later.

use crate::sanitize::sanitize;
use header::{Field, Header, Section};
use serde::{Deserialize, Serialize};

mod header;

/// Lines longer than this are not rows; they are skipped (and noted), never copied whole.
pub const MAX_LINE: usize = 4096;
/// At most this many messages (errors, notes) are kept.
const MAX_MESSAGES: usize = 64;
/// A kept message is cut to this many characters.
const MAX_MESSAGE_CHARS: usize = 240;

/// One GPU of the run, from `#  Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] model`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    pub rank: u32,
    /// Absent in older builds.
    pub group: Option<u32>,
    pub pid: u64,
    pub host: String,
    pub device: u32,
    /// PCI `domain:bus:device` (or `0x04` in older builds).
    pub bus_id: String,
    pub model: String,
}

/// One direction of a row (out-of-place or in-place).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    pub time_us: f64,
    /// GB/s (10^9 bytes per second).
    pub algbw: f64,
    pub busbw: f64,
    /// `None` when validation was off (`-c 0` prints `N/A`) or the header names no `#wrong`.
    pub wrong: Option<u64>,
    /// The `error` column of nccl-tests before 2.13: the largest difference from the expected
    /// values (not a count; the footer's out-of-bounds count says whether it was too large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
}

/// One message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub size: u64,
    pub count: u64,
    pub dtype: String,
    /// `None` when the header names no `redop` (before 2.13: all_gather, broadcast, sendrecv,
    /// hypercube) or the row leaves it blank (hypercube from 2.13). Collectives without a
    /// reduction print `none` from 2.13, kept as printed.
    #[serde(default)]
    pub redop: Option<String>,
    /// `None` when the header names no `root`; `-1` for collectives without one.
    #[serde(default)]
    pub root: Option<i64>,
    pub out_of_place: Measure,
    pub in_place: Measure,
}

impl Row {
    pub fn busbw(&self) -> f64 {
        self.out_of_place.busbw.max(self.in_place.busbw)
    }

    pub fn wrong(&self) -> u64 {
        self.out_of_place.wrong.unwrap_or(0) + self.in_place.wrong.unwrap_or(0)
    }
}

/// One sweep over the sizes, closed by its footer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub rows: Vec<Row>,
    /// `# Out of bounds values : N OK|FAILED`.
    pub out_of_bounds: Option<u64>,
    /// `# Avg bus bandwidth : X` (mean busbw over every row, both directions).
    pub avg_busbw: Option<f64>,
    /// Whether the footer said `FAILED` (wrong values, or below `NCCL_TESTS_MIN_BW`).
    pub footer_failed: bool,
}

/// What a parse read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclRun {
    /// `all_reduce_perf` (from `# Collective test starting:` in newer builds).
    pub collective: Option<String>,
    /// `# nccl-tests version 2.13.10 ...`.
    pub tests_version: Option<String>,
    /// `NCCL version 2.21.5+cuda12.4` (with `NCCL_DEBUG=INFO` or `VERSION`).
    pub nccl_version: Option<String>,
    pub devices: Vec<Device>,
    pub sweeps: Vec<Sweep>,
    /// Failures the output reports: `NCCL WARN`, `Test failure`, FAILED footers, wrong values.
    pub errors: Vec<String>,
    /// Lines that were skipped for being too long, and similar remarks.
    pub notes: Vec<String>,
}

impl NcclRun {
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.sweeps.iter().flat_map(|s| &s.rows)
    }

    /// The highest busbw of any row, either direction.
    pub fn peak_busbw(&self) -> Option<f64> {
        self.rows().map(Row::busbw).reduce(f64::max)
    }

    /// The largest size and its busbw (best of both directions) in the last sweep that has rows:
    /// the figure acceptance judges, since small sizes never reach the links' rate.
    pub fn largest(&self) -> Option<(u64, f64)> {
        let sweep = self.sweeps.iter().rev().find(|s| !s.rows.is_empty())?;
        let size = sweep.rows.iter().map(|r| r.size).max()?;
        let bw = sweep.rows.iter().filter(|r| r.size == size).map(Row::busbw).reduce(f64::max)?;
        Some((size, bw))
    }

    /// The last sweep's `Avg bus bandwidth`.
    pub fn avg_busbw(&self) -> Option<f64> {
        self.sweeps.iter().rev().find_map(|s| s.avg_busbw)
    }

    pub fn wrong(&self) -> u64 {
        self.rows().map(Row::wrong).sum::<u64>()
            + self.sweeps.iter().filter_map(|s| s.out_of_bounds).sum::<u64>()
    }

    /// The hosts of the device table, in rank order, without repeats.
    pub fn hosts(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in &self.devices {
            if !out.contains(&d.host.as_str()) {
                out.push(&d.host);
            }
        }
        out
    }

    /// Whether the output itself reports a failure.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty() || self.wrong() > 0
    }

    fn error(&mut self, msg: String) {
        push_bounded(&mut self.errors, msg);
    }

    fn note(&mut self, msg: String) {
        push_bounded(&mut self.notes, msg);
    }
}

fn push_bounded(v: &mut Vec<String>, msg: String) {
    if v.len() < MAX_MESSAGES {
        v.push(msg);
    }
}

/// Why a parse failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseErrorKind {
    /// Neither a data row nor a device line: this is not nccl-tests output.
    NotNcclTests,
    /// The output stops inside a sweep (a cut row, or rows without their footer).
    Truncated,
    /// A data row that does not read as numbers in the right columns.
    Garbled,
}

/// A failed parse, with what was read up to the problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ParseError {
    pub kind: ParseErrorKind,
    /// 1-based line of the problem (0 when it is about the whole text).
    pub line: usize,
    pub detail: String,
    pub partial: Box<NcclRun>,
}

impl ParseError {
    fn describe(&self) -> String {
        let what = match self.kind {
            ParseErrorKind::NotNcclTests => "not nccl-tests output",
            ParseErrorKind::Truncated => "truncated nccl-tests output",
            ParseErrorKind::Garbled => "garbled nccl-tests output",
        };
        let at = if self.line > 0 { format!(" at line {}", self.line) } else { String::new() };
        let rows = self.partial.rows().count();
        format!(
            "{what}{at}: {} (read {} device(s), {} row(s) before it)",
            self.detail,
            self.partial.devices.len(),
            rows
        )
    }
}

/// A message kept from the text: sanitised and cut.
fn keep(s: &str) -> String {
    let s = sanitize(s.trim());
    let mut out: String = s.chars().take(MAX_MESSAGE_CHARS).collect();
    if s.chars().nth(MAX_MESSAGE_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Parses nccl-tests output. Bytes that are not UTF-8 are replaced, CRLF is accepted.
pub fn parse(input: &[u8]) -> Result<NcclRun, ParseError> {
    let mut run = NcclRun::default();
    // The sweep being read: rows seen since the last footer.
    let mut open: Option<Sweep> = None;
    let mut open_since = 0usize;
    let mut last_line = 0usize;
    let mut saw_anything = false;
    // The column header the rows are read by, and the layout for rows that come without one.
    let mut header: Option<Header> = None;
    let default_header = Header::default_layout();
    for (i, raw) in input.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.len() > MAX_LINE {
            run.note(format!("line {n}: {} bytes long, skipped", raw.len()));
            continue;
        }
        let line = String::from_utf8_lossy(raw);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        last_line = n;
        if let Some(body) = t.strip_prefix('#') {
            let body = body.trim();
            if header::is_header(t) {
                match Header::read(&line, n) {
                    Ok(h) => {
                        let skipped = h.skipped();
                        if !skipped.is_empty() {
                            run.note(format!("line {n}: columns not read: {}", keep(&skipped.join(" "))));
                        }
                        header = Some(h);
                    }
                    Err(detail) => {
                        if let Some(s) = open.take() {
                            run.sweeps.push(s);
                        }
                        return Err(ParseError {
                            kind: ParseErrorKind::Garbled,
                            line: n,
                            detail,
                            partial: Box::new(run),
                        });
                    }
                }
                saw_anything = true;
            } else if let Some(rest) = body.strip_prefix("Out of bounds values") {
                let sweep = open.get_or_insert_with(Sweep::default);
                let rest = rest.trim_start_matches([' ', ':']);
                let mut it = rest.split_whitespace();
                sweep.out_of_bounds = it.next().and_then(|v| v.parse().ok());
                if it.next() == Some("FAILED") {
                    sweep.footer_failed = true;
                    run.error(format!("line {n}: out of bounds values: {}", keep(rest)));
                }
                saw_anything = true;
            } else if let Some(rest) = body.strip_prefix("Avg bus bandwidth") {
                let mut sweep = open.take().unwrap_or_default();
                let rest = rest.trim_start_matches([' ', ':']);
                let mut it = rest.split_whitespace();
                sweep.avg_busbw = it.next().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite());
                if it.next() == Some("FAILED") {
                    sweep.footer_failed = true;
                    run.error(format!("line {n}: average bus bandwidth below the minimum: {}", keep(rest)));
                }
                run.sweeps.push(sweep);
                saw_anything = true;
            } else if let Some(rest) = body.strip_prefix("nccl-tests version") {
                run.tests_version = rest.split_whitespace().next().map(keep);
                // `nccl-library=22809`: NCCL 2.28.9 (major × 10000 + minor × 100 + patch).
                if run.nccl_version.is_none() {
                    run.nccl_version = rest
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("nccl-library="))
                        .and_then(|c| c.parse::<u32>().ok())
                        .filter(|&c| c >= 10000)
                        .map(|c| format!("{}.{}.{}", c / 10000, c / 100 % 100, c % 100));
                }
            } else if let Some(rest) = body.strip_prefix("Collective test starting:") {
                run.collective = rest.split_whitespace().next().map(keep);
                saw_anything = true;
            } else if let Some(d) = device_line(body) {
                run.devices.push(d);
                saw_anything = true;
            } else {
                scan_messages(&mut run, t, n);
            }
            continue;
        }
        // Very old builds print the device table without '#'.
        if let Some(d) = device_line(t) {
            run.devices.push(d);
            saw_anything = true;
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        if first.bytes().all(|b| b.is_ascii_digit()) {
            saw_anything = true;
            let h = header.as_ref().unwrap_or(&default_header);
            match row(h, &line) {
                Ok(r) => {
                    if open.is_none() {
                        open_since = n;
                    }
                    let sweep = open.get_or_insert_with(Sweep::default);
                    if r.wrong() > 0 {
                        run.error(format!("line {n}: {} wrong value(s) at {} bytes", r.wrong(), r.size));
                    }
                    sweep.rows.push(r);
                }
                Err(e) => {
                    if let Some(s) = open.take() {
                        run.sweeps.push(s);
                    }
                    // The last line cut short is truncation; anything else is garbage.
                    let is_last = input[..]
                        .split(|&b| b == b'\n')
                        .skip(n)
                        .all(|l| l.iter().all(|b| b.is_ascii_whitespace()));
                    let (kind, detail) = match e {
                        RowError::Columns { got, want } => {
                            let of = if h.line > 0 {
                                format!("its column header (line {}) calls for {want}", h.line)
                            } else {
                                format!(
                                    "nccl-tests 2.13 and later print {want} (no column header came before it)"
                                )
                            };
                            let kind = if is_last && got < want {
                                ParseErrorKind::Truncated
                            } else {
                                ParseErrorKind::Garbled
                            };
                            (kind, format!("the row has {got} columns where {of}"))
                        }
                        RowError::Value(d) => (ParseErrorKind::Garbled, d),
                    };
                    return Err(ParseError { kind, line: n, detail, partial: Box::new(run) });
                }
            }
            continue;
        }
        scan_messages(&mut run, t, n);
    }
    if let Some(s) = open.take() {
        let rows = s.rows.len();
        run.sweeps.push(s);
        return Err(ParseError {
            kind: ParseErrorKind::Truncated,
            line: last_line,
            detail: format!(
                "{rows} row(s) from line {open_since} have no closing \"# Avg bus bandwidth\" footer \
                 (the job was cut short?)"
            ),
            partial: Box::new(run),
        });
    }
    if !saw_anything || run.rows().next().is_none() {
        let detail = if saw_anything {
            "no result rows".to_string()
        } else {
            "no device table, result rows or footer found".to_string()
        };
        return Err(ParseError {
            kind: ParseErrorKind::NotNcclTests,
            line: 0,
            detail,
            partial: Box::new(run),
        });
    }
    Ok(run)
}

/// Versions, warnings and failures from any other line.
fn scan_messages(run: &mut NcclRun, t: &str, n: usize) {
    if let Some(p) = t.find("NCCL version ") {
        let v = t[p + "NCCL version ".len()..].split_whitespace().next().unwrap_or("");
        if run.nccl_version.is_none() && !v.is_empty() {
            run.nccl_version = Some(keep(v));
        }
    }
    if t.contains("NCCL WARN") {
        run.error(format!("line {n}: {}", keep(t)));
        return;
    }
    let lower = t.to_ascii_lowercase();
    if lower.contains("test failure")
        || lower.contains("test nccl failure")
        || lower.contains("test cuda failure")
        || lower.contains("[abort]")
    {
        run.error(format!("line {n}: {}", keep(t)));
    }
}

/// `Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3`.
fn device_line(t: &str) -> Option<Device> {
    let p = t.find("Rank ")?;
    let rest = &t[p + "Rank ".len()..];
    let mut it = rest.split_whitespace();
    let rank = it.next()?.parse().ok()?;
    let mut tok = it.next()?;
    let mut group = None;
    if tok == "Group" {
        group = Some(it.next()?.parse().ok()?);
        tok = it.next()?;
    }
    if tok != "Pid" {
        return None;
    }
    let pid = it.next()?.parse().ok()?;
    if it.next()? != "on" {
        return None;
    }
    let host = it.next()?;
    if it.next()? != "device" {
        return None;
    }
    let device = it.next()?.parse().ok()?;
    let open = rest.find('[')?;
    let close = open + rest[open..].find(']')?;
    let bus_id = &rest[open + 1..close];
    let model = rest[close + 1..].trim();
    Some(Device { rank, group, pid, host: keep(host), device, bus_id: keep(bus_id), model: keep(model) })
}

fn num(t: &str, what: &str) -> Result<f64, String> {
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{what} {:?} is not a number", keep(t))),
    }
}

fn wrong(t: &str) -> Result<Option<u64>, String> {
    if t == "N/A" {
        return Ok(None);
    }
    // Very large counts print in float notation (`%6g`: `1.2e+06`).
    t.parse::<u64>()
        .ok()
        .or_else(|| t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).map(|v| v as u64))
        .map(Some)
        .ok_or_else(|| format!("#wrong {:?} is not a count", keep(t)))
}

fn max_error(t: &str) -> Result<Option<f64>, String> {
    if t == "N/A" {
        return Ok(None);
    }
    num(t, "error").map(Some)
}

fn ident(s: &str, what: &str) -> Result<String, String> {
    if !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_string())
    } else {
        Err(format!("{what} {:?} is not a name", keep(s)))
    }
}

/// Why a row was not read.
enum RowError {
    /// The row has `got` words where its header names `want`.
    Columns { got: usize, want: usize },
    /// A value that does not read as its column's kind.
    Value(String),
}

/// A data row, read by the names of its column header.
fn row(h: &Header, t: &str) -> Result<Row, RowError> {
    let slots = h.split(t).map_err(|(got, want)| RowError::Columns { got, want })?;
    let blank = Measure { time_us: 0.0, algbw: 0.0, busbw: 0.0, wrong: None, max_error: None };
    let mut r = Row {
        size: 0,
        count: 0,
        dtype: String::new(),
        redop: None,
        root: None,
        out_of_place: blank,
        in_place: blank,
    };
    let v = RowError::Value;
    for (c, slot) in h.columns.iter().zip(slots) {
        // A blank text field (hypercube's operation) stays `None`.
        let Some(words) = slot else { continue };
        let Some(&w) = words.first() else { continue };
        match &c.field {
            Field::Size => {
                r.size = w.parse().map_err(|_| v(format!("size {:?} is not a byte count", keep(w))))?
            }
            Field::Count => {
                r.count = w.parse().map_err(|_| v(format!("count {:?} is not a count", keep(w))))?
            }
            Field::Type => r.dtype = ident(w, "type").map_err(v)?,
            Field::Redop => r.redop = Some(ident(w, "redop").map_err(v)?),
            Field::Root => {
                r.root = Some(w.parse().map_err(|_| v(format!("root {:?} is not a rank", keep(w))))?)
            }
            Field::Time(s) => measure(&mut r, *s).time_us = num(w, "time").map_err(v)?,
            Field::Algbw(s) => measure(&mut r, *s).algbw = num(w, "algbw").map_err(v)?,
            Field::Busbw(s) => measure(&mut r, *s).busbw = num(w, "busbw").map_err(v)?,
            Field::Wrong(s) => measure(&mut r, *s).wrong = wrong(w).map_err(v)?,
            Field::MaxError(s) => measure(&mut r, *s).max_error = max_error(w).map_err(v)?,
            Field::Timestamp | Field::Other(_) => {}
        }
    }
    Ok(r)
}

fn measure(r: &mut Row, s: Section) -> &mut Measure {
    match s {
        Section::OutOfPlace => &mut r.out_of_place,
        Section::InPlace => &mut r.in_place,
    }
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;
