//! Text normalisation: Unicode NFKC, lowercase, every punctuation character (general category P*)
//! and every whitespace character replaced by a plain space. Of the invisible format characters
//! (Default_Ignorable_Code_Point), U+200B ZERO WIDTH SPACE is a word break (a space) and the rest
//! (soft hyphen, ZWNJ, ZWJ, word joiner, BOM, bidi controls, variation selectors) are removed,
//! so they neither glue two words nor split one. Runs of spaces are collapsed
//! implicitly by the tokenizer, which splits on spaces. This matches the canonical form the
//! development corpus' ground truth is computed on.

use unicode_normalization::UnicodeNormalization;

use crate::text::chars::{is_punctuation, Chars};

/// Writes the normalised form of `text` into `out` (cleared first).
///
/// Fast path: ASCII characters, CJK unified ideographs (U+4E00..U+9FFF) and every other
/// [`inert`](crate::text::chars::inert) character (most letters of Thai, Khmer, Myanmar,
/// Cyrillic, ...) are unchanged by NFKC and are starters that compose with nothing before them,
/// so they are copied directly (ASCII lowercased, through a byte table, a whole run at a time). Every other run of characters goes
/// through NFKC as one segment, together with the fast character just before it (which a
/// following combining mark may compose with). A segment ends at a fast character followed by
/// another fast character, so NFKC of the pieces equals NFKC of the whole text.
pub fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    out.reserve(text.len());
    let bytes = text.as_bytes();
    if text.is_ascii() {
        push_ascii(bytes, out);
        return;
    }
    let chars = Chars::get();
    let mut slow_start: Option<usize> = None; // byte offset where the pending NFKC segment begins
    let mut i = 0;
    while i < bytes.len() {
        // In a run of ASCII bytes every character but the last is followed by an ASCII (fast)
        // character: the run, less its last byte, is copied at once.
        let run = ascii_len(&bytes[i..]);
        if run >= 2 {
            if let Some(start) = slow_start.take() {
                push_nfkc(&text[start..i], out, chars);
            }
            push_ascii(&bytes[i..i + run - 1], out);
            i += run - 1;
        }
        // Likewise a run of three-byte fast characters (ideographs U+4E00..U+9FFF and the
        // table characters, which is how Chinese text spells), less its last character.
        let run = fast3_run(&bytes[i..], chars);
        if run >= 2 {
            if let Some(start) = slow_start.take() {
                push_nfkc(&text[start..i], out, chars);
            }
            push_fast3(&bytes[i..i + 3 * (run - 1)], out, chars);
            i += 3 * (run - 1);
        }
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        let next = i + c.len_utf8();
        let next_fast = text[next..]
            .chars()
            .next()
            .is_none_or(|d| is_fast(d, chars));
        if is_fast(c, chars) && next_fast {
            if let Some(start) = slow_start.take() {
                push_nfkc(&text[start..i], out, chars);
            }
            push_fast(c, out);
        } else if slow_start.is_none() {
            slow_start = Some(i);
        }
        i = next;
    }
    if let Some(start) = slow_start {
        push_nfkc(&text[start..], out, chars);
    }
}

/// Appends ASCII bytes mapped through [`ASCII_MAP`]: with AVX2 32 at a time ([`avx2`]), the
/// rest (and everything on other CPUs) through the table.
#[inline]
fn push_ascii(ascii: &[u8], out: &mut String) {
    debug_assert!(ascii.is_ascii());
    // SAFETY: ASCII_MAP maps every ASCII byte to an ASCII byte, so `out` stays valid UTF-8.
    let v = unsafe { out.as_mut_vec() };
    #[allow(unused_mut)]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if ascii.len() >= 32 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked above).
        done = unsafe { avx2::map_ascii(ascii, v) };
    }
    v.extend(
        ascii[done..]
            .iter()
            .map(|&b| ASCII_MAP[(b & 0x7f) as usize]),
    );
}

