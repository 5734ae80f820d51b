//! One pass over a job object: finds its top-level members, keeps the byte ranges of the values
//! whose keys a struct has fields for, and steps over the rest.
//!
//! This runs in the [`Splitter`](super::split::Splitter) while it looks for the end of each job,
//! or, when the parser threads are idle, in a parser thread on the job's text (see
//! [`stream`](super::stream)); the reader then sees only the kept values (a few hundred bytes of
//! a ~5 KB record).
//!
//! The record is seen through a [`Window`]: bit masks of the quotes, backslashes and brackets
//! of 64 bytes, computed once and shared by every search that starts in them (a record's short
//! members share a block). Strings end at the next quote bit (a backslash bit skips one byte);
//! objects and arrays end where the nesting depth, moved by the brackets outside strings (a
//! prefix XOR of the quote mask), returns to zero; a block where a container cannot end is
//! skipped with two popcounts. A block with a backslash inside a container is walked byte by
//! byte (escapes are rare). The masks are built with AVX-512BW or AVX2 where the CPU has them
//! (found at run time; the walk is compiled once per feature set so that the masks stay in
//! registers), else SSE2 (the x86-64 baseline), else byte by byte; all are tested equal to the
//! byte-by-byte masks.
//!
//! The checks are those of [`pick`](super::pick): keys, colons, commas and bare words at the top
//! level of the record; strings and bracket nesting below it (which bracket closes which is left
//! to the parser of a kept value). A record this pass cannot read (malformed, or cut by the end of
//! a chunk) is reported as such, and the whole record goes to the reader that names the fault.

use super::split::bare_byte;
use std::ops::Range;

/// Keys compared as written: a key spelt with escapes is never wanted.
#[derive(Debug, Clone)]
pub struct Wanted {
    fields: &'static [&'static str],
    /// By the key's shape (its first and last bytes and length, mixed): the field with that
    /// shape plus one, 0 for none, `u16::MAX` for several.
    by_shape: Box<[u16; 4096]>,
    /// Each field's first 16 bytes (zero after its end), as a little-endian number.
    packed: Box<[u128]>,
}

