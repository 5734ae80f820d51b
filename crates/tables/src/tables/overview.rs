//! Overview: the health of each plane at a glance and the current incidents, worst first.

use super::detail::kv;
use super::fmt::{ago, dur, money, untrusted};
use super::table::TableId;
use super::table::to_json;
use super::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col};
use super::tone::{Cell, Line, Tone};
use crate::model::ObjKey;
use crate::state::{ClusterState, Incident, Lifecycle, Severity};
use std::borrow::Cow;

pub struct IncidentsTable;

pub const INCIDENTS: TableId = TableId("incidents");

static COLS: [Column; 8] = [
    col(
        "SEV",
        4,
        |_, key| SortKey::Int(key as i64),
        |cx, key| {
            let i = inc(cx.s, key);
            Cell::new(i.severity.label(), sev_style(cx, i.severity))
        },
    )
    .key("severity")
    .exact(),
    col(
        "STATE",
        5,
        |cx, key| SortKey::Int(i64::from(inc(cx.s, key).lifecycle.rank())),
        |cx, key| {
            let i = inc(cx.s, key);
            let t = cx.tones;
            Cell::new(state_word(i), if i.lifecycle.handled() { t.dim } else { t.text })
        },
    )
    .key("state")
    .exact(),
    col(
        "PLANE",
        7,
        |cx, key| {
            let i = inc(cx.s, key);
            SortKey::Int(i.plane as i64)
        },
        |cx, key| {
            let i = inc(cx.s, key);
            let t = cx.tones;
            Cell::new(i.plane.label(), t.dim)
        },
    )
    .exact()
    .drop(2),
    col(
        "SUBJECT",
        18,
        |cx, key| {
            let i = inc(cx.s, key);
            SortKey::Str(&i.subject)
        },
        |cx, key| {
            let i = inc(cx.s, key);
            let t = cx.tones;
            untrusted(&i.subject, t.text)
        },
    ),
    col(
        "SINCE",
        6,
        |cx, key| {
            let i = inc(cx.s, key);
            SortKey::Int(i.since.unwrap_or(i64::MAX))
        },
        |cx, key| {
            let i = inc(cx.s, key);
            let t = cx.tones;
            Cell::new(i.since.map_or("-".into(), |s| dur(cx.s.now - s)), t.dim)
        },
    )
    .right()
    .drop(3),
    col(
        "COST/H",
        7,
        |cx, key| {
            let i = inc(cx.s, key);
            SortKey::Float(i.cost_per_hour.unwrap_or(0.0))
        },
        |cx, key| {
            let i = inc(cx.s, key);
            let t = cx.tones;
            Cell::new(i.cost_per_hour.map_or(String::new(), |c| money(c, &cx.s.prices.currency)), t.warn)
        },
    )
    .right()
    .drop(1),
    col(
        "WHAT",
        20,
        |cx, key| {
            let i = inc(cx.s, key);
            SortKey::Str(&i.title)
        },
        |cx, key| {
            let i = inc(cx.s, key);
            if i.lifecycle.handled() {
                // Handled rows say how, dimmed: `drained by oncall INC-4242 12m ago`.
                let how = i.lifecycle.phrase(cx.s.now);
                Cell::new(
                    crate::sanitize::sanitize(&format!("{} — {how}", i.title)).into_owned(),
                    cx.tones.dim,
                )
            } else {
                untrusted(&i.title, sev_style(cx, i.severity))
            }
        },
    ),
    col(
        "CLUSTER",
        8,
        |cx, k| SortKey::Str(cx.s.cluster_of(&inc(cx.s, k).cluster)),
        |cx, k| cluster_cell(cx, &inc(cx.s, k).cluster),
    )
    .drop(9)
    .fleet(),
];

/// The STATE column's word: `open`, `ack`, `mitig`, `done`.
fn state_word(i: &Incident) -> &'static str {
    match i.lifecycle {
        Lifecycle::Open => "open",
        Lifecycle::Acked { .. } => "ack",
        Lifecycle::Mitigated { .. } => "mitig",
        Lifecycle::Resolved { .. } => "done",
    }
}

/// The incident's flat JSON: its fields plus its lifecycle (`state`: open/acked/mitigated/
/// resolved, `acked_by`, `ticket`, `mitigation`, `handled`), what a draining node waits for,
/// and the playbook step it is at.
pub fn incident_json(s: &ClusterState, i: &Incident) -> serde_json::Value {
    let mut v = to_json(i);
    if let Some(o) = v.as_object_mut() {
        o.insert("state".into(), i.lifecycle.label().into());
        o.insert("acked_by".into(), i.lifecycle.acked_by().into());
        o.insert("ticket".into(), i.lifecycle.ticket().into());
        o.insert(
            "mitigation".into(),
            match &i.lifecycle {
                Lifecycle::Mitigated { .. } => i.lifecycle.phrase(s.now).into(),
                _ => serde_json::Value::Null,
            },
        );
        o.insert("handled".into(), Some(i.lifecycle.phrase(s.now)).filter(|p| !p.is_empty()).into());
        if let Lifecycle::Resolved { at } = i.lifecycle {
            o.insert("resolved_at".into(), at.into());
        }
        o.insert("waiting".into(), i.waiting.clone().into());
        o.insert(
            "playbook_step".into(),
            s.playbooks.current(&i.signal, i.repeats).map_or(serde_json::Value::Null, |c| to_json(&c)),
        );
    }
    v
}

