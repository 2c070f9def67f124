//! Paragraphs of a text for `--paragraphs`: where each starts and ends, and a hash of its
//! normalised text.
//!
//! - A text with a blank line (a line of whitespace only) between two lines of text is cut at its
//!   blank lines; a text without one at its line breaks (its lines are its only boundaries:
//!   wrapped prose, lists, logs; see docs/ARCHITECTURE.md for what the data showed).
//! - A paragraph's span runs from its first character (indentation included) to the first
//!   character of the next paragraph, or the end of the text: it takes the line breaks after it
//!   with it. The spans tile the text from its first paragraph on, so removing some leaves the
//!   others separated as they were, and every span starts and ends on a line boundary (a
//!   character boundary, whatever the text holds).
//! - Normalised text: whitespace runs as one space, trimmed. Case and punctuation are kept: two
//!   code lines that differ in one operator, or two entries that differ in a version number, are
//!   different paragraphs (dedup's normalisation would make them one and lose the difference).
//! - Whitespace here is ASCII's as [`u8::is_ascii_whitespace`] has it (space, tab, line feed,
//!   form feed, carriage return), so the text is scanned 32 bytes at a time: a line of other
//!   spaces (U+3000, say) is a line of text.
//! - The size of a paragraph is the bytes of its text without the whitespace around it.

use xxhash_rust::xxh3::xxh3_64;

/// One paragraph of a text: its span (byte offsets) and its normalised text's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paragraph {
    pub start: usize,
    pub end: usize,
    pub hash: u64,
}

/// Reused buffers of [`paragraphs`].
#[derive(Default)]
pub struct Scratch {
    lines: Vec<u64>,
    norm: Vec<u8>,
}

/// Appends to `out` the paragraphs of `text` whose text is at least `min_bytes` long (smaller
/// ones, headings and one-word lines, are never removed and so never listed). Returns the bytes
/// of text of the smaller ones (0: the listed ones hold all of the text but whitespace).
pub fn paragraphs(
    text: &str,
    min_bytes: usize,
    scratch: &mut Scratch,
    out: &mut Vec<Paragraph>,
) -> usize {
    let lines = &mut scratch.lines;
    lines_of(text.as_bytes(), lines);
    let blank = |l: u64| l & 1 == 1;
    let first = lines.iter().position(|&l| !blank(l));
    let last = lines.iter().rposition(|&l| !blank(l));
    let (Some(first), Some(last)) = (first, last) else {
        return 0; // whitespace only
    };
    let by_blank_lines = lines[first..last].iter().any(|&l| blank(l));
    // Units: runs of text lines (cut at blank lines) or single text lines.
    let mut unit: Option<(usize, usize)> = None; // (start, end of its last text line)
    let mut small = 0;
    let mut emit = |unit: (usize, usize), next: usize, out: &mut Vec<Paragraph>| {
        let body = trim(&text.as_bytes()[unit.0..unit.1]);
        if body.len() >= min_bytes.max(1) {
            out.push(Paragraph {
                start: unit.0,
                end: next,
                hash: hash(body, &mut scratch.norm),
            });
        } else {
            small += body.len();
        }
    };
    let mut after_blank = true;
    // A line starts after the one before it.
    let mut start = match first {
        0 => 0,
        j => (lines[j - 1] >> 1) as usize + 1,
    };
    for &l in &lines[first..=last] {
        let end = (l >> 1) as usize;
        let line_start = std::mem::replace(&mut start, end + 1);
        if blank(l) {
            after_blank = true;
            continue;
        }
        match unit.as_mut() {
            Some(u) if by_blank_lines && !after_blank => u.1 = end,
            _ => {
                if let Some(u) = unit {
                    emit(u, line_start, out);
                }
                unit = Some((line_start, end));
            }
        }
        after_blank = false;
    }
    if let Some(u) = unit {
        emit(u, text.len(), out);
    }
    small
}

