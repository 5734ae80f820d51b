//! The one sanitiser every string from a cluster passes before it reaches a terminal cell.
//!
//! Removes C0/C1 control characters (including ESC and 8-bit CSI), whole ANSI escape sequences
//! (CSI, OSC, DCS/SOS/PM/APC strings and two-byte escapes) so that their parameters do not leak
//! onto the screen as text, and Unicode bidi controls (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
//! PDI, ALM, LRM, RLM) that could reorder what an operator reads.

use std::borrow::Cow;

/// Whether a character is a bidirectional formatting control.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{200E}' | '\u{200F}')
}

fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi(c)
}

/// A serde_json pretty printer that writes every character [`sanitize`] would remove as a
/// `\uXXXX` escape: the values read back unchanged, but no control or bidi character reaches the
/// terminal that shows the output (serde_json itself escapes only C0 controls; C1 such as 8-bit
/// CSI and bidi overrides would pass through raw). It streams like `to_writer_pretty`.
struct TerminalSafe(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for TerminalSafe {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        s: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in s.char_indices().filter(|&(_, c)| is_unsafe(c)) {
            w.write_all(&s.as_bytes()[start..i])?;
            // Every control and bidi character is in the Basic Multilingual Plane: one escape.
            write!(w, "\\u{:04x}", c as u32)?;
            start = i + c.len_utf8();
        }
        w.write_all(&s.as_bytes()[start..])
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `serde_json::to_writer_pretty` with cluster text made terminal-safe (see [`TerminalSafe`]).
pub fn json_pretty_to<W: std::io::Write, T: serde::Serialize + ?Sized>(
    w: W,
    v: &T,
) -> serde_json::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(w, TerminalSafe(serde_json::ser::PrettyFormatter::new()));
    v.serialize(&mut ser)
}

/// `serde_json::to_string_pretty` with cluster text made terminal-safe (see [`TerminalSafe`]).
pub fn json_pretty<T: serde::Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    json_pretty_to(&mut out, v)?;
    // The formatter writes only what it was given (UTF-8) and ASCII escapes.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// Returns `s` with control characters, escape sequences and bidi overrides removed.
/// Tabs and newlines become a single space, so a value always stays on its own line.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \)
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Two-byte escape (ESC c, ESC 7, ...); the second character is swallowed.
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\t' | '\n' | '\r' => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c if is_unsafe(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_unsafe, json_pretty, sanitize};

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(sanitize("llama-70b-sft"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn removes_csi_colour_and_clear_screen() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m\u{1b}[2J"), "red");
    }

    #[test]
    fn removes_osc_title_and_hyperlink() {
        assert_eq!(sanitize("a\u{1b}]0;pwned\u{7}b"), "ab");
        assert_eq!(sanitize("\u{1b}]8;;http://evil\u{1b}\\click\u{1b}]8;;\u{1b}\\"), "click");
        assert_eq!(sanitize("x\u{1b}]52;c;Y3VybCBldmls\u{7}y"), "xy");
    }

    #[test]
    fn removes_c1_and_8bit_csi() {
        assert_eq!(sanitize("a\u{9b}31mb\u{85}c"), "abc");
    }

    #[test]
    fn removes_bidi_overrides() {
        assert_eq!(sanitize("job\u{202e}txt.exe\u{2066}"), "jobtxt.exe");
    }

    #[test]
    fn newlines_and_tabs_become_one_space() {
        assert_eq!(sanitize("a\r\n\tb"), "a b");
    }

    #[test]
    fn unterminated_sequences_do_not_panic() {
        assert_eq!(sanitize("ok\u{1b}"), "ok");
        assert_eq!(sanitize("ok\u{1b}[12"), "ok");
        assert_eq!(sanitize("ok\u{1b}]0;title"), "ok");
    }

    #[test]
    fn json_escapes_what_a_terminal_must_not_see_and_reads_back_the_same() {
        let name = "a\u{9b}31mb\u{202e}c\u{85}d\u{7f}e\u{1b}[2J训练";
        let v = serde_json::json!([{ "name": name, "n": 1, name: [true, null] }]);
        let text = json_pretty(&v).unwrap();
        assert!(!text.chars().any(|c| c != '\n' && is_unsafe(c)), "{text:?}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("训练"), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
        // Everything else is serde_json's own pretty printing.
        let plain = serde_json::json!({"a": ["b", 1.5, {"c": null}], "d": {}});
        assert_eq!(json_pretty(&plain).unwrap(), serde_json::to_string_pretty(&plain).unwrap());
    }

    #[test]
    fn keeps_unicode_text() {
        assert_eq!(sanitize("训练-ß-😀"), "训练-ß-😀");
    }
}