/// Length of the ASCII prefix of `b`, eight bytes at a time.
#[inline]
fn ascii_len(b: &[u8]) -> usize {
    let mut n = 0;
    for c in b.chunks_exact(8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let high = u64::from_le_bytes(w) & 0x8080_8080_8080_8080;
        if high != 0 {
            return n + (high.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + b[n..].iter().take_while(|x| x.is_ascii()).count()
}

/// Bit h of entry l is set when the ASCII character `h * 16 + l` normalises to a space: the
/// characters [`ASCII_MAP`] sends to ' ', as a nibble table for `vpshufb`.
const SPACE_BY_LOW_NIBBLE: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut c = 0;
    while c < 128 {
        if ASCII_MAP[c] == b' ' {
            t[c & 15] |= 1 << (c >> 4);
        }
        c += 1;
    }
    t
};

/// [`push_ascii`] for AVX2. Every ASCII character maps to a space (punctuation, whitespace), to
/// its lowercase form (A-Z), or to itself, so 32 bytes map with two nibble lookups (is it a
/// space-mapped character: bit `b >> 4` of `SPACE_BY_LOW_NIBBLE[b & 15]`), a range test for A-Z
/// and a blend: ~12 instructions per 32 bytes instead of a table load and store per byte.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Appends the mapped form of the whole 32-byte blocks of `ascii` (all ASCII) to `out`;
    /// returns the number of bytes done.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn map_ascii(ascii: &[u8], out: &mut Vec<u8>) -> usize {
        let blocks = ascii.len() / 32;
        out.reserve(blocks * 32);
        // SAFETY: both tables are 16-byte arrays, and an unaligned 16-byte load reads exactly them.
        let lo_table = _mm256_broadcastsi128_si256(unsafe {
            _mm_loadu_si128(super::SPACE_BY_LOW_NIBBLE.as_ptr().cast())
        });
        let bits: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0];
        // SAFETY: as above.
        let hi_table =
            _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(bits.as_ptr().cast()) });
        let nibble = _mm256_set1_epi8(0x0F);
        let space = _mm256_set1_epi8(b' ' as i8);
        // SAFETY: `reserve` made room for blocks * 32 bytes after the
        // current length, and block k reads ascii[32k..32k + 32], within `ascii`.
        let dst = unsafe { out.as_mut_ptr().add(out.len()) };
        for k in 0..blocks {
            // SAFETY: see above; 32k + 32 <= ascii.len().
            let b = unsafe { _mm256_loadu_si256(ascii.as_ptr().add(32 * k).cast()) };
            let lo = _mm256_and_si256(b, nibble);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(b), nibble);
            let hits = _mm256_and_si256(
                _mm256_shuffle_epi8(lo_table, lo),
                _mm256_shuffle_epi8(hi_table, hi),
            );
            let keep = _mm256_cmpeq_epi8(hits, _mm256_setzero_si256());
            let t = _mm256_sub_epi8(b, _mm256_set1_epi8(b'A' as i8));
            let upper = _mm256_cmpeq_epi8(_mm256_min_epu8(t, _mm256_set1_epi8(25)), t);
            let lowered = _mm256_or_si256(b, _mm256_and_si256(upper, _mm256_set1_epi8(0x20)));
            let mapped = _mm256_blendv_epi8(space, lowered, keep);
            // SAFETY: see above; the store stays within the reserved room.
            unsafe { _mm256_storeu_si256(dst.add(32 * k).cast(), mapped) };
        }
        // SAFETY: the blocks * 32 bytes after the old length were all written above, and they
        // are ASCII (valid UTF-8 for the caller's String).
        unsafe { out.set_len(out.len() + blocks * 32) };
        blocks * 32
    }
}

/// The code point of the three-byte UTF-8 sequence at the start of `b`, if it starts with one.
#[inline(always)]
fn char3(b: &[u8]) -> Option<u32> {
    match b {
        [b0 @ 0xE0..=0xEF, b1, b2, ..] => {
            Some(u32::from(b0 & 0x0F) << 12 | u32::from(b1 & 0x3F) << 6 | u32::from(b2 & 0x3F))
        }
        _ => None,
    }
}

