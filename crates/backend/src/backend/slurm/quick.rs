//! Hand-written readers of the value shapes slurmrestd writes for the job members gpuplane
//! reads: plain strings, integers, `{set, infinite, number}`, arrays of plain strings.
//!
//! They are a shortcut, not a second parser: each reader returns `None` for anything outside the
//! shapes it knows (an escape in a string, a float, a key it does not expect, a key twice,
//! invalid JSON…), and its caller then hands the same bytes to serde and the lenient types of
//! [`wire`](super::wire), which decide as before. Where a reader does answer, the answer is the
//! one serde would give (tested against serde on fixtures and on random values).

use super::wire::{Loose, LooseText, Num, Words};
use crate::model::Text;

/// A cursor over one JSON value's text. Whitespace between tokens is skipped as JSON allows
/// (slurmrestd pretty-prints its answers).
pub struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

/// Nesting that [`Cur::skip`] follows before it gives up.
const MAX_DEPTH: u32 = 16;

impl<'a> Cur<'a> {
    pub fn new(s: &'a [u8]) -> Cur<'a> {
        Cur { s, i: 0 }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte that is not whitespace (not consumed).
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    /// Consumes `b` if it comes next.
    pub fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    /// Only whitespace is left.
    pub fn end(&mut self) -> bool {
        self.ws();
        self.i == self.s.len()
    }

    fn word(&mut self, w: &[u8]) -> bool {
        self.ws();
        let hit = self.s.get(self.i..).is_some_and(|r| r.starts_with(w));
        if hit {
            self.i += w.len();
        }
        hit
    }

    /// The bytes of a string without escapes or control characters (not checked for UTF-8).
    fn raw_str(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let rest = &self.s[self.i..];
        let k = plain_len(rest);
        if rest.get(k) != Some(&b'"') {
            return None;
        }
        self.i += k + 1;
        Some(&rest[..k])
    }

    /// A string without escapes or control characters, in valid UTF-8.
    pub fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_str()?).ok()
    }

    /// A key (a plain string) and its colon, as bytes: compared with ASCII names, they need no
    /// UTF-8 check ([`Cur::skip`] checks the keys it steps over).
    pub fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.raw_str()?;
        self.eat(b':').then_some(k)
    }

    pub fn bool(&mut self) -> Option<bool> {
        if self.word(b"true") {
            Some(true)
        } else if self.word(b"false") {
            Some(false)
        } else {
            None
        }
    }

    pub fn null(&mut self) -> bool {
        self.word(b"null")
    }

    /// An integer of at most 18 digits as JSON writes it (no leading zeros, no fraction or
    /// exponent, not `-0`, which serde reads as a float).
    pub fn int(&mut self) -> Option<i64> {
        self.ws();
        let s = &self.s[self.i..];
        let neg = s.first() == Some(&b'-');
        let d = &s[usize::from(neg)..];
        // Digits and value in one go, 18 digits at most (a 19th is refused below).
        let (mut n, mut v) = (0, 0i64);
        while let Some(b) = d.get(n).filter(|b| b.is_ascii_digit() && n < 18) {
            v = v * 10 + i64::from(b - b'0');
            n += 1;
        }
        if n == 0 || (d[0] == b'0' && n > 1) || matches!(d.get(n), Some(b'0'..=b'9' | b'.' | b'e' | b'E')) {
            return None;
        }
        if neg && v == 0 {
            return None;
        }
        self.i += usize::from(neg) + n;
        Some(if neg { -v } else { v })
    }

    /// A [`Num`]: an integer, `null`, or `{set, infinite, number}` (each key once, any order;
    /// `number` an integer or `null`).
    pub fn num(&mut self) -> Option<Num> {
        match self.peek()? {
            b'{' => {
                self.i += 1;
                let (mut set, mut infinite, mut number) = (None, None, None);
                if !self.eat(b'}') {
                    loop {
                        // The three keys compared in place: any other key (or one written
                        // with escapes) is none of them, and serde reads the value.
                        self.ws();
                        let rest = &self.s[self.i..];
                        let key: &[u8] = if rest.starts_with(b"\"set\"") {
                            b"set"
                        } else if rest.starts_with(b"\"infinite\"") {
                            b"infinite"
                        } else if rest.starts_with(b"\"number\"") {
                            b"number"
                        } else {
                            return None;
                        };
                        self.i += key.len() + 2;
                        if !self.eat(b':') {
                            return None;
                        }
                        match key {
                            b"set" if set.is_none() => set = Some(self.bool()?),
                            b"infinite" if infinite.is_none() => infinite = Some(self.bool()?),
                            b"number" if number.is_none() => {
                                number = Some(if self.null() { Num::Unset } else { Num::Val(self.int()?) })
                            }
                            _ => return None,
                        }
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Some(if infinite == Some(true) {
                    Num::Infinite
                } else if set == Some(false) {
                    Num::Unset
                } else {
                    number.unwrap_or(Num::Unset)
                })
            }
            b'n' => self.null().then_some(Num::Unset),
            _ => self.int().map(Num::Val),
        }
    }

    /// Steps over a value made of plain strings, integers, `true`, `false`, `null`, arrays and
    /// objects (at most [`MAX_DEPTH`] deep).
    pub fn skip(&mut self) -> Option<()> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.str()?;
            }
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.i += 1;
                if !self.eat(close) {
                    loop {
                        if open == b'{' {
                            std::str::from_utf8(self.key()?).ok()?;
                        }
                        self.skip_at(depth + 1)?;
                        if self.eat(close) {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
            }
            b't' | b'f' => {
                self.bool()?;
            }
            b'n' => {
                if !self.null() {
                    return None;
                }
            }
            _ => {
                self.int()?;
            }
        }
        Some(())
    }
}

