//! Property: for random tables and random filters, the rows the filter keeps are exactly those a
//! reference predicate over the displayed cells keeps. The reference below is written from the
//! language's description (`crates/tables/src/tables/filter.rs`), not from its code.

use gpuplane::model::ObjKey;
use gpuplane::tables::filter::Filter;
use gpuplane::tables::fmt::Glyphs;
use gpuplane::tables::table::{Column, Cx, Marks, RowKey, SortKey, TableId, TableSource, col};
use gpuplane::tables::tone::{Cell, Line, TONES};
use proptest::prelude::*;
use std::borrow::Cow;
use std::cell::RefCell;

thread_local! {
    /// The random table of the current case: rows of cells.
    static DATA: RefCell<Vec<[String; 4]>> = const { RefCell::new(Vec::new()) };
}

fn cell<'a>(k: RowKey, c: usize) -> Cell<'a> {
    Cell::raw(DATA.with(|d| d.borrow()[k as usize][c].clone()))
}

static COLS: [Column; 4] = [
    col("NAME", 10, |_, _| SortKey::Int(0), |_, k| cell(k, 0)),
    col("ST", 2, |_, _| SortKey::Int(0), |_, k| cell(k, 1)).key("state").exact(),
    col("TEMP", 4, |_, _| SortKey::Int(0), |_, k| cell(k, 2)).right(),
    col("MEM", 6, |_, _| SortKey::Int(0), |_, k| cell(k, 3)).right(),
];
const KEYS: [&str; 4] = ["name", "st", "temp", "mem"];

struct Random;

impl TableSource for Random {
    fn id(&self) -> TableId {
        TableId("random")
    }
    fn columns(&self) -> &'static [Column] {
        &COLS
    }
    fn keys(&self, _: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..DATA.with(|d| d.borrow().len()) as RowKey);
    }
    fn text<'a>(&self, _: &Cx<'a>, _: RowKey) -> Vec<Cow<'a, str>> {
        Vec::new()
    }
    fn field<'a>(&self, _: &Cx<'a>, _: RowKey, _: &str) -> Option<Cow<'a, str>> {
        None
    }
    fn fields(&self) -> &'static [&'static str] {
        &[]
    }
    fn detail<'a>(&self, _: &Cx<'a>, _: RowKey, _: u16) -> Vec<Line<'a>> {
        Vec::new()
    }
    fn json(&self, _: &Cx<'_>, _: RowKey) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn identity(&self, _: &Cx<'_>, _: RowKey) -> Option<ObjKey> {
        None
    }
}

// --- the reference -------------------------------------------------------------------------

/// A displayed number: (figure as shown, fraction for `a/b`, unit) — `73C`, `85%`, `3/8`.
fn number(s: &str) -> Option<(f64, Option<f64>, char)> {
    if let Some((a, b)) = s.split_once('/') {
        let (a, b): (f64, f64) = (a.parse().ok()?, b.parse().ok()?);
        return Some((a, (b > 0.0).then(|| a / b), ' '));
    }
    for u in ['C', '%'] {
        if let Some(n) = s.strip_suffix(u) {
            return Some((n.parse().ok()?, None, u));
        }
    }
    Some((s.parse().ok()?, None, ' '))
}

/// How the row's value orders against the wanted one, or `None` when they do not compare.
fn order(want: &str, have: &str) -> Option<std::cmp::Ordering> {
    let (w, _, wu) = number(want)?;
    let (h, ratio, hu) = number(have)?;
    match wu {
        ' ' => h.partial_cmp(&w),
        '%' if hu == '%' => h.partial_cmp(&w),
        '%' => (ratio? * 100.0).partial_cmp(&w),
        u if u == hu => h.partial_cmp(&w),
        _ => None,
    }
}

