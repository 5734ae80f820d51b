//! The filter language, one for every table, the console's `/`, `:view FILTER` and
//! `gpuplane get --filter`. It matches what the screen shows:
//!
//! * `text` — a substring (any case) of any column's displayed text, or of the values the table
//!   searches beside them (a job's full node list);
//! * `key=value` — the column whose header is `key` (`st`, `gpu`, `temp`), or its long name
//!   (`state`), or a field the table names (`user`, a node label): its displayed text or its
//!   value contains `value`; a column marked exact (`ST`) must equal it; numbers compare as
//!   numbers (`gpu=3` is not GPU 13);
//! * `key==value` exactly, `key!=value` / `!key=value` / `!text` negated;
//! * `key>N`, `>=`, `<`, `<=` on numbers with units as displayed (`temp>85`, `mem>70%`,
//!   `age>2h`, `power>=5kW`, `cost>1,000`);
//! * `key~regex` (any case);
//! * `key=DURATION` on an age column (the Timeline's `since=2h`): at most that old.
//!
//! Terms are separated by spaces (quote a value with spaces: `reason="not responding"`) and must
//! all match. An unknown key or a malformed term is an error naming the keys the table accepts:
//! a filter never silently matches nothing.

use super::table::{Column, Cx, RowKey, TableSource, contains_ci};
use regex::Regex;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`: contains (numbers: equal; exact columns: equal).
    Has,
    /// `==`: equal.
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
    /// `~`: regular expression.
    Re,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Has => "=",
            Op::Eq => "==",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Re => "~",
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
    /// Free text, lowercase.
    Text(String),
    Key {
        /// As typed, lowercase.
        key: String,
        op: Op,
        /// Lowercase.
        value: String,
        num: Option<Quantity>,
        re: Option<Regex>,
        /// Bound to the table: the column it names, and the field names to ask the table for.
        col: Option<usize>,
        fields: Vec<&'static str>,
        /// Asked of the table by the typed name (a label, or a field not in the list).
        dynamic: bool,
    },
}

#[derive(Debug, Clone)]
struct Term {
    negate: bool,
    kind: Kind,
}

/// A parsed filter. Parse it with [`Filter::parse`], then bind it to a table with
/// [`Filter::bind`] (which rejects keys the table does not have).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub raw: String,
    terms: Vec<Term>,
}

impl PartialEq for Filter {
    fn eq(&self, other: &Filter) -> bool {
        self.raw == other.raw
    }
}

impl Eq for Filter {}

/// A column header as a filter key: lowercase, spaces as `-`, other punctuation dropped
/// (`IDLE $` → `idle`, `EST START` → `est-start`, `GPU-H` → `gpu-h`).
pub fn key_of(header: &str) -> String {
    let k: String = header
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    k.trim_matches('-').to_string()
}

/// The keys a table's filter accepts (column keys, their long names, the fields it lists).
pub fn keys_of<S: TableSource + ?Sized>(src: &S) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |k: String| {
        if !k.is_empty() && !out.contains(&k) {
            out.push(k);
        }
    };
    for c in src.columns() {
        push(key_of(c.name));
        push(c.key.to_string());
    }
    for f in src.fields() {
        push(f.to_string());
    }
    out
}

impl Filter {
    /// Parses the syntax; keys are checked by [`Filter::bind`].
    pub fn parse(raw: &str) -> Result<Filter, String> {
        let words = shlex::split(raw).ok_or_else(|| "unbalanced quote".to_string())?;
        let mut terms = Vec::with_capacity(words.len());
        for w in words {
            terms.push(term(&w)?);
        }
        Ok(Filter { raw: raw.to_string(), terms })
    }

    /// Resolves every key against the table's columns and fields; an unknown key is an error
    /// listing the keys the table accepts. `cx` lets keys the table knows only from its data
    /// (node labels) through.
    pub fn bind<S: TableSource + ?Sized>(&mut self, src: &S, cx: &Cx<'_>) -> Result<(), String> {
        let cols = src.columns();
        let mut probe = Vec::new();
        for t in &mut self.terms {
            let Kind::Key { key, col, fields, dynamic, .. } = &mut t.kind else { continue };
            *col = cols.iter().position(|c| key_of(c.name) == *key || (!c.key.is_empty() && c.key == key));
            fields.clear();
            // The long name's field: by the header (`st`) only the screen's text counts, by the
            // long name (`state`) the value too.
            if let Some(c) = col.map(|i| &cols[i])
                && !c.key.is_empty()
                && c.key == key
            {
                fields.push(c.key);
            }
            if let Some(f) = src.fields().iter().find(|f| **f == key)
                && !fields.contains(f)
            {
                fields.push(f);
            }
            *dynamic = false;
            if col.is_none() && fields.is_empty() {
                if probe.is_empty() {
                    src.keys(cx, &mut probe);
                }
                if probe.iter().any(|&k| src.field(cx, k, key).is_some()) {
                    *dynamic = true;
                } else {
                    return Err(format!(
                        "unknown key {key:?}: this table accepts {}",
                        keys_of(src).join(" ")
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether a row matches every term (the filter must be bound to `src`).
    pub fn matches<S: TableSource + ?Sized>(&self, src: &S, cx: &Cx<'_>, row: RowKey) -> bool {
        self.terms.iter().all(|t| {
            let hit = match &t.kind {
                Kind::Text(needle) => {
                    src.text_matches(cx, row, needle)
                        || src.columns().iter().any(|c| contains_ci(&(c.cell)(cx, row).text, needle))
                }
                Kind::Key { key, op, value, num, re, col, fields, dynamic } => {
                    let cols = src.columns();
                    let cell = col.map(|i| (&cols[i], (cols[i].cell)(cx, row).text));
                    let mut vals: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(2);
                    for f in fields {
                        vals.extend(src.field(cx, row, f));
                    }
                    if *dynamic {
                        vals.extend(src.field(cx, row, key));
                    }
                    let exact_col = cell.as_ref().is_some_and(|(c, _)| c.exact);
                    // An age column: `since=2h` is at most two hours old, by the exact age
                    // its field gives when it has one.
                    let within = *op == Op::Has
                        && cell.as_ref().is_some_and(|(c, _)| c.within)
                        && num.as_ref().is_some_and(|q| q.unit == Unit::Duration);
                    let op = if within { Op::Le } else { *op };
                    let test = |v: &str, from_cell: bool| {
                        value_matches(op, value, num.as_ref(), re.as_ref(), v, from_cell && exact_col)
                    };
                    if within && !vals.is_empty() {
                        return vals.iter().any(|v| test(v, false)) != t.negate;
                    }
                    cell.as_ref().is_some_and(|(_, v)| test(v, true)) || vals.iter().any(|v| test(v, false))
                }
            };
            hit != t.negate
        })
    }
}

/// Whether one value (a cell's text or a field's value) satisfies `op value`.
pub fn value_matches(
    op: Op,
    value: &str,
    num: Option<&Quantity>,
    re: Option<&Regex>,
    v: &str,
    exact: bool,
) -> bool {
    match op {
        Op::Re => re.is_some_and(|r| r.is_match(v)),
        Op::Has | Op::Eq => {
            if let (Some(want), Some(have)) = (num, Quantity::parse(v)) {
                return want.cmp_with(&have) == Some(std::cmp::Ordering::Equal);
            }
            if op == Op::Eq || exact { v.trim().eq_ignore_ascii_case(value) } else { contains_ci(v, value) }
        }
        Op::Gt | Op::Ge | Op::Lt | Op::Le => {
            let (Some(want), Some(have)) = (num, Quantity::parse(v)) else { return false };
            let Some(o) = want.cmp_with(&have) else { return false };
            // `o` orders the row's value against the wanted one.
            use std::cmp::Ordering::*;
            matches!(
                (op, o),
                (Op::Gt, Greater) | (Op::Ge, Greater | Equal) | (Op::Lt, Less) | (Op::Le, Less | Equal)
            )
        }
    }
}

fn term(w: &str) -> Result<Term, String> {
    let (negate, body) = match w.strip_prefix('!') {
        Some(r) if !r.is_empty() => (true, r),
        _ => (false, w),
    };
    let Some(at) = body.find(['=', '!', '<', '>', '~']) else {
        return Ok(Term { negate, kind: Kind::Text(body.to_lowercase()) });
    };
    let key = body[..at].to_ascii_lowercase();
    let rest = &body[at..];
    let (op, neg_op, value) = if let Some(v) = rest.strip_prefix("==") {
        (Op::Eq, false, v)
    } else if let Some(v) = rest.strip_prefix("!=") {
        (Op::Has, true, v)
    } else if let Some(v) = rest.strip_prefix(">=") {
        (Op::Ge, false, v)
    } else if let Some(v) = rest.strip_prefix("<=") {
        (Op::Le, false, v)
    } else if let Some(v) = rest.strip_prefix('=') {
        (Op::Has, false, v)
    } else if let Some(v) = rest.strip_prefix('>') {
        (Op::Gt, false, v)
    } else if let Some(v) = rest.strip_prefix('<') {
        (Op::Lt, false, v)
    } else if let Some(v) = rest.strip_prefix('~') {
        (Op::Re, false, v)
    } else {
        return Err(format!("{w}: expected =, ==, !=, >, >=, <, <= or ~ after {key:?}"));
    };
    if key.is_empty() {
        return Err(format!("{w}: a key is missing before {}", op.text()));
    }
    let num = Quantity::parse(value);
    let re = if op == Op::Re {
        if value.is_empty() {
            return Err(format!("{w}: a regular expression is missing after ~"));
        }
        Some(regex::RegexBuilder::new(value).case_insensitive(true).size_limit(1 << 20).build().map_err(
            |e| format!("{w}: {}", e.to_string().lines().last().unwrap_or("bad regular expression")),
        )?)
    } else {
        None
    };
    if matches!(op, Op::Gt | Op::Ge | Op::Lt | Op::Le) && num.is_none() {
        return Err(format!(
            "{w}: {} needs a number, optionally with a unit as shown (85, 70%, 2h, 5kW, 1.5T, $1,000)",
            op.text()
        ));
    }
    Ok(Term {
        negate: negate != neg_op,
        kind: Kind::Key {
            key,
            op,
            value: value.to_lowercase(),
            num,
            re,
            col: None,
            fields: Vec::new(),
            dynamic: false,
        },
    })
}

/// What a number's unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain number (a count, a money amount).
    Plain,
    Percent,
    /// Degrees Celsius.
    Temp,
    /// Seconds (`2h03m`, `45s`, `3d4h`).
    Duration,
    /// A size or rate with a decimal/binary multiplier (`512G`, `1.5T`, `400G`).
    Size,
    /// Watts (`5.2kW`).
    Power,
}

/// A number as displayed: its figure as shown, its value in base units, and for `a/b` cells
/// the fraction.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    pub shown: f64,
    pub base: f64,
    pub unit: Unit,
    pub ratio: Option<f64>,
}

impl Quantity {
    /// Reads a displayed value: `73C`, `85%`, `5.2kW`, `512G/1.0T`, `3/8`, `2h03m`, `$2,296`,
    /// `*1234` (a marked row). `None` for text and `-`.
    pub fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim().trim_start_matches('*').trim();
        if let Some((a, b)) = s.split_once('/') {
            let mut q = single(a.trim())?;
            if let Some(d) = single(b.trim()).filter(|d| d.base > 0.0) {
                q.ratio = Some(q.base / d.base);
            }
            return Some(q);
        }
        single(s)
    }

    /// How `have` (a row's value) orders against `self` (the wanted one), in `self`'s terms:
    /// a unit given by the operator compares in base units (a percentage against a fraction);
    /// without one, the figure as shown.
    pub fn cmp_with(&self, have: &Quantity) -> Option<std::cmp::Ordering> {
        let (h, w) = match self.unit {
            Unit::Plain => (if have.unit == Unit::Duration { have.base } else { have.shown }, self.shown),
            Unit::Percent => match (have.unit, have.ratio) {
                (Unit::Percent, _) => (have.shown, self.shown),
                (_, Some(r)) => (r * 100.0, self.shown),
                _ => return None,
            },
            u if u == have.unit => (have.base, self.base),
            Unit::Size if have.unit == Unit::Plain => (have.shown, self.base),
            _ => return None,
        };
        h.partial_cmp(&w)
    }
}

fn single(s: &str) -> Option<Quantity> {
    let s = s.trim_start_matches(['$', '€', '£']);
    if s.is_empty() {
        return None;
    }
    if let Some(d) = duration(s) {
        return Some(Quantity { shown: d, base: d, unit: Unit::Duration, ratio: None });
    }
    // The number: digits with `,` thousands separators and one `.`.
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let digits: String = s[..end].chars().filter(|&c| c != ',').collect();
    if !digits.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: f64 = digits.parse().ok()?;
    let unit = s[end..].trim();
    let mult = |c: char| match c {
        'k' | 'K' => Some(1e3),
        'M' => Some(1e6),
        'G' => Some(1e9),
        'T' => Some(1e12),
        'P' => Some(1e15),
        _ => None,
    };
    let (unit, base) = match unit {
        "" => (Unit::Plain, n),
        "%" => (Unit::Percent, n),
        "C" | "°C" | "°" => (Unit::Temp, n),
        "W" => (Unit::Power, n),
        u if u.ends_with('W') && u.chars().count() == 2 => (Unit::Power, n * mult(u.chars().next()?)?),
        u if u.chars().next().and_then(mult).is_some() => {
            // `G`, `GB`, `GiB`, `GB/s`, `Gb`: a multiplier and a size or rate unit.
            let m = u.chars().next().and_then(mult)?;
            let tail = &u[1..];
            if !matches!(tail, "" | "B" | "b" | "iB" | "i" | "B/s" | "b/s" | "bps") {
                return None;
            }
            (Unit::Size, n * m)
        }
        "B" | "B/s" => (Unit::Size, n),
        // `2,296 EUR`: a currency code after the amount.
        u if u.len() == 3 && u.bytes().all(|b| b.is_ascii_uppercase()) => (Unit::Plain, n),
        _ => return None,
    };
    Some(Quantity { shown: n, base, unit, ratio: None })
}

/// `3d4h`, `2h03m`, `5m02s`, `45s`: seconds. Parts are lowercase `d`, `h`, `m`, `s`.
fn duration(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut num = String::new();
    let mut parts = 0;
    for c in s.chars() {
        match c {
            '0'..='9' | '.' => num.push(c),
            'd' | 'h' | 'm' | 's' => {
                let v: f64 = num.parse().ok()?;
                num.clear();
                total += v * match c {
                    'd' => 86_400.0,
                    'h' => 3_600.0,
                    'm' => 60.0,
                    _ => 1.0,
                };
                parts += 1;
            }
            _ => return None,
        }
    }
    (num.is_empty() && parts > 0).then_some(total)
}

/// The help line for a table: the keys its filter accepts.
pub fn help_keys(cols: &[Column], fields: &[&str]) -> String {
    let mut keys: Vec<String> = Vec::new();
    for c in cols {
        let k = key_of(c.name);
        if !k.is_empty() && !keys.contains(&k) {
            keys.push(k);
        }
        if !c.key.is_empty() && !keys.iter().any(|x| x == c.key) {
            keys.push(c.key.to_string());
        }
    }
    for f in fields {
        if !keys.iter().any(|x| x == f) {
            keys.push(f.to_string());
        }
    }
    keys.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_displayed() {
        let q = |s| Quantity::parse(s).unwrap();
        assert_eq!(q("73C").shown, 73.0);
        assert_eq!(q("73C").unit, Unit::Temp);
        assert_eq!(q("85%").unit, Unit::Percent);
        assert_eq!(q("5.2kW").base, 5200.0);
        assert_eq!(q("2h03m").base, 7380.0);
        assert_eq!(q("3d4h").base, 273_600.0);
        assert_eq!(q("$2,296").shown, 2296.0);
        assert_eq!(q("2,296 EUR").shown, 2296.0);
        assert_eq!(q("*1234").shown, 1234.0);
        assert_eq!(q("3/8").ratio, Some(0.375));
        assert_eq!(q("512G/1.0T").ratio, Some(0.512));
        assert_eq!(q("400G").base, 400e9);
        assert_eq!(q("2.3GB/s").base, 2.3e9);
        for text in ["-", "", "gpu-001", "llama3", "PD", "h100"] {
            assert!(Quantity::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn comparisons_use_the_operators_unit() {
        let q = |s| Quantity::parse(s).unwrap();
        use std::cmp::Ordering::*;
        assert_eq!(q("85").cmp_with(&q("86C")), Some(Greater));
        assert_eq!(q("70%").cmp_with(&q("512G/1.0T")), Some(Less));
        assert_eq!(q("2h").cmp_with(&q("2h03m")), Some(Greater));
        assert_eq!(q("5kW").cmp_with(&q("5.2kW")), Some(Greater));
        assert_eq!(q("5").cmp_with(&q("5.2kW")), Some(Greater));
        assert_eq!(q("3").cmp_with(&q("3/8")), Some(Equal));
        assert_eq!(q("2h").cmp_with(&q("73C")), None);
    }

    #[test]
    fn syntax_errors_say_what_is_wrong() {
        assert!(Filter::parse("temp>").unwrap_err().contains("needs a number"));
        assert!(Filter::parse(">5").unwrap_err().contains("key is missing"));
        assert!(Filter::parse("name~(").is_err());
        assert!(Filter::parse("reason=\"not").unwrap_err().contains("quote"));
        assert!(Filter::parse("util<abc").is_err());
        let f =
            Filter::parse("llm !st=CD node!=gpu-00 temp>=85 name~^llama reason=\"not responding\"").unwrap();
        assert_eq!(f.terms.len(), 6);
        assert!(f.terms[1].negate && f.terms[2].negate && !f.terms[3].negate);
    }
}
