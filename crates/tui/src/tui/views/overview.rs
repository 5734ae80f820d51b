//! Overview: the health of each plane at a glance and the current incidents, worst first.

use super::super::widgets::table::to_json;
use super::super::widgets::table::{Column, Cx, RowKey, SortKey, TableSource, cluster_cell, col};
use super::super::widgets::{ago, dur, money, opt, untrusted};
use super::detail::kv;
use super::{TableId, ViewId};
use crate::model::ObjKey;
use crate::state::{ClusterState, Incident, Lifecycle, Severity};
use crate::tui::app::App;
use crate::tui::draw::table_with_detail;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::borrow::Cow;
use unicode_width::UnicodeWidthStr;

pub struct IncidentsTable;

pub const INCIDENTS: TableId = TableId("incidents");

static COLS: [Column; 8] = [
    col(
        "SEV",
        4,
        |_, key| SortKey::Int(key as i64),
        |cx, key| {
            let i = inc(cx.s, key);
            Span::styled(i.severity.label(), sev_style(cx, i.severity))
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
            let t = cx.theme;
            Span::styled(state_word(i), if i.lifecycle.handled() { t.dim } else { t.text })
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
            let t = cx.theme;
            Span::styled(i.plane.label(), t.dim)
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
            let t = cx.theme;
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
            let t = cx.theme;
            Span::styled(i.since.map_or("-".into(), |s| dur(cx.s.now - s)), t.dim)
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
            let t = cx.theme;
            Span::styled(i.cost_per_hour.map_or(String::new(), |c| money(c, &cx.s.prices.currency)), t.warn)
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
                Span::styled(
                    crate::sanitize::sanitize(&format!("{} — {how}", i.title)).into_owned(),
                    cx.theme.dim,
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

pub fn sev_style(cx: &Cx<'_>, sev: Severity) -> Style {
    match sev {
        Severity::Critical => cx.theme.crit,
        Severity::Warning => cx.theme.warn,
        Severity::Info => cx.theme.info,
    }
}

impl TableSource for IncidentsTable {
    fn id(&self) -> TableId {
        INCIDENTS
    }

    fn detail<'a>(&self, cx: &Cx<'a>, key: RowKey, width: u16) -> Vec<ratatui::text::Line<'a>> {
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
    let t = cx.theme;
    let mut out = vec![
        kv(cx, "severity", Span::styled(i.severity.label(), sev_style(cx, i.severity))),
        kv(cx, "plane", Span::styled(i.plane.label(), t.text)),
        kv(cx, "subject", untrusted(&i.subject, t.accent)),
        kv(cx, "what", untrusted(&i.title, t.text)),
        kv(cx, "action", Span::styled(i.action.clone(), t.warn)),
    ];
    if let Some(since) = i.since {
        out.push(kv(cx, "since", Span::styled(ago(cx.s.now, since), t.text)));
    }
    if let Some(c) = i.cost_per_hour {
        out.push(kv(
            cx,
            "burning",
            Span::styled(format!("{}/hour", money(c, &cx.s.prices.currency)), t.warn),
        ));
    }
    out.push(kv(
        cx,
        "state",
        Span::styled(i.lifecycle.label(), if i.lifecycle.handled() { t.ok } else { t.warn }),
    ));
    if i.lifecycle.handled() {
        out.push(kv(cx, "handled", untrusted_owned(i.lifecycle.phrase(cx.s.now), t.text)));
    }
    if let Some(w) = &i.waiting {
        out.push(kv(cx, "drain", untrusted_owned(w.clone(), t.text)));
    }
    if let Some(p) = cx.s.playbooks.get(&i.signal) {
        let cur = cx.s.playbooks.current(&i.signal, i.repeats);
        out.push(kv(cx, "playbook", Span::styled(p.name.clone(), t.accent)));
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

fn untrusted_owned<'a>(s: String, style: Style) -> Span<'a> {
    Span::styled(crate::sanitize::sanitize(&s).into_owned(), style)
}

/// The four plane summaries above the incident list.
pub fn draw_planes(f: &mut Frame, area: Rect, cx: &Cx<'_>) {
    let s = cx.s;
    let t = cx.theme;
    let g = cx.glyphs;
    let tt = &s.totals;
    let wide = area.width >= 100;
    let cols = if wide {
        Layout::horizontal([Constraint::Ratio(1, 4); 4]).split(area).to_vec()
    } else {
        let rows = Layout::vertical([Constraint::Ratio(1, 2); 2]).split(area);
        let mut v = Layout::horizontal([Constraint::Ratio(1, 2); 2]).split(rows[0]).to_vec();
        v.extend(Layout::horizontal([Constraint::Ratio(1, 2); 2]).split(rows[1]).iter());
        v
    };
    let status = |bad: bool, warn: bool| {
        if bad {
            ("CRIT", t.crit)
        } else if warn {
            ("WARN", t.warn)
        } else {
            ("OK", t.ok)
        }
    };
    let spark_w = (cols[0].width as usize).saturating_sub(10);
    let num = |v: u32, style: Style| Span::styled(v.to_string(), style);
    // compute
    let fullest = s.storage.iter().map(|f| f.used_pct()).max().unwrap_or(0);
    let (cs, cst) =
        status(tt.nodes_down > 0 || tt.gpus_failed > 0, tt.gpus_hot > 0 || tt.gpus_idle_alloc > 0);
    let w = cols[0].width.saturating_sub(2) as usize;
    let line = |pieces: Vec<(&'static str, &'static str, Span<'static>)>| fit_line(pieces, t.dim, w);
    let compute = vec![
        line(vec![
            ("nodes ", "", num(tt.nodes_schedulable, t.text)),
            (" ok ", " ok ", num(tt.nodes_drained, t.warn)),
            (" drn ", " dr ", num(tt.nodes_down, t.crit)),
            (" down", " dn", Span::raw("")),
        ]),
        line(vec![
            ("gpus  ", "", Span::styled(format!("{}/{}", tt.gpus_alloc, tt.gpus), t.text)),
            (" failed ", " fail ", num(tt.gpus_failed, if tt.gpus_failed > 0 { t.crit } else { t.text })),
        ]),
        line(vec![
            ("util  ", "", Span::styled(opt(tt.mean_util.map(|u| format!("{u:.0}%"))), t.text)),
            (" hot ", " hot ", num(tt.gpus_hot, if tt.gpus_hot > 0 { t.warn } else { t.text })),
            (" ", " ", Span::styled(super::super::widgets::power(tt.power_w as f64), t.dim)),
        ]),
        Line::from(Span::styled(g.spark(s.history.util.tail(spark_w).map(u32::from), 100), t.accent)),
    ];
    // network
    // Counted by the state's walk after each update, not per frame.
    let flapping = tt.ports_flapping;
    let (ns, nst) = status(tt.ports_down > 0, flapping > 0);
    let errs = tt.port_errors;
    let network = vec![
        line(vec![
            ("ports ", "", Span::styled(format!("{}/{}", tt.ports - tt.ports_down, tt.ports), t.text)),
            (" active", " up", Span::raw("")),
        ]),
        line(vec![
            ("down  ", "down ", num(tt.ports_down, if tt.ports_down > 0 { t.crit } else { t.text })),
            (" flapping ", " flap ", num(flapping, if flapping > 0 { t.warn } else { t.text })),
        ]),
        line(vec![("errors ", "err ", Span::styled(errs.to_string(), t.text))]),
    ];
    // storage
    let (ss, sst) = status(fullest >= 97, fullest >= s.thresholds.storage_full_pct);
    let read: f64 = s.storage.iter().map(|f| f.read_bps).sum();
    let write: f64 = s.storage.iter().map(|f| f.write_bps).sum();
    let storage = vec![
        line(vec![("filesystems ", "fs ", Span::styled(s.storage.len().to_string(), t.text))]),
        line(vec![(
            "fullest ",
            "full ",
            Span::styled(format!("{fullest}%"), t.level(u32::from(fullest), 90, 97)),
        )]),
        line(vec![
            ("r ", "r ", Span::styled(super::super::widgets::rate(read), t.text)),
            (" w ", " w ", Span::styled(super::super::widgets::rate(write), t.text)),
        ]),
    ];
    // control
    let over = s.quotas.iter().filter(|q| q.over_quota()).count() as u32;
    let idle_cost: f64 = s.incidents.iter().filter_map(|i| i.cost_per_hour).sum();
    let worst_wait = s.queue_stats.iter().filter_map(|q| q.wait_p50_s).max();
    let src_err = s.sources.iter().any(|x| x.error.is_some());
    let (ks, kst) = status(src_err, over > 0 || idle_cost > 0.0);
    let control = vec![
        line(vec![
            ("jobs ", "", num(tt.jobs_running, t.ok)),
            (" run ", " run ", num(tt.jobs_pending, t.warn)),
            (" pend", " pd", Span::raw("")),
        ]),
        line(vec![
            ("wait p50 ", "p50 ", Span::styled(worst_wait.map_or("-".into(), dur), t.text)),
            (" over quota ", " overq ", num(over, if over > 0 { t.warn } else { t.text })),
        ]),
        line(vec![
            ("idle GPUs ", "idle ", num(tt.gpus_idle_alloc, t.warn)),
            (" ", " ", Span::styled(format!("{}/h", money(idle_cost, &s.prices.currency)), t.warn)),
        ]),
    ];
    for (i, (title, (label, style), lines)) in [
        ("compute", (cs, cst), compute),
        ("network", (ns, nst), network),
        ("storage", (ss, sst), storage),
        ("control", (ks, kst), control),
    ]
    .into_iter()
    .enumerate()
    {
        let block =
            Block::default().borders(Borders::ALL).border_set(g.border()).border_style(t.border).title(
                Line::from(vec![
                    Span::styled(format!(" {title} "), t.title),
                    Span::styled(format!("{label} "), style),
                ]),
            );
        f.render_widget(Paragraph::new(lines).block(block), cols[i]);
    }
}

/// A fleet's Overview: one health card per cluster (only the focused one under `:cluster
/// NAME`), in the order the clusters were first heard of: nodes in service and out, GPUs busy,
/// open incidents by severity, and whether every source is fresh. The card's title says the
/// worst of it (CRIT: a critical incident or a failing source; WARN: a warning).
pub fn draw_clusters(f: &mut Frame, area: Rect, cx: &Cx<'_>, focus: Option<&str>) {
    let s = cx.s;
    let t = cx.theme;
    let clusters: Vec<&crate::model::Text> =
        s.clusters().iter().filter(|c| !c.is_empty() && focus.is_none_or(|f| c.as_str() == f)).collect();
    if clusters.is_empty() || area.height < 3 {
        return;
    }
    // As many cards a row as fit at 20 columns each; rows of 5 lines while there is room.
    let per_row = (usize::from(area.width) / 20).clamp(1, clusters.len());
    let rows = clusters.len().div_ceil(per_row).min(usize::from(area.height / 5).max(1));
    let row_areas = Layout::vertical(vec![Constraint::Length(5); rows]).split(area);
    // The node figures come from the derivation (`s.cards`, counted on its walk); only the
    // open incidents are counted here. A walk over the nodes per card made a frame of ten
    // 10,000-node clusters take 65 ms, one walk per frame 2.1 ms.
    let mut per: Vec<([u32; 4], [u32; 2])> = clusters
        .iter()
        .map(|c| {
            s.cards
                .iter()
                .find(|k| k.cluster == **c)
                .map_or([0; 4], |k| [k.nodes_up, k.nodes_out, k.gpus, k.gpus_alloc])
        })
        .map(|n| (n, [0; 2]))
        .collect();
    let slot = |c: &crate::model::Text, last: &mut usize| -> Option<usize> {
        if clusters.get(*last).is_some_and(|x| *x == c) {
            return Some(*last);
        }
        let i = clusters.iter().position(|x| *x == c)?;
        *last = i;
        Some(i)
    };
    let mut last = 0;
    for i in s.incidents.iter().filter(|i| !matches!(i.lifecycle, Lifecycle::Resolved { .. })) {
        if let Some(k) = slot(&i.cluster, &mut last) {
            match i.severity {
                Severity::Critical => per[k].1[0] += 1,
                Severity::Warning => per[k].1[1] += 1,
                _ => {}
            }
        }
    }
    for (r, chunk) in clusters.chunks(per_row).take(rows).enumerate() {
        let cols =
            Layout::horizontal(vec![Constraint::Ratio(1, per_row as u32); per_row]).split(row_areas[r]);
        for (k, (c, cell)) in chunk.iter().zip(cols.iter()).enumerate() {
            let ([up, out, gpus, busy], [crit, warn]) = per[r * per_row + k];
            let srcs: Vec<_> = s.sources.iter().filter(|x| x.cluster == **c).collect();
            let failing = srcs.iter().filter(|x| x.error.is_some()).count() as u32;
            let (label, style) = if crit > 0 || failing > 0 {
                ("CRIT", t.crit)
            } else if warn > 0 {
                ("WARN", t.warn)
            } else {
                ("OK", t.ok)
            };
            let w = cell.width.saturating_sub(2) as usize;
            let num = |v: u32, bad: Style| Span::styled(v.to_string(), if v > 0 { bad } else { t.text });
            let lines = vec![
                fit_line(
                    vec![
                        ("nodes ", "", Span::styled(up.to_string(), t.text)),
                        (" up ", " up ", num(out, t.warn)),
                        (" out", "", Span::raw("")),
                    ],
                    t.dim,
                    w,
                ),
                fit_line(
                    vec![
                        ("gpus ", "", Span::styled(format!("{busy}/{gpus}"), t.text)),
                        (" busy", "", Span::raw("")),
                    ],
                    t.dim,
                    w,
                ),
                fit_line(
                    vec![
                        ("incidents ", "inc ", num(crit, t.crit)),
                        (" crit ", " c ", num(warn, t.warn)),
                        (" warn", " w", Span::raw("")),
                    ],
                    t.dim,
                    w,
                ),
            ];
            let sources = if failing > 0 {
                Span::styled("stale ", t.crit)
            } else {
                Span::styled(format!("{} ", cx.glyphs.dot()), t.ok)
            };
            let block = Block::default()
                .borders(Borders::ALL)
                .border_set(cx.glyphs.border())
                .border_style(t.border)
                .title(Line::from(vec![
                    Span::styled(format!(" {} ", crate::sanitize::sanitize(c)), t.title),
                    Span::styled(format!("{label} "), style),
                    sources,
                ]));
            f.render_widget(Paragraph::new(lines).block(block), *cell);
        }
    }
}

/// A card line as label/value pieces, each with a short form: fitted to `width` by using the
/// short forms, then by leaving out whole pieces from the end — never cut mid-value.
fn fit_line<'a>(pieces: Vec<(&'a str, &'a str, Span<'a>)>, label: Style, width: usize) -> Line<'a> {
    let len = |short: bool, n: usize| -> usize {
        pieces[..n]
            .iter()
            .map(|(l, sh, v)| if short { sh.width() } else { l.width() } + v.content.width())
            .sum()
    };
    let short = len(false, pieces.len()) > width;
    let mut n = pieces.len();
    while n > 1 && len(short, n) > width {
        n -= 1;
    }
    Line::from(
        pieces
            .into_iter()
            .take(n)
            .flat_map(|(l, sh, v)| [Span::styled(if short { sh } else { l }, label), v])
            .collect::<Vec<_>>(),
    )
}

/// Overview: a card per plane, then every incident, worst first.
pub struct View;

pub const ID: ViewId = ViewId("overview");

impl super::View for View {
    fn id(&self) -> ViewId {
        ID
    }

    fn title(&self) -> &'static str {
        "Overview"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["ov", "home", "incidents"]
    }

    fn tables(&self) -> &'static [&'static dyn TableSource] {
        &[&IncidentsTable]
    }

    fn keys(&self) -> &'static [super::ViewKey] {
        static KEYS: [super::ViewKey; 1] = [super::ViewKey {
            name: "ack",
            help: "acknowledge the selected incident (note, ticket; audited)",
            hint: Some("ack"),
            anywhere: false,
            run: |app, _| app.begin_ack(),
        }];
        &KEYS
    }

    fn draw(&self, f: &mut Frame, area: Rect, app: &mut App) {
        if app.state().is_fleet() {
            // A fleet: a health card per cluster (the focused one alone) above the one list.
            let n = app.state().clusters().iter().filter(|c| !c.is_empty()).count();
            let shown = if app.focus.is_some() { 1 } else { n };
            let per_row = (usize::from(area.width) / 20).clamp(1, shown.max(1));
            let h = (5 * shown.div_ceil(per_row) as u16).min((area.height / 2).max(5) / 5 * 5);
            // Where there is room, the fleet's plane totals above the cards (not under a focus:
            // they are the whole fleet's).
            let planes_h = if area.width >= 100 && area.height >= 36 && app.focus.is_none() { 6 } else { 0 };
            let [planes, cards, list] =
                Layout::vertical([Constraint::Length(planes_h), Constraint::Length(h), Constraint::Min(3)])
                    .areas(area);
            if planes_h > 0 {
                draw_planes(f, planes, &app.cx());
            }
            let focus = app.focus.clone();
            draw_clusters(f, cards, &app.cx(), focus.as_deref());
            table_with_detail(f, list, app, INCIDENTS, "Incidents (worst first)", true);
            return;
        }
        let h = if area.width >= 100 { 6 } else { 10 }.min(area.height / 2);
        let [planes, list] = Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(area);
        draw_planes(f, planes, &app.cx());
        table_with_detail(f, list, app, INCIDENTS, "Incidents (worst first)", true);
    }
}
