//! Draws a whole frame from the app: header, body (the current view), footer, help overlay.
//! Pure: the same state gives the same frame.

use super::app::App;
use super::dialogs::Place;
use super::keymap::Action;
use super::views::{TableId, VIEWS, ViewCx};
use super::widgets::Symbols;
use super::widgets::table;
use super::widgets::{dur, safe};
use crate::model::Epoch;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

/// Draws the console. `wall_now` is the real clock, for the freshness of real sources.
pub fn draw(f: &mut Frame, app: &mut App, wall_now: Epoch) {
    app.prepare();
    let area = f.area();
    let [header, tabs, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(f, header, app, wall_now);
    draw_tabs(f, tabs, app);
    draw_body(f, body, app);
    draw_footer(f, footer, app);
    if !app.op_panel.is_empty() {
        draw_op_panel(f, body, app);
    }
    draw_dialog(f, body, footer, app);
    if !app.glyphs.unicode {
        super::widgets::asciify(f.buffer_mut());
    }
}

/// Results of the last action, at the bottom of the body until Esc.
fn draw_op_panel(f: &mut Frame, body: Rect, app: &App) {
    let t = &app.theme;
    let h = (app.op_panel.len() as u16 + 2).min(body.height / 2).max(3);
    let r = Rect { x: body.x, y: body.y + body.height - h, width: body.width, height: h };
    let skip = app.op_panel.len().saturating_sub(h as usize - 2);
    let lines: Vec<Line> = app
        .op_panel
        .iter()
        .skip(skip)
        .map(|(l, bad)| Line::styled(safe(l).into_owned(), if *bad { t.crit } else { t.ok }))
        .collect();
    f.render_widget(Clear, r);
    let b =
        block(app, vec![Span::styled(" last action ", t.title), Span::styled("(esc closes) ", t.dim)], true);
    f.render_widget(Paragraph::new(lines).block(b), r);
}

/// The open dialog, over the body or in the footer; what it showed handed back to it.
fn draw_dialog(f: &mut Frame, body: Rect, footer: Rect, app: &mut App) {
    let Some(d) = app.ui.mode.dialog() else { return };
    let area = if d.place() == Place::Footer { footer } else { body };
    let drawn = d.draw(f, area, &app.dialog_cx());
    if let Some(d) = app.ui.mode.dialog_mut() {
        d.drawn(drawn);
    }
}

fn draw_header(f: &mut Frame, area: Rect, app: &App, wall_now: Epoch) {
    let s = app.state();
    let t = &app.theme;
    // A replay acts as nobody: its badge takes the room the user's name had.
    let mut right = if app.replay.is_some() {
        Vec::new()
    } else {
        vec![Span::styled(format!("user {} ", safe(&app.user)), t.dim)]
    };
    // Read-only wins: break-glass cannot lift it, so the header never shows both.
    if let Some(b) = app.break_glass.as_ref().filter(|_| !app.readonly) {
        let left_s = (b.until - app.wall_now).max(0);
        right.insert(
            0,
            Span::styled(
                format!(" BREAK-GLASS {}:{:02} {} ", left_s / 60, left_s % 60, safe(&b.ticket)),
                t.badge_paused,
            ),
        );
        right.insert(1, Span::raw(" "));
    }
    if let Some(r) = &app.replay {
        // A recording: the replayed instant, the speed, playing or not (and nothing can be sent).
        right.insert(0, Span::styled(format!(" {} ", r.badge(area.width >= 100)), t.badge_paused));
        right.insert(1, Span::raw(" "));
    } else if app.readonly {
        right.insert(0, Span::styled(" READ-ONLY ", t.badge_sim));
        right.insert(1, Span::raw(" "));
    }
    if app.ui.paused {
        right.push(Span::styled(" PAUSED ", t.badge_paused));
    }
    let fleet = s.is_fleet();
    let title = if let Some(f) = app.focus.as_deref().filter(|_| fleet) {
        // `:cluster NAME`: the one in focus, and how many the fleet has.
        format!("{} (1 of {})", safe(f), s.fleet_size())
    } else if fleet {
        format!("fleet of {}", s.fleet_size())
    } else {
        safe(if s.cluster.is_empty() { "-" } else { &s.cluster }).into_owned()
    };
    let mut left = vec![Span::styled("gpuplane ", t.title), Span::styled(title, t.accent), Span::raw(" ")];
    if s.is_simulated() {
        left.push(Span::styled(" SIMULATED ", t.badge_sim));
        left.push(Span::raw(" "));
    }
    // A source's freshness: `slurm ●`, `prom 2m ago`, `kube stale 2m`; and whether it is live.
    let fresh = |src: &crate::model::protocol::SourceStatus| match (&src.error, src.ok_at) {
        (Some(_), Some(ok)) => (format!("{} stale {}", src.name, dur(wall_now - ok)), t.crit, false),
        (Some(_), None) => (format!("{} down", src.name), t.crit, false),
        (None, Some(ok)) if wall_now - ok > 30 => {
            (format!("{} {} ago", src.name, dur(wall_now - ok)), t.warn, false)
        }
        (None, Some(_)) => (format!("{} {}", src.name, app.glyphs.dot()), t.ok, true),
        (None, None) => (format!("{} connecting", src.name), t.dim, false),
    };
    if fleet {
        // Each cluster with its sources (`prod-a slurm ● prom ●  prod-b kube stale 2m`). When
        // that is too wide: clusters with a source not live first, a live cluster as its name
        // and a dot; then the live ones only counted (`+2 ●`).
        let state = |c: &crate::model::Text| -> Vec<(String, ratatui::style::Style, bool)> {
            s.sources.iter().filter(|x| x.cluster == *c).map(fresh).collect()
        };
        let level = |short: u8| {
            let mut v = Vec::new();
            let mut order: Vec<(&crate::model::Text, Vec<_>)> =
                s.clusters().iter().map(|c| (c, state(c))).collect();
            if short > 0 {
                order.sort_by_key(|(_, srcs)| srcs.iter().all(|x| x.2));
            }
            let live = order.iter().filter(|(_, srcs)| srcs.iter().all(|x| x.2)).count();
            for (c, srcs) in order {
                let all_live = srcs.iter().all(|x| x.2);
                if short > 1 && all_live {
                    continue;
                }
                v.push(Span::styled(safe(c).into_owned(), t.accent));
                v.push(Span::raw(" "));
                if short > 0 && all_live {
                    v.push(Span::styled(app.glyphs.dot().to_string(), t.ok));
                    v.push(Span::raw(" "));
                } else {
                    for (text, style, ok) in srcs {
                        if !(short > 0 && ok) {
                            v.push(Span::styled(safe(&text).into_owned(), style));
                            v.push(Span::raw(" "));
                        }
                    }
                }
                v.push(Span::raw(" "));
            }
            if short > 1 && live > 0 {
                v.push(Span::styled(format!("+{live} {}", app.glyphs.dot()), t.ok));
            }
            v
        };
        let width = |v: &[Span]| v.iter().map(|x| x.width()).sum::<usize>();
        // Narrowest: how many clusters have a source not live, and how many are live.
        let counted = || {
            let (mut bad, mut good) = (0, 0);
            for c in s.clusters() {
                if state(c).iter().all(|x| x.2) { good += 1 } else { bad += 1 }
            }
            let mut v = Vec::new();
            if bad > 0 {
                v.push(Span::styled(format!("{bad} stale "), t.crit));
            }
            v.push(Span::styled(format!("{good} {}", app.glyphs.dot()), t.ok));
            v
        };
        let levels = [level(0), level(1), level(2)];
        let room = usize::from(area.width);
        let pick = |used: usize| levels.iter().find(|v| width(v) + used <= room).cloned();
        let mut chosen = pick(width(&left) + width(&right));
        if chosen.is_none() {
            // Narrow (60 columns): the simulated badge short and the user left out, so that
            // the clusters' freshness keeps its names; only then counted.
            for x in left.iter_mut().filter(|x| x.content == " SIMULATED ") {
                *x = Span::styled(" SIM ", x.style);
            }
            right.retain(|x| !x.content.starts_with("user "));
            chosen = pick(width(&left) + width(&right));
        }
        left.extend(chosen.unwrap_or_else(counted));
    } else {
        for src in &s.sources {
            let (text, style, _) = fresh(src);
            left.push(Span::styled(safe(&text).into_owned(), style));
            left.push(Span::raw(" "));
        }
    }
    if s.sources.is_empty() {
        left.push(Span::styled("no source yet", t.dim));
    }
    let rw: usize = right.iter().map(|s| s.width()).sum();
    let [l, r] = Layout::horizontal([Constraint::Min(10), Constraint::Length(rw as u16)]).areas(area);
    f.render_widget(Paragraph::new(Line::from(left)), l);
    f.render_widget(Paragraph::new(Line::from(right)), r);
}

fn draw_tabs(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let labels = tab_labels(app, area.width as usize);
    let mut spans = Vec::new();
    for (label, current) in labels {
        spans.push(Span::styled(label, if current { t.selected } else { t.dim }));
        spans.push(Span::raw(" "));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The tab row's labels (and which is the current view) for `width` columns, from the registry:
/// every title with its key when that fits, else every title, else the current view's title
/// and the others' first three letters, else a window of those around the current view with
/// `‹`/`›` saying that more lies beyond.
pub fn tab_labels(app: &App, width: usize) -> Vec<(String, bool)> {
    use unicode_width::UnicodeWidthStr;
    let fits = |l: &[(String, bool)]| l.iter().map(|(s, _)| s.width() + 1).sum::<usize>() <= width + 1;
    let current = |v: &&dyn super::views::View| v.id() == app.ui.view;
    let numbered: Vec<(String, bool)> = VIEWS
        .iter()
        .map(|v| {
            let key = app.keymap.hint(Action::View(v.id()));
            (key.map_or_else(|| v.title().to_string(), |k| format!("{k}:{}", v.title())), current(v))
        })
        .collect();
    if fits(&numbered) {
        return numbered;
    }
    let titles: Vec<(String, bool)> = VIEWS.iter().map(|v| (v.title().to_string(), current(v))).collect();
    if fits(&titles) {
        return titles;
    }
    let short: Vec<(String, bool)> = VIEWS
        .iter()
        .map(|v| {
            let t = if current(v) { v.title().to_string() } else { v.title().chars().take(3).collect() };
            (t, current(v))
        })
        .collect();
    if fits(&short) {
        return short;
    }
    // A window around the current view.
    let at = short.iter().position(|(_, c)| *c).unwrap_or(0);
    let (mut lo, mut hi) = (at, at + 1);
    let used = |lo: usize, hi: usize| -> usize {
        short[lo..hi].iter().map(|(s, _)| s.width() + 1).sum::<usize>() + 4
    };
    loop {
        let grew_right = hi < short.len() && used(lo, hi + 1) <= width + 1;
        if grew_right {
            hi += 1;
        }
        let grew_left = lo > 0 && used(lo - 1, hi) <= width + 1;
        if grew_left {
            lo -= 1;
        }
        if !grew_left && !grew_right {
            break;
        }
    }
    let mut out = Vec::new();
    if lo > 0 {
        out.push(("‹".to_string(), false));
    }
    out.extend(short[lo..hi].iter().cloned());
    if hi < short.len() {
        out.push(("›".to_string(), false));
    }
    out
}

pub(crate) fn block<'a>(app: &App, title: Vec<Span<'a>>, focused: bool) -> Block<'a> {
    bordered(&app.theme, app.glyphs, title, focused)
}

/// A bordered block in the theme and glyph set in force, its border marking focus.
pub(crate) fn bordered<'a>(
    theme: &super::theme::Theme,
    glyphs: super::widgets::Glyphs,
    title: Vec<Span<'a>>,
    focused: bool,
) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(glyphs.border())
        .border_style(theme.border(focused))
        .title(Line::from(title))
}

