//! One pass over a job object: finds its top-level members, keeps the byte ranges of the values
//! whose keys a struct has fields for, and steps over the rest.
//!
//! This runs in the [`Splitter`](super::split::Splitter) while it looks for the end of each job,
//! so each byte of the body is scanned once; the parser threads then read only the kept values
//! (a few hundred bytes of a ~5 KB record). Unwanted objects and arrays are stepped over 64 bytes
//! at a time: bit masks of the quotes, backslashes and brackets in the block (SSE2 on x86-64),
//! the bytes inside strings found with a prefix XOR of the quote mask, and the nesting depth
//! moved by the count of brackets outside strings; only a block where the value may end is
//! walked bracket by bracket. A block with a backslash is walked byte by byte (escapes are rare).
//!
//! The checks are those of [`pick`](super::pick): keys, colons, commas and bare words at the top
//! level of the record; strings and bracket nesting below it (which bracket closes which is left
//! to the parser of a kept value). A record this pass cannot read (malformed, or cut by the end of
//! a chunk) is reported as such, and the splitter hands the whole record to the parser threads as
//! before, which name the fault.

use super::split::bare_byte;
use std::ops::Range;

/// Keys compared as written: a key spelt with escapes is never wanted.
#[derive(Debug, Clone)]
pub struct Wanted {
    fields: &'static [&'static str],
    /// By the key's first byte and length (both mod 64): the field with that first byte and
    /// length plus one, 0 for none, `u16::MAX` for several.
    by_shape: Box<[u16; 4096]>,
}

fn shape(key: &[u8]) -> Option<usize> {
    Some(usize::from(key.first()? & 63) << 6 | (key.len() & 63))
}

impl Wanted {
    pub fn new(fields: &'static [&'static str]) -> Wanted {
        let mut by_shape = Box::new([0u16; 4096]);
        for (k, f) in fields.iter().enumerate() {
            if let Some(at) = shape(f.as_bytes()) {
                let slot = &mut by_shape[at];
                *slot = if *slot == 0 { u16::try_from(k + 1).unwrap_or(u16::MAX) } else { u16::MAX };
            }
        }
        Wanted { fields, by_shape }
    }

    /// The field's index, for a key as written.
    pub fn find(&self, key: &[u8]) -> Option<u16> {
        match self.by_shape[shape(key)?] {
            0 => None,
            u16::MAX => {
                let k = self.fields.iter().position(|f| f.as_bytes() == key)?;
                u16::try_from(k).ok()
            }
            k => (self.fields.get(usize::from(k - 1))?.as_bytes() == key).then_some(k - 1),
        }
    }
}

/// A kept member: the field's index and the value's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub field: u16,
    pub value: Range<usize>,
}

/// How a walk over a record ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// The record ends just before this index.
    Done(usize),
    /// The bytes ran out first.
    Incomplete,
    /// Not a well-formed object at the top level.
    Bad,
}

#[inline]
fn ws(s: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = s.get(i) {
        i += 1;
    }
    i
}

/// Walks the object starting at `s[i]` (a `{`), pushing the wanted members to `out` (which it
/// empties first).
pub fn walk(s: &[u8], i: usize, wanted: &Wanted, out: &mut Vec<Member>) -> Walk {
    out.clear();
    match walk_inner(s, i, wanted, out) {
        Ok(end) => Walk::Done(end),
        Err(w) => w,
    }
}

