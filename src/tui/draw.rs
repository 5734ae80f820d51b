//! Draws a whole frame from the app: header, body (the current view), footer, help overlay.
//! Pure: the same state gives the same frame.

use super::app::{App, Mode, complete};
use super::keymap::Action;
use super::views::{TableId, VIEWS};
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
    match &app.ui.mode {
        Mode::Help => draw_help(f, body, app),
        Mode::Confirm(c) => draw_confirm(f, body, app, c),
        _ => {}
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

/// The confirmation: exactly what will happen, the reason, the ticket, and the typed word.
fn draw_confirm(f: &mut Frame, body: Rect, app: &App, c: &super::app::Confirm) {
    let t = &app.theme;
    let w = body.width.min(90);
    let r = Rect { x: body.x + (body.width - w) / 2, y: body.y, width: w, height: body.height };
    f.render_widget(Clear, r);
    let mut lines: Vec<Line> = Vec::new();
    let plan = c.plan.lines();
    let room = (body.height as usize).saturating_sub(9).max(1);
    for l in plan.iter().take(room.saturating_sub(1)) {
        lines.push(Line::styled(safe(l).into_owned(), t.text));
    }
    if plan.len() > room.saturating_sub(1) {
        lines.push(Line::styled(
            format!("… {} more lines; {}", plan.len() - room + 1, plan.last().cloned().unwrap_or_default()),
            t.dim,
        ));
    }
    lines.push(Line::raw(""));
    let field = |n: usize, label: &str, value: &str| {
        let active = c.field == n;
        Line::from(vec![
            Span::styled(format!("{label:<22}"), if active { t.prompt } else { t.dim }),
            Span::styled(safe(value).into_owned(), t.text),
            Span::styled(if active { "_" } else { "" }, t.prompt),
        ])
    };
    lines.push(field(0, "reason (required):", &c.reason));
    lines.push(field(1, "ticket:", &c.ticket));
    if let Some(word) = &c.plan.confirm_word {
        lines.push(field(2, &format!("type {word:?} to confirm:"), &c.typed));
    }
    if let Some(e) = &c.error {
        lines.push(Line::styled(e.clone(), t.crit));
    }
    lines.push(Line::styled(
        "tab next field · enter run · ^d dry run · esc cancel · recorded in the audit log",
        t.dim,
    ));
    let dry = if c.req.dry_run { "DRY RUN " } else { "" };
    let title = format!(" {dry}{} {} target(s) ", c.req.kind.label(), c.plan.steps.len());
    let b =
        block(app, vec![Span::styled(title, if c.req.kind.destructive() { t.crit } else { t.title })], true);
    f.render_widget(Paragraph::new(lines).block(b).wrap(Wrap { trim: false }), r);
}

fn draw_header(f: &mut Frame, area: Rect, app: &App, wall_now: Epoch) {
    let s = app.state();
    let t = &app.theme;
    let mut left = vec![
        Span::styled("gpuplane ", t.title),
        Span::styled(safe(if s.cluster.is_empty() { "-" } else { &s.cluster }).into_owned(), t.accent),
        Span::raw(" "),
    ];
    if s.is_simulated() {
        left.push(Span::styled(" SIMULATED ", t.badge_sim));
        left.push(Span::raw(" "));
    }
    for src in &s.sources {
        let (text, style) = match (&src.error, src.ok_at) {
            (Some(_), Some(ok)) => (format!("{} stale {}", src.name, dur(wall_now - ok)), t.crit),
            (Some(_), None) => (format!("{} down", src.name), t.crit),
            (None, Some(ok)) if wall_now - ok > 30 => {
                (format!("{} {} ago", src.name, dur(wall_now - ok)), t.warn)
            }
            (None, Some(_)) => (format!("{} {}", src.name, app.glyphs.dot()), t.ok),
            (None, None) => (format!("{} connecting", src.name), t.dim),
        };
        left.push(Span::styled(safe(&text).into_owned(), style));
        left.push(Span::raw(" "));
    }
    if s.sources.is_empty() {
        left.push(Span::styled("no source yet", t.dim));
    }
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
    Block::default()
        .borders(Borders::ALL)
        .border_set(app.glyphs.border())
        .border_style(app.theme.border(focused))
        .title(Line::from(title))
}

fn table_title<'a>(app: &App, name: &str, id: TableId) -> Vec<Span<'a>> {
    let t = &app.theme;
    let st = &app.ui.tables[id];
    let mut v = vec![
        Span::styled(format!(" {name} "), t.title),
        Span::styled(format!("[{}] ", st.rows.len()), t.dim),
    ];
    if !st.filter.is_empty() {
        v.push(Span::styled(format!("</{}> ", safe(&st.filter.raw)), t.prompt));
    }
    v
}

/// A table, with its detail pane beside it (wide) or instead of it (narrow) when open.
pub(crate) fn table_with_detail(
    f: &mut Frame,
    area: Rect,
    app: &mut App,
    id: TableId,
    name: &str,
    focused: bool,
) {
    let detail = app.ui.detail && focused;
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
    let title = table_title(app, name, id);
    let blk = block(app, title, focused && !detail);
    let mut st = std::mem::take(&mut app.ui.tables[id]);
    {
        let cx = app.cx();
        if let Some(a) = table_area {
            table::render(f, a, blk, id.source(), &mut st, &cx, focused);
        }
        if let Some(a) = detail_area {
            let lines = st.selected_key().map(|k| id.source().detail(&cx, k, a.width)).unwrap_or_default();
            let b = block(
                app,
                vec![
                    Span::styled(format!(" {name}: details "), app.theme.title),
                    Span::styled("(esc closes) ", app.theme.dim),
                ],
                true,
            );
            f.render_widget(Paragraph::new(lines).block(b).wrap(Wrap { trim: false }), a);
        }
    }
    app.ui.tables[id] = st;
}

fn draw_body(f: &mut Frame, area: Rect, app: &mut App) {
    let view = app.ui.view.def();
    view.draw(f, area, app);
}

fn draw_footer(f: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let line = match &app.ui.mode {
        Mode::Command(buf) => {
            let (completed, _) = complete(buf);
            let ghost = completed.strip_prefix(buf.as_str()).unwrap_or("").to_string();
            Line::from(vec![
                Span::styled(":", t.prompt),
                Span::styled(buf.clone(), t.text),
                Span::styled(ghost, t.dim),
                Span::styled("_", t.prompt),
            ])
        }
        Mode::Filter(buf) => Line::from(vec![
            Span::styled("/", t.prompt),
            Span::styled(buf.clone(), t.text),
            Span::styled("_", t.prompt),
            Span::styled("  enter keep, esc clear", t.dim),
        ]),
        _ => match &app.ui.message {
            Some((m, err)) => Line::styled(safe(m).into_owned(), if *err { t.crit } else { t.info }),
            None => hints(app),
        },
    };
    f.render_widget(Paragraph::new(line), area);
}

fn hints(app: &App) -> Line<'static> {
    let t = &app.theme;
    let mut list = vec![
        (Action::Help, "help"),
        (Action::Command, "cmd"),
        (Action::Filter, "filter"),
        (Action::Enter, "details"),
    ];
    list.extend(app.ui.view.def().hints().iter().copied());
    if app.ui.view.def().tables().len() > 1 {
        list.push((Action::NextPane, "pane"));
    }
    list.extend([
        (Action::SortNext, "sort"),
        (Action::Pause, if app.ui.paused { "resume" } else { "pause" }),
        (Action::Quit, "quit"),
    ]);
    let mut spans = Vec::new();
    for (a, label) in list {
        if let Some(k) = app.keymap.hint(a) {
            spans.push(Span::styled(k, t.key));
            spans.push(Span::styled(format!(" {label}  "), t.dim));
        }
    }
    Line::from(spans)
}

