//! A virtual table: rows are keys into the cluster state, filtered and sorted once per change
//! (state generation, filter or sort), and only the visible rows are turned into cells.

use super::fmt::Glyphs;
use super::tone::{Cell, Line, Tones};
use crate::model::ObjKey;
use crate::state::ClusterState;
use std::borrow::Cow;
use unicode_width::UnicodeWidthStr;

/// Identifies a row within one generation of the state: an index (or packed pair of indices)
/// into it. It is cheap to sort and filter by, but it means another object after the state
/// changes; what a row *is* across changes is its [`ObjKey`] ([`TableSource::identity`]).
pub type RowKey = u64;

pub fn pack(a: usize, b: usize) -> RowKey {
    ((a as u64) << 32) | b as u64
}

pub fn unpack(k: RowKey) -> (usize, usize) {
    ((k >> 32) as usize, (k & 0xffff_ffff) as usize)
}

/// How a column sorts its rows: the value of one row.
pub type SortFn = for<'a> fn(&Cx<'a>, RowKey) -> SortKey<'a>;
/// How a column draws one row's cell (already sanitised).
pub type CellFn = for<'a> fn(&Cx<'a>, RowKey) -> Cell<'a>;

/// One column, declared once: its header, width policy, priority at narrow widths, sort key and
/// cell renderer together (a table's columns are a `static` array of these).
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    /// Width in cells it needs; the last column takes what is left.
    pub width: u16,
    /// The widest it grows to when the terminal has room (its content permitting).
    pub max: u16,
    pub right: bool,
    /// Dropped first when the terminal is narrow (higher = dropped earlier; 0 = always shown).
    pub drop: u8,
    pub sort: SortFn,
    pub cell: CellFn,
    /// Its long name as a filter key (`state` for `ST`), beside the header's own.
    pub key: &'static str,
    /// `key=value` on it means equal, not contains (state codes: `st=R` is not `PR`).
    pub exact: bool,
    /// Its values are never cut (a time, an estimate): shown whole or the column is dropped.
    pub whole: bool,
    /// Its value as a plain number, for machine output (`get -o csv`): no `$`, `%` or
    /// thousands separators; `None` in a row is an empty field.
    pub num: Option<NumFn>,
    /// Shown only when the state holds more than one cluster (CLUSTER), and then first.
    pub fleet: bool,
    /// An age: `key=DURATION` means at most that old (`since=2h`: the last two hours).
    pub within: bool,
    /// Shown only when this holds of the state (the other scheduler's state: only when some
    /// host is paired).
    pub only: Option<fn(&ClusterState) -> bool>,
}

