//! Alerts: what Alertmanager holds — firing (`active`), received but not yet processed
//! (`unprocessed`), silenced and inhibited (`suppressed`) — with labels, annotations and since
//! when, and its silences. Enter opens an alert's detail; Enter again goes to the GPU, node or
//! job it names. Added as one file plus one registry line, as every view is.
//!
//! Prometheus's own `pending` (a rule true for less than its `for:`) never reaches
//! Alertmanager. Where no Alertmanager is configured, the alerts are Prometheus's own
//! (`/api/v1/alerts`: firing and pending); the title says so, and no silence is offered then
//! (Prometheus has none).

use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, col, to_json};
use super::super::widgets::{safe, untrusted};
use super::detail::{kv, section};
use super::{TableId, ViewId};
use crate::clock::{relative, stamp_rel};
use crate::model::alert::{Alert, AlertOrigin, AlertState, Silence, SilenceState};
use crate::model::{GpuKey, JobKey, NodeKey, ObjKey};
use crate::state::{ClusterState, Severity, alert_severity};
use crate::tui::app::App;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::borrow::Cow;

pub const ID: ViewId = ViewId("alerts");
pub const ALERTS: TableId = TableId("alerts");
pub const SILENCES: TableId = TableId("silences");

pub struct AlertsTable;
pub struct SilencesTable;

fn alert<'a>(cx: &Cx<'a>, key: RowKey) -> &'a Alert {
    &cx.s.alerts[key as usize]
}

fn silence<'a>(cx: &Cx<'a>, key: RowKey) -> &'a Silence {
    &cx.s.silences[key as usize]
}

/// What the STATE column says: `firing`, `unprocessed`, `silenced`, `inhibited`.
fn state(a: &Alert) -> &'static str {
    match a.state {
        AlertState::Active => "firing",
        AlertState::Unprocessed => "unprocessed",
        AlertState::Suppressed if a.silenced() => "silenced",
        AlertState::Suppressed if !a.inhibited_by.is_empty() => "inhibited",
        AlertState::Suppressed => "suppressed",
        AlertState::Pending => "pending",
    }
}

/// Firing first, then unprocessed, then muted.
fn state_rank(a: &Alert) -> i64 {
    match a.state {
        AlertState::Active => 0,
        AlertState::Unprocessed => 1,
        AlertState::Pending => 2,
        AlertState::Suppressed => 3,
    }
}

fn sev_style(cx: &Cx<'_>, a: &Alert) -> Style {
    if !a.firing() {
        return cx.theme.dim;
    }
    match alert_severity(a) {
        Severity::Critical => cx.theme.crit,
        Severity::Warning => cx.theme.warn,
        Severity::Info => cx.theme.info,
    }
}

/// What the alert is about, as this cluster knows it: `gpu-004/gpu2`, `gpu-004`, `job 4242`,
/// else the host it names, else `-`.
fn subject(cx: &Cx<'_>, a: &Alert) -> String {
    match (cx.s.alert_node(a), a.gpu(), a.job(), a.host()) {
        (Some(n), Some(g), ..) => format!("{}/gpu{g}", n.name),
        (Some(n), None, ..) => n.name.to_string(),
        (None, _, Some(j), _) => format!("job {j}"),
        (None, _, None, Some(h)) => h.to_string(),
        (None, _, None, None) => "-".into(),
    }
}

