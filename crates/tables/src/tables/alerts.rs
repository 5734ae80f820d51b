//! Alerts: what Alertmanager holds — firing (`active`), received but not yet processed
//! (`unprocessed`), silenced and inhibited (`suppressed`) — with labels, annotations and since
//! when, and its silences. Enter opens an alert's detail; Enter again goes to the GPU, node or
//! job it names. Added as one file plus one registry line, as every view is.
//!
//! Prometheus's own `pending` (a rule true for less than its `for:`) never reaches
//! Alertmanager. Where no Alertmanager is configured, the alerts are Prometheus's own
//! (`/api/v1/alerts`: firing and pending); the title says so, and no silence is offered then
//! (Prometheus has none).

use super::detail::{kv, section};
use super::fmt::{safe, untrusted};
use super::table::TableId;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, col, to_json};
use super::tone::{Cell, Line, Tone};
use crate::clock::{relative, stamp_rel};
use crate::model::alert::{Alert, AlertOrigin, AlertState, Silence, SilenceState};
use crate::model::{GpuKey, JobKey, NodeKey, ObjKey};
use crate::state::{ClusterState, Severity, alert_severity};
use std::borrow::Cow;

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

fn sev_style(cx: &Cx<'_>, a: &Alert) -> Tone {
    if !a.firing() {
        return cx.tones.dim;
    }
    match alert_severity(a) {
        Severity::Critical => cx.tones.crit,
        Severity::Warning => cx.tones.warn,
        Severity::Info => cx.tones.info,
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
            Cell::new(state(a), sev_style(cx, a))
        },
    )
    .exact(),
    col(
        "SEV",
        4,
        |cx, key| SortKey::Int(-(alert_severity(alert(cx, key)) as i64)),
        |cx, key| {
            let a = alert(cx, key);
            Cell::new(alert_severity(a).label(), sev_style(cx, a))
        },
    )
    .key("severity")
    .exact(),
    col(
        "ALERT",
        14,
        |cx, key| SortKey::Str(&alert(cx, key).name),
        |cx, key| untrusted(&alert(cx, key).name, cx.tones.text),
    )
    .grow(24),
    col(
        "SUBJECT",
        12,
        |cx, key| SortKey::Str(alert(cx, key).host().unwrap_or("")),
        |cx, key| Cell::new(safe(&subject(cx, alert(cx, key))).into_owned(), cx.tones.text),
    )
    .grow(18),
    col(
        "SINCE",
        6,
        |cx, key| SortKey::Int(alert(cx, key).starts_at),
        |cx, key| Cell::new(crate::clock::dur(cx.s.now - alert(cx, key).starts_at), cx.tones.dim),
    )
    .right()
    .drop(1),
    col(
        "SUMMARY",
        20,
        |cx, key| SortKey::Str(alert(cx, key).summary()),
        |cx, key| untrusted(alert(cx, key).summary(), cx.tones.text),
    )
    .grow(60),
    col(
        "LABELS",
        20,
        |cx, key| SortKey::Str(alert(cx, key).fingerprint.as_str()),
        |cx, key| Cell::new(safe(&other_labels(alert(cx, key))).into_owned(), cx.tones.dim),
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
        let (a, t) = (alert(cx, key), cx.tones);
        let now = cx.s.now;
        let mut out = vec![
            kv(cx, "alert", untrusted(&a.name, t.title)),
            kv(cx, "state", Cell::new(state(a), sev_style(cx, a))),
            kv(cx, "severity", Cell::new(alert_severity(a).label(), sev_style(cx, a))),
            kv(cx, "since", Cell::new(stamp_rel(now, a.starts_at), t.text)),
        ];
        if let Some(end) = a.ends_at {
            out.push(kv(cx, "ends", Cell::new(format!("{} unless renewed", relative(now, end)), t.dim)));
        }
        out.push(kv(cx, "subject", Cell::new(safe(&subject(cx, a)).into_owned(), t.text)));
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
            out.push(kv(cx, "silenced", Cell::new(safe(&what).into_owned(), t.warn)));
        }
        for id in &a.inhibited_by {
            out.push(kv(cx, "inhibited", untrusted(id, t.warn)));
        }
        out.push(section(cx, "annotations"));
        for (k, v) in &a.annotations {
            out.push(Line::from(vec![
                Cell::new(format!("{} ", safe(k)), t.dim),
                Cell::new(safe(v).into_owned(), t.text),
            ]));
        }
        out.push(section(cx, "labels"));
        for (k, v) in &a.labels {
            out.push(Line::from(vec![
                Cell::new(format!("{}=", safe(k)), t.dim),
                Cell::new(safe(v).into_owned(), t.text),
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

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

static SILENCE_COLS: [Column; 6] = [
    col(
        "ID",
        8,
        |cx, key| SortKey::Str(&silence(cx, key).id),
        |cx, key| untrusted(short(&silence(cx, key).id), cx.tones.dim),
    ),
    col(
        "STATE",
        7,
        |cx, key| SortKey::Int(silence(cx, key).state as i64),
        |cx, key| {
            let s = silence(cx, key);
            let style = if s.state == SilenceState::Expired { cx.tones.dim } else { cx.tones.warn };
            Cell::new(s.state.label(), style)
        },
    )
    .exact(),
    col(
        "MATCHERS",
        20,
        |cx, key| SortKey::Str(&silence(cx, key).comment),
        |cx, key| Cell::new(safe(&silence(cx, key).matchers_text()).into_owned(), cx.tones.text),
    )
    .grow(60),
    col(
        "BY",
        8,
        |cx, key| SortKey::Str(&silence(cx, key).created_by),
        |cx, key| untrusted(&silence(cx, key).created_by, cx.tones.text),
    )
    .drop(2),
    col(
        "ENDS",
        9,
        |cx, key| SortKey::Int(silence(cx, key).ends_at),
        |cx, key| Cell::new(relative(cx.s.now, silence(cx, key).ends_at), cx.tones.dim),
    )
    .right(),
    col(
        "COMMENT",
        16,
        |cx, key| SortKey::Str(&silence(cx, key).comment),
        |cx, key| untrusted(&silence(cx, key).comment, cx.tones.dim),
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
        let (s, t) = (silence(cx, key), cx.tones);
        let now = cx.s.now;
        let muted = cx.s.alerts.iter().filter(|a| a.silenced_by.contains(&s.id)).count();
        let mut out = vec![
            kv(cx, "silence", untrusted(&s.id, t.title)),
            kv(cx, "state", Cell::new(s.state.label(), t.text)),
            kv(cx, "matchers", Cell::new(safe(&s.matchers_text()).into_owned(), t.text)),
            kv(cx, "by", untrusted(&s.created_by, t.text)),
            kv(cx, "comment", untrusted(&s.comment, t.text)),
            kv(cx, "starts", Cell::new(stamp_rel(now, s.starts_at), t.dim)),
            kv(cx, "ends", Cell::new(stamp_rel(now, s.ends_at), t.dim)),
            kv(cx, "mutes", Cell::new(format!("{muted} alert(s) now"), t.text)),
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

/// Whether the alerts shown can be silenced: only those an Alertmanager reported.
pub fn can_silence(s: &ClusterState) -> bool {
    s.alerts_origin.is_none_or(AlertOrigin::can_silence)
}

/// Why alerts from Prometheus cannot be silenced here.
pub const READ_ONLY: &str =
    "read from Prometheus (no Alertmanager configured): read-only, silences need --alertmanager URL";

/// Where Enter on an alert goes: the GPU it names, else its node, else its job; with words.
pub fn jump_target(s: &ClusterState, a: &Alert) -> Option<(String, TableId, ObjKey)> {
    let cluster = s.cluster.clone();
    if let Some(n) = s.alert_node(a) {
        let node = NodeKey { cluster, name: n.name.clone() };
        if let Some(g) = a.gpu().filter(|g| n.gpus.iter().any(|x| x.index == *g)) {
            let what = format!("GPU {g} of {}", n.name);
            return Some((what, super::gpus::TABLE, ObjKey::Gpu(GpuKey { node, index: g })));
        }
        return Some((format!("node {}", n.name), super::nodes::TABLE, ObjKey::Node(node)));
    }
    let id = a.job().filter(|&j| s.job(j).is_some())?;
    Some((format!("job {id}"), super::jobs::TABLE, ObjKey::Job(JobKey { cluster, id })))
}
