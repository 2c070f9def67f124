//! Windows of a text for `--substrings`: runs of at least `min_bytes` bytes that begin or end
//! where the text's content says, each with a hash of its exact bytes.
//!
//! - The text is cut into small chunks: a chunk ends before a line, or before byte `i` when a
//!   gear hash of the 16 bytes up to `i` has [`MASK`]'s bits clear (content-defined chunking),
//!   in both cases only where byte `i` starts a character. So two copies of a run are cut the
//!   same way from 16 bytes in, wherever the run sits. Chunks hold at least [`MIN_CHUNK`] bytes
//!   and at most about [`MAX_CHUNK`] (a run of one repeated byte, whose hash never changes, is
//!   cut anyway). (An edge after every newline, however short its chunk, found 0.960 of the
//!   removable bytes of the rust-docs sample instead of 0.952, with 19% more windows on
//!   dev-large: not kept.)
//! - A window ends at each chunk edge `p` (and at the text's end) and starts `min_bytes` before
//!   it, or at the chunk's start when that is further (so windows cover the text from the first
//!   on); both ends moved back to a word edge ([`super::word_edges`]: never inside a word of a
//!   spaced script), so a span made of windows never cuts a word. Windows ending at edges reach
//!   both ends of a repeated run: the first starts within a chunk of the run's start (its edge
//!   lies `min_bytes` in, where the copies are cut alike), the last ends within a chunk of the
//!   run's end, or at it when the run ends a line. And a window starts at each line, to the
//!   first edge `min_bytes` on, so a run that starts a line (boilerplate mostly does) is found
//!   from its first byte.
//! - Its hash: two polynomial hashes of the bytes (prefix sums, so a window costs O(1) whatever
//!   its length), one modulo 2^61 - 1 and one modulo 2^64, folded with the length into 64 bits.
//!   The first bounds collisions for any text; the second, whose arithmetic needs no reduction
//!   step, is weak alone (Thue-Morse strings collide for every base) but not beside it. The
//!   substrings stage compares windows by (hash, length).
//! - Windows start and end on character boundaries, so spans made of them do too. Work is
//!   linear: one pass, a window per chunk and line, memory for `min_bytes` and a chunk of sums.

use super::window_hash::{extend, minus_shifted, times, BASES, BLOCK};
#[cfg(test)]
use super::window_hash::{mul_mod, P};
use super::word_edges::{self, is_edge, MAX_WORD};

/// The gear hash's bits whose being clear ends a chunk: 3 bits (a chunk per 8 bytes on
/// average, after [`MIN_CHUNK`]), taken from bits 12-14, which depend on the last 15 bytes
/// only: enough context that markup and tables, whose short contexts repeat, still get edges.
/// (Half as many chunks, 4 bits, found 96.6% of the repeated bytes on the development corpus
/// instead of 97.3%: a run's edges are found to within a chunk.)
pub(crate) const MASK: u64 = 0x7000;
/// From [`LONG_CHUNK`] bytes on, one of those bits suffices: a chunk the hash leaves long still
/// ends where the content says, so copies stay cut alike.
const EASY_MASK: u64 = 0x1000;
const LONG_CHUNK: usize = 24;
/// Fewest bytes of a chunk (but the text's last).
pub(crate) const MIN_CHUNK: usize = 4;
/// A chunk this long ends at the next character start, whatever the hash.
pub(crate) const MAX_CHUNK: usize = 96;

/// The gear table: a fixed pseudo-random word per byte value (splitmix64), the same in every run.
const GEAR: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut s: u64 = 0x5eed_50b5;
    let mut i = 0;
    while i < 256 {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        t[i] = z ^ (z >> 31);
        i += 1;
    }
    t
};

/// One window: its span in the text and the hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub end: usize,
    pub hash: u64,
}

/// Reused buffers of [`windows`]: the prefix sums of both polynomials at the last blocks, in a
/// ring, the edges that start lines, and the powers a window's length needs (for `min`).
#[derive(Default)]
pub struct Scratch {
    ring: Vec<[u64; 2]>,
    lines: Vec<usize>,
    powers: Vec<[u64; 2]>,
    powers_for: usize,
}