/// What a fast three-byte character becomes: `Some(0)` for an ideograph or another inert
/// character (itself), `Some(ascii)` for a table character, `None` for any other character.
#[inline(always)]
fn fast3(c: u32, chars: &Chars) -> Option<u8> {
    if (0x4E00..=0x9FFF).contains(&c) {
        return Some(0);
    }
    let c = char::from_u32(c)?;
    match table_ascii(c) {
        Some(a) => Some(a),
        None if chars.inert(c) => Some(0),
        None => None,
    }
}

/// Number of fast three-byte characters at the start of `b` (valid UTF-8).
#[inline]
fn fast3_run(b: &[u8], chars: &Chars) -> usize {
    let mut n = 0;
    while let Some(c) = char3(&b[3 * n..]) {
        if fast3(c, chars).is_none() {
            break;
        }
        n += 1;
    }
    n
}

/// Appends the normalised form of a run of fast three-byte characters (see [`fast3_run`]).
#[inline]
fn push_fast3(run: &[u8], out: &mut String, chars: &Chars) {
    // SAFETY: only whole UTF-8 sequences of inert characters and ASCII bytes are appended.
    let v = unsafe { out.as_mut_vec() };
    // Ideographs are copied a stretch at a time, up to each table character.
    let mut copied = 0;
    for (k, ch) in run.chunks_exact(3).enumerate() {
        match char3(ch).and_then(|c| fast3(c, chars)) {
            Some(0) => {}
            Some(a) => {
                v.extend_from_slice(&run[copied..3 * k]);
                v.push(a);
                copied = 3 * k + 3;
            }
            None => unreachable!("push_fast3 is given fast characters only"),
        }
    }
    v.extend_from_slice(&run[copied..]);
}

/// Characters with a known normalised form that never combine with a preceding character:
/// ASCII, inert characters (unchanged by NFKC), and the [`table_ascii`] characters.
#[inline]
fn is_fast(c: char, chars: &Chars) -> bool {
    c.is_ascii() || chars.inert(c) || table_ascii(c).is_some()
}

/// The normalised form of common punctuation and full-width forms of Chinese text when it is
/// one ASCII character: U+3001 '、' and U+FF0C '，' become a space, U+FF21 'Ａ' becomes 'a'.
/// NFKC decomposes each of them to one ASCII character (a starter, which composes with nothing
/// before it), so, like ASCII, they take the fast path when the next character is fast too.
/// A unit test checks every entry against `normalize_reference` (test-only).
#[inline]
fn table_ascii(c: char) -> Option<u8> {
    // Byte i: the form of character `first + i`; 0 when it is not a single ASCII character.
    const GENERAL_PUNCTUATION: &[u8] = b"       \0             \0\0 "; // U+2010..U+2027
    const CJK_SYMBOLS: &[u8] = b"    \0\0\0\0          \0\0            \0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0 \0\0\0\0\0\0\0\0\0\0\0\0 \0\0"; // U+3000..U+303F
    const FULLWIDTH: &[u8] = b"\0   $      +    0123456789  <=>  abcdefghijklmnopqrstuvwxyz   ^ `abcdefghijklmnopqrstuvwxyz | ~       "; // U+FF00..U+FF65
    let (table, first) = match c as u32 {
        0x2010..=0x2027 => (GENERAL_PUNCTUATION, 0x2010),
        0x3000..=0x303F => (CJK_SYMBOLS, 0x3000),
        0xFF00..=0xFF65 => (FULLWIDTH, 0xFF00),
        _ => return None,
    };
    match table[(c as u32 - first) as usize] {
        0 => None,
        b => Some(b),
    }
}

/// Normalised form of each ASCII byte: lowercase; punctuation and whitespace become a space.
const ASCII_MAP: [u8; 128] = {
    let mut m = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        m[i] = if is_ascii_punctuation(c) || c == b' ' || (c >= 0x09 && c <= 0x0D) {
            b' '
        } else {
            c.to_ascii_lowercase()
        };
        i += 1;
    }
    m
};

/// ASCII punctuation per Unicode categories P*: everything `u8::is_ascii_punctuation` lists except
/// the symbols (category S*) $ + < = > ^ ` | ~.
const fn is_ascii_punctuation(c: u8) -> bool {
    c.is_ascii_punctuation()
        && !matches!(
            c,
            b'$' | b'+' | b'<' | b'=' | b'>' | b'^' | b'`' | b'|' | b'~'
        )
}

