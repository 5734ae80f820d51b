//! Small drawing helpers shared by the views: the theme's styles for cells, borders and bars,
//! and ASCII mode. Formatting lives in the table model ([`gpuplane_tables::tables::fmt`]).

pub mod table;

pub use crate::tables::fmt::*;
use crate::tables::tone::{Cell, Line as CellLine};
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};

const ASCII_BORDER: symbols::border::Set = symbols::border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

const ASCII_BARS: symbols::bar::Set = symbols::bar::Set {
    full: "#",
    seven_eighths: "#",
    three_quarters: "=",
    five_eighths: "=",
    half: "-",
    three_eighths: "-",
    one_quarter: ".",
    one_eighth: ".",
    empty: " ",
};

/// Borders and bars in the glyph set in force.
pub trait Symbols {
    fn border(&self) -> symbols::border::Set<'static>;
    fn bars(&self) -> symbols::bar::Set<'static>;
}

impl Symbols for Glyphs {
    fn border(&self) -> symbols::border::Set<'static> {
        if self.unicode { symbols::border::PLAIN } else { ASCII_BORDER }
    }

    fn bars(&self) -> symbols::bar::Set<'static> {
        if self.unicode { symbols::bar::NINE_LEVELS } else { ASCII_BARS }
    }
}

/// A span of untrusted cluster text in a theme's style.
pub fn untrusted_span<'a>(s: &'a str, style: Style) -> Span<'a> {
    Span::styled(crate::sanitize::sanitize(s), style)
}

/// A cell in the theme's style for its tone.
pub fn span<'a>(theme: &super::theme::Theme, c: Cell<'a>) -> Span<'a> {
    Span::styled(c.text, theme.cell(c.tone, c.strong))
}

/// A detail line in the theme's styles.
pub fn line<'a>(theme: &super::theme::Theme, l: CellLine<'a>) -> Line<'a> {
    Line::from(l.cells.into_iter().map(|c| span(theme, c)).collect::<Vec<_>>())
}

/// Detail lines in the theme's styles.
pub fn lines<'a>(theme: &super::theme::Theme, ls: Vec<CellLine<'a>>) -> Vec<Line<'a>> {
    ls.into_iter().map(|l| line(theme, l)).collect()
}

/// The ASCII stand-in for one non-ASCII character a frame may hold: box drawing, blocks,
/// arrows, the typographic marks in messages (`…`, `—`, `×`, `°`) and anything from a cluster.
fn ascii_of(c: char) -> char {
    match c {
        '─' | '━' | '═' | '╌' | '┄' | '—' | '–' | '‐' | '−' => '-',
        '│' | '┃' | '║' | '╎' | '┆' => '|',
        '\u{2500}'..='\u{257f}' => '+',
        '█' | '▇' | '▓' | '▆' => '#',
        '▅' | '▄' | '▒' => '=',
        '▃' | '▂' => '-',
        '▁' | '░' | '·' | '•' => '.',
        '●' | '◆' | '★' => '*',
        '▲' | '↑' => '^',
        '▼' | '↓' => 'v',
        '▶' | '→' | '›' | '»' => '>',
        '◀' | '←' | '‹' | '«' => '<',
        '…' => '~',
        '×' => 'x',
        '°' => ' ',
        '\u{a0}' | '\u{2009}' | '\u{202f}' => ' ',
        '‘' | '’' => '\'',
        '“' | '”' => '"',
        _ => '?',
    }
}

/// Makes every cell of a drawn frame ASCII (ASCII mode: `LANG=C`, the Linux console), whatever
/// drew it: borders and bars come from [`Glyphs`] already, this catches the rest (messages,
/// key names, cluster text). A wide character becomes `?` and its hidden neighbour a space.
pub fn asciify(buf: &mut ratatui::buffer::Buffer) {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            let sym = cell.symbol();
            if sym.is_ascii() {
                continue;
            }
            let mut out = String::with_capacity(sym.len());
            for c in sym.chars() {
                if c.is_ascii() {
                    out.push(c);
                } else if unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) > 0 {
                    out.push(ascii_of(c));
                }
                // zero-width marks (combining accents, joiners) are dropped
            }
            // A wide character took two cells: the second was blank, and now shows.
            cell.set_symbol(if out.is_empty() { " " } else { &out[..1] });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asciify_leaves_only_ascii_and_keeps_the_layout() {
        use ratatui::buffer::Buffer;
        use ratatui::layout::Rect;
        let mut b = Buffer::empty(Rect::new(0, 0, 24, 1));
        b.set_string(0, 0, "┌─ 8×H100 91°C ● 日x…", Style::default());
        asciify(&mut b);
        let s: String = (0..24).map(|x| b[(x, 0)].symbol().to_string()).collect();
        assert_eq!(s, "+- 8xH100 91 C * ? x~   ");
    }
}
