//! Draws a whole frame from the app: header, body (the current view), footer, help overlay.
//! Pure: the same state gives the same frame.

use super::app::{App, Mode, complete};
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
    if app.ui.mode == Mode::Help {
        // The rows the help has (less its border and search line), and the scroll clamped to
        // them: it never runs into blank space.
        let lines = help_lines(app);
        let searching = app.ui.help_searching || !app.ui.help_query.is_empty();
        let rows = body.height.saturating_sub(2 + u16::from(searching)).max(1);
        app.ui.shown.help_rows = rows;
        app.ui.help_scroll = app.ui.help_scroll.min((lines.len() as u16).saturating_sub(rows));
        draw_help(f, body, app, lines);
    }
    if let Mode::Confirm(_) = &app.ui.mode {
        draw_confirm(f, body, app);
    }
    if let Mode::Instead(d) = &app.ui.mode {
        super::instead::draw(f, body, app, d);
    }
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

/// The confirmation: exactly what will happen, the reason, the ticket, and the typed word. The
/// summary (and what was refused, and a note when the marks are not the highlighted row) stay
/// on top; the plan's lines scroll between them and the fields.
fn draw_confirm(f: &mut Frame, body: Rect, app: &mut App) {
    let Mode::Confirm(c) = &app.ui.mode else { return };
    let t = &app.theme;
    let w = body.width.min(90);
    let r = Rect { x: body.x + (body.width - w) / 2, y: body.y, width: w, height: body.height };
    f.render_widget(Clear, r);
    let dry = if c.req.dry_run { "DRY RUN " } else { "" };
    let title = format!(" {dry}{} {} target(s) ", c.req.kind.label(), c.plan.steps.len());
    let b =
        block(app, vec![Span::styled(title, if c.req.kind.destructive() { t.crit } else { t.title })], true);
    let inner = b.inner(r);
    f.render_widget(b, r);
    let mut top: Vec<Line> = Vec::new();
    if let Some(l) = c.plan.refused_line() {
        top.push(Line::styled(safe(&l).into_owned(), t.warn));
    }
    // Past a blast-radius limit under break-glass: every limit, in the alarm colour.
    for l in c.plan.limit_lines() {
        top.push(Line::styled(safe(&l).into_owned(), t.crit));
    }
    if let Some(n) = &c.note {
        top.push(Line::styled(safe(n).into_owned(), t.info));
    }
    if !c.hidden.is_empty() {
        top.push(Line::styled(
            format!("{} of the marked targets are hidden by the filter", c.hidden.len()),
            t.warn,
        ));
    }
    top.push(Line::styled(safe(&c.plan.summary()).into_owned(), t.text));
    let field = |n: usize, label: &str, value: &str| {
        let active = c.field == n;
        Line::from(vec![
            Span::styled(format!("{label:<22}"), if active { t.prompt } else { t.dim }),
            Span::styled(safe(value).into_owned(), t.text),
            Span::styled(if active { "_" } else { "" }, t.prompt),
        ])
    };
    let mut bottom =
        vec![Line::raw(""), field(0, "reason (required):", &c.reason), field(1, "ticket:", &c.ticket)];
    if let Some(word) = &c.plan.confirm_word {
        bottom.push(field(2, &format!("type {word:?} to confirm:"), &c.typed));
    }
    if let Some(e) = &c.error {
        bottom.push(Line::styled(e.clone(), t.crit));
    }
    if !c.plan.notes.is_empty() {
        bottom.push(Line::styled(
            format!("schedulers of paired hosts: {} (^s: both, slurm, kube)", c.pick.label()),
            t.info,
        ));
    }
    bottom.push(Line::styled("tab field · enter run · ^d dry run · pgdn plan · esc cancel", t.dim));
    let height = |ls: &[Line]| -> u16 {
        Paragraph::new(ls.to_vec()).wrap(Wrap { trim: false }).line_count(inner.width) as u16
    };
    let (top_h, bottom_h) = (height(&top), height(&bottom));
    // The plan wraps (nothing cut mid-value on a narrow terminal) and scrolls by rows.
    let plan: Vec<Line> = super::app::confirm_body(c)
        .iter()
        .map(|l| {
            let st = if l.trim_start().starts_with("[hidden by filter]") { t.warn } else { t.text };
            Line::styled(safe(l).into_owned(), st)
        })
        .collect();
    let plan = Paragraph::new(plan).wrap(Wrap { trim: false });
    let total = plan.line_count(inner.width) as u16;
    // The plan's rows: what is left, less one for the "more" line when it does not all fit.
    let room = inner.height.saturating_sub(top_h + bottom_h);
    let fits = total <= room;
    let rows = if fits { total } else { room.saturating_sub(1) };
    let first = (c.scroll.min(usize::from(u16::MAX)) as u16).min(total.saturating_sub(rows));
    let more = (!fits && room > 0).then(|| {
        let below = total.saturating_sub(first + rows);
        Line::styled(
            format!("rows {}-{} of {total}; {below} more below (pgdn/pgup scroll)", first + 1, first + rows),
            t.dim,
        )
    });
    let [a, m, more_area, z] = Layout::vertical([
        Constraint::Length(top_h),
        Constraint::Length(rows),
        Constraint::Length(u16::from(more.is_some())),
        Constraint::Min(0),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(top).wrap(Wrap { trim: false }), a);
    f.render_widget(plan.scroll((first, 0)), m);
    if let Some(l) = more {
        f.render_widget(Paragraph::new(l), more_area);
    }
    f.render_widget(Paragraph::new(bottom).wrap(Wrap { trim: false }), z);
    app.ui.shown.plan_rows = rows;
    app.ui.shown.plan_total = total;
    let first = usize::from(first);
    if let Mode::Confirm(c) = &mut app.ui.mode {
        c.scroll = first;
    }
}

fn draw_header(f: &mut Frame, area: Rect, app: &App, wall_now: Epoch) {
    let s = app.state();
    let t = &app.theme;
    let mut right = vec![Span::styled(format!("user {} ", safe(&app.user)), t.dim)];
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
    if app.readonly {
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
    let line = match &app.ui.mode {
        Mode::Command(buf) => {
            let (completed, _) = complete(buf);
            let ghost = completed.strip_prefix(buf.as_str()).unwrap_or("").to_string();
            let mut spans = vec![
                Span::styled(":", t.prompt),
                Span::styled(buf.clone(), t.text),
                Span::styled(ghost, t.dim),
                Span::styled("_", t.prompt),
            ];
            // An ambiguous Tab: the candidates, beside the line.
            if !app.ui.completions.is_empty() {
                spans.push(Span::styled("   ", t.dim));
                spans.push(Span::styled(app.ui.completions.join("  "), t.info));
            }
            // What a write command would act on (`:silence` names the alert's matchers).
            if let Some(h) = app.command_hint(buf) {
                spans.push(Span::styled(format!("   {}", safe(&h)), t.dim));
            }
            Line::from(spans)
        }
        Mode::Filter(buf) => {
            let mut v = vec![
                Span::styled("/", t.prompt),
                Span::styled(buf.clone(), t.text),
                Span::styled("_", t.prompt),
            ];
            match app.focused_table().and_then(|id| app.ui.tables[id].filter_error()) {
                Some(e) => v.push(Span::styled(format!("  {}", safe(e)), t.crit)),
                None => v.push(Span::styled("  enter keep, esc clear", t.dim)),
            }
            Line::from(v)
        }
        _ => match &app.ui.message {
            Some((m, err)) => Line::styled(safe(m).into_owned(), if *err { t.crit } else { t.info }),
            None => hints(app, area.width),
        },
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
    let marks = app.marks.nodes.len() + app.marks.jobs.len();
    if !app.readonly && app.ui.mode == Mode::Normal {
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
    super::help::lines(app)
}

/// The help: paged, searched, clamped (the rows it has were set by [`draw`]).
fn draw_help(f: &mut Frame, area: Rect, app: &App, lines: Vec<Line<'static>>) {
    let t = &app.theme;
    let w = area.width.min(72);
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y, width: w, height: area.height };
    f.render_widget(Clear, r);
    let rows = app.ui.shown.help_rows as usize;
    let first = app.ui.help_scroll as usize;
    let name = if app.ui.doctor.is_some() { " doctor " } else { " help " };
    let mut title = vec![Span::styled(name, t.title)];
    if lines.len() > rows {
        title.push(Span::styled(
            format!("{}-{} of {} ", first + 1, (first + rows).min(lines.len()), lines.len()),
            t.dim,
        ));
    }
    title.push(Span::styled("(pgdn/pgup page · / search · q esc ? close) ", t.dim));
    let b = block(app, title, true);
    let inner = b.inner(r);
    f.render_widget(b, r);
    let searching = app.ui.help_searching || !app.ui.help_query.is_empty();
    let [text, search] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(u16::from(searching))]).areas(inner);
    f.render_widget(Paragraph::new(lines).scroll((app.ui.help_scroll, 0)), text);
    if searching {
        let mut spans =
            vec![Span::styled("/", t.prompt), Span::styled(safe(&app.ui.help_query).into_owned(), t.text)];
        if app.ui.help_searching {
            spans.push(Span::styled("_", t.prompt));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), search);
    }
}