/// A column's value as a plain number.
pub type NumFn = fn(&Cx<'_>, RowKey) -> Option<f64>;

/// A column named `name`, `width` cells wide, sorted by `sort`, drawn by `cell`.
pub const fn col(name: &'static str, width: u16, sort: SortFn, cell: CellFn) -> Column {
    Column {
        name,
        width,
        max: width,
        right: false,
        drop: 0,
        sort,
        cell,
        key: "",
        exact: false,
        whole: false,
        num: None,
        fleet: false,
        within: false,
        only: None,
    }
}

impl Column {
    pub const fn right(mut self) -> Self {
        self.right = true;
        self
    }

    pub const fn drop(mut self, level: u8) -> Self {
        self.drop = level;
        self
    }

    /// Its long name as a filter key (`state` for `ST`).
    pub const fn key(mut self, key: &'static str) -> Self {
        self.key = key;
        self
    }

    /// `key=value` on this column must equal the displayed value (codes like `PD`, `CRIT`).
    pub const fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    /// Its values are shown whole or not at all (times, estimates): never cut to fit.
    pub const fn whole(mut self) -> Self {
        self.whole = true;
        self
    }

    /// Machine output writes this number instead of the displayed text.
    pub const fn num(mut self, f: NumFn) -> Self {
        self.num = Some(f);
        self
    }

    /// Shows the column only when `f` holds of the state.
    pub const fn only_if(mut self, f: fn(&ClusterState) -> bool) -> Self {
        self.only = Some(f);
        self
    }

    /// Whether the column is shown for this state at all.
    pub fn shown_for(&self, s: &ClusterState) -> bool {
        self.only.is_none_or(|f| f(s))
    }

    /// Lets the column grow up to `max` cells for long values when there is room.
    /// Only with more than one cluster, and then first (the CLUSTER column).
    pub const fn fleet(mut self) -> Self {
        self.fleet = true;
        self
    }

    /// Its values are ages: `key=2h` keeps rows at most two hours old (its field, when the
    /// table has one by the column's long name, gives the exact age in seconds).
    pub const fn within(mut self) -> Self {
        self.within = true;
        self
    }

    pub const fn grow(mut self, max: u16) -> Self {
        self.max = max;
        self
    }
}

/// A value to sort by.
#[derive(Debug, Clone, PartialEq)]
pub enum SortKey<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

/// Maps an `f64` to an `i64` with the same order (IEEE total order).
fn float_bits(f: f64) -> i64 {
    let b = f.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// The first 16 bytes of a string, zero-padded: compares like the string when they differ.
fn prefix(s: &str) -> [u8; 16] {
    let mut p = [0u8; 16];
    let n = s.len().min(16);
    p[..n].copy_from_slice(&s.as_bytes()[..n]);
    p
}

/// Positions of `keys` in sorted order, ties in natural order. Keys are extracted once, in row
/// order, into compact integer or byte-prefix vectors, so the sort never touches the state:
/// numbers sort as `(i64, position)`, strings by a 16-byte prefix with the full string
/// compared only inside runs that share a prefix.
fn sort_order<S: TableSource + ?Sized>(
    src: &S,
    cx: &Cx<'_>,
    keys: &[RowKey],
    col: usize,
    desc: bool,
) -> Vec<u32> {
    let Some(&first) = keys.first() else { return Vec::new() };
    let Some(sort) = src.columns().get(col).map(|c| c.sort) else { return (0..keys.len() as u32).collect() };
    if let SortKey::Str(_) = sort(cx, first) {
        let strs: Vec<&str> = keys
            .iter()
            .map(|&k| match sort(cx, k) {
                SortKey::Str(v) => v,
                _ => "",
            })
            .collect();
        let mut v: Vec<([u8; 16], u32)> = strs
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let mut p = prefix(st);
                if desc {
                    p.iter_mut().for_each(|b| *b = !*b);
                }
                (p, i as u32)
            })
            .collect();
        v.sort_unstable();
        // Runs with one prefix: order by the whole string (only long strings differ there).
        let mut start = 0;
        while start < v.len() {
            let mut end = start + 1;
            while end < v.len() && v[end].0 == v[start].0 {
                end += 1;
            }
            if end - start > 1 && strs[v[start].1 as usize].len() > 16 {
                v[start..end].sort_by(|a, b| {
                    let o = strs[a.1 as usize].cmp(strs[b.1 as usize]);
                    (if desc { o.reverse() } else { o }).then(a.1.cmp(&b.1))
                });
            }
            start = end;
        }
        return v.into_iter().map(|(_, i)| i).collect();
    }
    let mut v: Vec<(i64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let n = match sort(cx, k) {
                SortKey::Int(n) => n,
                SortKey::Float(f) => float_bits(f),
                SortKey::Str(_) => 0,
            };
            (if desc { !n } else { n }, i as u32)
        })
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, i)| i).collect()
}

pub use super::filter::Filter;

/// A table, named by what `gpuplane get` and `--view` call it (`nodes`, `fabric-ports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub &'static str);

/// ASCII-case-insensitive substring search; `needle` must already be lowercase.
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() {
        return true;
    }
    if n.len() > h.len() {
        return false;
    }
    let first = n[0];
    (0..=h.len() - n.len())
        .any(|i| h[i].to_ascii_lowercase() == first && h[i + 1..i + n.len()].eq_ignore_ascii_case(&n[1..]))
}

/// Any model value as JSON (`null` if it cannot be: it never fails a listing).
pub fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// `v` (an object) with `key: value` added; machine output orders the fields anyway.
pub fn with_field(key: &str, value: &str, v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(mut o) => {
            o.insert(key.into(), value.into());
            serde_json::Value::Object(o)
        }
        other => serde_json::json!({ key: value, "value": other }),
    }
}