#[inline]
fn push_fast(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(ASCII_MAP[c as usize] as char);
    } else if let Some(b) = table_ascii(c) {
        out.push(b as char);
    } else {
        out.push(c); // an inert character: unchanged
    }
}

fn push_nfkc(segment: &str, out: &mut String, chars: &Chars) {
    // Format characters go before NFKC (one between two marks would block their composition,
    // and a second normalisation without it would compose them) and after (in case NFKC makes
    // one).
    for c in segment.chars().filter_map(|c| visible(chars, c)).nfkc() {
        if chars.plain(c) {
            out.push(c);
        } else if let Some(c) = visible(chars, c) {
            push_mapped(c, out);
        }
    }
}

/// What a character becomes before and after NFKC: U+200B ZERO WIDTH SPACE a space (a word
/// break), another default-ignorable character nothing, any other character itself.
#[inline]
fn visible(chars: &Chars, c: char) -> Option<char> {
    match c {
        '\u{200B}' => Some(' '),
        c if chars.ignorable(c) => None,
        c => Some(c),
    }
}

/// Appends what `c` becomes after NFKC: its lowercase, punctuation and white space as a space.
#[inline]
fn push_mapped(c: char, out: &mut String) {
    for l in c.to_lowercase() {
        out.push(if is_punctuation(l) || l.is_whitespace() {
            ' '
        } else {
            l
        });
    }
}

#[cfg(test)]
/// The reference form, without the fast path (nor the shortcut for plain characters): NFKC of
/// the whole text, lowercase, punctuation to spaces. `normalize_into` must agree with it on
/// every input.
pub(crate) fn normalize_reference(text: &str) -> String {
    let chars = Chars::get();
    let mut out = String::new();
    let visible = |c| visible(chars, c);
    for c in text.chars().filter_map(visible).nfkc().filter_map(visible) {
        push_mapped(c, &mut out);
    }
    out
}

