//! Keys resolve through keymap data into [`Action`]s; one table drives dispatch, the footer
//! hints and the `?` help, so they cannot disagree.

use super::views::ViewId;
use crate::datafile::{self, DataFileError};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub const EMBEDDED: &[(&str, &str)] = &[
    ("default", include_str!("../../../../keymaps/default.toml")),
    ("emacs", include_str!("../../../../keymaps/emacs.toml")),
];

/// Everything a key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    Help,
    Command,
    Filter,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Enter,
    Back,
    NextPane,
    PrevPane,
    SortNext,
    SortPrev,
    SortReverse,
    Pause,
    /// A key one view declares ([`super::views::ViewKey`]), bound by its name
    /// (`toggle_wall = ["w"]`).
    #[serde(skip)]
    Local(&'static str),
    /// Go to a view; bound in a keymap by the view's name (`nodes = ["2"]`).
    #[serde(skip)]
    View(ViewId),
    Mark,
    ClearMarks,
    Cordon,
    Uncordon,
    Drain,
    Resume,
    CancelJob,
    Acceptance,
    Refresh,
    /// A recording's time keys (`gpuplane replay`).
    ReplayBack,
    ReplayForward,
    ReplaySlower,
    ReplayFaster,
    ReplayNext,
}

impl Action {
    /// (group, description) for the help screen.
    pub fn describe(self) -> (&'static str, &'static str) {
        use Action::*;
        match self {
            Quit => ("general", "quit"),
            Help => ("general", "this help"),
            Command => ("general", "command mode (:nodes, :jobs user=alice, :q)"),
            Filter => ("general", "filter rows (text, key=value, !negate)"),
            Pause => ("general", "pause the screen (data keeps arriving)"),
            Up => ("move", "up"),
            Down => ("move", "down"),
            PageUp => ("move", "page up"),
            PageDown => ("move", "page down"),
            Top => ("move", "first row"),
            Bottom => ("move", "last row"),
            Enter => ("move", "open details (move keys scroll them) / jump"),
            Back => ("move", "close pane/results, clear the filter, then go back"),
            NextPane => ("move", "next pane"),
            PrevPane => ("move", "previous pane"),
            SortNext => ("table", "sort by next column"),
            SortPrev => ("table", "sort by previous column"),
            SortReverse => ("table", "reverse sort order"),
            View(v) => ("views", v.def().title()),
            Local(name) => ("view", super::views::view_key(name).map_or("", |(_, k)| k.help)),
            Mark => ("actions", "mark/unmark the row, move down (actions take marks)"),
            ClearMarks => ("actions", "clear every mark"),
            Cordon => ("actions", "cordon node(s) (confirm, reason, audited)"),
            Uncordon => ("actions", "uncordon node(s)"),
            Drain => ("actions", "drain node(s)"),
            Resume => ("actions", "resume node(s) (Slurm)"),
            CancelJob => ("actions", "cancel job(s)"),
            Acceptance => ("actions", "NCCL acceptance test per node (:acceptance pairs|all)"),
            Refresh => ("general", "refresh now (backends that poll)"),
            ReplayBack => ("replay", "step back to the previous recorded update"),
            ReplayForward => ("replay", "step to the next recorded update"),
            ReplaySlower => ("replay", "play slower (down to x0.25; p plays / pauses)"),
            ReplayFaster => ("replay", "play faster (up to x16)"),
            ReplayNext => ("replay", "jump to the next change of the incidents"),
        }
    }

    /// Where the action is listed: in declaration order, views in tab order, a view's keys in
    /// the order the view declares them.
    pub fn rank(self) -> (Action, usize) {
        let views = super::views::VIEWS;
        match self {
            Action::View(v) => {
                (Action::View(ViewId("")), views.iter().position(|x| x.id() == v).unwrap_or(usize::MAX))
            }
            Action::Local(n) => (
                Action::Local(""),
                views.iter().flat_map(|v| v.keys()).position(|k| k.name == n).unwrap_or(usize::MAX),
            ),
            a => (a, 0),
        }
    }

    pub fn view(self) -> Option<ViewId> {
        match self {
            Action::View(v) => Some(v),
            _ => None,
        }
    }

    /// The action a keymap names: an action's own name, or a view's (from the registry).
    pub fn by_name(name: &str) -> Result<Action, String> {
        use serde::de::IntoDeserializer;
        let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = name.into_deserializer();
        if let Ok(a) = Action::deserialize(de) {
            return Ok(a);
        }
        if let Some(v) = super::views::VIEWS.iter().find(|v| v.id().0 == name) {
            return Ok(Action::View(v.id()));
        }
        match super::views::view_key(name) {
            Some((_, k)) => Ok(Action::Local(k.name)),
            None => Err(format!(
                "unknown action {name:?} (a view's name, a view's key, or one of the actions in keymaps/default.toml)"
            )),
        }
    }
}