/// What a table view supplies: its columns, its rows and how to show, search and sort them.
pub trait TableSource: Sync {
    /// Its name in `gpuplane get` (`nodes`, `fabric-nodes`).
    fn id(&self) -> TableId;
    fn columns(&self) -> &'static [Column];
    /// Every row key in natural order.
    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>);
    /// Text searched by a plain filter term.
    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>>;
    /// Whether a plain filter term (lowercase) occurs in the row's text. Views with many rows
    /// override it to avoid building the text.
    fn text_matches(&self, cx: &Cx<'_>, key: RowKey, needle: &str) -> bool {
        self.text(cx, key).iter().any(|h| contains_ci(h, needle))
    }
    /// A named field (or label) for `key=value` filters.
    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>>;
    /// The names [`TableSource::field`] answers to (labels aside), listed in help and in a
    /// filter's unknown-key error.
    fn fields(&self) -> &'static [&'static str];
    /// Whether the row is marked for a bulk action.
    fn marked(&self, _cx: &Cx<'_>, _key: RowKey) -> bool {
        false
    }
    /// The column sorted on first, and whether descending.
    fn default_sort(&self) -> (usize, bool) {
        (0, false)
    }
    /// The detail pane's lines for a row.
    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>>;
    /// A row as JSON for `gpuplane get -o json`, with the model's field names.
    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value;
    /// The object a row stands for: what the selection, the detail pane, marks and actions
    /// follow when the rows move.
    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey>;
    /// The row that stands for `id` now. The default scans every row; tables with many rows
    /// look it up.
    fn locate(&self, cx: &Cx<'_>, id: &ObjKey) -> Option<RowKey> {
        let mut keys = Vec::new();
        self.keys(cx, &mut keys);
        keys.into_iter().find(|&k| self.identity(cx, k).as_ref() == Some(id))
    }
}

/// What every table offers beyond its declaration, derived from its columns (not overridable:
/// a column's sort key and cell live only in its [`Column`]).
pub trait TableExt {
    /// The cells of one row, one per column.
    fn cells<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cell<'a>>;
    /// Column `col`'s sort value for one row.
    fn sort_key<'a>(&self, cx: &Cx<'a>, key: RowKey, col: usize) -> SortKey<'a>;
}

impl<T: TableSource + ?Sized> TableExt for T {
    fn cells<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cell<'a>> {
        self.columns().iter().map(|c| (c.cell)(cx, key)).collect()
    }

    fn sort_key<'a>(&self, cx: &Cx<'a>, key: RowKey, col: usize) -> SortKey<'a> {
        match self.columns().get(col) {
            Some(c) => (c.sort)(cx, key),
            None => SortKey::Int(0),
        }
    }
}

/// The CLUSTER cell of an object carrying `cluster` (its configured cluster's name).
pub fn cluster_cell<'a>(cx: &Cx<'a>, cluster: &'a crate::model::Text) -> Cell<'a> {
    super::fmt::untrusted(cx.s.cluster_of(cluster), cx.tones.dim)
}

/// What cells may draw with.
pub struct Cx<'a> {
    pub s: &'a ClusterState,
    /// The cost report for the Cost view's window.
    pub cost: &'a crate::cost::CostReport,
    /// The tones by name (`cx.tones.dim`); the console's theme maps them to styles.
    pub tones: &'static Tones,
    pub glyphs: Glyphs,
    pub user: &'a str,
    /// The newest audit records (Audit view).
    pub audit: &'a [crate::audit::Record],
    /// Rows marked for a bulk action.
    pub marked: &'a Marks,
    /// `[efficiency]`: the thresholds the EFF column and the job detail colour by.
    pub rules: &'a crate::cost::eff::Rules,
}

/// Nodes and jobs marked (space) for a bulk action, by identity so marks survive re-sorting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    pub nodes: std::collections::BTreeSet<crate::model::NodeKey>,
    pub jobs: std::collections::BTreeSet<crate::model::JobKey>,
}

impl Marks {
    /// Whether the node `n` is marked.
    pub fn node(&self, cx: &Cx<'_>, n: &crate::model::Node) -> bool {
        !self.nodes.is_empty()
            && self.nodes.contains(&crate::model::NodeKey {
                cluster: cx.s.cluster_of(&n.cluster).clone(),
                name: n.name.clone(),
            })
    }

    /// Whether the job `j` is marked.
    pub fn job(&self, cx: &Cx<'_>, j: &crate::model::Job) -> bool {
        !self.jobs.is_empty()
            && self
                .jobs
                .contains(&crate::model::JobKey { cluster: cx.s.cluster_of(&j.cluster).clone(), id: j.id })
    }
}