fn walk_inner(s: &[u8], i: usize, wanted: &Wanted, out: &mut Vec<Member>) -> Result<usize, Walk> {
    let at = |i: usize| s.get(i).copied().ok_or(Walk::Incomplete);
    if at(i)? != b'{' {
        return Err(Walk::Bad);
    }
    let mut i = ws(s, i + 1);
    if at(i)? == b'}' {
        return Ok(i + 1);
    }
    loop {
        if at(i)? != b'"' {
            return Err(Walk::Bad);
        }
        let key_end = string_end(s, i + 1).ok_or(Walk::Incomplete)?;
        let key = &s[i + 1..key_end - 1];
        i = ws(s, key_end);
        if at(i)? != b':' {
            return Err(Walk::Bad);
        }
        i = ws(s, i + 1);
        let start = i;
        i = match at(i)? {
            b'"' => string_end(s, i + 1).ok_or(Walk::Incomplete)?,
            b'{' | b'[' => container_end(s, i).ok_or(Walk::Incomplete)?,
            b if bare_byte(b) => {
                let end =
                    s[i..].iter().position(|b| !bare_byte(*b)).map(|k| i + k).ok_or(Walk::Incomplete)?;
                let word = &s[i..end];
                let number = matches!(word[0], b'-' | b'0'..=b'9');
                if !number && !matches!(word, b"true" | b"false" | b"null") {
                    return Err(Walk::Bad);
                }
                end
            }
            _ => return Err(Walk::Bad),
        };
        if let Some(field) = wanted.find(key) {
            out.push(Member { field, value: start..i });
        }
        i = ws(s, i);
        match at(i)? {
            b',' => i = ws(s, i + 1),
            b'}' => return Ok(i + 1),
            _ => return Err(Walk::Bad),
        }
    }
}

/// The index just past the string whose content starts at `i`, if it ends in `s`.
pub fn string_end(s: &[u8], mut i: usize) -> Option<usize> {
    // Most strings in a record are short: 16 bytes at a time before calling memchr.
    for _ in 0..2 {
        let Some(block) = s.get(i..).and_then(|r| r.first_chunk::<16>()) else { break };
        let stops = quote_or_backslash(block);
        if stops == 0 {
            i += 16;
            continue;
        }
        let k = stops.trailing_zeros() as usize;
        if block[k] == b'"' {
            return Some(i + k + 1);
        }
        // An escape: byte by byte from here.
        i += k;
        break;
    }
    loop {
        let k = memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
        if s[i + k] == b'"' {
            return Some(i + k + 1);
        }
        i += k + 2;
    }
}

/// Bit `k` set where `block[k]` is a quote or a backslash.
#[cfg(target_arch = "x86_64")]
#[inline]
fn quote_or_backslash(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, and `block` is 16 readable bytes (the load
    // has no alignment requirement).
    let mask = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        _mm_movemask_epi8(_mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
        ))
    };
    mask as u32
}

#[cfg(not(target_arch = "x86_64"))]
fn quote_or_backslash(block: &[u8; 16]) -> u32 {
    block.iter().enumerate().filter(|(_, b)| matches!(b, b'"' | b'\\')).fold(0, |m, (k, _)| m | 1 << k)
}

/// Bit masks (bit `k` for byte `k`) of a 64-byte block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks { quote: 0, backslash: 0, open: 0, close: 0 };
    for (k, part) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of the x86-64 baseline, and `part` is 16 readable bytes (the
        // load has no alignment requirement).
        let (q, b, o, c) = unsafe {
            let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
            // `{` and `[` differ only in bit 0x20, as do `}` and `]`.
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16);
            (
                bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))),
                bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))),
                bits(_mm_cmpeq_epi8(lower, _mm_set1_epi8(b'{' as i8))),
                bits(_mm_cmpeq_epi8(lower, _mm_set1_epi8(b'}' as i8))),
            )
        };
        let at = 16 * k;
        m.quote |= q << at;
        m.backslash |= b << at;
        m.open |= o << at;
        m.close |= c << at;
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
fn masks(block: &[u8; 64]) -> Masks {
    scalar_masks(block)
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn scalar_masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks { quote: 0, backslash: 0, open: 0, close: 0 };
    for (k, b) in block.iter().enumerate() {
        let bit = 1u64 << k;
        match b {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'[' => m.open |= bit,
            b'}' | b']' => m.close |= bit,
            _ => {}
        }
    }
    m
}