/// A key with its modifiers, normalised (shift is folded into the character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(ev: &KeyEvent) -> Key {
        let code = match ev.code {
            KeyCode::Char(c) if ev.modifiers.contains(KeyModifiers::CONTROL) => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            c => c,
        };
        Key {
            code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        }
    }

    pub fn parse(s: &str) -> Result<Key, String> {
        let (mut ctrl, mut alt, mut rest) = (false, false, s);
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-").filter(|r| !r.is_empty()) {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" | "shift-tab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            f if f.starts_with('f') && f.len() > 1 && f[1..].parse::<u8>().is_ok() => {
                let n: u8 = f[1..].parse().map_err(|_| format!("bad key {s:?}"))?;
                if !(1..=12).contains(&n) {
                    return Err(format!("bad key {s:?}: function keys are f1..f12"));
                }
                KeyCode::F(n)
            }
            c if c.chars().count() == 1 => {
                let ch = c.chars().next().unwrap_or(' ');
                KeyCode::Char(if ctrl { ch.to_ascii_lowercase() } else { ch })
            }
            _ => return Err(format!("unknown key {s:?}")),
        };
        Ok(Key { code, ctrl, alt })
    }

    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "pgup".into(),
            KeyCode::PageDown => "pgdn".into(),
            KeyCode::Home => "home".into(),
            KeyCode::End => "end".into(),
            KeyCode::Enter => "enter".into(),
            KeyCode::Esc => "esc".into(),
            KeyCode::Tab => "tab".into(),
            KeyCode::BackTab => "S-tab".into(),
            KeyCode::Backspace => "bksp".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}").to_lowercase(),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("^{base}"),
            (_, true) => format!("M-{base}"),
            _ => base,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeymapFile {
    name: String,
    keys: BTreeMap<String, Vec<String>>,
}

/// The active keymap.
#[derive(Debug, Clone)]
pub struct Keymap {
    pub name: String,
    bindings: Vec<(Action, Vec<Key>)>,
}

impl Keymap {
    pub fn load(name: &str, config_dir: Option<&Path>) -> (Keymap, Option<DataFileError>) {
        let (file, err): (KeymapFile, _) = datafile::load("keymaps", name, "default", EMBEDDED, config_dir);
        match Keymap::resolve(file) {
            Ok(k) => (k, err),
            Err(message) => {
                let (file, _) = datafile::load("keymaps", "default", "default", EMBEDDED, None);
                let k = Keymap::resolve(file).unwrap_or_else(|e| panic!("built-in keymap: {e}"));
                (k, Some(DataFileError { file: format!("keymaps/{name}.toml"), message }))
            }
        }
    }

    pub fn builtin(name: &str) -> Keymap {
        Keymap::load(name, None).0
    }

    fn resolve(f: KeymapFile) -> Result<Keymap, String> {
        let mut bindings = Vec::new();
        let mut seen: std::collections::HashMap<Key, Action> = std::collections::HashMap::new();
        for (name, keys) in f.keys {
            let action = Action::by_name(&name)?;
            let mut parsed = Vec::new();
            for k in keys {
                let key = Key::parse(&k).map_err(|e| format!("{action:?}: {e}"))?;
                if let Some(other) = seen.insert(key, action) {
                    return Err(format!("key {k:?} is bound to both {other:?} and {action:?}"));
                }
                parsed.push(key);
            }
            bindings.push((action, parsed));
        }
        // Listed (help, hints) in the order the actions are declared, not the file's.
        bindings.sort_by_key(|(a, _): &(Action, Vec<Key>)| a.rank());
        for needed in [Action::Quit, Action::Command, Action::Back] {
            if !bindings.iter().any(|(a, k)| *a == needed && !k.is_empty()) {
                return Err(format!("no key for {needed:?}: the console would be unusable"));
            }
        }
        Ok(Keymap { name: f.name, bindings })
    }

    pub fn action(&self, key: &KeyEvent) -> Option<Action> {
        let k = Key::from_event(key);
        self.bindings.iter().find(|(_, keys)| keys.contains(&k)).map(|(a, _)| *a)
    }

    /// The first key bound to `action`, for hints.
    pub fn hint(&self, action: Action) -> Option<String> {
        self.bindings.iter().find(|(a, _)| *a == action).and_then(|(_, k)| k.first()).map(Key::label)
    }

    pub fn bindings(&self) -> impl Iterator<Item = (Action, &[Key])> {
        self.bindings.iter().map(|(a, k)| (*a, k.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyEventKind;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new_with_kind(code, m, KeyEventKind::Press)
    }

    #[test]
    fn builtin_keymaps_load_without_conflicts() {
        for (name, _) in EMBEDDED {
            let (k, err) = Keymap::load(name, None);
            assert!(err.is_none(), "{name}: {err:?}");
            assert!(k.hint(Action::Quit).is_some());
        }
    }

    #[test]
    fn keys_resolve_to_actions() {
        let k = Keymap::builtin("default");
        assert_eq!(k.action(&ev(KeyCode::Char('j'), KeyModifiers::NONE)), Some(Action::Down));
        assert_eq!(k.action(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)), Some(Action::Bottom));
        assert_eq!(k.action(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(k.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), None);
        let e = Keymap::builtin("emacs");
        assert_eq!(e.action(&ev(KeyCode::Char('n'), KeyModifiers::CONTROL)), Some(Action::Down));
    }

    #[test]
    fn parse_rejects_nonsense() {
        assert!(Key::parse("ctrl-").is_err());
        assert!(Key::parse("f13").is_err());
        assert!(Key::parse("hyper-x").is_err());
        assert_eq!(Key::parse("ctrl-c").unwrap().label(), "^c");
    }

    #[test]
    fn a_duplicate_binding_is_an_error_and_defaults_stay() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("keymaps")).unwrap();
        std::fs::write(
            dir.path().join("keymaps/mine.toml"),
            "name = \"mine\"\n[keys]\nquit = [\"q\"]\ncommand = [\":\"]\nback = [\"q\"]\n",
        )
        .unwrap();
        let (k, err) = Keymap::load("mine", Some(dir.path()));
        assert_eq!(k.name, "default");
        assert!(err.unwrap().message.contains("bound to both"));
    }
}