/// The state of every table, by id (made on first use, so no table is counted by hand).
#[derive(Debug, Clone, Default)]
pub struct TableStates(std::collections::HashMap<TableId, TableState>);

static EMPTY: std::sync::LazyLock<TableState> = std::sync::LazyLock::new(TableState::default);

impl std::ops::Index<TableId> for TableStates {
    type Output = TableState;
    fn index(&self, id: TableId) -> &TableState {
        self.0.get(&id).unwrap_or(&EMPTY)
    }
}

impl std::ops::IndexMut<TableId> for TableStates {
    fn index_mut(&mut self, id: TableId) -> &mut TableState {
        self.0.entry(id).or_default()
    }
}

/// Selection, scroll, sort, filter and the cached rows of one table.
#[derive(Debug, Clone, Default)]
pub struct TableState {
    pub rows: Vec<RowKey>,
    pub selected: usize,
    pub offset: usize,
    pub sort_col: usize,
    pub desc: bool,
    /// The filter in force: the last one typed that parsed and named keys this table has.
    pub filter: Filter,
    /// What was typed last, and why it is not in force (if it is not).
    typed: String,
    filter_error: Option<String>,
    filter_pending: bool,
    /// The filter in force when the operator opened the filter prompt: what a bad filter falls
    /// back to while it is being typed (not the half-typed text before it).
    editing_from: Option<Filter>,
    /// What `rows` was computed from: (generation, filter, sort col, desc).
    cached: Option<(u64, String, usize, bool)>,
    /// The object the selected row stands for, kept while the rows are valid, so that the
    /// selection follows it when the rows are rebuilt for a new generation.
    selected_id: Option<ObjKey>,
    sort_set: bool,
    /// Keys in natural order, sorted (kept so a filter change does not re-sort).
    sorted: Vec<RowKey>,
    sorted_for: Option<(u64, usize, bool)>,
    /// The console's cluster focus (`:cluster NAME`): a filter applied besides the table's own
    /// (`cluster==NAME`), where the table has a cluster field; empty: none.
    scope_raw: String,
    scope: Option<Filter>,
    scope_pending: bool,
}

impl TableState {
    /// Sets the console's cluster focus filter (`cluster==NAME`; empty: none), applied at the
    /// next refresh on top of the table's own filter. A table with no cluster field ignores it.
    pub fn set_scope(&mut self, raw: &str) {
        if self.scope_raw != raw {
            self.scope_raw = raw.to_string();
            self.scope_pending = true;
            self.selected = 0;
            self.offset = 0;
        }
    }

    /// Recomputes the rows when the data, filter or sort changed; keeps the selected row.
    pub fn refresh<S: TableSource + ?Sized>(&mut self, src: &S, cx: &Cx<'_>) {
        let s = cx.s;
        if self.filter_pending {
            self.filter_pending = false;
            match Filter::parse(&self.typed).and_then(|mut f| f.bind(src, cx).map(|_| f)) {
                Ok(f) => {
                    self.filter_error = None;
                    if f.raw != self.filter.raw {
                        self.filter = f;
                        self.selected = 0;
                        self.offset = 0;
                    }
                }
                Err(e) => {
                    self.filter_error = Some(e);
                    if let Some(f) = self.editing_from.clone().filter(|f| f.raw != self.filter.raw) {
                        self.filter = f;
                        self.selected = 0;
                        self.offset = 0;
                    }
                }
            }
        }
        if self.scope_pending {
            self.scope_pending = false;
            self.scope = Some(&self.scope_raw)
                .filter(|r| !r.is_empty())
                .and_then(|r| Filter::parse(r).and_then(|mut f| f.bind(src, cx).map(|_| f)).ok());
        }
        if !self.sort_set {
            (self.sort_col, self.desc) = src.default_sort();
            self.sort_set = true;
        }
        let scope_raw = self.scope.as_ref().map_or("", |f| f.raw.as_str());
        let want = (s.generation, format!("{}\u{0}{scope_raw}", self.filter.raw), self.sort_col, self.desc);
        if self.cached.as_ref() == Some(&want) {
            return;
        }
        // Rows of the generation they were built for still say what is selected.
        self.capture(src, cx);
        let sort_for = (s.generation, self.sort_col, self.desc);
        if self.sorted_for != Some(sort_for) {
            self.sorted.clear();
            src.keys(cx, &mut self.sorted);
            let order = sort_order(src, cx, &self.sorted, self.sort_col, self.desc);
            let natural = std::mem::take(&mut self.sorted);
            self.sorted = order.into_iter().map(|pos| natural[pos as usize]).collect();
            self.sorted_for = Some(sort_for);
        }
        self.rows.clear();
        match (&self.scope, self.filter.is_empty()) {
            (None, true) => self.rows.extend_from_slice(&self.sorted),
            (scope, _) => {
                let f = &self.filter;
                self.rows.extend(self.sorted.iter().copied().filter(|&k| {
                    scope.as_ref().is_none_or(|sc| sc.matches(src, cx, k))
                        && (f.is_empty() || f.matches(src, cx, k))
                }));
            }
        }
        // Follow the selected object to its new row; if it is gone (or filtered out), the
        // cursor stays at the same place and stands for whatever row is there now.
        if let Some(id) = &self.selected_id
            && let Some(k) = src.locate(cx, id)
            && let Some(i) = self.rows.iter().position(|&r| r == k)
        {
            self.selected = i;
        }
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
        self.cached = Some(want);
        self.selected_id = self.rows.get(self.selected).and_then(|&k| src.identity(cx, k));
    }

