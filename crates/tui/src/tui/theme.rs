//! Themes as data: semantic styles, so widgets never name a colour.

use crate::datafile::{self, DataFileError};
use crate::tables::tone::Tone;
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::Path;
use std::str::FromStr;

/// The themes shipped in the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("dark", include_str!("../../../../themes/dark.toml")),
    ("light", include_str!("../../../../themes/light.toml")),
    ("high-contrast", include_str!("../../../../themes/high-contrast.toml")),
    ("monochrome", include_str!("../../../../themes/monochrome.toml")),
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    dim: bool,
    #[serde(default)]
    italic: bool,
    #[serde(default)]
    underlined: bool,
    #[serde(default)]
    reversed: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Styles {
    text: StyleSpec,
    dim: StyleSpec,
    title: StyleSpec,
    border: StyleSpec,
    border_focus: StyleSpec,
    header: StyleSpec,
    selected: StyleSpec,
    marked: StyleSpec,
    ok: StyleSpec,
    warn: StyleSpec,
    crit: StyleSpec,
    info: StyleSpec,
    accent: StyleSpec,
    badge_sim: StyleSpec,
    badge_paused: StyleSpec,
    key: StyleSpec,
    prompt: StyleSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Heat {
    colors: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    /// Text drawn in front of the cursor row, for themes whose `selected` style alone could be
    /// mistaken for another (monochrome: the cursor and CRIT cells are both reverse video).
    #[serde(default)]
    cursor: String,
    styles: Styles,
    heat: Heat,
}

/// A resolved theme.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub text: Style,
    pub dim: Style,
    pub title: Style,
    pub border: Style,
    pub border_focus: Style,
    pub header: Style,
    pub selected: Style,
    pub marked: Style,
    pub ok: Style,
    pub warn: Style,
    pub crit: Style,
    pub info: Style,
    pub accent: Style,
    pub badge_sim: Style,
    pub badge_paused: Style,
    pub key: Style,
    pub prompt: Style,
    /// Colours from cold to hot; empty for monochrome.
    pub heat: Vec<Color>,
    /// Drawn in front of the cursor row (`>` in monochrome, so the cursor survives NO_COLOR);
    /// empty when the `selected` style says it alone.
    pub cursor: String,
}

impl Theme {
    /// Loads a theme by name (user file first, then built-in); `NO_COLOR` forces monochrome.
    pub fn load(name: &str, config_dir: Option<&Path>, no_color: bool) -> (Theme, Option<DataFileError>) {
        let name = if no_color { "monochrome" } else { name };
        let (file, err): (ThemeFile, _) = datafile::load("themes", name, "dark", EMBEDDED, config_dir);
        match Theme::resolve(file) {
            Ok(t) => (t, err),
            Err(e) => {
                let (file, _): (ThemeFile, _) = datafile::load("themes", "dark", "dark", EMBEDDED, None);
                let t = Theme::resolve(file).unwrap_or_else(|e| panic!("built-in theme dark: {e}"));
                (t, Some(DataFileError { file: format!("themes/{name}.toml"), message: e }))
            }
        }
    }

    /// The built-in theme of that name (tests and snapshots).
    pub fn builtin(name: &str) -> Theme {
        Theme::load(name, None, false).0
    }

    fn resolve(f: ThemeFile) -> Result<Theme, String> {
        let s = &f.styles;
        let heat = f.heat.colors.iter().map(|c| color(c)).collect::<Result<Vec<_>, _>>()?;
        Ok(Theme {
            name: f.name.clone(),
            text: style(&s.text)?,
            dim: style(&s.dim)?,
            title: style(&s.title)?,
            border: style(&s.border)?,
            border_focus: style(&s.border_focus)?,
            header: style(&s.header)?,
            selected: style(&s.selected)?,
            marked: style(&s.marked)?,
            ok: style(&s.ok)?,
            warn: style(&s.warn)?,
            crit: style(&s.crit)?,
            info: style(&s.info)?,
            accent: style(&s.accent)?,
            badge_sim: style(&s.badge_sim)?,
            badge_paused: style(&s.badge_paused)?,
            key: style(&s.key)?,
            prompt: style(&s.prompt)?,
            heat,
            cursor: crate::sanitize::sanitize(&f.cursor).chars().take(2).collect(),
        })
    }