fn shape(key: &[u8]) -> Option<usize> {
    let (first, last) = (usize::from(*key.first()?), usize::from(*key.last()?));
    Some((first << 6 ^ last << 3 ^ key.len()) & 4095)
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
        let packed = fields
            .iter()
            .map(|f| {
                let mut b = [0u8; 16];
                let n = f.len().min(16);
                b[..n].copy_from_slice(&f.as_bytes()[..n]);
                u128::from_le_bytes(b)
            })
            .collect();
        Wanted { fields, by_shape, packed }
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

    /// [`Wanted::find`] for the key `s[at..at + len]`: a key of up to 16 bytes with 16 bytes of
    /// `s` from its start is compared as one number.
    #[inline(always)]
    fn find_in(&self, s: &[u8], at: usize, len: usize) -> Option<u16> {
        let key = &s[at..at + len];
        let k = self.by_shape[shape(key)?];
        if k == 0 {
            return None;
        }
        if k != u16::MAX
            && len <= 16
            && let (Some(f), Some(want)) =
                (self.fields.get(usize::from(k - 1)), self.packed.get(usize::from(k - 1)))
            && let Some(bytes) = s.get(at..).and_then(|r| r.first_chunk::<16>())
        {
            let mask = if len == 16 { u128::MAX } else { (1u128 << (8 * len)) - 1 };
            return (f.len() == len && u128::from_le_bytes(*bytes) & mask == *want).then_some(k - 1);
        }
        self.find(key)
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
    walk_with(Level::best(), s, i, wanted, out)
}

/// The index just past the string whose content starts at `i`, if it ends in `s`.
#[cfg(test)]
pub fn string_end(s: &[u8], i: usize) -> Option<usize> {
    string_end_with(Level::best(), s, i)
}

/// The index just past the object or array starting at `s[i]`, if it ends in `s`. Nesting is
/// counted over both kinds of bracket together.
#[cfg(test)]
pub fn container_end(s: &[u8], i: usize) -> Option<usize> {
    container_end_with(Level::best(), s, i)
}

/// Goes on looking for the end of an object or array cut by the end of an earlier piece, from
/// `s[i]` (not an escaped byte), with `depth` (> 0) brackets open and `in_str` inside a
/// string: see [`Lexer`](super::split::Lexer), which this speeds up. `Ok` is the index just past
/// the closing bracket; `Err` where to go on from in the next piece, counted from the start of
/// `s` (`s.len() + 1` when the last byte of `s` escapes the first of the next piece).
pub fn container_resume(s: &[u8], i: usize, depth: &mut u64, in_str: &mut bool) -> Result<usize, usize> {
    container_resume_with(Level::best(), s, i, depth, in_str)
}

fn container_resume_with(
    level: Level,
    s: &[u8],
    i: usize,
    depth: &mut u64,
    in_str: &mut bool,
) -> Result<usize, usize> {
    match level {
        #[cfg(any(test, not(target_arch = "x86_64")))]
        Level::Scalar => Window::new(s, Scalar).container_from(i, depth, in_str),
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => Window::new(s, Sse2).container_from(i, depth, in_str),
        // SAFETY (both): as in `walk_with`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { avx2::container_resume(s, i, depth, in_str) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { avx512::container_resume(s, i, depth, in_str) },
    }
}

fn walk_with(level: Level, s: &[u8], i: usize, wanted: &Wanted, out: &mut Vec<Member>) -> Walk {
    out.clear();
    let r = match level {
        #[cfg(any(test, not(target_arch = "x86_64")))]
        Level::Scalar => walk_inner(&mut Window::new(s, Scalar), i, wanted, out),
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => walk_inner(&mut Window::new(s, Sse2), i, wanted, out),
        // SAFETY (both): a level is only used where the CPU has it (`Level::best`, and the
        // tests' list of levels).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { avx2::walk(s, i, wanted, out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { avx512::walk(s, i, wanted, out) },
    };
    match r {
        Ok(end) => Walk::Done(end),
        Err(w) => w,
    }
}

#[cfg(test)]
fn string_end_with(level: Level, s: &[u8], i: usize) -> Option<usize> {
    match level {
        #[cfg(any(test, not(target_arch = "x86_64")))]
        Level::Scalar => Window::new(s, Scalar).string_end(i),
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => Window::new(s, Sse2).string_end(i),
        // SAFETY (both): as in `walk_with`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { avx2::string_end(s, i) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { avx512::string_end(s, i) },
    }
}

#[cfg(test)]
fn container_end_with(level: Level, s: &[u8], i: usize) -> Option<usize> {
    match level {
        #[cfg(any(test, not(target_arch = "x86_64")))]
        Level::Scalar => Window::new(s, Scalar).container_end(i),
        #[cfg(target_arch = "x86_64")]
        Level::Sse2 => Window::new(s, Sse2).container_end(i),
        // SAFETY (both): as in `walk_with`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { avx2::container_end(s, i) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { avx512::container_end(s, i) },
    }
}

/// The entry points compiled with a CPU feature set: the walk and the window are inlined into
/// them, so the block masks stay in registers (and `count_ones` is one instruction).
#[cfg(target_arch = "x86_64")]
macro_rules! compiled_for {
    ($module:ident, $features:literal, $simd:expr) => {
        mod $module {
            use super::*;

            #[target_feature(enable = $features)]
            pub(super) fn walk(
                s: &[u8],
                i: usize,
                wanted: &Wanted,
                out: &mut Vec<Member>,
            ) -> Result<usize, Walk> {
                walk_inner(&mut Window::new(s, $simd), i, wanted, out)
            }

            #[cfg(test)]
            #[target_feature(enable = $features)]
            pub(super) fn string_end(s: &[u8], i: usize) -> Option<usize> {
                Window::new(s, $simd).string_end(i)
            }

            #[cfg(test)]
            #[target_feature(enable = $features)]
            pub(super) fn container_end(s: &[u8], i: usize) -> Option<usize> {
                Window::new(s, $simd).container_end(i)
            }

            #[target_feature(enable = $features)]
            pub(super) fn container_resume(
                s: &[u8],
                i: usize,
                depth: &mut u64,
                in_str: &mut bool,
            ) -> Result<usize, usize> {
                Window::new(s, $simd).container_from(i, depth, in_str)
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
compiled_for!(avx2, "avx2,popcnt,pclmulqdq", Avx2(()));
#[cfg(target_arch = "x86_64")]
compiled_for!(avx512, "avx512bw,popcnt,pclmulqdq", Avx512(()));

#[inline(always)]
fn walk_inner<S: Simd>(
    win: &mut Window<'_, S>,
    i: usize,
    wanted: &Wanted,
    out: &mut Vec<Member>,
) -> Result<usize, Walk> {
    let s = win.s;
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
        let key_at = i + 1;
        let key_end = win.string_end(key_at).ok_or(Walk::Incomplete)?;
        i = ws(s, key_end);
        if at(i)? != b':' {
            return Err(Walk::Bad);
        }
        i = ws(s, i + 1);
        let start = i;
        i = match at(i)? {
            b'"' => win.string_end(i + 1).ok_or(Walk::Incomplete)?,
            b'{' | b'[' => win.container_end(i).ok_or(Walk::Incomplete)?,
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
        if let Some(field) = wanted.find_in(s, key_at, key_end - 1 - key_at) {
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

/// Which instructions build the block masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Byte by byte: other CPUs, and the reference in tests.
    #[cfg(any(test, not(target_arch = "x86_64")))]
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Sse2,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Level {
    /// The widest this CPU has (the standard library caches what it finds).
    fn best() -> Level {
        #[cfg(target_arch = "x86_64")]
        {
            let base = is_x86_feature_detected!("popcnt") && is_x86_feature_detected!("pclmulqdq");
            if base && is_x86_feature_detected!("avx512bw") {
                Level::Avx512
            } else if base && is_x86_feature_detected!("avx2") {
                Level::Avx2
            } else {
                Level::Sse2
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Level::Scalar
    }
}

/// How a level builds the masks of a block.
trait Simd: Copy {
    fn masks(self, block: &[u8; 64]) -> Masks;

    /// See [`prefix_xor`].
    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        prefix_xor(x)
    }
}

#[cfg(any(test, not(target_arch = "x86_64")))]
#[derive(Clone, Copy)]
struct Scalar;

#[cfg(any(test, not(target_arch = "x86_64")))]
impl Simd for Scalar {
    #[inline(always)]
    fn masks(self, block: &[u8; 64]) -> Masks {
        scalar_masks(block)
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Sse2;

#[cfg(target_arch = "x86_64")]
impl Simd for Sse2 {
    #[inline(always)]
    fn masks(self, block: &[u8; 64]) -> Masks {
        sse2_masks(block)
    }
}

/// Made only inside functions compiled for AVX2, POPCNT and PCLMULQDQ (`compiled_for!`), which
/// run only where the CPU has them.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Simd for Avx2 {
    #[inline(always)]
    fn masks(self, block: &[u8; 64]) -> Masks {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2 (see the type).
        unsafe { avx2_masks(block) }
    }

    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        // SAFETY: an `Avx2` exists only where the CPU has PCLMULQDQ too (see the type).
        unsafe { clmul_prefix_xor(x) }
    }
}

/// Made only inside functions compiled for AVX-512BW, POPCNT and PCLMULQDQ (`compiled_for!`),
/// which run only where the CPU has them.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx512(());

#[cfg(target_arch = "x86_64")]
impl Simd for Avx512 {
    #[inline(always)]
    fn masks(self, block: &[u8; 64]) -> Masks {
        // SAFETY: an `Avx512` exists only where the CPU has AVX-512BW (see the type).
        unsafe { avx512_masks(block) }
    }

    #[inline(always)]
    fn prefix_xor(self, x: u64) -> u64 {
        // SAFETY: an `Avx512` exists only where the CPU has PCLMULQDQ too (see the type).
        unsafe { clmul_prefix_xor(x) }
    }
}

/// Bit masks (bit `k` for byte `k`) of a 64-byte block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Masks {
    quote: u64,
    backslash: u64,
    open: u64,
    close: u64,
}

#[cfg(any(test, not(target_arch = "x86_64")))]
fn scalar_masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
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

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sse2_masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks::default();
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn avx2_masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let mut m = Masks::default();
    for (k, part) in block.chunks_exact(32).enumerate() {
        // SAFETY: `part` is 32 readable bytes (the load has no alignment requirement); AVX2 is
        // enabled for this function.
        let v = unsafe { _mm256_loadu_si256(part.as_ptr().cast::<__m256i>()) };
        let lower = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
        let bits = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32) << (32 * k);
        m.quote |= bits(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8)));
        m.backslash |= bits(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8)));
        m.open |= bits(_mm256_cmpeq_epi8(lower, _mm256_set1_epi8(b'{' as i8)));
        m.close |= bits(_mm256_cmpeq_epi8(lower, _mm256_set1_epi8(b'}' as i8)));
    }
    m
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
#[inline]
fn avx512_masks(block: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{_mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_or_si512, _mm512_set1_epi8};
    // SAFETY: `block` is 64 readable bytes (the load has no alignment requirement); AVX-512BW is
    // enabled for this function.
    let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
    let lower = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
    Masks {
        quote: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8)),
        backslash: _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8)),
        open: _mm512_cmpeq_epi8_mask(lower, _mm512_set1_epi8(b'{' as i8)),
        close: _mm512_cmpeq_epi8_mask(lower, _mm512_set1_epi8(b'}' as i8)),
    }
}