/// Each bit XORed with all the bits below it: with the quote mask, the bytes from an opening
/// quote up to (not including) its closing quote.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The index just past the object or array starting at `s[i]`, if it ends in `s`. Nesting is
/// counted over both kinds of bracket together.
pub fn container_end(s: &[u8], i: usize) -> Option<usize> {
    let mut depth: u64 = 0;
    let mut in_str = false;
    let mut at = i;
    while let Some(block) = s.get(at..).and_then(|r| r.first_chunk::<64>()) {
        let m = masks(block);
        if m.backslash != 0 {
            // Escapes: byte by byte, then on from the next block.
            match scalar(&block[..], &mut depth, &mut in_str) {
                Ok(end) => return Some(at + end),
                Err(next) => {
                    at += next;
                    continue;
                }
            }
        }
        let inside = prefix_xor(m.quote) ^ if in_str { u64::MAX } else { 0 };
        in_str = inside >> 63 == 1;
        let open = m.open & !inside;
        let close = m.close & !inside;
        if u64::from(close.count_ones()) < depth {
            depth = depth + u64::from(open.count_ones()) - u64::from(close.count_ones());
        } else {
            let mut both = open | close;
            while both != 0 {
                let k = both.trailing_zeros();
                let bit = 1u64 << k;
                if open & bit != 0 {
                    depth += 1;
                } else {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(at + k as usize + 1);
                    }
                }
                both &= both - 1;
            }
        }
        at += 64;
    }
    let rest = s.get(at..)?;
    scalar(rest, &mut depth, &mut in_str).ok().map(|end| at + end)
}