/// How many bytes at the start of `s` may stand in a plain string: up to the first quote,
/// backslash or control character. Eight bytes at a time (bit tricks on a `u64`); the lowest byte
/// flagged is always a true hit (borrows only move up).
fn plain_len(s: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH;
    let mut k = 0;
    while let Some(c) = s.get(k..).and_then(|r| r.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*c);
        let hits =
            below(w ^ (ONES * u64::from(b'"')), 1) | below(w ^ (ONES * u64::from(b'\\')), 1) | below(w, 0x20);
        if hits != 0 {
            return k + hits.trailing_zeros() as usize / 8;
        }
        k += 8;
    }
    k + s[k..].iter().position(|&b| !plain_byte(b)).unwrap_or(s.len() - k)
}

fn plain_byte(b: u8) -> bool {
    b != b'"' && b != b'\\' && b >= 0x20
}

/// The whole of `v` read by `read`, or `None`.
fn all<'a, T>(v: &'a [u8], read: impl FnOnce(&mut Cur<'a>) -> Option<T>) -> Option<T> {
    let mut c = Cur::new(v);
    let out = read(&mut c)?;
    c.end().then_some(out)
}

/// A [`Num`] (see [`Cur::num`]).
pub fn num(v: &[u8]) -> Option<Num> {
    all(v, Cur::num)
}

/// A job's [`Limit`](super::wire::Limit): `null` is unlimited, anything else a [`Num`].
pub fn limit(v: &[u8]) -> Option<super::wire::Limit> {
    use super::wire::Limit;
    all(v, |c| match c.peek()? {
        b'n' => c.null().then_some(Limit(Num::Infinite)),
        _ => c.num().map(Limit),
    })
}

/// A [`Loose`] from a plain string or `null`.
pub fn loose(v: &[u8]) -> Option<Loose> {
    all(v, |c| match c.peek()? {
        b'n' => c.null().then_some(Loose(None)),
        _ => c.str().map(|s| Loose(Some(s.to_owned()))),
    })
}

/// A [`LooseText`] from a plain string or `null`.
pub fn loose_text(v: &[u8]) -> Option<LooseText> {
    all(v, |c| match c.peek()? {
        b'n' => c.null().then(LooseText::default),
        _ => c.str().map(|s| LooseText(Text::from(s))),
    })
}