/// [`prefix_xor`] in one instruction: the carry-less product with all ones.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "pclmulqdq")]
#[inline]
fn clmul_prefix_xor(x: u64) -> u64 {
    use std::arch::x86_64::{_mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_set_epi64x, _mm_set1_epi8};
    _mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1), 0)) as u64
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

/// The masks of up to 64 bytes of `s` from `base` (fewer only where `s` ends), computed once and
/// used by every search that starts in them: a record's short members share a block.
struct Window<'a, S> {
    s: &'a [u8],
    simd: S,
    /// The window is `s[base..end]`.
    base: usize,
    end: usize,
    m: Masks,
}

impl<'a, S: Simd> Window<'a, S> {
    #[inline(always)]
    fn new(s: &'a [u8], simd: S) -> Window<'a, S> {
        Window { s, simd, base: 0, end: 0, m: Masks::default() }
    }

    /// Makes the window cover `s[p]`, starting a new one at `p` if it does not; false when `p`
    /// is past the end of `s`.
    #[inline(always)]
    fn cover(&mut self, p: usize) -> bool {
        if p >= self.base && p < self.end {
            return true;
        }
        let Some(rest) = self.s.get(p..).filter(|r| !r.is_empty()) else { return false };
        self.base = p;
        match rest.first_chunk::<64>() {
            Some(block) => {
                self.m = self.simd.masks(block);
                self.end = p + 64;
            }
            None => {
                // The end of `s`: padded with zero bytes, which no mask has.
                let mut block = [0u8; 64];
                block[..rest.len()].copy_from_slice(rest);
                self.m = self.simd.masks(&block);
                self.end = self.s.len();
            }
        }
        true
    }

    /// The index just past the string whose content starts at `p`, if it ends in `s`.
    #[inline(always)]
    fn string_end(&mut self, mut p: usize) -> Option<usize> {
        loop {
            if !self.cover(p) {
                return None;
            }
            let off = p - self.base;
            let stops = (self.m.quote | self.m.backslash) >> off;
            if stops == 0 {
                p = self.end;
                continue;
            }
            let q = off + stops.trailing_zeros() as usize;
            if self.m.quote >> q & 1 == 1 {
                return Some(self.base + q + 1);
            }
            // A backslash: the byte after it is escaped.
            p = self.base + q + 2;
        }
    }

    /// The index just past the object or array starting at `s[p]`, if it ends in `s`.
    #[inline(always)]
    fn container_end(&mut self, p: usize) -> Option<usize> {
        self.container_from(p, &mut 0, &mut false).ok()
    }

    /// From `s[p]` (not an escaped byte), with `depth` brackets open and `in_str` inside a
    /// string: the index just past the bracket that closes the outermost, or `Err` with where to
    /// go on from when `s` ends first (past its end by one when its last byte is a backslash
    /// that escapes the next one).
    #[inline(always)]
    fn container_from(&mut self, mut p: usize, depth: &mut u64, in_str: &mut bool) -> Result<usize, usize> {
        loop {
            if !self.cover(p) {
                return Err(p);
            }
            let off = p - self.base;
            if self.m.backslash >> off != 0 {
                // Escapes: byte by byte to the window's end, then on from there.
                match scalar(&self.s[p..self.end], depth, in_str) {
                    Ok(end) => return Ok(p + end),
                    Err(next) => {
                        p += next;
                        continue;
                    }
                }
            }
            // Bits past the window's bytes are 0: `inside` keeps its last value up to bit 63.
            let inside = self.simd.prefix_xor(self.m.quote >> off) ^ if *in_str { u64::MAX } else { 0 };
            *in_str = inside >> 63 == 1;
            let open = (self.m.open >> off) & !inside;
            let close = (self.m.close >> off) & !inside;
            if u64::from(close.count_ones()) < *depth {
                *depth = *depth + u64::from(open.count_ones()) - u64::from(close.count_ones());
            } else {
                let mut both = open | close;
                while both != 0 {
                    let k = both.trailing_zeros();
                    let bit = 1u64 << k;
                    if open & bit != 0 {
                        *depth += 1;
                    } else {
                        *depth = depth.saturating_sub(1);
                        if *depth == 0 {
                            return Ok(p + k as usize + 1);
                        }
                    }
                    both &= both - 1;
                }
            }
            p = self.end;
        }
    }
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

    /// The levels this CPU can run (all of them on an x86-64 with AVX-512BW).
    fn levels() -> Vec<Level> {
        let mut all = vec![Level::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            all.push(Level::Sse2);
            let base = is_x86_feature_detected!("popcnt") && is_x86_feature_detected!("pclmulqdq");
            if base && is_x86_feature_detected!("avx2") {
                all.push(Level::Avx2);
            }
            if base && is_x86_feature_detected!("avx512bw") {
                all.push(Level::Avx512);
            }
        }
        all
    }

    /// The walk at every level; they must agree.
    fn picked(s: &str) -> (Walk, Vec<(&'static str, String)>) {
        let wanted = Wanted::new(FIELDS);
        let mut seen = None;
        for level in levels() {
            let mut out = Vec::new();
            let w = walk_with(level, s.as_bytes(), 0, &wanted, &mut out);
            let kept: Vec<_> =
                out.iter().map(|m| (FIELDS[usize::from(m.field)], s[m.value.clone()].to_string())).collect();
            if let Some(first) = &seen {
                assert_eq!(&(w, kept.clone()), first, "{level:?} on {s}");
            }
            seen = Some((w, kept));
        }
        seen.unwrap()
    }

    use super::{container_end_with as container_end_at, string_end_with as string_end_at};

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
                    for level in levels() {
                        let end = container_end_at(level, s.as_bytes(), 0);
                        assert_eq!(end, Some(reference_end(&s)), "{level:?} {s}");
                        for cut in 0..s.len() - 4 {
                            let end = container_end_at(level, &s.as_bytes()[..cut], 0);
                            assert_eq!(end, None, "{level:?} {s} cut at {cut}");
                        }
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn carry_less_prefix_xor_matches_the_shifts() {
        if !is_x86_feature_detected!("pclmulqdq") {
            return;
        }
        let mut rng = fastrand::Rng::with_seed(4);
        for x in
            [0, 1, u64::MAX, 1 << 63, 0x8000_0000_0000_0001].into_iter().chain((0..5000).map(|_| rng.u64(..)))
        {
            // SAFETY: the CPU has PCLMULQDQ.
            assert_eq!(unsafe { clmul_prefix_xor(x) }, prefix_xor(x), "{x:#x}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn block_masks_match_the_scalar_ones() {
        let mut rng = fastrand::Rng::with_seed(3);
        let alphabet = br#"{}[]"\ azAZ|;"#;
        for _ in 0..500 {
            let mut block = [0u8; 64];
            for b in &mut block {
                *b = if rng.bool() { alphabet[rng.usize(0..alphabet.len())] } else { rng.u8(..) };
            }
            assert_eq!(sse2_masks(&block), scalar_masks(&block));
            if is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                assert_eq!(unsafe { avx2_masks(&block) }, scalar_masks(&block));
            }
            if is_x86_feature_detected!("avx512bw") {
                // SAFETY: the CPU has AVX-512BW.
                assert_eq!(unsafe { avx512_masks(&block) }, scalar_masks(&block));
            }
        }
    }

    #[test]
    fn wanted_keys_are_exact() {
        // "job_id"/"jab_id" and "name"/"nbme" share first and last bytes and length.
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
            // In a longer text, and at its very end.
            for text in [format!("{key}\":1234567890123456789"), key.to_string()] {
                assert_eq!(w.find_in(text.as_bytes(), 0, key.len()), want, "{key} in {text}");
            }
        }
    }

    #[test]
    fn keys_compared_as_numbers_match_the_slice_compare() {
        const F: &[&str] =
            &["qos", "tres_per_node_ab", "tres_per_node_abc", "a_key_of_twenty_bytes", "nodes", "tasks"];
        let w = Wanted::new(F);
        let mut rng = fastrand::Rng::with_seed(23);
        for _ in 0..20_000 {
            let mut key = F[rng.usize(..F.len())].as_bytes().to_vec();
            match rng.u8(..4) {
                0 => {
                    let at = rng.usize(..key.len());
                    key[at] = b"aqstz_"[rng.usize(..6)];
                }
                1 => key.truncate(rng.usize(..=key.len())),
                2 => key.push(b'x'),
                _ => {}
            }
            let tail: Vec<u8> = (0..rng.usize(0..20)).map(|_| rng.u8(..)).collect();
            let text = [key.as_slice(), &tail].concat();
            assert_eq!(w.find_in(&text, 0, key.len()), w.find(&key), "{:?}", String::from_utf8_lossy(&text));
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
            for level in levels() {
                assert_eq!(string_end_at(level, s.as_bytes(), 1), Some(end), "{level:?} {s}");
                for cut in 1..end {
                    assert_eq!(string_end_at(level, &s.as_bytes()[..cut], 1), None, "{s} cut at {cut}");
                }
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

    #[derive(serde::Deserialize, Debug, PartialEq, Default)]
    #[serde(default)]
    struct Rec {
        job_id: serde_json::Value,
        name: serde_json::Value,
        job_state: serde_json::Value,
        inner: serde_json::Value,
    }

    /// A random record (members from a pool of keys and values, whitespace anywhere JSON allows
    /// it) and, now and then, a byte changed or the end cut off.
    fn random_record(rng: &mut fastrand::Rng) -> (String, bool) {
        let keys = [
            "job_id",
            "name",
            "job_state",
            "inner",
            "skip",
            "a_much_longer_key_than_most",
            "job\\u005fid",
            "x",
        ];
        let long = format!("\"{}\\\"{}\"", "s".repeat(rng.usize(0..90)), "}]".repeat(rng.usize(0..40)));
        let nested = format!(
            r#"{{"a":[1,"}}\"",{{"b":null}}],"c":{},"d":"{}\\"}}"#,
            long,
            "{[".repeat(rng.usize(0..30))
        );
        let ws = ["", "", " ", "\n      ", "\t"];
        let mut r = String::from("{");
        for k in 0..rng.usize(0..12) {
            if k > 0 {
                r.push_str(ws[rng.usize(..ws.len())]);
                r.push(',');
            }
            r.push_str(ws[rng.usize(..ws.len())]);
            r.push_str(&format!("\"{}\"", keys[rng.usize(..keys.len())]));
            r.push_str(ws[rng.usize(..ws.len())]);
            r.push(':');
            r.push_str(ws[rng.usize(..ws.len())]);
            match rng.u8(..4) {
                0 => r.push_str(&long),
                1 => r.push_str(&nested),
                _ => r.push_str(crate::backend::slurm::quick::tests::VALUES[rng.usize(..80)]),
            }
            r.push_str(ws[rng.usize(..ws.len())]);
        }
        r.push('}');
        let intact = rng.u8(..3) > 0;
        if !intact {
            let mut b = r.into_bytes();
            if rng.bool() {
                let at = rng.usize(..b.len());
                let alphabet = br#"{}[]":,\ a1"#;
                b[at] = alphabet[rng.usize(..alphabet.len())];
            } else {
                b.truncate(rng.usize(..b.len()));
            }
            r = String::from_utf8_lossy(&b).into_owned();
        }
        (r, intact)
    }

    /// Wherever the walk is done, the members it keeps read as the whole record reads
    /// (`pick::from_object`, which the splitter falls back to), errors included; and every
    /// record that reader takes is walked.
    #[test]
    fn walks_agree_with_the_whole_record_reader() {
        use crate::backend::slurm::pick::{from_members, from_object};
        let mut rng = fastrand::Rng::with_seed(21);
        let wanted = Wanted::new(FIELDS);
        let (mut done, mut read) = (0, 0);
        for _ in 0..6000 {
            let (rec, intact) = random_record(&mut rng);
            let pad = " ".repeat(rng.usize(0..70));
            let s = format!("{pad}{rec},{{\"next\":1}}");
            let (s, i) = (s.as_bytes(), pad.len());
            let mut members = Vec::new();
            let walked = walk(s, i, &wanted, &mut members);
            for level in levels() {
                let mut again = Vec::new();
                assert_eq!(walk_with(level, s, i, &wanted, &mut again), walked, "{level:?} {rec}");
                assert_eq!(again, members, "{level:?} {rec}");
            }
            if let Walk::Done(end) = walked {
                done += 1;
                let by_members = from_members::<Rec>(s, &members).map_err(|e| e.to_string());
                let whole = from_object::<Rec>(&s[i..end]).map_err(|e| e.to_string());
                assert_eq!(by_members, whole, "{rec}");
            }
            if intact && from_object::<Rec>(rec.as_bytes()).is_ok() {
                read += 1;
                assert_eq!(walked, Walk::Done(i + rec.len()), "{rec}");
            }
        }
        assert!(done > 2000 && read > 1000, "{done} walked, {read} read whole");
    }
}