    /// Records what the selected row stands for, when the rows were built for the state in
    /// `cx` (call it after the selection moves; a later state change cannot lose it then).
    pub fn capture<S: TableSource + ?Sized>(&mut self, src: &S, cx: &Cx<'_>) {
        if self.cached.as_ref().is_some_and(|c| c.0 == cx.s.generation) {
            self.selected_id = self.rows.get(self.selected).and_then(|&k| src.identity(cx, k));
        }
    }

    /// The object the selection stands for (as of the last refresh or capture).
    pub fn selected_id(&self) -> Option<&ObjKey> {
        self.selected_id.as_ref()
    }

    /// Selects the row of `id` (after the next refresh, if it is not among the rows now).
    pub fn select_id<S: TableSource + ?Sized>(&mut self, src: &S, cx: &Cx<'_>, id: ObjKey) {
        if self.cached.as_ref().is_some_and(|c| c.0 == cx.s.generation)
            && let Some(k) = src.locate(cx, &id)
            && let Some(i) = self.rows.iter().position(|&r| r == k)
        {
            self.selected = i;
        }
        self.selected_id = Some(id);
    }

    /// Forces a rebuild at the next refresh (the rows' meaning changed).
    pub fn invalidate(&mut self) {
        self.cached = None;
        self.sorted_for = None;
    }

    /// Sets what the operator typed; it takes effect at the next refresh if it parses and names
    /// keys the table has, else [`TableState::filter_error`] says why and the last good filter
    /// stays.
    pub fn set_filter(&mut self, raw: &str) {
        if self.typed != raw || self.filter_error.is_some() {
            self.typed = raw.to_string();
            self.filter_pending = true;
            if raw.trim().is_empty() {
                // Clearing never fails: take it now.
                self.filter = Filter::default();
                self.filter_error = None;
                self.filter_pending = false;
                self.selected = 0;
                self.offset = 0;
            }
        }
    }

    /// The operator opened the filter prompt: a bad filter typed from now on shows the rows of
    /// the one in force now.
    pub fn begin_edit(&mut self) {
        self.editing_from = Some(self.filter.clone());
    }

    /// The filter prompt closed.
    pub fn end_edit(&mut self) {
        self.editing_from = None;
    }

    /// Why the filter typed last is not in force.
    pub fn filter_error(&self) -> Option<&str> {
        self.filter_error.as_deref()
    }

    /// Rows before the filter.
    pub fn total(&self) -> usize {
        self.sorted.len()
    }

    /// Every row before the filter, sorted.
    pub fn sorted_keys(&self) -> &[RowKey] {
        &self.sorted
    }

    pub fn selected_key(&self) -> Option<RowKey> {
        self.rows.get(self.selected).copied()
    }

    pub fn select_key(&mut self, key: RowKey) {
        if let Some(i) = self.rows.iter().position(|&r| r == key) {
            self.selected = i;
        }
    }

    pub fn move_by(&mut self, delta: isize) {
        let n = self.rows.len();
        if n == 0 {
            self.selected = 0;
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n as isize - 1) as usize;
    }

    pub fn top(&mut self) {
        self.selected = 0;
    }