    pub fn border(&self, focused: bool) -> Style {
        if focused { self.border_focus } else { self.border }
    }

    /// Style for a value on a 0–100 scale where high is bad (temperature, fill level).
    pub fn level(&self, pct: u32, warn: u32, crit: u32) -> Style {
        self.tone(Tone::level(pct, warn, crit))
    }

    /// The style of a tone.
    pub fn tone(&self, tone: Tone) -> Style {
        match tone {
            Tone::Text => self.text,
            Tone::Dim => self.dim,
            Tone::Title => self.title,
            Tone::Header => self.header,
            Tone::Ok => self.ok,
            Tone::Warn => self.warn,
            Tone::Crit => self.crit,
            Tone::Info => self.info,
            Tone::Accent => self.accent,
            Tone::Marked => self.marked,
            Tone::Key => self.key,
        }
    }

    /// The style of a cell: its tone's, bold where it is strong.
    pub fn cell(&self, tone: Tone, strong: bool) -> Style {
        let s = self.tone(tone);
        if strong { s.add_modifier(Modifier::BOLD) } else { s }
    }

    /// Heat colour for a 0–100 value; `None` in monochrome.
    pub fn heat(&self, pct: u8) -> Option<Color> {
        if self.heat.is_empty() {
            return None;
        }
        let i = (usize::from(pct.min(100)) * (self.heat.len() - 1) + 50) / 100;
        Some(self.heat[i])
    }
}

fn color(s: &str) -> Result<Color, String> {
    Color::from_str(s).map_err(|_| format!("unknown colour {s:?} (use a name, 0-255 or #rrggbb)"))
}

fn style(s: &StyleSpec) -> Result<Style, String> {
    let mut st = Style::default();
    if let Some(fg) = &s.fg {
        st = st.fg(color(fg)?);
    }
    if let Some(bg) = &s.bg {
        st = st.bg(color(bg)?);
    }
    for (on, m) in [
        (s.bold, Modifier::BOLD),
        (s.dim, Modifier::DIM),
        (s.italic, Modifier::ITALIC),
        (s.underlined, Modifier::UNDERLINED),
        (s.reversed, Modifier::REVERSED),
    ] {
        if on {
            st = st.add_modifier(m);
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_theme_loads() {
        for (name, _) in EMBEDDED {
            let (t, err) = Theme::load(name, None, false);
            assert!(err.is_none(), "{name}: {err:?}");
            assert_eq!(&t.name, name);
        }
    }

    #[test]
    fn no_color_forces_monochrome() {
        let (t, _) = Theme::load("dark", None, true);
        assert_eq!(t.name, "monochrome");
        assert!(t.heat.is_empty());
        assert_eq!(t.ok.fg, None);
        assert_eq!(t.cursor, ">", "the cursor row is marked in text, not only in reverse video");
    }

    #[test]
    fn bad_colour_is_reported_and_defaults_are_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("themes")).unwrap();
        let text =
            include_str!("../../../../themes/dark.toml").replace("\"cyan\", bold", "\"nocolour\", bold");
        std::fs::write(dir.path().join("themes/mine.toml"), text).unwrap();
        let (t, err) = Theme::load("mine", Some(dir.path()), false);
        assert_eq!(t.name, "dark");
        assert!(err.unwrap().message.contains("nocolour"));
    }

    #[test]
    fn heat_scale_spans_the_colours() {
        let t = Theme::builtin("dark");
        assert_eq!(t.heat(0), Some(t.heat[0]));
        assert_eq!(t.heat(100), t.heat.last().copied());
    }
}