/// [`Words`] from an array of plain strings, a plain string (comma-separated) or `null`.
pub fn words(v: &[u8]) -> Option<Words> {
    all(v, |c| {
        let mut out = Vec::new();
        let mut add = |s: &str| {
            let s = s.trim();
            if !s.is_empty() {
                out.push(Text::from(s));
            }
        };
        match c.peek()? {
            b'[' => {
                c.eat(b'[');
                if !c.eat(b']') {
                    loop {
                        add(c.str()?);
                        if c.eat(b']') {
                            break;
                        }
                        if !c.eat(b',') {
                            return None;
                        }
                    }
                }
            }
            b'n' => {
                if !c.null() {
                    return None;
                }
            }
            _ => c.str()?.split(',').for_each(&mut add),
        }
        Some(Words(out))
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// Values in many shapes, for comparing a reader with serde: the shapes slurmrestd writes,
    /// and many it does not (escapes, floats, odd numbers, wrong types, broken JSON).
    pub const VALUES: &[&str] = &[
        r#""""#,
        r#""plain""#,
        r#"" padded  ""#,
        r#""a,b, ,c""#,
        r#""ünïcode ✓""#,
        r#""esc\"aped""#,
        r#""tab\there""#,
        r#""\u0041BC""#,
        "\"raw\ttab\"",
        "\"raw\nline\"",
        r#""unterminated"#,
        r#""x" "y""#,
        r#"["RUNNING"]"#,
        r#"["PENDING","REQUEUED"]"#,
        r#"[ "a" , " b " , "" ]"#,
        r#"[]"#,
        r#"[ ]"#,
        r#"["a",]"#,
        r#"["a" "b"]"#,
        r#"[null,"x",5]"#,
        r#"["a\"b"]"#,
        r#"[["x"]]"#,
        "0",
        "7",
        "-1",
        "-0",
        "007",
        "1.5",
        "1e3",
        "-",
        "12x",
        "123456789012345678",
        "1234567890123456789",
        "99999999999999999999",
        "-123456789012345678",
        "4294901759",
        "true",
        "false",
        "null",
        "nul",
        "nullx",
        "",
        " ",
        r#"{"set":true,"infinite":false,"number":7}"#,
        r#"{"set":false,"infinite":false,"number":0}"#,
        r#"{"set":true,"infinite":true,"number":0}"#,
        r#"{"infinite":false,"number":1795960092,"set":true}"#,
        "{\n  \"set\": true,\n  \"infinite\": false,\n  \"number\": 42\n}",
        r#"{"set":true,"number":-5}"#,
        r#"{"number":3}"#,
        r#"{}"#,
        r#"{ }"#,
        r#"{"set":true,"infinite":false,"number":1.0}"#,
        r#"{"set":true,"infinite":false,"number":"9"}"#,
        r#"{"set":true,"infinite":false,"number":null}"#,
        r#"{"set":null,"number":4}"#,
        r#"{"set":1,"number":4}"#,
        r#"{"set":true,"set":false,"number":4}"#,
        r#"{"set":true,"number":4,"extra":[1,{"a":null}]}"#,
        r#"{"set":true,"number":4,}"#,
        r#"{"set":true "number":4}"#,
        r#"{"set":true,"number":{"set":true,"number":8}}"#,
        r#"{"s\u0065t":false,"number":4}"#,
        r#"{"set":true,"number":4"#,
        r#"{"set":true,"number":4}}"#,
        r#""UNLIMITED""#,
        r#""  12 ""#,
        r#"{"status":["SUCCESS"],"return_code":{"set":true,"infinite":false,"number":0},"signal":{"id":{"set":false,"infinite":false,"number":0},"name":""}}"#,
        r#"{"return_code":{"set":true,"infinite":false,"number":3},"signal":{"id":{"set":true,"infinite":false,"number":9},"name":"KILL"},"status":["SIGNALED"]}"#,
        r#"{"return_code":2,"signal":{"id":15}}"#,
        r#"{"return_code":2,"return_code":3}"#,
        r#"{"signal":{"id":1,"id":2}}"#,
        r#"{"signal":null}"#,
        r#"{"signal":{"name":"x"},"other":{"deep":[[[{"k":"v"}]]]}}"#,
        r#"{"return_code":{"set":"yes"}}"#,
        r#"{"status":[1.5],"return_code":1}"#,
        r#"{"status":["a\nb"],"return_code":1}"#,
        r#"{"return_code":1,"signal":{"id":2},"x":tru}"#,
        r#"[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]"#,
        r#"{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}}}}}}}}}}"#,
        "768",
        "15",
        "[1,2]",
    ];

    /// `T` from `v` as serde_json reads a whole value.
    pub fn serde<T: DeserializeOwned>(v: &[u8]) -> Result<T, String> {
        let mut de = serde_json::Deserializer::from_slice(v);
        let t = T::deserialize(&mut de).map_err(|e| e.to_string())?;
        de.end().map_err(|e| e.to_string())?;
        Ok(t)
    }

    /// Random values: pieces of `VALUES` put together, with whitespace and cuts.
    pub fn random_values(n: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let ws = ["", " ", "\n  ", "\t"];
        (0..n)
            .map(|_| {
                let mut v = VALUES[rng.usize(..VALUES.len())].as_bytes().to_vec();
                match rng.u8(..4) {
                    0 => {
                        // Whitespace after a random structural byte.
                        let at = rng.usize(..=v.len());
                        let w = ws[rng.usize(..ws.len())].as_bytes();
                        v.splice(at..at, w.iter().copied());
                    }
                    1 => v.truncate(rng.usize(..=v.len())),
                    2 if !v.is_empty() => {
                        let at = rng.usize(..v.len());
                        v[at] = b"\"{}[],:0-9.\\ntfu e"[rng.usize(..18)];
                    }
                    _ => {}
                }
                v
            })
            .collect()
    }

    fn same<T: DeserializeOwned + PartialEq + std::fmt::Debug>(read: fn(&[u8]) -> Option<T>, v: &[u8]) {
        if let Some(got) = read(v) {
            let want = serde::<T>(v);
            assert_eq!(Ok(&got), want.as_ref(), "{:?}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn readers_agree_with_serde_where_they_answer() {
        for v in VALUES {
            same(num, v.as_bytes());
            same(loose, v.as_bytes());
            same(loose_text, v.as_bytes());
            same(words, v.as_bytes());
        }
        for v in random_values(20_000, 11) {
            same(num, &v);
            same(loose, &v);
            same(loose_text, &v);
            same(words, &v);
        }
    }

    #[test]
    fn readers_answer_for_what_slurmrestd_writes() {
        let n = |s: &str| num(s.as_bytes());
        assert_eq!(n(r#"{"set":true,"infinite":false,"number":7}"#), Some(Num::Val(7)));
        assert_eq!(n("{\n \"set\": false,\n \"infinite\": false,\n \"number\": 0\n}"), Some(Num::Unset));
        assert_eq!(n(r#"{"infinite":true,"number":0,"set":false}"#), Some(Num::Infinite));
        assert_eq!(n("4294901759"), Some(Num::Val(4_294_901_759)));
        assert_eq!(n("-1"), Some(Num::Val(-1)));
        assert_eq!(loose(br#""gpu-[001-002]""#), Some(Loose(Some("gpu-[001-002]".into()))));
        assert_eq!(loose(b"null"), Some(Loose(None)));
        assert_eq!(
            words(br#"[ "RUNNING", "COMPLETING" ]"#),
            Some(Words(vec!["RUNNING".into(), "COMPLETING".into()]))
        );
        assert_eq!(words(br#""PENDING""#), Some(Words(vec!["PENDING".into()])));
        // Outside the known shapes: serde decides.
        for v in [r#""a\"b""#, "1.5", r#"{"set":true,"set":true}"#, "-0", "01", r#"["a",]"#] {
            assert_eq!(
                (num(v.as_bytes()), loose(v.as_bytes()), words(v.as_bytes())),
                (None, None, None),
                "{v}"
            );
        }
    }

    #[test]
    fn plain_runs_end_where_a_byte_loop_says() {
        let mut rng = fastrand::Rng::with_seed(13);
        let alphabet = [b'a', b'"', b'\\', 0x1f, 0x20, 0x00, 0x7f, 0x80, 0xff, 0xa0, b'z', b'~'];
        for _ in 0..20_000 {
            let s: Vec<u8> = (0..rng.usize(0..30))
                .map(
                    |_| if rng.u8(..4) == 0 { alphabet[rng.usize(..alphabet.len())] } else { rng.u8(0x20..) },
                )
                .collect();
            let want = s.iter().position(|&b| !plain_byte(b)).unwrap_or(s.len());
            assert_eq!(plain_len(&s), want, "{s:?}");
        }
    }

    #[test]
    fn skip_takes_the_subset_and_nothing_else() {
        let skips = |s: &str| all(s.as_bytes(), Cur::skip).is_some();
        for ok in [r#"{"a":[1,"x",{"b":null}],"c":true}"#, "[]", "{}", r#"[[],{}]"#, " -3 "] {
            assert!(skips(ok), "{ok}");
            assert!(serde::<serde_json::Value>(ok.as_bytes()).is_ok());
        }
        for v in VALUES.iter().map(|v| v.as_bytes().to_vec()).chain(random_values(20_000, 12)) {
            if all(&v, Cur::skip).is_some() {
                assert!(serde::<serde::de::IgnoredAny>(&v).is_ok(), "{:?}", String::from_utf8_lossy(&v));
            }
        }
        assert!(!skips(&format!("{}1{}", "[".repeat(18), "]".repeat(18))));
    }
}