/// Labels other than those the columns show, `k=v` joined.
fn other_labels(a: &Alert) -> String {
    let shown = ["alertname", "severity"];
    let v: Vec<String> = a
        .labels
        .iter()
        .filter(|(k, _)| !shown.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    v.join(" ")
}

static ALERT_COLS: [Column; 7] = [
    col(
        "STATE",
        11,
        |cx, key| SortKey::Int(state_rank(alert(cx, key))),
        |cx, key| {
            let a = alert(cx, key);
            Span::styled(state(a), sev_style(cx, a))
        },
    )
    .exact(),
    col(
        "SEV",
        4,
        |cx, key| SortKey::Int(-(alert_severity(alert(cx, key)) as i64)),
        |cx, key| {
            let a = alert(cx, key);
            Span::styled(alert_severity(a).label(), sev_style(cx, a))
        },
    )
    .key("severity")
    .exact(),
    col(
        "ALERT",
        14,
        |cx, key| SortKey::Str(&alert(cx, key).name),
        |cx, key| untrusted(&alert(cx, key).name, cx.theme.text),
    )
    .grow(24),
    col(
        "SUBJECT",
        12,
        |cx, key| SortKey::Str(alert(cx, key).host().unwrap_or("")),
        |cx, key| Span::styled(safe(&subject(cx, alert(cx, key))).into_owned(), cx.theme.text),
    )
    .grow(18),
    col(
        "SINCE",
        6,
        |cx, key| SortKey::Int(alert(cx, key).starts_at),
        |cx, key| Span::styled(crate::clock::dur(cx.s.now - alert(cx, key).starts_at), cx.theme.dim),
    )
    .right()
    .drop(1),
    col(
        "SUMMARY",
        20,
        |cx, key| SortKey::Str(alert(cx, key).summary()),
        |cx, key| untrusted(alert(cx, key).summary(), cx.theme.text),
    )
    .grow(60),
    col(
        "LABELS",
        20,
        |cx, key| SortKey::Str(alert(cx, key).fingerprint.as_str()),
        |cx, key| Span::styled(safe(&other_labels(alert(cx, key))).into_owned(), cx.theme.dim),
    )
    .grow(80)
    .drop(2),
];

impl TableSource for AlertsTable {
    fn id(&self) -> TableId {
        ALERTS
    }

    fn columns(&self) -> &'static [Column] {
        &ALERT_COLS
    }

    fn default_sort(&self) -> (usize, bool) {
        (0, false)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        // Natural order: worst first within each state, then the oldest.
        let mut k: Vec<RowKey> = (0..cx.s.alerts.len() as RowKey).collect();
        k.sort_by_key(|&i| {
            let a = alert(cx, i);
            (state_rank(a), std::cmp::Reverse(alert_severity(a)), a.starts_at)
        });
        out.extend(k);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let a = alert(cx, key);
        let mut v: Vec<Cow<'a, str>> = vec![a.name.as_str().into(), state(a).into(), a.summary().into()];
        v.extend(a.labels.values().map(|l| Cow::from(l.as_str())));
        v
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let a = alert(cx, key);
        Some(match name {
            "state" => state(a).into(),
            "alert" | "name" => a.name.as_str().into(),
            "subject" => subject(cx, a).into(),
            "summary" => a.summary().into(),
            "fingerprint" => a.fingerprint.as_str().into(),
            // Any label: `Hostname=gpu-004`, `team=vision`.
            other => a.label(other)?.into(),
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["state", "severity", "alert", "name", "subject", "summary", "fingerprint"]
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let (a, t) = (alert(cx, key), cx.theme);
        let now = cx.s.now;
        let mut out = vec![
            kv(cx, "alert", untrusted(&a.name, t.title)),
            kv(cx, "state", Span::styled(state(a), sev_style(cx, a))),
            kv(cx, "severity", Span::styled(alert_severity(a).label(), sev_style(cx, a))),
            kv(cx, "since", Span::styled(stamp_rel(now, a.starts_at), t.text)),
        ];
        if let Some(end) = a.ends_at {
            out.push(kv(cx, "ends", Span::styled(format!("{} unless renewed", relative(now, end)), t.dim)));
        }
        out.push(kv(cx, "subject", Span::styled(safe(&subject(cx, a)).into_owned(), t.text)));
        if let Some(to) = jump_target(cx.s, a) {
            out.push(Line::styled(format!("Enter: go to {}", to.0), t.accent));
        }
        for id in &a.silenced_by {
            let s = cx.s.silences.iter().find(|s| s.id == *id);
            let what = s.map_or_else(
                || id.to_string(),
                |s| {
                    format!(
                        "{} by {}, ends {}: {}",
                        short(&s.id),
                        s.created_by,
                        relative(now, s.ends_at),
                        s.comment
                    )
                },
            );
            out.push(kv(cx, "silenced", Span::styled(safe(&what).into_owned(), t.warn)));
        }
        for id in &a.inhibited_by {
            out.push(kv(cx, "inhibited", untrusted(id, t.warn)));
        }
        out.push(section(cx, "annotations"));
        for (k, v) in &a.annotations {
            out.push(Line::from(vec![
                Span::styled(format!("{} ", safe(k)), t.dim),
                Span::styled(safe(v).into_owned(), t.text),
            ]));
        }
        out.push(section(cx, "labels"));
        for (k, v) in &a.labels {
            out.push(Line::from(vec![
                Span::styled(format!("{}=", safe(k)), t.dim),
                Span::styled(safe(v).into_owned(), t.text),
            ]));
        }
        if let Some(u) = &a.generator_url {
            out.push(kv(cx, "source", untrusted(u, t.dim)));
        }
        if can_silence(cx.s) {
            out.push(Line::styled(
                format!(
                    "silence: gpuplane silence create alertname={} --duration 2h -r REASON -t TICKET",
                    safe(&a.name)
                ),
                t.dim,
            ));
        } else {
            out.push(Line::styled(READ_ONLY, t.dim));
        }
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        let a = alert(cx, key);
        let mut v = to_json(a);
        v["severity"] = serde_json::Value::from(alert_severity(a).label().to_ascii_lowercase());
        v["display_state"] = serde_json::Value::from(state(a));
        v["subject"] = serde_json::Value::from(subject(cx, a));
        v
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.alerts.get(key as usize).map(|a| ObjKey::Alert(a.fingerprint.clone()))
    }
}

/// Whether the alerts shown can be silenced: only those an Alertmanager reported.
pub fn can_silence(s: &ClusterState) -> bool {
    s.alerts_origin.is_none_or(AlertOrigin::can_silence)
}

/// Why alerts from Prometheus cannot be silenced here.
pub const READ_ONLY: &str =
    "read from Prometheus (no Alertmanager configured): read-only, silences need --alertmanager URL";

/// The alerts pane's title: where they come from and how many fire.
pub fn title(s: &ClusterState) -> String {
    let firing = s.alerts.iter().filter(|a| a.state == AlertState::Active).count();
    let total = s.alerts.len();
    match s.alerts_origin {
        None => {
            "Alerts (no alert source: --alertmanager URL, or --prometheus URL for its rules' alerts)".into()
        }
        Some(AlertOrigin::Prometheus) => {
            let pending = s.alerts.iter().filter(|a| a.state == AlertState::Pending).count();
            format!("Alerts from Prometheus, read-only ({firing} firing, {pending} pending, {total} total)")
        }
        Some(AlertOrigin::Alertmanager) => {
            let silenced = s.alerts.iter().filter(|a| a.silenced()).count();
            format!("Alerts from Alertmanager ({firing} firing, {silenced} silenced, {total} total)")
        }
    }
}

/// Where Enter on an alert goes: the GPU it names, else its node, else its job; with words.
fn jump_target(s: &ClusterState, a: &Alert) -> Option<(String, ViewId, TableId, ObjKey)> {
    let cluster = s.cluster.clone();
    if let Some(n) = s.alert_node(a) {
        let node = NodeKey { cluster, name: n.name.clone() };
        if let Some(g) = a.gpu().filter(|g| n.gpus.iter().any(|x| x.index == *g)) {
            let what = format!("GPU {g} of {}", n.name);
            return Some((what, super::gpus::ID, super::gpus::TABLE, ObjKey::Gpu(GpuKey { node, index: g })));
        }
        return Some((format!("node {}", n.name), super::nodes::ID, super::nodes::TABLE, ObjKey::Node(node)));
    }
    let id = a.job().filter(|&j| s.job(j).is_some())?;
    Some((format!("job {id}"), super::jobs::ID, super::jobs::TABLE, ObjKey::Job(JobKey { cluster, id })))
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

static SILENCE_COLS: [Column; 6] = [
    col(
        "ID",
        8,
        |cx, key| SortKey::Str(&silence(cx, key).id),
        |cx, key| untrusted(short(&silence(cx, key).id), cx.theme.dim),
    ),
    col(
        "STATE",
        7,
        |cx, key| SortKey::Int(silence(cx, key).state as i64),
        |cx, key| {
            let s = silence(cx, key);
            let style = if s.state == SilenceState::Expired { cx.theme.dim } else { cx.theme.warn };
            Span::styled(s.state.label(), style)
        },
    )
    .exact(),
    col(
        "MATCHERS",
        20,
        |cx, key| SortKey::Str(&silence(cx, key).comment),
        |cx, key| Span::styled(safe(&silence(cx, key).matchers_text()).into_owned(), cx.theme.text),
    )
    .grow(60),
    col(
        "BY",
        8,
        |cx, key| SortKey::Str(&silence(cx, key).created_by),
        |cx, key| untrusted(&silence(cx, key).created_by, cx.theme.text),
    )
    .drop(2),
    col(
        "ENDS",
        9,
        |cx, key| SortKey::Int(silence(cx, key).ends_at),
        |cx, key| Span::styled(relative(cx.s.now, silence(cx, key).ends_at), cx.theme.dim),
    )
    .right(),
    col(
        "COMMENT",
        16,
        |cx, key| SortKey::Str(&silence(cx, key).comment),
        |cx, key| untrusted(&silence(cx, key).comment, cx.theme.dim),
    )
    .grow(60)
    .drop(1),
];

impl TableSource for SilencesTable {
    fn id(&self) -> TableId {
        SILENCES
    }

    fn columns(&self) -> &'static [Column] {
        &SILENCE_COLS
    }

    fn default_sort(&self) -> (usize, bool) {
        (1, false)
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        out.extend(0..cx.s.silences.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let s = silence(cx, key);
        vec![
            s.id.as_str().into(),
            s.comment.as_str().into(),
            s.created_by.as_str().into(),
            s.matchers_text().into(),
        ]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let s = silence(cx, key);
        Some(match name {
            "id" => s.id.as_str().into(),
            "state" => s.state.label().into(),
            "by" | "created_by" => s.created_by.as_str().into(),
            "comment" => s.comment.as_str().into(),
            "matchers" => s.matchers_text().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["id", "state", "by", "created_by", "comment", "matchers"]
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
        let (s, t) = (silence(cx, key), cx.theme);
        let now = cx.s.now;
        let muted = cx.s.alerts.iter().filter(|a| a.silenced_by.contains(&s.id)).count();
        let mut out = vec![
            kv(cx, "silence", untrusted(&s.id, t.title)),
            kv(cx, "state", Span::styled(s.state.label(), t.text)),
            kv(cx, "matchers", Span::styled(safe(&s.matchers_text()).into_owned(), t.text)),
            kv(cx, "by", untrusted(&s.created_by, t.text)),
            kv(cx, "comment", untrusted(&s.comment, t.text)),
            kv(cx, "starts", Span::styled(stamp_rel(now, s.starts_at), t.dim)),
            kv(cx, "ends", Span::styled(stamp_rel(now, s.ends_at), t.dim)),
            kv(cx, "mutes", Span::styled(format!("{muted} alert(s) now"), t.text)),
        ];
        if s.state != SilenceState::Expired {
            out.push(Line::styled(
                format!("expire: gpuplane silence expire {} -r REASON", safe(&s.id)),
                t.dim,
            ));
        }
        out
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        to_json(silence(cx, key))
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        cx.s.silences.get(key as usize).map(|s| ObjKey::Silence(s.id.clone()))
    }
}

pub struct View;

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Alerts"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["alert", "al", "silences", "alertmanager"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&AlertsTable, &SilencesTable]
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &mut App) {
        let s = app.state();
        let active = s.silences.iter().filter(|x| x.state != SilenceState::Expired).count();
        let top_title = title(s);
        let bottom_title = match can_silence(s) {
            true => format!("Silences ({active} active or pending)"),
            false => "Silences (none: Prometheus has no silences; they need --alertmanager URL)".into(),
        };
        let focus = app.ui.focus;
        if app.ui.detail && area.width < 120 {
            let (id, name) = if focus == 0 { (ALERTS, top_title) } else { (SILENCES, bottom_title) };
            table_with_detail(f, area, app, id, &name, true);
        } else {
            let [top, bottom] =
                Layout::vertical([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(area);
            table_with_detail(f, top, app, ALERTS, &top_title, focus == 0);
            table_with_detail(f, bottom, app, SILENCES, &bottom_title, focus == 1);
        }
    }

    fn keys(&self) -> &'static [super::ViewKey] {
        static KEYS: [super::ViewKey; 2] = [
            super::ViewKey {
                name: "silence_alert",
                help: "alerts: silence the selected alert (:silence 2h why)",
                hint: Some("silence"),
                anywhere: false,
                run: |app, _| app.begin_silence(),
            },
            super::ViewKey {
                name: "expire_silence",
                help: "alerts: expire the selected silence (:unsilence why)",
                hint: Some("expire"),
                anywhere: false,
                run: |app, _| app.begin_unsilence(),
            },
        ];
        &KEYS
    }

    fn offers(&self, app: &App, key: &str) -> bool {
        // Silencing needs an Alertmanager: alerts read from Prometheus offer neither key.
        !matches!(key, "silence_alert" | "expire_silence") || can_silence(app.state())
    }

    fn enter(&self, app: &mut App) -> bool {
        // The first Enter opens the detail; the second goes where the alert points.
        if !app.ui.detail || app.ui.focus != 0 {
            return false;
        }
        let Some(ObjKey::Alert(fp)) = app.ui.tables[ALERTS].selected_id().cloned() else { return false };
        let s = app.state();
        let target = s.alerts.iter().find(|a| a.fingerprint == fp).map(|a| jump_target(s, a));
        match target {
            None => app.ui.message = Some(("this alert has resolved".into(), false)),
            Some(None) => {
                app.ui.message = Some(("this alert names no node, GPU or job of this cluster".into(), false))
            }
            Some(Some((_, view, table, id))) => {
                app.goto(view);
                app.prepare();
                // The object may be filtered out there: show it anyway.
                app.table(table).set_filter("");
                app.prepare();
                app.select_obj(table, id);
                app.ui.detail = true;
                app.ui.detail_scroll = 0;
            }
        }
        true
    }
}