fn table_title<'a>(cx: &ViewCx<'_>, name: &str, id: TableId) -> Vec<Span<'a>> {
    let t = cx.dx.theme;
    let st = &cx.tables[id];
    let mut v = vec![Span::styled(format!(" {name} "), t.title)];
    if st.filter.is_empty() {
        v.push(Span::styled(format!("[{}] ", st.rows.len()), t.dim));
    } else {
        v.push(Span::styled(format!("[filtered: {} of {}] ", st.rows.len(), st.total()), t.dim));
        v.push(Span::styled(format!("</{}> ", safe(&st.filter.raw)), t.prompt));
    }
    let (marked, hidden) = super::app::marks_in(cx.tables, &cx.dx, id);
    if marked > 0 {
        let hidden = if hidden > 0 { format!(", {hidden} hidden by the filter") } else { String::new() };
        v.push(Span::styled(format!("{marked} marked{hidden} "), t.warn));
    }
    v
}

/// A table, with its detail pane beside it (wide) or instead of it (narrow) when open.
pub(crate) fn table_with_detail(
    f: &mut Frame,
    area: Rect,
    cx: &mut ViewCx<'_>,
    id: TableId,
    name: &str,
    focused: bool,
) {
    let detail = cx.detail && focused;
    let wide = area.width >= 120;
    let (table_area, detail_area) = match (detail, wide) {
        (false, _) => (Some(area), None),
        (true, true) => {
            let [a, b] =
                Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
            (Some(a), Some(b))
        }
        (true, false) => (None, Some(area)),
    };
    let title = table_title(cx, name, id);
    let (theme, glyphs) = (cx.dx.theme, cx.dx.glyphs);
    let blk = bordered(theme, glyphs, title, focused && !detail);
    let scroll = *cx.detail_scroll;
    let st = &mut cx.tables[id];
    let mut detail_shown = None;
    {
        let cx = &cx.dx;
        if let Some(a) = table_area {
            table::render(f, a, blk, id.source(), st, cx, focused);
        }
        if let Some(a) = detail_area {
            let lines = st.selected_key().map(|k| id.source().detail(cx, k, a.width)).unwrap_or_default();
            let lines = super::widgets::lines(cx.theme, lines);
            // The pane scrolls (it has the movement keys while open), clamped to its text.
            let p = Paragraph::new(lines).wrap(Wrap { trim: false });
            let total = p.line_count(a.width.saturating_sub(2)) as u16;
            let rows = a.height.saturating_sub(2);
            let first = scroll.min(total.saturating_sub(rows));
            let mut title = vec![Span::styled(format!(" {name}: details "), theme.title)];
            if total > rows {
                let last = (first + rows).min(total);
                let more = if last < total { ", pgdn more" } else { "" };
                title.push(Span::styled(format!("{}-{last} of {total}{more} ", first + 1), theme.dim));
            }
            title.push(Span::styled("(esc closes) ", theme.dim));
            let b = bordered(theme, glyphs, title, true);
            f.render_widget(p.block(b).scroll((first, 0)), a);
            detail_shown = Some((rows, total, first));
        }
    }
    if let Some((rows, total, first)) = detail_shown {
        cx.shown.detail_rows = rows;
        cx.shown.detail_lines = total;
        *cx.detail_scroll = first;
    }
}