    pub fn bottom(&mut self) {
        self.selected = self.rows.len().saturating_sub(1);
    }

    /// Sorts by another column, ascending (`SortReverse` flips it).
    pub fn sort_by(&mut self, col: usize, ncols: usize) {
        self.sort_col = col % ncols.max(1);
        self.desc = false;
        self.sort_set = true;
    }
}

/// The columns shown in `width` cells and their widths, from what they hold (`content`: the
/// widest of the header and the visible cells, per column).
///
/// A number (right-aligned) is never cut: it gets its whole width or its column is dropped. A
/// text column needs its declared width and may be cut there (`llama3-405b-pre~`). Columns are
/// dropped by level (highest first) until the rest fit; then spare width goes to the text columns
/// whose values are cut, up to their content (names first get the room, not a gap), and a
/// left-aligned last column takes what is left. Nothing is laid out past `width`.
pub fn layout(cols: &[Column], content: &[usize], width: u16) -> Vec<(usize, usize)> {
    layout_for(cols, content, width, false)
}

/// [`layout`] for a state of one cluster or (`fleet`) several: the CLUSTER column (declared
/// with [`Column::fleet`]) is shown first in a fleet and not at all otherwise.
pub fn layout_for(cols: &[Column], content: &[usize], width: u16, fleet: bool) -> Vec<(usize, usize)> {
    let width = width as usize;
    let content = |i: usize| content.get(i).copied().unwrap_or(0);
    // What a column needs: a number or a whole value all of it; text its declared width, or
    // less when nothing it holds is that wide.
    let need = |i: usize| {
        let c = &cols[i];
        if c.right || c.whole {
            (c.width as usize).max(content(i))
        } else {
            (c.width as usize).min(content(i)).max(1)
        }
    };
    let total = |keep: &[usize], w: &dyn Fn(usize) -> usize| -> usize {
        keep.iter().map(|&i| w(i)).sum::<usize>() + keep.len().saturating_sub(1)
    };
    let mut keep: Vec<usize> = (0..cols.len()).filter(|&i| fleet && cols[i].fleet).collect();
    // A column shown only for some states is measured as empty (0) for the others.
    keep.extend((0..cols.len()).filter(|&i| !cols[i].fleet && (cols[i].only.is_none() || content(i) > 0)));
    while total(&keep, &need) > width {
        let Some((pos, _)) = keep
            .iter()
            .enumerate()
            .filter(|(_, i)| cols[**i].drop > 0)
            .max_by_key(|(p, i)| (cols[**i].drop, *p))
        else {
            break;
        };
        keep.remove(pos);
    }
    let mut w: Vec<usize> = keep.iter().map(|&i| need(i)).collect();
    // Still too wide with nothing left to drop by level: text columns give up width (down to 4
    // cells), then columns go from the right (never the first).
    loop {
        let used: usize = w.iter().sum::<usize>() + w.len().saturating_sub(1);
        if used <= width {
            break;
        }
        let over = used - width;
        if let Some((j, _)) = keep
            .iter()
            .enumerate()
            .filter(|(j, i)| !cols[**i].right && !cols[**i].whole && w[*j] > 4)
            .max_by_key(|(j, _)| w[*j])
        {
            w[j] -= over.min(w[j] - 4);
            continue;
        }
        if keep.len() <= 1 {
            if let Some(x) = w.first_mut() {
                *x = width;
            }
            break;
        }
        keep.pop();
        w.pop();
    }
    // Spare width: to the text columns whose values are cut, in proportion to what they lack.
    let used: usize = w.iter().sum::<usize>() + w.len().saturating_sub(1);
    let mut spare = width.saturating_sub(used);
    let want = |i: usize| {
        let c = &cols[i];
        let cap = if c.max > c.width { c.max as usize } else { 48 };
        content(i).min(cap).max(c.width as usize)
    };
    let lack: Vec<usize> = keep
        .iter()
        .zip(&w)
        .map(|(&i, &cur)| if cols[i].right || cols[i].whole { 0 } else { want(i).saturating_sub(cur) })
        .collect();
    let sum: usize = lack.iter().sum();
    if sum > 0 && spare > 0 {
        let give = spare.min(sum);
        let mut given = 0;
        for (j, &l) in lack.iter().enumerate() {
            let g = give * l / sum;
            w[j] += g;
            given += g;
        }
        // The rounding remainder, one cell each, to the columns still short.
        for (j, &l) in lack.iter().enumerate() {
            if given >= give {
                break;
            }
            if l > 0 && w[j] < want(keep[j]) {
                w[j] += 1;
                given += 1;
            }
        }
        spare -= given;
    }
    if let (Some(&last), Some(lw)) = (keep.last(), w.last_mut())
        && !cols[last].right
    {
        *lw += spare;
    }
    keep.into_iter().zip(w).collect()
}

