//! Cells of text and a tone: what a table or a detail pane says, without a terminal. The
//! console maps each [`Tone`] to its theme's style; `gpuplane get` prints the text alone.

use std::borrow::Cow;
use unicode_width::UnicodeWidthStr;

/// What a piece of text means, not how it looks: the theme decides the colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tone {
    #[default]
    Text,
    Dim,
    Title,
    Header,
    Ok,
    Warn,
    Crit,
    Info,
    Accent,
    Marked,
    Key,
}

impl Tone {
    /// For a value on a 0–100 scale where high is bad (temperature, fill level).
    pub fn level(pct: u32, warn: u32, crit: u32) -> Tone {
        if pct >= crit {
            Tone::Crit
        } else if pct >= warn {
            Tone::Warn
        } else {
            Tone::Text
        }
    }
}

/// The tones by the names a theme gives its styles, so cell code reads `t.dim` as it would
/// with a theme in hand.
#[derive(Debug)]
pub struct Tones {
    pub text: Tone,
    pub dim: Tone,
    pub title: Tone,
    pub header: Tone,
    pub ok: Tone,
    pub warn: Tone,
    pub crit: Tone,
    pub info: Tone,
    pub accent: Tone,
    pub marked: Tone,
    pub key: Tone,
}

pub static TONES: Tones = Tones {
    text: Tone::Text,
    dim: Tone::Dim,
    title: Tone::Title,
    header: Tone::Header,
    ok: Tone::Ok,
    warn: Tone::Warn,
    crit: Tone::Crit,
    info: Tone::Info,
    accent: Tone::Accent,
    marked: Tone::Marked,
    key: Tone::Key,
};

impl Tones {
    /// [`Tone::level`].
    pub fn level(&self, pct: u32, warn: u32, crit: u32) -> Tone {
        Tone::level(pct, warn, crit)
    }
}

/// One run of text in one tone (already sanitised where it came from a cluster).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cell<'a> {
    pub text: Cow<'a, str>,
    pub tone: Tone,
    /// Drawn bold (a failed GPU's marker).
    pub strong: bool,
}

impl<'a> Cell<'a> {
    pub fn new(text: impl Into<Cow<'a, str>>, tone: Tone) -> Cell<'a> {
        Cell { text: text.into(), tone, strong: false }
    }

    /// Text in the plain tone.
    pub fn raw(text: impl Into<Cow<'a, str>>) -> Cell<'a> {
        Cell::new(text, Tone::Text)
    }

    /// The same cell, bold.
    pub fn strong(mut self) -> Cell<'a> {
        self.strong = true;
        self
    }

    /// Its width in terminal columns.
    pub fn width(&self) -> usize {
        self.text.width()
    }
}

impl<'a> From<&'a str> for Cell<'a> {
    fn from(s: &'a str) -> Cell<'a> {
        Cell::raw(s)
    }
}

impl From<String> for Cell<'_> {
    fn from(s: String) -> Self {
        Cell::raw(s)
    }
}

/// One line of a detail pane: cells side by side.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line<'a> {
    pub cells: Vec<Cell<'a>>,
}

impl<'a> Line<'a> {
    /// A line of one run of text in one tone.
    pub fn styled(text: impl Into<Cow<'a, str>>, tone: Tone) -> Line<'a> {
        Line { cells: vec![Cell::new(text, tone)] }
    }

    /// A line of plain text.
    pub fn raw(text: impl Into<Cow<'a, str>>) -> Line<'a> {
        Line { cells: vec![Cell::raw(text)] }
    }

    /// Its width in terminal columns.
    pub fn width(&self) -> usize {
        self.cells.iter().map(Cell::width).sum()
    }

    /// Its text without tones.
    pub fn text(&self) -> String {
        self.cells.iter().map(|c| c.text.as_ref()).collect()
    }

    pub fn push(&mut self, cell: Cell<'a>) {
        self.cells.push(cell);
    }
}

impl<'a> From<Vec<Cell<'a>>> for Line<'a> {
    fn from(cells: Vec<Cell<'a>>) -> Line<'a> {
        Line { cells }
    }
}

impl<'a> From<Cell<'a>> for Line<'a> {
    fn from(c: Cell<'a>) -> Line<'a> {
        Line { cells: vec![c] }
    }
}

impl<'a> From<&'a str> for Line<'a> {
    fn from(s: &'a str) -> Line<'a> {
        Line::raw(s)
    }
}

impl From<String> for Line<'_> {
    fn from(s: String) -> Self {
        Line::raw(s)
    }
}