#[derive(Debug, Clone)]
enum T {
    Text(String),
    Key { neg: bool, key: usize, op: &'static str, value: String },
}

fn reference(row: &[String; 4], terms: &[T]) -> bool {
    terms.iter().all(|t| match t {
        T::Text(s) => row.iter().any(|c| c.to_lowercase().contains(&s.to_lowercase())),
        T::Key { neg, key, op, value } => {
            let c = &row[*key];
            let exact = *key == 1;
            let eq = order(value, c).map(|o| o.is_eq());
            let hit = match *op {
                "=" | "!=" => eq.unwrap_or_else(|| {
                    if exact {
                        c.eq_ignore_ascii_case(value)
                    } else {
                        c.to_lowercase().contains(&value.to_lowercase())
                    }
                }),
                "==" => eq.unwrap_or_else(|| c.eq_ignore_ascii_case(value)),
                "~" => regex::RegexBuilder::new(value).case_insensitive(true).build().unwrap().is_match(c),
                ">" => order(value, c).is_some_and(|o| o.is_gt()),
                ">=" => order(value, c).is_some_and(|o| o.is_ge()),
                "<" => order(value, c).is_some_and(|o| o.is_lt()),
                _ => order(value, c).is_some_and(|o| o.is_le()),
            };
            hit != (*neg != (*op == "!="))
        }
    })
}

fn raw(terms: &[T]) -> String {
    terms
        .iter()
        .map(|t| match t {
            T::Text(s) => s.clone(),
            T::Key { neg, key, op, value } => {
                format!("{}{}{op}{value}", if *neg { "!" } else { "" }, KEYS[*key])
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

// --- generators ----------------------------------------------------------------------------

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["gpu-001", "gpu-013", "gpu-130", "llama-70b", "Vision", "mixtral", "a-b"])
        .prop_map(str::to_string)
}
fn state() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["R", "PD", "PR", "CD", "F"]).prop_map(str::to_string)
}
fn temp() -> impl Strategy<Value = String> {
    prop_oneof![(20u32..100).prop_map(|t| format!("{t}C")), Just("-".to_string())]
}
fn mem() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..=100).prop_map(|p| format!("{p}%")),
        (0u32..9, 1u32..9).prop_map(|(a, b)| format!("{a}/{b}"))
    ]
}
fn row() -> impl Strategy<Value = [String; 4]> {
    (name(), state(), temp(), mem()).prop_map(|(a, b, c, d)| [a, b, c, d])
}
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        name(),
        state(),
        temp(),
        mem(),
        prop::sample::select(vec!["gpu", "0", "13", "1", "p", "r", "3", "-"]).prop_map(str::to_string),
    ]
}
fn number_word() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..100).prop_map(|n| n.to_string()),
        (0u32..100).prop_map(|n| format!("{n}%")),
        (20u32..100).prop_map(|n| format!("{n}C"))
    ]
}
fn term() -> impl Strategy<Value = T> {
    prop_oneof![
        word().prop_map(T::Text),
        (any::<bool>(), 0usize..4, prop::sample::select(vec!["=", "==", "!=", "~"]), word())
            .prop_map(|(neg, key, op, value)| T::Key { neg, key, op, value }),
        (any::<bool>(), 2usize..4, prop::sample::select(vec![">", ">=", "<", "<="]), number_word())
            .prop_map(|(neg, key, op, value)| T::Key { neg, key, op, value }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn the_filter_keeps_exactly_what_the_reference_keeps(
        table in prop::collection::vec(row(), 0..30),
        terms in prop::collection::vec(term(), 1..4),
    ) {
        DATA.with(|d| *d.borrow_mut() = table.clone());
        let state = gpuplane::state::ClusterState::new(Default::default(), Default::default());
        let cost = gpuplane::cost::CostReport::default();
        let marks = Marks::default();
        let cx = Cx { s: &state, cost: &cost, tones: &TONES, glyphs: Glyphs::ASCII, user: "u", audit: &[], marked: &marks, rules: &Default::default() };
        let raw = raw(&terms);
        let mut f = Filter::parse(&raw).map_err(|e| TestCaseError::fail(format!("{raw}: {e}")))?;
        f.bind(&Random, &cx).map_err(|e| TestCaseError::fail(format!("{raw}: {e}")))?;
        for (i, r) in table.iter().enumerate() {
            prop_assert_eq!(f.matches(&Random, &cx, i as RowKey), reference(r, &terms), "{} on {:?}", raw, r);
        }
    }
}
