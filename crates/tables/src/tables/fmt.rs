//! Text formatting shared by every table, the console and the reports: units, money, ages,
//! glyph sets, and untrusted cluster text made safe.

use super::tone::{Cell, Tone};
/// Times and durations: one formatter for the console, `get` and the reports (see
/// [`crate::clock`]: the display zone, named; relative where it helps).
pub use crate::clock::{clock, clock_rel, dur, relative, stamp, stamp_rel};
use crate::model::Epoch;
use crate::sanitize::sanitize;
use std::borrow::Cow;

/// Characters used for borders, bars and sparklines: Unicode, or plain ASCII for terminals and
/// locales without UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glyphs {
    pub unicode: bool,
}

impl Glyphs {
    pub const UNICODE: Glyphs = Glyphs { unicode: true };
    pub const ASCII: Glyphs = Glyphs { unicode: false };

    /// Unicode unless the locale says otherwise (LC_ALL, LC_CTYPE, LANG without UTF-8) or
    /// the terminal is the Linux console with a non-UTF-8 locale.
    pub fn detect(force_ascii: bool) -> Glyphs {
        if force_ascii {
            return Glyphs::ASCII;
        }
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .filter_map(|k| std::env::var(k).ok())
            .find(|v| !v.is_empty())
            .unwrap_or_default()
            .to_ascii_lowercase();
        Glyphs { unicode: locale.contains("utf-8") || locale.contains("utf8") }
    }

    pub fn full(&self) -> &'static str {
        if self.unicode { "█" } else { "#" }
    }

    pub fn empty(&self) -> &'static str {
        if self.unicode { "░" } else { "." }
    }

    pub fn up(&self) -> &'static str {
        if self.unicode { "▲" } else { "^" }
    }

    pub fn down(&self) -> &'static str {
        if self.unicode { "▼" } else { "v" }
    }

    pub fn dot(&self) -> &'static str {
        if self.unicode { "●" } else { "*" }
    }

    pub fn sep(&self) -> &'static str {
        if self.unicode { "│" } else { "|" }
    }

    /// A cell of the GPU wall at a 0–100 level: density glyphs so the wall reads without colour.
    pub fn level(&self, pct: u8) -> &'static str {
        const U: [&str; 5] = [" ", "░", "▒", "▓", "█"];
        const A: [&str; 5] = [".", ":", "+", "#", "@"];
        let i = (usize::from(pct.min(100)) * 4 + 50) / 100;
        if self.unicode { U[i] } else { A[i] }
    }

    /// A sparkline string of `values` (0–`max`), one character per point.
    pub fn spark(&self, values: impl Iterator<Item = u32>, max: u32) -> String {
        const U: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        const A: [char; 9] = [' ', '.', '.', '-', '-', '=', '=', '#', '#'];
        let set = if self.unicode { U } else { A };
        let max = max.max(1);
        values.map(|v| set[((v.min(max) * 8 + max / 2) / max) as usize]).collect()
    }

    /// A sparkline with gaps: `None` points (no sample) are drawn as a dot, not as zero.
    pub fn spark_gaps(&self, values: &[Option<u32>], max: u32) -> String {
        let gap = if self.unicode { '·' } else { ' ' };
        values
            .iter()
            .map(|v| match v {
                Some(v) => self.spark(std::iter::once(*v), max).chars().next().unwrap_or(gap),
                None => gap,
            })
            .collect()
    }

    /// A horizontal bar of `width` cells filled to `pct`.
    pub fn bar(&self, pct: u32, width: usize) -> String {
        let filled = ((pct.min(100) as usize * width) + 50) / 100;
        let mut s = String::with_capacity(width * 3);
        for _ in 0..filled {
            s.push_str(self.full());
        }
        for _ in filled..width {
            s.push_str(self.empty());
        }
        s
    }
}

/// Cluster text made safe for a terminal cell.
pub fn safe(s: &str) -> Cow<'_, str> {
    sanitize(s)
}

/// A cell of untrusted cluster text.
pub fn untrusted<'a>(s: &'a str, tone: Tone) -> Cell<'a> {
    Cell::new(sanitize(s), tone)
}

/// Age of `at` relative to `now`, e.g. `5m ago`.
pub fn ago(now: Epoch, at: Epoch) -> String {
    format!("{} ago", dur(now - at))
}

/// Bytes in binary units, `1.5T`.
pub fn bytes(b: u64) -> String {
    const U: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 || i == 0 { format!("{v:.0}{}", U[i]) } else { format!("{v:.1}{}", U[i]) }
}

/// Bytes per second in decimal units, `2.3GB/s`, `19.1TB/s`.
pub fn rate(bps: f64) -> String {
    // An empty f64 sum is -0.0, and `max` may keep it: anything not above zero (NaN too) is 0.
    let bps = if bps > 0.0 { bps } else { 0.0 };
    let (v, u) = if bps >= 1e15 {
        (bps / 1e15, "PB/s")
    } else if bps >= 1e12 {
        (bps / 1e12, "TB/s")
    } else if bps >= 1e9 {
        (bps / 1e9, "GB/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "MB/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kB/s")
    } else {
        (bps, "B/s")
    };
    format!("{v:.1}{u}")
}

/// Power with the unit that keeps it short: `700W`, `5.6kW`, `857kW`, `8.6MW`.
pub fn power(watts: f64) -> String {
    let w = if watts > 0.0 { watts } else { 0.0 };
    let (v, u) = if w >= 1e6 {
        (w / 1e6, "MW")
    } else if w >= 1e3 {
        (w / 1e3, "kW")
    } else {
        return format!("{w:.0}W");
    };
    if v >= 100.0 { format!("{v:.0}{u}") } else { format!("{v:.1}{u}") }
}

/// Money with thousands separators, `$12,345`.
pub fn money(v: f64, currency: &str) -> String {
    let sym = if currency == "USD" { "$" } else { "" };
    let n = v.round().max(0.0) as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if sym.is_empty() { format!("{out} {currency}") } else { format!("{sym}{out}") }
}

pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(1536), "1.5K");
        assert_eq!(bytes(5 * 1024u64.pow(4)), "5.0T");
        assert_eq!(money(1234567.4, "USD"), "$1,234,567");
        assert_eq!(money(12.0, "EUR"), "12 EUR");
        assert_eq!(rate(2.3e9), "2.3GB/s");
        assert_eq!(rate(-0.0), "0.0B/s", "an empty sum is not negative");
        assert_eq!(rate(f64::NAN), "0.0B/s");
        // Units scale: a 2,000-node cluster's figures stay short.
        assert_eq!(rate(19_113.4e9), "19.1TB/s");
        assert_eq!(rate(2.5e15), "2.5PB/s");
        assert_eq!(power(8_571_000.0), "8.6MW");
        assert_eq!(power(857_000.0), "857kW");
        assert_eq!(power(5_600.0), "5.6kW");
        assert_eq!(power(700.0), "700W");
        assert_eq!(bytes(3 * 1024u64.pow(5)), "3.0P");
    }

    #[test]
    fn ascii_glyphs_are_ascii() {
        let g = Glyphs::ASCII;
        let s = format!("{}{}{}", g.bar(50, 10), g.spark([0, 5, 10].into_iter(), 10), g.level(100));
        assert!(s.is_ascii(), "{s}");
        assert_eq!(g.bar(50, 4), "##..");
    }
}
