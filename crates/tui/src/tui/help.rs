//! The `?` help's entries: generated from the active keymap, the view registry, the built-in
//! commands, the user's aliases and hotkeys and the plugins, so it lists every key and every `:`
//! command there is. The pager that shows and searches them is a dialog
//! ([`super::dialogs::Help`]).

use super::app::{App, COMMANDS};
use super::keymap::Action;
use super::views::VIEWS;
use super::widgets::safe;

/// One line of help.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Heading(String),
    /// Keys (or a command) and what they do.
    Item(String, String),
    Note(String),
}

impl Entry {
    fn text(&self) -> String {
        match self {
            Entry::Heading(h) | Entry::Note(h) => h.clone(),
            Entry::Item(k, t) => format!("{k} {t}"),
        }
    }
}

/// The first key the keymap binds to `a`, or `-` when none.
fn key(app: &App, a: Action) -> String {
    app.keymap.hint(a).unwrap_or_else(|| "-".into())
}

/// Every help entry, unfiltered.
pub fn entries(app: &App) -> Vec<Entry> {
    let item = |k: String, t: &str| Entry::Item(k, t.to_string());
    let mut out = vec![Entry::Note(format!("keymap: {}", app.keymap.name))];
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
        items.sort_by_key(|(a, _)| a.rank());
        out.push(Entry::Heading(g.to_string()));
        for (a, keys) in items {
            out.push(item(keys, a.describe().1));
        }
    }
    let (up, down, pgup, pgdn, top, bottom, back) = (
        key(app, Action::Up),
        key(app, Action::Down),
        key(app, Action::PageUp),
        key(app, Action::PageDown),
        key(app, Action::Top),
        key(app, Action::Bottom),
        key(app, Action::Back),
    );
    out.push(Entry::Heading("marks".into()));
    out.push(item(
        format!("{} / {}", key(app, Action::Mark), key(app, Action::ClearMarks)),
        "mark and move down / clear all marks",
    ));
    out.push(Entry::Note("  a filter hides marked rows, it does not unmark them: the".into()));
    out.push(Entry::Note("  confirmation flags them \"hidden by filter\"".into()));
    out.push(Entry::Heading("in the detail pane (it has the keys while open)".into()));
    out.push(item(format!("{up} {down}"), "scroll a line"));
    out.push(item(format!("{pgup} {pgdn}"), "scroll a page"));
    out.push(item(format!("{top} {bottom}"), "first / last line"));
    out.push(item(back.clone(), "close it: back to the table and its rows"));
    out.push(Entry::Heading("in the confirmation dialog".into()));
    out.push(item("tab S-tab".into(), "next / previous field (reason, ticket, typed word)"));
    out.push(item("pgup pgdn".into(), "scroll the plan (home / end: its ends)"));
    out.push(item("enter".into(), "run (on the targets that were not refused)"));
    out.push(item("^d".into(), "dry run: audit the plan, execute nothing"));
    out.push(item("^s".into(), "a host in two schedulers: act in both, Slurm only, Kubernetes only"));
    out.push(item("esc".into(), "cancel: nothing is done"));
    out.push(Entry::Heading("in this help".into()));
    out.push(item(format!("{up} {down} {pgup} {pgdn}"), "scroll"));
    out.push(item(format!("/ {}", key(app, Action::Filter)), "search (enter keeps it, esc drops it)"));
    out.push(item(format!("q {back} ?"), "close"));
    // The filter language, and the keys of the open view's tables.
    out.push(Entry::Heading("filter (/, :view FILTER, get --filter)".into()));
    for (k, t) in [
        ("text", "any column's text (and a job's whole node list)"),
        ("key=value", "contains; state codes and numbers equal (st=PD, gpu=3)"),
        ("key==value", "exactly"),
        ("key!=v !term", "not"),
        ("key>N >= < <=", "numbers with units as shown (temp>85 mem>70% wait>2h)"),
        ("key~regex", "a regular expression, any case"),
    ] {
        out.push(item(k.into(), t));
    }
    for src in app.ui.view.def().tables() {
        out.push(Entry::Item(
            format!("{} keys", src.id().0),
            crate::tables::filter::help_keys(src.columns(), src.fields()),
        ));
    }
    let terms = app.ui.view.def().help();
    if !terms.is_empty() {
        out.push(Entry::Heading(format!("what the {} view's words mean", app.ui.view.def().title())));
        for (k, t) in terms {
            out.push(item((*k).to_string(), t));
        }
    }
    out.push(Entry::Heading("commands (:name [filter])".into()));
    for v in VIEWS {
        let also = if v.aliases().is_empty() {
            String::new()
        } else {
            format!(" (also {})", v.aliases().join(", "))
        };
        out.push(Entry::Item(format!(":{}", v.id().0), format!("{}{also}", v.title())));
    }
    for super::app::Command { names, args, help: what, .. } in COMMANDS.iter() {
        let head = names.first().copied().unwrap_or_default();
        let also = match names.get(1..) {
            Some(rest) if !rest.is_empty() => format!(" (also {})", rest.join(", ")),
            _ => String::new(),
        };
        let args = if args.is_empty() { String::new() } else { format!(" {args}") };
        out.push(Entry::Item(format!(":{head}{args}"), format!("{what}{also}")));
    }
    if !app.user_commands.aliases.is_empty() {
        out.push(Entry::Heading("aliases (<config>/hotkeys.toml)".into()));
        for (name, cmd) in &app.user_commands.aliases {
            out.push(Entry::Item(format!(":{name}"), safe(cmd).into_owned()));
        }
    }
    if !app.user_commands.hotkeys.is_empty() {
        out.push(Entry::Heading("hotkeys (<config>/hotkeys.toml)".into()));
        for h in &app.user_commands.hotkeys {
            out.push(Entry::Item(h.key.label(), safe(&h.description).into_owned()));
        }
    }
    if !app.plugins.is_empty() {
        out.push(Entry::Heading("plugins (in their views)".into()));
        for p in &app.plugins {
            out.push(Entry::Item(
                safe(&p.shortcut).into_owned(),
                format!("{} ({})", safe(&p.name), safe(&p.scopes.join(", "))),
            ));
        }
    }
    out
}

/// The entries the help's search keeps: those that match (case-insensitive), each under its
/// heading; a heading that matches keeps its whole group.
pub fn search(entries: Vec<Entry>, query: &str) -> Vec<Entry> {
    let q = query.trim().to_lowercase();
    if q.is_empty() {
        return entries;
    }
    let mut out = Vec::new();
    let mut heading: Option<Entry> = None;
    let mut whole = false;
    for e in entries {
        if let Entry::Heading(_) = e {
            whole = e.text().to_lowercase().contains(&q);
            heading = Some(e.clone());
            if whole {
                out.push(e);
                heading = None;
            }
            continue;
        }
        if whole || e.text().to_lowercase().contains(&q) {
            if let Some(h) = heading.take() {
                out.push(h);
            }
            out.push(e);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_keeps_matches_under_their_heading() {
        let e = vec![
            Entry::Heading("move".into()),
            Entry::Item("j".into(), "down".into()),
            Entry::Item("k".into(), "up".into()),
            Entry::Heading("actions".into()),
            Entry::Item("r".into(), "drain node(s)".into()),
        ];
        assert_eq!(search(e.clone(), "DRAIN"), vec![e[3].clone(), e[4].clone()]);
        assert_eq!(search(e.clone(), "move"), e[..3].to_vec(), "a heading keeps its group");
        assert!(search(e.clone(), "nothing-like-it").is_empty());
        assert_eq!(search(e.clone(), " "), e);
    }
}