fn inc(s: &ClusterState, key: RowKey) -> &Incident {
    &s.incidents[key as usize]
}

pub fn sev_style(cx: &Cx<'_>, sev: Severity) -> Tone {
    match sev {
        Severity::Critical => cx.tones.crit,
        Severity::Warning => cx.tones.warn,
        Severity::Info => cx.tones.info,
    }
}

impl TableSource for IncidentsTable {
    fn id(&self) -> TableId {
        INCIDENTS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<Line<'a>> {
        detail(cx, key, width)
    }

    fn json(&self, cx: &Cx<'_>, key: RowKey) -> serde_json::Value {
        incident_json(cx.s, inc(cx.s, key))
    }

    fn columns(&self) -> &'static [Column] {
        &COLS
    }

    fn identity(&self, cx: &Cx<'_>, key: RowKey) -> Option<ObjKey> {
        let i = cx.s.incidents.get(key as usize)?;
        Some(ObjKey::Incident(i.cluster.clone(), i.subject.clone(), i.signal.clone()))
    }

    fn keys(&self, cx: &Cx<'_>, out: &mut Vec<RowKey>) {
        let s = cx.s;
        out.extend(0..s.incidents.len() as RowKey);
    }

    fn text<'a>(&self, cx: &Cx<'a>, key: RowKey) -> Vec<Cow<'a, str>> {
        let i = inc(cx.s, key);
        vec![i.subject.as_str().into(), i.title.as_str().into(), i.plane.label().into()]
    }

    fn field<'a>(&self, cx: &Cx<'a>, key: RowKey, name: &str) -> Option<Cow<'a, str>> {
        let i = inc(cx.s, key);
        Some(match name {
            "cluster" => cx.s.cluster_of(&i.cluster).as_str().into(),
            "plane" => i.plane.label().into(),
            "severity" | "sev" => i.severity.label().into(),
            "node" => i.node.as_deref()?.into(),
            "state" => i.lifecycle.label().into(),
            "signal" => i.signal.as_str().into(),
            _ => return None,
        })
    }

    fn fields(&self) -> &'static [&'static str] {
        &["cluster", "plane", "severity", "sev", "node", "state", "signal"]
    }
}

pub fn detail<'a>(cx: &Cx<'a>, key: RowKey, _width: u16) -> Vec<Line<'a>> {
    let Some(i) = cx.s.incidents.get(key as usize) else { return vec![] };
    let t = cx.tones;
    let mut out = vec![
        kv(cx, "severity", Cell::new(i.severity.label(), sev_style(cx, i.severity))),
        kv(cx, "plane", Cell::new(i.plane.label(), t.text)),
        kv(cx, "subject", untrusted(&i.subject, t.accent)),
        kv(cx, "what", untrusted(&i.title, t.text)),
        kv(cx, "action", Cell::new(i.action.clone(), t.warn)),
    ];
    if let Some(since) = i.since {
        out.push(kv(cx, "since", Cell::new(ago(cx.s.now, since), t.text)));
    }
    if let Some(c) = i.cost_per_hour {
        out.push(kv(cx, "burning", Cell::new(format!("{}/hour", money(c, &cx.s.prices.currency)), t.warn)));
    }
    out.push(kv(
        cx,
        "state",
        Cell::new(i.lifecycle.label(), if i.lifecycle.handled() { t.ok } else { t.warn }),
    ));
    if i.lifecycle.handled() {
        out.push(kv(
            cx,
            "handled",
            Cell::new(crate::sanitize::sanitize(&i.lifecycle.phrase(cx.s.now)).into_owned(), t.text),
        ));
    }
    if let Some(w) = &i.waiting {
        out.push(kv(cx, "drain", Cell::new(crate::sanitize::sanitize(w).into_owned(), t.text)));
    }
    if let Some(p) = cx.s.playbooks.get(&i.signal) {
        let cur = cx.s.playbooks.current(&i.signal, i.repeats);
        out.push(kv(cx, "playbook", Cell::new(p.name.clone(), t.accent)));
        if let Some(c) = cur.as_ref().filter(|c| c.escalated) {
            out.push(Line::styled(format!("  ! repeated {}×: {}", i.repeats, c.text), t.crit));
        }
        for (n, step) in p.steps.iter().enumerate() {
            let key = match (n, step.action) {
                (0, Some(a)) => format!(" [{}]", a.label()),
                _ => String::new(),
            };
            out.push(Line::styled(
                format!("  {}. {}{key}", n + 1, step.text),
                if n == 0 { t.text } else { t.dim },
            ));
        }
    }
    if i.node.is_some() || i.job.is_some() {
        out.push(Line::styled("enter: jump to it", t.dim));
    }
    if !matches!(i.lifecycle, Lifecycle::Resolved { .. }) {
        out.push(Line::styled("a: acknowledge (note, ticket)", t.dim));
    }
    out
}