/// Positions `64 * w + j` of a word's bits, from `at` on (all when `at` is at or before the
/// word, none when past it).
#[inline]
fn from(word_start: usize, at: usize) -> u64 {
    match at.checked_sub(word_start) {
        None | Some(0) => u64::MAX,
        Some(d) if d >= 64 => 0,
        Some(d) => u64::MAX << d,
    }
}

/// Where the window ending at word edge `e` (moved back from the chunk edge after the chunk
/// starting at `last`) starts: `min_bytes` before `e`, or at the chunk's start when that is
/// further, moved back to a word edge; none when a word longer than [`MAX_WORD`] leaves no edge
/// within reach.
#[inline]
fn window_start(text: &[u8], min: usize, last: usize, e: usize) -> Option<usize> {
    word_edges::at_or_before(text, (e - min).min(last))
}

/// The windows from line starts that chunk edge `p` (whose word edge is `end`) closes: each line
/// start `l` of `lines[*open..]` with `l + min` at or before `p` gets the window `[l, end)` when
/// that holds `min` bytes; one left short waits for the next edge, one a chunk past due (no
/// word edge within reach) is given up, so a window stays within a chunk or two of `min`.
fn line_windows(
    lines: &[usize],
    open: &mut usize,
    min: usize,
    p: usize,
    end: Option<usize>,
    mut emit: impl FnMut(usize, usize),
) {
    while let Some(&l) = lines.get(*open).filter(|&&l| l + min <= p) {
        match end {
            Some(e) if l + min <= e => emit(l, e),
            _ if p < l + min + MAX_CHUNK + 8 => break,
            _ => {}
        }
        *open += 1;
    }
}

/// Appends to `out` the windows of `text` ([`for_each_window`]).
pub fn windows(text: &[u8], min_bytes: usize, scratch: &mut Scratch, out: &mut Vec<Window>) {
    for_each_window(text, min_bytes, scratch, |w| out.push(w));
}