/// Every line of `b`: its end (without its line break) << 1 | 1 when it is whitespace only (a
/// line starts after the one before). Eight bytes a line: texts have many short lines.
fn lines_of(b: &[u8], lines: &mut Vec<u64>) {
    lines.clear();
    #[allow(unused_mut)]
    let (mut text, mut i) = (false, 0);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked above).
        (text, i) = unsafe { avx2::lines(b, lines) };
    }
    // The rest byte by byte: `text` says whether the current line has a non-whitespace byte
    // before `i`.
    for (j, &c) in b.iter().enumerate().skip(i) {
        if c == b'\n' {
            lines.push(line(j, !text));
            text = false;
        } else {
            text |= !c.is_ascii_whitespace();
        }
    }
    lines.push(line(b.len(), !text));
}

/// A line of [`lines_of`].
#[inline(always)]
fn line(end: usize, blank: bool) -> u64 {
    (end as u64) << 1 | u64::from(blank)
}

/// `b` without the ASCII whitespace around it.
fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// The hash of a paragraph's normalised text (`body` trimmed; whitespace runs as one space).
fn hash(body: &[u8], buf: &mut Vec<u8>) -> u64 {
    let n = normalise(body, buf);
    xxh3_64(&buf[..n])
}

/// Writes `body` with each whitespace run as one space into `buf`; returns the length. With
/// AVX2 32 bytes at a time, runs packed by a byte shuffle ([`avx2::normalise`]); otherwise a
/// window of 8 bytes at a time up to the first byte that needs a change, which goes alone: a
/// byte below 0x20 (tab, line break, ...), or a space before a space or such a byte, or ending
/// the window (the next may be whitespace).
fn normalise(body: &[u8], buf: &mut Vec<u8>) -> usize {
    // Room for a whole window past the text (the kernels store full windows); grown, never
    // cleared, so no paragraph pays for zeroing it.
    if buf.len() < body.len() + 32 {
        buf.resize(body.len() + 32, 0);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked above).
        return unsafe { avx2::normalise(body, buf) };
    }
    normalise_by::<8>(body, buf, swar_clean)
}

/// The loop of [`normalise`] with windows of `W` bytes: `step(window, next)` (`next`: the byte
/// after it, if any) gives the window as written (a whitespace byte alone may become a space)
/// and how many of its leading bytes are right as written; the byte after those is whitespace
/// (its run becomes one space) or a byte below 0x20 that stays. `body` is trimmed, so a
/// whitespace run always has a byte after it.
#[inline(always)]
fn normalise_by<const W: usize>(
    body: &[u8],
    buf: &mut [u8],
    step: impl Fn(&[u8; W], Option<u8>) -> ([u8; W], usize),
) -> usize {
    let (mut n, mut i) = (0, 0);
    while i + W <= body.len() {
        let mut w = [0u8; W];
        w.copy_from_slice(&body[i..i + W]);
        let (out, k) = step(&w, body.get(i + W).copied());
        // All W are written (n + W <= i + W <= the length); those past k again later.
        buf[n..n + W].copy_from_slice(&out);
        (n, i) = (n + k, i + k);
        if k < W {
            i += copy_one(body, i, buf, &mut n);
        }
    }
    while i < body.len() {
        i += copy_one(body, i, buf, &mut n);
    }
    n
}

