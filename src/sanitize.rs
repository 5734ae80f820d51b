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
    use super::sanitize;

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
    fn keeps_unicode_text() {
        assert_eq!(sanitize("训练-ß-😀"), "训练-ß-😀");
    }
}