/// Byte by byte over `bytes` (which begin outside an escape): the index just past where the
/// depth returns to 0, or `Err` with where to go on from (past the end by one when the last
/// byte is a backslash that escapes the next one).
fn scalar(bytes: &[u8], depth: &mut u64, in_str: &mut bool) -> Result<usize, usize> {
    let mut k = 0;
    while k < bytes.len() {
        let b = bytes[k];
        if *in_str {
            match b {
                b'\\' => k += 1,
                b'"' => *in_str = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => *in_str = true,
                b'{' | b'[' => *depth += 1,
                b'}' | b']' => {
                    *depth = depth.saturating_sub(1);
                    if *depth == 0 {
                        return Ok(k + 1);
                    }
                }
                _ => {}
            }
        }
        k += 1;
    }
    Err(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[&str] = &["job_id", "name", "job_state", "inner"];

    fn picked(s: &str) -> (Walk, Vec<(&'static str, String)>) {
        let mut out = Vec::new();
        let w = walk(s.as_bytes(), 0, &Wanted::new(FIELDS), &mut out);
        let kept =
            out.iter().map(|m| (FIELDS[usize::from(m.field)], s[m.value.clone()].to_string())).collect();
        (w, kept)
    }

    /// The end of a value as serde_json sees it (a reference for the skipper).
    fn reference_end(s: &str) -> usize {
        let mut de = serde_json::Deserializer::from_str(s).into_iter::<serde_json::Value>();
        de.next().unwrap().unwrap();
        de.byte_offset()
    }

    #[test]
    fn keeps_wanted_top_level_members_only() {
        let s = r#"{"skip":{"job_id":[1,"}\"",{"name":null}]},"job_id":{"set":true,"number":7}, "name" : "a \"q\" \\" ,"s2":"x\\","job_state":["RUNNING"],"n":-1.5e3,"t":true,"inner":{"x":"12","y":[]}}"#;
        let (w, kept) = picked(s);
        assert_eq!(w, Walk::Done(s.len()));
        assert_eq!(
            kept,
            [
                ("job_id", r#"{"set":true,"number":7}"#.into()),
                ("name", r#""a \"q\" \\""#.into()),
                ("job_state", r#"["RUNNING"]"#.into()),
                ("inner", r#"{"x":"12","y":[]}"#.into()),
            ]
        );
    }

    #[test]
    fn duplicate_and_escaped_keys() {
        let (w, kept) = picked(r#"{"job_id":1,"job\u005fid":2,"job_id":3}"#);
        assert!(matches!(w, Walk::Done(_)));
        assert_eq!(kept, [("job_id", "1".into()), ("job_id", "3".into())]);
    }

    #[test]
    fn malformed_records_are_bad() {
        for bad in [
            r#"{"a" 1}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 1 "b": 2}"#,
            r#"{"a": tru}"#,
            r#"{"a": }"#,
            r#"{a: 1}"#,
            "[1]",
            r#"{"a": 1]"#,
        ] {
            assert_eq!(picked(bad).0, Walk::Bad, "{bad}");
        }
    }

    #[test]
    fn cut_records_are_incomplete_and_never_panic() {
        let s = r#"{"skip":{"a":[1,"}\"",{"b":null}]},"job_id":7,"name":"n\\","inner":{"x":1}}"#;
        for cut in 0..s.len() {
            assert_eq!(picked(&s[..cut]).0, Walk::Incomplete, "cut at {cut}");
        }
    }

    /// Long values cross the 64-byte blocks at every offset, with escapes and brackets inside
    /// strings, nested both ways.
    #[test]
    fn containers_end_where_serde_json_says() {
        let pieces = [
            r#"{"a":"}]\"{[","b":[1,{"c":"\\"}],"d":{"e":[[]]}}"#,
            r#"["x\\\"]",{"y":"\u0041\\"},[[[{}]]],"{{{{",null]"#,
            r#"{"k":"               plain text with no escapes at all               "}"#,
        ];
        for n in 0..70 {
            for p in pieces {
                for q in pieces {
                    let pad = " ".repeat(n);
                    let s = format!(r#"[{pad}{p},"{}",{q}{pad}]tail"#, "z".repeat(n));
                    assert_eq!(container_end(s.as_bytes(), 0), Some(reference_end(&s)), "{s}");
                    for cut in 0..s.len() - 4 {
                        assert_eq!(container_end(&s.as_bytes()[..cut], 0), None, "{s} cut at {cut}");
                    }
                }
            }
        }
    }

    #[test]
    fn block_masks_match_the_scalar_ones() {
        let mut rng = fastrand::Rng::with_seed(3);
        let alphabet = br#"{}[]"\ azAZ|;"#;
        for _ in 0..500 {
            let mut block = [0u8; 64];
            for b in &mut block {
                *b = if rng.bool() { alphabet[rng.usize(0..alphabet.len())] } else { rng.u8(..) };
            }
            assert_eq!(masks(&block), scalar_masks(&block));
        }
    }

    #[test]
    fn wanted_keys_are_exact() {
        // "job_id"/"jab_id" and "name"/"nbme"/"Name" share first byte (mod 64) and length.
        let w = Wanted::new(&["job_id", "jab_id", "name", "x"]);
        for (key, want) in [
            ("job_id", Some(0)),
            ("jab_id", Some(1)),
            ("jcb_id", None),
            ("name", Some(2)),
            ("nbme", None),
            ("Name", None),
            ("x", Some(3)),
            ("y", None),
            ("", None),
            ("job_id2", None),
        ] {
            assert_eq!(w.find(key.as_bytes()), want, "{key}");
        }
    }

    #[test]
    fn strings_end_where_serde_json_says() {
        let mut rng = fastrand::Rng::with_seed(5);
        let alphabet = ["a", "}", "[", "\\\"", "\\\\", "\\u0041", " ", "é"];
        for _ in 0..3000 {
            let body: String =
                (0..rng.usize(0..40)).map(|_| alphabet[rng.usize(0..alphabet.len())]).collect();
            let s = format!("\"{body}\",1");
            let end = reference_end(&s);
            assert_eq!(string_end(s.as_bytes(), 1), Some(end), "{s}");
            for cut in 1..end {
                assert_eq!(string_end(&s.as_bytes()[..cut], 1), None, "{s} cut at {cut}");
            }
        }
    }

    #[test]
    fn strings_end_after_escapes() {
        for (s, end) in [(r#"ab"x"#, 3), (r#"\"a"b"#, 4), (r#"\\"x"#, 3), ("\\u0022\"", 7)] {
            assert_eq!(string_end(s.as_bytes(), 0), Some(end), "{s}");
        }
        let long = format!(r#"{}\"{}\\"rest"#, "a".repeat(30), "b".repeat(30));
        assert_eq!(string_end(long.as_bytes(), 0), Some(long.len() - 4));
        assert_eq!(string_end(br#"abc\"#, 0), None);
        assert_eq!(string_end(br#"abc\""#, 0), None);
    }
}