/// Writes byte `i` of `body` at `buf[*n]`, a whitespace run as one space; returns the bytes
/// read.
#[inline(always)]
fn copy_one(body: &[u8], i: usize, buf: &mut [u8], n: &mut usize) -> usize {
    let c = body[i];
    let read = match c.is_ascii_whitespace() {
        true => body[i..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count(),
        false => 1,
    };
    buf[*n] = if c.is_ascii_whitespace() { b' ' } else { c };
    *n += 1;
    read
}

/// [`normalise`]'s step over eight bytes, in a 64-bit word: the window as it is, up to the first
/// byte below 0x20 or space before whitespace.
fn swar_clean(w: &[u8; 8], _next: Option<u8>) -> ([u8; 8], usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = u64::from_le_bytes(*w);
    // Bytes below 0x20: the lowest flag of (x - 0x20..) & !x is exact, and the flags above it
    // do not move the lowest. Spaces: exact per byte.
    let control = x.wrapping_sub(0x20 * ONES) & !x & (0x80 * ONES);
    let y = x ^ (0x20 * ONES);
    let sp = !(((y & LOW7).wrapping_add(LOW7)) | y | LOW7);
    let bad = control | (sp & ((sp | control) >> 8)) | (sp & (0x80 << 56));
    (*w, (bad.trailing_zeros() / 8) as usize)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// 0xff where a byte is ASCII whitespace as [`u8::is_ascii_whitespace`] says: a space, or
    /// 9..=13 (x - 9 <= 4, unsigned) but 11 (vertical tab).
    #[target_feature(enable = "avx2")]
    fn whitespace(x: __m256i) -> __m256i {
        let d = _mm256_sub_epi8(x, _mm256_set1_epi8(9));
        let ctl = _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(4)), d);
        let vt = _mm256_cmpeq_epi8(x, _mm256_set1_epi8(11));
        let sp = _mm256_cmpeq_epi8(x, _mm256_set1_epi8(b' ' as i8));
        _mm256_or_si256(_mm256_andnot_si256(vt, ctl), sp)
    }

    /// [`super::lines_of`] over the whole 32-byte blocks of `b`: returns whether the line the
    /// blocks end in has a non-whitespace byte so far, and the bytes done.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn lines(b: &[u8], lines: &mut Vec<u64>) -> (bool, usize) {
        let (mut text, mut i) = (false, 0);
        while i + 32 <= b.len() {
            // SAFETY: i + 32 <= b.len(): one unaligned 256-bit load inside `b`.
            let x = unsafe { _mm256_loadu_si256(b.as_ptr().add(i).cast()) };
            let nl = _mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(b'\n' as i8)));
            let nonws = !(_mm256_movemask_epi8(whitespace(x)) as u32);
            let mut nl = nl as u32;
            let mut lo = 0u32; // the first bit of the current line in this block
            while nl != 0 {
                let p = nl.trailing_zeros();
                let before = nonws & ((1u32 << p) - 1) & !((1u32 << lo).wrapping_sub(1));
                lines.push(super::line(i + p as usize, !(text || before != 0)));
                text = false;
                lo = p + 1;
                nl &= nl - 1;
            }
            if lo < 32 {
                text |= nonws >> lo != 0;
            }
            i += 32;
        }
        (text, i)
    }

    /// [`super::normalise`] 32 bytes at a time, the last window padded: each whitespace byte
    /// becomes a space and every whitespace byte after another is dropped, the kept bytes
    /// packed eight at a time by a byte shuffle. `buf` must hold 32 bytes more than `body`.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn normalise(body: &[u8], buf: &mut [u8]) -> usize {
        assert!(buf.len() >= body.len() + 32);
        let space = _mm256_set1_epi8(b' ' as i8);
        let (mut n, mut i) = (0usize, 0usize);
        let mut after_ws = 0u32; // 1 when the byte before the window is whitespace
        while i < body.len() {
            let len = (body.len() - i).min(32);
            let x = if len == 32 {
                // SAFETY: i + 32 <= body.len(): one unaligned 256-bit load inside `body`.
                unsafe { _mm256_loadu_si256(body.as_ptr().add(i).cast()) }
            } else {
                let mut w = [0u8; 32];
                w[..len].copy_from_slice(&body[i..]);
                // SAFETY: a 32-byte array is one unaligned 256-bit load.
                unsafe { _mm256_loadu_si256(w.as_ptr().cast()) }
            };
            let ws = whitespace(x);
            let out = _mm256_blendv_epi8(x, space, ws);
            let wsm = _mm256_movemask_epi8(ws) as u32;
            let valid = u32::MAX >> (32 - len);
            let drop = wsm & (wsm << 1 | after_ws) & valid;
            if drop == 0 {
                // SAFETY: n <= i < body.len() and buf holds 32 bytes more than body: an
                // unaligned 256-bit store inside `buf`.
                unsafe { _mm256_storeu_si256(buf.as_mut_ptr().add(n).cast(), out) };
                n += len;
            } else {
                let mut o = [0u8; 32];
                // SAFETY: one unaligned 256-bit store into a 32-byte array.
                unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), out) };
                let keep = !drop & valid;
                for g in 0..4 {
                    let m = (keep >> (8 * g)) as u8;
                    let lane =
                        u64::from_le_bytes(o[8 * g..8 * g + 8].try_into().unwrap_or_default());
                    let packed = _mm_shuffle_epi8(
                        _mm_cvtsi64_si128(lane as i64),
                        _mm_cvtsi64_si128(PACK[m as usize] as i64),
                    );
                    // SAFETY: n <= body.len() (it counts bytes kept of those read) and buf
                    // holds 32 bytes more: an unaligned 64-bit store inside `buf`.
                    unsafe { _mm_storel_epi64(buf.as_mut_ptr().add(n).cast(), packed) };
                    n += m.count_ones() as usize;
                }
            }
            after_ws = wsm >> 31;
            i += len;
        }
        n
    }

    /// Per 8-bit mask of bytes to keep, the byte shuffle that packs them to the front.
    static PACK: [u64; 256] = pack_table();

    const fn pack_table() -> [u64; 256] {
        let mut t = [0u64; 256];
        let mut m = 0;
        while m < 256 {
            let (mut v, mut k, mut b) = (u64::MAX, 0, 0);
            while b < 8 {
                if m >> b & 1 == 1 {
                    v = v & !(0xff << (8 * k)) | (b as u64) << (8 * k);
                    k += 1;
                }
                b += 1;
            }
            t[m] = v;
            m += 1;
        }
        t
    }
}