#[cfg(test)]
/// Convenience wrapper returning a new string.
pub(crate) fn normalize(text: &str) -> String {
    let mut s = String::new();
    normalize_into(text, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english() {
        assert_eq!(
            normalize("Hello, World!  It's  fine."),
            "hello  world   it s  fine "
        );
        assert_eq!(
            normalize("a\tb\nc\u{b}d\u{a0}é\u{3000}f"),
            "a b c d e\u{301} f".nfc().collect::<String>()
        );
        assert_eq!(normalize("a+b=c $5"), "a+b=c $5");
    }

    #[test]
    fn chinese_and_fullwidth() {
        // Full-width letters and digits fold to ASCII under NFKC; CJK punctuation becomes spaces.
        assert_eq!(normalize("ＡＢＣ１２３，你好。"), "abc123 你好 ");
        assert_eq!(normalize("《红楼梦》——曹雪芹"), " 红楼梦   曹雪芹");
    }

    #[test]
    fn fast_path_agrees_with_reference() {
        for t in [
            "e\u{301}t\u{e9} caf\u{e9}", // combining accent after an ASCII letter
            "中\u{301}文，ＡＢＣ。ｶﾀｶﾅ ①②③ ﬁ", // mark after an ideograph, full-width, half-width kana, ligature
            "Ünïcödé ΣΑΣ İstanbul ǅ",
            "漢字\u{3099}か\u{3099}", // (non-)composing voiced marks
            "",
            "\u{301}leading mark",
        ] {
            assert_eq!(normalize(t), normalize_reference(t), "{t:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 2000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(7),
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn fast_path_agrees_on_random_text(s in "[a-zA-Z \\.,\u{300}-\u{36f}\u{4e00}-\u{4e10}\u{ff01}-\u{ff65}\u{3000}-\u{303f}\u{2010}-\u{2027}\u{c0}-\u{17f}\u{3040}-\u{30ff}\u{ac00}-\u{ac10}\u{1100}-\u{1112}\u{1161}-\u{1175}]{0,40}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }

        /// Chinese-like text: runs of ideographs (including the edges of the fast range) and
        /// table punctuation, with kana and their voicing marks, combining marks, compatibility
        /// ideographs and ASCII between them: exercises the three-byte run copy.
        #[test]
        fn ideograph_runs_agree(s in "([\u{4e00}-\u{4e08}\u{9ff8}-\u{a002}\u{4dfe}-\u{4dff}\u{3000}-\u{3003}\u{ff0c}\u{ff01}\u{2014}\u{2026}]{0,9}[a-z \u{301}\u{3099}\u{304b}\u{f900}\u{3131}\u{ff21}]?){0,8}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }

        /// Scripts whose letters are inert (Thai, Lao, Khmer, Myanmar, Cyrillic) beside the marks
        /// NFKC reorders or composes (Thai tone marks, Myanmar U+1025 + U+102E, Hangul jamo,
        /// Latin accents), format characters and upper case: the fast path of inert runs.
        #[test]
        fn inert_runs_agree(s in "[aA \u{e01}-\u{e4f}\u{e81}-\u{edf}\u{1780}-\u{17dd}\u{1000}-\u{1030}\u{400}-\u{45f}\u{1100}-\u{1112}\u{1161}-\u{1175}\u{11a8}-\u{11c2}\u{300}-\u{302}\u{34f}\u{ad}\u{200b}-\u{200d}\u{e9}\u{130}]{0,60}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }

        /// Long ASCII runs (several 32-byte blocks) with the odd non-ASCII character.
        #[test]
        fn long_ascii_runs_agree(s in "([ -~\t\n]{0,90}[\u{e9}\u{2019}\u{4e2d}\u{301}]?){0,4}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }

        /// Mostly ASCII with scattered marks, ideographs and full-width letters: exercises the
        /// run-at-a-time ASCII copy next to NFKC segments.
        #[test]
        fn ascii_runs_agree(s in "([a-zA-Z .,!]{0,7}[\u{300}-\u{36f}\u{4e00}-\u{4e10}\u{e9}\u{ff21}-\u{ff3a}\u{3002}]?){0,12}") {
            proptest::prop_assert_eq!(normalize(&s), normalize_reference(&s));
        }
    }

    #[test]
    fn table_characters_match_reference() {
        let ranges = [0x2000..0x2070u32, 0x3000..0x3040, 0xFF00..0xFFF0];
        let mut fast = 0;
        for c in ranges.into_iter().flatten().filter_map(char::from_u32) {
            if let Some(b) = table_ascii(c) {
                fast += 1;
                assert_eq!(
                    normalize_reference(&c.to_string()),
                    (b as char).to_string(),
                    "{c:?}"
                );
                // Before and after ASCII, an ideograph, a combining mark, another table character.
                for ctx in ["a", "中", "\u{301}", "\u{338}", "\u{3099}", "，", "Ａ", " "] {
                    for t in [
                        format!("{c}{ctx}"),
                        format!("{ctx}{c}"),
                        format!("x{c}{c}{ctx}y"),
                    ] {
                        assert_eq!(normalize(&t), normalize_reference(&t), "{t:?}");
                    }
                }
            }
        }
        assert_eq!(fast, 150);
    }

    #[test]
    fn every_ascii_byte_maps_as_the_table_says_in_every_block_position() {
        for shift in 0..32 {
            let text: Vec<u8> = (0..128u8).cycle().skip(shift).take(128 + 31).collect();
            let mut out = String::new();
            push_ascii(&text, &mut out);
            let want: Vec<u8> = text.iter().map(|&b| ASCII_MAP[b as usize]).collect();
            assert_eq!(out.as_bytes(), &want[..], "shift {shift}");
        }
        for n in 0..40 {
            let mut t = vec![b'a'; 40];
            assert_eq!(ascii_len(&t[..n]), n);
            t[n] = 0xC3;
            assert_eq!(ascii_len(&t), n);
        }
    }

    #[test]
    fn mixed() {
        assert_eq!(normalize("Rust 语言：Fast！"), "rust 语言 fast ");
    }
}