/// Help generated from the active keymap and the view registry.
pub fn help_lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = vec![Line::styled(format!("keymap: {}", app.keymap.name), t.dim)];
    let mut groups: Vec<(&str, Vec<(Action, String)>)> = Vec::new();
    for (a, keys) in app.keymap.bindings() {
        let (g, _) = a.describe();
        let keys = keys.iter().map(|k| k.label()).collect::<Vec<_>>().join(" ");
        match groups.iter_mut().find(|(n, _)| *n == g) {
            Some((_, v)) => v.push((a, keys)),
            None => groups.push((g, vec![(a, keys)])),
        }
    }
    for (g, mut items) in groups {
        // Views in tab order.
        let place = |a: &Action| a.view().and_then(|v| VIEWS.iter().position(|x| x.id() == v));
        items.sort_by_key(|(a, _)| (place(a), *a));
        out.push(Line::styled(g.to_string(), t.title));
        for (a, keys) in items {
            out.push(Line::from(vec![
                Span::styled(format!("  {keys:<14}"), t.key),
                Span::styled(a.describe().1, t.text),
            ]));
        }
    }
    out.push(Line::styled("commands (:name [filter])", t.title));
    for v in VIEWS {
        let also = if v.aliases().is_empty() {
            String::new()
        } else {
            format!(" (also {})", v.aliases().join(", "))
        };
        out.push(Line::from(vec![
            Span::styled(format!("  :{:<13}", v.id().0), t.key),
            Span::styled(format!("{}{also}", v.title()), t.text),
        ]));
    }
    out.push(Line::from(vec![Span::styled(format!("  :{:<13}", "q"), t.key), Span::styled("quit", t.text)]));
    out.push(Line::from(vec![
        Span::styled(format!("  :{:<13}", "theme NAME"), t.key),
        Span::styled("dark, light, high-contrast, monochrome", t.text),
    ]));
    out.push(Line::from(vec![
        Span::styled(format!("  :{:<13}", "acceptance"), t.key),
        Span::styled("[per-node|pairs|all] NCCL test on the marked nodes (confirm, audited)", t.text),
    ]));
    if !app.user_commands.aliases.is_empty() {
        out.push(Line::styled("aliases (<config>/hotkeys.toml)", t.title));
        for (name, cmd) in &app.user_commands.aliases {
            out.push(Line::from(vec![
                Span::styled(format!("  :{name:<13}"), t.key),
                Span::styled(safe(cmd).into_owned(), t.text),
            ]));
        }
    }
    if !app.user_commands.hotkeys.is_empty() {
        out.push(Line::styled("hotkeys (<config>/hotkeys.toml)", t.title));
        for h in &app.user_commands.hotkeys {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<14}", h.key.label()), t.key),
                Span::styled(safe(&h.description).into_owned(), t.text),
            ]));
        }
    }
    out.push(Line::styled("filters: text, key=value (labels too), key==exact, !negate", t.dim));
    out
}

fn draw_help(f: &mut Frame, area: Rect, app: &App) {
    let w = area.width.min(72);
    let h = area.height;
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y, width: w, height: h };
    f.render_widget(Clear, r);
    let b = block(
        app,
        vec![
            Span::styled(" help ", app.theme.title),
            Span::styled("(j/k scroll, any key closes) ", app.theme.dim),
        ],
        true,
    );
    f.render_widget(Paragraph::new(help_lines(app)).block(b).scroll((app.ui.help_scroll, 0)), r);
}