#[cfg(test)]
pub(crate) fn text_hash(body: &str) -> u64 {
    hash(trim(body.as_bytes()), &mut Vec::new())
}

/// `text` without the byte ranges `spans` (ordered, disjoint); what is wrong with a span that
/// is not a range of the text on character boundaries after the one before it.
pub fn cut(text: &str, spans: &[(u64, u64)]) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    for &(s, e) in spans {
        let (s, e) = (s as usize, e as usize);
        let fits = at <= s && s < e && e <= text.len();
        if !fits || !text.is_char_boundary(s) || !text.is_char_boundary(e) {
            return Err(format!(
                "drop span [{s}, {e}) is not a range of its {}-byte text on character boundaries after the span before it",
                text.len()
            ));
        }
        out.push_str(&text[at..s]);
        at = e;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str, min: usize) -> Vec<&str> {
        let mut out = Vec::new();
        paragraphs(text, min, &mut Scratch::default(), &mut out);
        out.iter().map(|p| &text[p.start..p.end]).collect()
    }

    #[test]
    fn blank_lines_cut_paragraphs_and_spans_take_the_breaks_after_them() {
        let t = "\n\ntitle line\nsecond line\n\n  \r\nnext one\r\n\r\nlast";
        assert_eq!(
            spans(t, 1),
            [
                "title line\nsecond line\n\n  \r\n",
                "next one\r\n\r\n",
                "last"
            ]
        );
    }

    #[test]
    fn a_text_without_blank_lines_is_cut_at_lines() {
        assert_eq!(spans("a b\nc d\n", 1), ["a b\n", "c d\n"]);
        // Blank lines only around the text are no blank line between two lines of text.
        assert_eq!(spans("\n\n a\nb\n\n", 1), [" a\n", "b\n\n"]);
    }

    #[test]
    fn small_paragraphs_are_not_listed_and_whitespace_only_texts_have_none() {
        assert_eq!(
            spans("Title\n\nA longer paragraph.\n\nEnd", 10),
            ["A longer paragraph.\n\n"]
        );
        assert!(spans(" \n\t\r\n ", 1).is_empty());
        assert!(spans("", 1).is_empty());
        // What the small ones hold: "Title" and "End"; nothing in a text of listed ones only.
        let small = |t: &str| paragraphs(t, 10, &mut Scratch::default(), &mut Vec::new());
        assert_eq!(small("Title\n\nA longer paragraph.\n\n End \n"), 8);
        assert_eq!(small("\n A longer paragraph.\n\n\t\n"), 0);
    }

    #[test]
    fn a_ten_megabyte_paragraph_is_one_span() {
        let big = "word ".repeat(2 << 20);
        let t = format!("intro line\n\n{big}\n\n{big}");
        let mut out = Vec::new();
        paragraphs(&t, 100, &mut Scratch::default(), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].start, out[1].end), (12, t.len()));
        assert_eq!(out[0].hash, out[1].hash);
    }

    #[test]
    fn cut_removes_spans_and_names_a_bad_one() {
        assert_eq!(cut("ab\n\ncd\n\nef", &[(0, 4), (8, 10)]).unwrap(), "cd\n\n");
        assert_eq!(cut("abc", &[]).unwrap(), "abc");
        for bad in [[(2u64, 1u64)], [(0, 9)], [(1, 2)]] {
            let err = cut("é\nxyz", &bad).unwrap_err();
            assert!(err.contains("6-byte text"), "{err}");
        }
        assert!(cut("abcdef", &[(2, 4), (3, 5)]).is_err());
    }

    #[test]
    fn the_hash_is_of_the_text_with_whitespace_runs_as_one_space() {
        let mut a = Vec::new();
        let mut s = Scratch::default();
        paragraphs(
            "x  =\ta + b\r\n\r\nx = a - b\n\nx = a + b",
            1,
            &mut s,
            &mut a,
        );
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].hash, a[2].hash);
        assert_ne!(a[0].hash, a[1].hash);
        assert_eq!(a[2].hash, text_hash("x = a + b"));
    }

    /// The lines as `str::split` cuts them, blank when whitespace only.
    fn lines_plain(t: &str) -> Vec<u64> {
        let mut at = 0;
        t.split('\n')
            .map(|l| {
                at += l.len() + 1;
                line(at - 1, l.bytes().all(|c| c.is_ascii_whitespace()))
            })
            .collect()
    }

    /// The word-at-a-time normalisation is the byte-by-byte one.
    fn normalise_bytewise(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in body
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty())
        {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(w);
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(49),
            failure_persistence: None,
            ..Default::default()
        })]
        #[test]
        fn lines_are_the_split_ones(s in "[a \t\r\n\u{b}\u{c}]{0,120}|[ab\n]{30,200}") {
            let mut lines = Vec::new();
            lines_of(s.as_bytes(), &mut lines);
            proptest::prop_assert_eq!(lines, lines_plain(&s));
        }

        #[test]
        fn normalise_is_whitespace_runs_as_one_space(s in "[ab\u{0}\u{1f}\u{7f}\u{80}é \t\r\n\u{b}\u{c}]{0,80}|[ab \n]{30,120}|[ab \t\r\n\u{0}]{30,120}") {
            let body = trim(s.as_bytes());
            let mut buf = Vec::new();
            let n = normalise(body, &mut buf);
            proptest::prop_assert_eq!(&buf[..n], &normalise_bytewise(body)[..]);
            let mut by8 = vec![0; body.len()];
            let n = normalise_by::<8>(body, &mut by8, swar_clean);
            proptest::prop_assert_eq!(&by8[..n], &normalise_bytewise(body)[..]);
        }

        /// Spans are ordered, disjoint, on character boundaries, start at a line's start, and
        /// each holds exactly one paragraph's text (plus whitespace after it).
        #[test]
        fn spans_fall_on_line_starts(s in "[a\u{0}é字 \t\r\n]{0,80}", min in 1usize..4) {
            let mut out = Vec::new();
            paragraphs(&s, min, &mut Scratch::default(), &mut out);
            let mut at = 0;
            for p in &out {
                proptest::prop_assert!(at <= p.start && p.start < p.end && p.end <= s.len());
                proptest::prop_assert!(s.is_char_boundary(p.start) && s.is_char_boundary(p.end));
                proptest::prop_assert!(p.start == 0 || s.as_bytes()[p.start - 1] == b'\n');
                let body = s[p.start..p.end].trim_matches(|c: char| c.is_ascii_whitespace());
                proptest::prop_assert!(body.len() >= min);
                proptest::prop_assert_eq!(p.hash, text_hash(body));
                at = p.end;
            }
        }
    }
}