/// Passes to `emit`, as they are made, the windows of `text` of at least `min_bytes` bytes (none
/// for a shorter text): those ending at each edge, in order, then those starting at each line.
pub(crate) fn for_each_window(
    text: &[u8],
    min_bytes: usize,
    scratch: &mut Scratch,
    mut emit: impl FnMut(Window),
) {
    let n = text.len();
    let min = min_bytes.max(1);
    if n < min {
        return;
    }
    // A window is at most a chunk, 3 bytes and two walks back to a word edge longer than `min`;
    // the edges of a 64-byte word are found before their windows are made: the block sums that
    // far back are kept.
    let longest = MAX_CHUNK + 8 + 2 * MAX_WORD;
    let blocks = ((min + longest + 64) / BLOCK + 2).next_power_of_two();
    let Scratch {
        ring,
        lines,
        powers,
        powers_for,
    } = scratch;
    ring.clear();
    ring.resize(blocks, [0, 0]);
    lines.clear();
    let mask = blocks - 1;
    if *powers_for != min || powers.is_empty() {
        let first = (0..min).fold([1, 1], |acc, _| times(acc, BASES));
        *powers = (0..longest)
            .scan(first, |pw, _| {
                let this = *pw;
                *pw = times(*pw, BASES);
                Some(this)
            })
            .collect();
        *powers_for = min;
    }
    let powers = &powers[..];
    let char_start = |b: u8| (b & 0xc0) != 0x80;
    let sum_at = |i: usize, ring: &[[u64; 2]]| {
        let at = i - i % BLOCK;
        let prev = ring[(at / BLOCK) & mask];
        if at == i {
            prev
        } else {
            extend(prev, &text[at..i])
        }
    };
    let window = |s: usize, p: usize, end_sum: [u64; 2], ring: &[[u64; 2]]| {
        let (a, b) = (sum_at(s, ring), end_sum);
        let h = minus_shifted(b, a, powers[p - s - min]);
        let folded =
            (h[0] ^ h[1].rotate_left(29) ^ ((p - s) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Window {
            start: s,
            end: p,
            hash: folded ^ (folded >> 31),
        }
    };
    let mut open = 0;
    let mut edge = |last: usize, p: usize, ring: &[[u64; 2]]| {
        let end = word_edges::at_or_before(text, p).filter(|&e| e >= min);
        if let Some(e) = end {
            if let Some(s) = window_start(text, min, last, e) {
                emit(window(s, e, sum_at(e, ring), ring));
            }
        }
        line_windows(lines, &mut open, min, p, end, |l, e| {
            emit(window(l, e, sum_at(e, ring), ring))
        });
        if p < n && (p == 0 || text[p - 1] == b'\n') && is_edge(text, p) {
            lines.push(p);
        }
    };
    edge(0, 0, ring);
    let mut gear: u64 = 0;
    let mut last = 0;
    // Word by word of 64 places `i` (a chunk may end before byte `i`): the places whose gear hash
    // (of the bytes before `i`) or line says so, as bits, then the edges among them in order.
    let mut word_start = 0;
    while word_start < n {
        let word_end = (word_start + 64).min(n);
        // The block sums up to the word's last place.
        let mut k = word_start / BLOCK + 1;
        while k * BLOCK <= word_end {
            ring[k & mask] = extend(ring[(k - 1) & mask], &text[k * BLOCK - BLOCK..k * BLOCK]);
            k += 1;
        }
        let (mut strong, mut weak, mut starts) = (0u64, 0u64, 0u64);
        for i in word_start.max(1)..word_end {
            let b = text[i - 1];
            gear = (gear << 1).wrapping_add(GEAR[b as usize]);
            let j = i - word_start;
            strong |= u64::from(b == b'\n' || gear & MASK == 0) << j;
            weak |= u64::from(gear & EASY_MASK == 0) << j;
            starts |= u64::from(char_start(text[i])) << j;
        }
        loop {
            let found = starts
                & from(word_start, last + MIN_CHUNK)
                & (strong
                    | (weak & from(word_start, last + LONG_CHUNK))
                    | from(word_start, last + MAX_CHUNK));
            if found == 0 {
                break;
            }
            let i = word_start + found.trailing_zeros() as usize;
            edge(last, i, ring);
            last = i;
        }
        word_start = word_end;
    }
    edge(last, n, ring);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn all(text: &str, min: usize) -> Vec<Window> {
        let mut out = Vec::new();
        windows(text.as_bytes(), min, &mut Scratch::default(), &mut out);
        out
    }

    /// Some words from `seed`, varied enough for the chunker to find edges (mixed scripts, NUL).
    pub(crate) fn prose(seed: u64, words: usize) -> String {
        let vocab = [
            "the",
            "index",
            "keeps",
            "every",
            "night",
            "windows",
            "of",
            "text",
            "repeated",
            "bytes",
            "parquet",
            "shard",
            "crawl",
            "page",
            "near",
            "copy",
            "α",
            "字",
            "ไทย",
            "\u{0}",
        ];
        let mut s = seed;
        (0..words)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                vocab[(s >> 33) as usize % vocab.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The prefix sums byte by byte, as [`windows`] computed them before it kept them per block:
    /// the reference its output must equal.
    fn byte_by_byte(text: &[u8], min_bytes: usize, out: &mut Vec<Window>) {
        let n = text.len();
        let min = min_bytes.max(1);
        if n < min {
            return;
        }
        // A window is at most a chunk, 3 bytes and two walks to a word edge longer than `min`: the
        // prefix sums of that many last positions are kept.
        let longest = MAX_CHUNK + 8 + 2 * MAX_WORD;
        let size = (min + longest).next_power_of_two();
        let mut ring = vec![[0u64; 2]; size];
        let mut lines: Vec<usize> = Vec::new();
        let mask = size - 1;
        // BASES^len for each length a window may have, from `min` on.
        let powers: Vec<[u64; 2]> = (0..longest)
            .scan(
                [
                    (0..min).fold(1, |acc, _| mul_mod(acc, BASES[0])),
                    (0..min).fold(1u64, |acc, _| acc.wrapping_mul(BASES[1])),
                ],
                |pw, _| {
                    let this = *pw;
                    *pw = [mul_mod(pw[0], BASES[0]), pw[1].wrapping_mul(BASES[1])];
                    Some(this)
                },
            )
            .collect();
        let char_start = |b: u8| (b & 0xc0) != 0x80;
        let window = |s: usize, p: usize, ring: &[[u64; 2]]| {
            let (a, b) = (ring[s & mask], ring[p & mask]);
            let pw = powers[p - s - min];
            let x = b[0] + P - mul_mod(a[0], pw[0]);
            let h = [
                if x >= P { x - P } else { x },
                b[1].wrapping_sub(a[1].wrapping_mul(pw[1])),
            ];
            let folded = (h[0]
                ^ h[1].rotate_left(29)
                ^ ((p - s) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xbf58_476d_1ce4_e5b9);
            Window {
                start: s,
                end: p,
                hash: folded ^ (folded >> 31),
            }
        };
        // Lines' first edges whose window (to the first edge `min` bytes on) is not yet made.
        let mut open = 0;
        let mut gear: u64 = 0;
        let mut sums = [0u64; 2];
        let mut last = 0;
        let mut edge = |i: usize, last: usize, ring: &[[u64; 2]], out: &mut Vec<Window>| {
            let end = word_edges::at_or_before(text, i).filter(|&e| e >= min);
            if let Some(e) = end {
                if let Some(s) = window_start(text, min, last, e) {
                    out.push(window(s, e, ring));
                }
            }
            line_windows(&lines, &mut open, min, i, end, |l, e| {
                out.push(window(l, e, ring))
            });
            if i < n && (i == 0 || text[i - 1] == b'\n') && is_edge(text, i) {
                lines.push(i);
            }
        };
        edge(0, 0, &ring, out);
        for i in 1..=n {
            let b = text[i - 1];
            gear = (gear << 1).wrapping_add(GEAR[b as usize]);
            let x = mul_mod(sums[0], BASES[0]) + u64::from(b) + 1;
            sums = [
                if x >= P { x - P } else { x },
                sums[1]
                    .wrapping_mul(BASES[1])
                    .wrapping_add(u64::from(b) + 1),
            ];
            ring[i & mask] = sums;
            if i == n {
                edge(n, last, &ring, out);
                break;
            }
            let len = i - last;
            // A line starts a chunk (copied runs often start at a line); else the gear hash says.
            let m = if len >= LONG_CHUNK { EASY_MASK } else { MASK };
            let cut = b == b'\n' || gear & m == 0 || len >= MAX_CHUNK;
            if char_start(text[i]) && len >= MIN_CHUNK && cut {
                edge(i, last, &ring, out);
                last = i;
            }
        }
    }

    #[test]
    fn block_sums_give_the_byte_by_byte_windows_on_long_and_degenerate_texts() {
        let long = prose(7, 20_000);
        for (t, min) in [
            (long.as_str(), 200),
            (long.as_str(), 1000),
            (long.as_str(), 33),
            (&"a".repeat(5000), 200),
            (&"ab\n".repeat(3000), 64),
            (&"字".repeat(3000), 200),
        ] {
            let mut reference = Vec::new();
            byte_by_byte(t.as_bytes(), min, &mut reference);
            assert_eq!(all(t, min), reference, "min {min}");
        }
    }

    #[test]
    fn windows_hold_min_bytes_and_fall_on_character_boundaries() {
        let t = prose(1, 400);
        let w = all(&t, 64);
        assert!(!w.is_empty());
        for x in &w {
            assert!((64..64 + MAX_CHUNK + 8 + 2 * MAX_WORD).contains(&(x.end - x.start)));
            assert!(t.is_char_boundary(x.start) && t.is_char_boundary(x.end));
        }
        assert!(w.iter().any(|x| x.start == 0) && w.iter().any(|x| x.end == t.len()));
        assert!(all("short", 64).is_empty());
    }

    #[test]
    fn equal_bytes_hash_equal_and_other_bytes_do_not() {
        let t = prose(2, 300);
        let w = all(&t, 48);
        for x in &w {
            for y in &w {
                let same = t[x.start..x.end] == t[y.start..y.end];
                assert_eq!(same, x.hash == y.hash && x.end - x.start == y.end - y.start);
            }
        }
    }

    #[test]
    fn thue_morse_strings_collide_modulo_2_64_alone_but_not_in_the_window_hash() {
        let tm: String = (0..2048u32)
            .map(|i| if i.count_ones() % 2 == 0 { 'a' } else { 'b' })
            .collect();
        let flipped: String = tm
            .chars()
            .map(|c| if c == 'a' { 'b' } else { 'a' })
            .collect();
        let second = |t: &str| {
            t.bytes().fold(0u64, |h, b| {
                h.wrapping_mul(BASES[1]).wrapping_add(u64::from(b) + 1)
            })
        };
        assert_eq!(second(&tm), second(&flipped));
        // Each text's windows are all of it (the one ending at its end, the one from its line).
        let (a, b) = (all(&tm, 2048), all(&flipped, 2048));
        assert!(!a.is_empty() && !b.is_empty());
        assert!(a.iter().chain(&b).all(|w| (w.start, w.end) == (0, 2048)));
        assert!(a.iter().all(|x| b.iter().all(|y| x.hash != y.hash)));
    }

    #[test]
    fn a_run_repeated_inside_other_text_gives_the_same_windows_away_from_its_edges() {
        let run = prose(3, 120);
        let a = format!("{} {run} {}", prose(4, 30), prose(5, 30));
        let b = format!("{} {run} tail", prose(6, 7));
        let (wa, wb) = (all(&a, 100), all(&b, 100));
        let inner = |t: &str, w: &[Window]| -> Vec<(u64, String)> {
            let at = t.find(&run).unwrap();
            (w.iter())
                .filter(|x| x.start >= at + 16 && x.end <= at + run.len())
                .map(|x| (x.hash, t[x.start..x.end].to_string()))
                .collect()
        };
        let (ia, ib) = (inner(&a, &wa), inner(&b, &wb));
        assert!(ia.len() > 10, "{}", ia.len());
        assert_eq!(ia, ib);
    }

    #[test]
    fn degenerate_texts_are_cut_in_linear_time() {
        // One long word has no edge within reach: no window.
        assert!(all(&"a".repeat(1 << 20), 200).is_empty());
        for t in [
            "a ".repeat(1 << 19),
            "abc.".repeat(300_000),
            "\0".repeat(100_000),
            " \n".repeat(100_000),
            "字".repeat(200_000),
        ] {
            let w = all(&t, 200);
            // A window per chunk and one per line, chunks of at most MAX_CHUNK (+ a character).
            let lines = t.matches('\n').count() + 1;
            assert!(w.len() <= t.len() / MIN_CHUNK + lines);
            assert!(w.len() >= t.len() / (MAX_CHUNK + 4) - 64);
            assert!(w
                .iter()
                .all(|x| t.is_char_boundary(x.start) && t.is_char_boundary(x.end)));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 500,
            rng_seed: proptest::test_runner::RngSeed::Fixed(57),
            failure_persistence: None,
            ..Default::default()
        })]
        /// Any text: windows tile from each chunk start, hold at least the minimum, start and end
        /// on character boundaries, and the windows' hash is a function of their bytes.
        #[test]
        fn windows_of_any_text(s in "\\PC{0,300}|[ab\u{0}\u{e01}字]{0,400}", min in 32usize..80) {
            let w = all(&s, min);
            if s.len() < min {
                proptest::prop_assert!(w.is_empty());
            }
            for x in &w {
                proptest::prop_assert!(x.end - x.start >= min && x.end - x.start < min + MAX_CHUNK + 8 + 2 * MAX_WORD);
                proptest::prop_assert!(x.end <= s.len());
                proptest::prop_assert!(s.is_char_boundary(x.start) && s.is_char_boundary(x.end));
            }
            let mut reference = Vec::new();
            byte_by_byte(s.as_bytes(), min, &mut reference);
            proptest::prop_assert_eq!(&w, &reference);
            // Windows leave no gap between them, from the text's start to its end.
            let mut spans: Vec<(usize, usize)> = w.iter().map(|x| (x.start, x.end)).collect();
            spans.sort_unstable();
            proptest::prop_assert!(spans.windows(2).all(|p| p[1].0 <= p[0].1));
            if s.len() >= min {
                proptest::prop_assert_eq!(spans.first().map(|x| x.0), Some(0));
                proptest::prop_assert_eq!(spans.iter().map(|x| x.1).max(), Some(s.len()));
            }
            // A window's (hash, length) stands for its bytes: equal keys, equal bytes.
            let doubled = format!("{s}{s}");
            let w2 = all(&doubled, min);
            for x in &w2 {
                for y in &w {
                    if x.hash == y.hash && x.end - x.start == y.end - y.start {
                        proptest::prop_assert_eq!(&doubled[x.start..x.end], &s[y.start..y.end]);
                    }
                }
            }
        }
    }
}