pub fn pad(text: &str, width: usize, right: bool) -> String {
    let w = text.width();
    if w > width {
        let mut out = String::new();
        let mut used = 0;
        for c in text.chars() {
            let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + cw + 1 > width {
                break;
            }
            used += cw;
            out.push(c);
        }
        if width > 0 {
            out.push('~');
            used += 1;
        }
        out.push_str(&" ".repeat(width.saturating_sub(used)));
        out
    } else if right {
        format!("{}{text}", " ".repeat(width - w))
    } else {
        format!("{text}{}", " ".repeat(width - w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_insensitive_contains() {
        assert!(contains_ci("Llama-70B", "70b"));
        assert!(contains_ci("abc", ""));
        assert!(!contains_ci("ab", "abc"));
        assert!(!contains_ci("vision", "llm"));
    }

    #[test]
    fn columns_drop_by_level_when_narrow() {
        fn sort<'a>(_: &Cx<'a>, _: RowKey) -> SortKey<'a> {
            SortKey::Int(0)
        }
        fn cell<'a>(_: &Cx<'a>, _: RowKey) -> Cell<'a> {
            Cell::raw("")
        }
        static COLS: [Column; 3] =
            [col("A", 10, sort, cell), col("B", 10, sort, cell).drop(2), col("C", 10, sort, cell).drop(1)];
        let ids = |v: Vec<(usize, usize)>| v.into_iter().map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(ids(layout(&COLS, &[10, 10, 10], 40)), vec![0, 1, 2]);
        assert_eq!(ids(layout(&COLS, &[10, 10, 10], 25)), vec![0, 2]);
        assert_eq!(ids(layout(&COLS, &[10, 10, 10], 5)), vec![0]);
    }

    #[test]
    fn names_get_the_spare_width_and_numbers_are_never_cut() {
        fn sort<'a>(_: &Cx<'a>, _: RowKey) -> SortKey<'a> {
            SortKey::Int(0)
        }
        fn cell<'a>(_: &Cx<'a>, _: RowKey) -> Cell<'a> {
            Cell::raw("")
        }
        static COLS: [Column; 3] = [
            col("NAME", 8, sort, cell),
            col("GPUS", 4, sort, cell).right(),
            col("COST", 6, sort, cell).right(),
        ];
        // Wide: the name gets its whole 20 cells, the numbers theirs, and no gap is made.
        assert_eq!(layout(&COLS, &[20, 4, 9], 200), vec![(0, 20), (1, 4), (2, 9)]);
        // Narrower: the name gives way, the 9-cell number does not.
        assert_eq!(layout(&COLS, &[20, 4, 9], 25), vec![(0, 10), (1, 4), (2, 9)]);
        // Too narrow for both numbers at their width: the last goes, never cut.
        let l = layout(&COLS, &[20, 4, 9], 12);
        assert!(l.iter().all(|&(i, w)| i == 0 || w >= [20, 4, 9][i]), "{l:?}");
        let used: usize = l.iter().map(|(_, w)| w + 1).sum::<usize>() - 1;
        assert!(used <= 12, "{l:?}");
    }

    #[test]
    fn float_bits_keep_the_order() {
        let v = [-1e9, -2.5, -0.0, 0.0, 1e-9, 3.0, f64::INFINITY];
        for w in v.windows(2) {
            assert!(float_bits(w[0]) <= float_bits(w[1]), "{w:?}");
        }
    }

    #[test]
    fn prefixes_order_like_strings() {
        assert!(prefix("ab") < prefix("abc"));
        assert!(prefix("abd") > prefix("abc"));
        assert_eq!(prefix("0123456789abcdefX"), prefix("0123456789abcdefY"));
    }

    #[test]
    fn pad_truncates_with_a_marker() {
        assert_eq!(pad("abcdef", 4, false), "abc~");
        assert_eq!(pad("ab", 4, true), "  ab");
    }
}
