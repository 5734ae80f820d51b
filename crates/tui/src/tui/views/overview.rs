//! Overview: the health of each plane at a glance and the current incidents, worst first.

pub use crate::tables::overview::*;

use super::super::widgets::Symbols;
use super::super::widgets::table::Dx;
use super::super::widgets::table::TableSource;
use super::super::widgets::{dur, money, opt};
use super::ViewId;
use crate::model::ObjKey;
use crate::state::{Lifecycle, Severity};
use crate::tui::draw::table_with_detail;
use crate::tui::keymap::Action;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use unicode_width::UnicodeWidthStr;

/// The four plane summaries above the incident list.
pub fn draw_planes(f: &mut Frame, area: Rect, cx: &Dx<'_>) {
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
pub fn draw_clusters(f: &mut Frame, area: Rect, cx: &Dx<'_>, focus: Option<&str>) {
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
            run: |_| super::Outcome::Begin(super::Begin::Ack),
        }];
        &KEYS
    }

    fn draw(&self, f: &mut Frame, area: Rect, cx: &mut super::ViewCx<'_>) {
        if cx.dx.s.is_fleet() {
            // A fleet: a health card per cluster (the focused one alone) above the one list.
            let n = cx.dx.s.clusters().iter().filter(|c| !c.is_empty()).count();
            let shown = if cx.cluster.is_some() { 1 } else { n };
            let per_row = (usize::from(area.width) / 20).clamp(1, shown.max(1));
            let h = (5 * shown.div_ceil(per_row) as u16).min((area.height / 2).max(5) / 5 * 5);
            // Where there is room, the fleet's plane totals above the cards (not under a focus:
            // they are the whole fleet's).
            let planes_h = if area.width >= 100 && area.height >= 36 && cx.cluster.is_none() { 6 } else { 0 };
            let [planes, cards, list] =
                Layout::vertical([Constraint::Length(planes_h), Constraint::Length(h), Constraint::Min(3)])
                    .areas(area);
            if planes_h > 0 {
                draw_planes(f, planes, &cx.dx);
            }
            draw_clusters(f, cards, &cx.dx, cx.cluster);
            table_with_detail(f, list, cx, INCIDENTS, "Incidents (worst first)", true);
            return;
        }
        let h = if area.width >= 100 { 6 } else { 10 }.min(area.height / 2);
        let [planes, list] = Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(area);
        draw_planes(f, planes, &cx.dx);
        table_with_detail(f, list, cx, INCIDENTS, "Incidents (worst first)", true);
    }

    fn on_action(&self, a: Action, k: &mut super::KeyCx<'_>) -> Option<super::Outcome> {
        use super::Outcome;
        // From an incident's detail, Enter goes to its job, else its node.
        if a != Action::Enter || !k.detail {
            return None;
        }
        // The incident the operator chose, by what it is, not where it sorted.
        let Some(ObjKey::Incident(cluster, subject, signal)) = k.tables[INCIDENTS].selected_id().cloned()
        else {
            return Some(Outcome::Done);
        };
        let s = k.cx.s;
        let Some(inc) =
            s.incidents.iter().find(|i| i.cluster == cluster && i.subject == subject && i.signal == signal)
        else {
            return Some(Outcome::Say(format!("{subject}: this incident has cleared"), false));
        };
        // In its own cluster (a fleet's incidents name theirs).
        let job = inc.job.filter(|&id| s.job_in(&inc.cluster, id).is_some());
        let node = inc.node.as_ref().filter(|n| s.node_in(&inc.cluster, n).is_some());
        let cluster = s.cluster_of(&inc.cluster).clone();
        Some(match (job, node) {
            (Some(id), _) => {
                Outcome::Show(super::jobs::TABLE, ObjKey::Job(crate::model::JobKey { cluster, id }))
            }
            (None, Some(name)) => Outcome::Show(
                super::nodes::TABLE,
                ObjKey::Node(crate::model::NodeKey { cluster, name: name.clone() }),
            ),
            (None, None) => Outcome::Done,
        })
    }
}