fn draw_body(f: &mut Frame, area: Rect, app: &mut App) {
    let view = app.ui.view.def();
    view.draw(f, area, &mut app.view_cx());
}

fn draw_footer(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    if app.ui.mode.dialog().is_some_and(|d| d.place() == Place::Footer) {
        // The prompt line draws there itself.
        return;
    }
    let line = match &app.ui.message {
        Some((m, err)) => Line::styled(safe(m).into_owned(), if *err { t.crit } else { t.info }),
        None => hints(app, area.width),
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The footer's keys: the general ones, and the actions the selected row takes (a node's
/// drain, cordon and acceptance; a job's cancel; marks) — as many as fit in `width`, the least
/// needed dropped first.
pub fn hints(app: &App, width: u16) -> Line<'static> {
    use unicode_width::UnicodeWidthStr;
    let t = &app.theme;
    // (action, label, rank: lower stays longer)
    let mut list: Vec<(Action, String, u8)> = vec![
        (Action::Help, "help".into(), 0),
        (Action::Command, "cmd".into(), 1),
        (Action::Filter, "filter".into(), 2),
    ];
    if app.detail_has_focus() {
        list.push((Action::PageDown, "scroll".into(), 3));
        list.push((Action::Back, "back".into(), 1));
    } else {
        list.push((Action::Enter, "details".into(), 4));
    }
    if app.replay.is_some() {
        // A recording's time keys, before anything else the row could take.
        list.push((Action::Pause, "play".into(), 1));
        list.push((Action::ReplayForward, "step".into(), 2));
        list.push((Action::ReplayBack, "back".into(), 3));
        list.push((Action::ReplayNext, "next incident".into(), 3));
    }
    let marks = app.marks.nodes.len() + app.marks.jobs.len();
    if !app.readonly && app.ui.mode.is_normal() {
        let on = app.selected_obj();
        let job = matches!(on, Some(crate::model::ObjKey::Job(_)));
        let node = !job && on.and_then(|o| o.node()).is_some();
        if node {
            list.push((Action::Drain, "drain".into(), 2));
            list.push((Action::Cordon, "cordon".into(), 3));
            list.push((Action::Acceptance, "acceptance".into(), 4));
        }
        if job {
            list.push((Action::CancelJob, "cancel".into(), 2));
        }
        if node || job {
            list.push((Action::Mark, "mark".into(), 4));
        }
    }
    if marks > 0 {
        list.push((Action::ClearMarks, format!("unmark {marks}"), 2));
    }
    list.extend(
        app.ui
            .view
            .def()
            .keys()
            .iter()
            .filter(|k| app.ui.view.def().offers(app.state(), k.name))
            .filter_map(|k| Some((Action::Local(k.name), k.hint?.to_string(), 3))),
    );
    if app.ui.view.def().tables().len() > 1 {
        list.push((Action::NextPane, "pane".into(), 3));
    }
    list.extend([
        (Action::SortNext, "sort".into(), 6),
        (Action::Pause, (if app.ui.paused { "resume" } else { "pause" }).into(), 6),
        (Action::Quit, "quit".into(), 1),
    ]);
    let mut items: Vec<(String, String, u8)> =
        list.into_iter().filter_map(|(a, label, rank)| Some((app.keymap.hint(a)?, label, rank))).collect();
    let wide = |items: &[(String, String, u8)]| -> usize {
        items.iter().map(|(k, l, _)| k.width() + 1 + l.width() + 2).sum::<usize>()
    };
    while wide(&items) > usize::from(width) + 2 {
        let Some(worst) = items.iter().enumerate().max_by_key(|(i, (_, _, r))| (*r, *i)).map(|(i, _)| i)
        else {
            break;
        };
        if items[worst].2 == 0 {
            break;
        }
        items.remove(worst);
    }
    let mut spans = Vec::new();
    for (k, label, _) in items {
        spans.push(Span::styled(k, t.key));
        spans.push(Span::styled(format!(" {label}  "), t.dim));
    }
    Line::from(spans)
}

/// The help as shown (generated from the active keymap and the registry, searched with the
/// current query): see [`super::help`].
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let cx = app.dialog_cx();
    match app.ui.mode.help() {
        Some(h) => h.lines(&cx),
        None => super::dialogs::Help::new().lines(&cx),
    }
}
