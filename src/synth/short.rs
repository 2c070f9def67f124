//! Short documents at any scale, for `make bench-scale`: web-post-sized texts (150-600 bytes,
//! median ~300) in seven scripts, with exact copies and planted variants at known rates.
//!
//! Document `i` is a pure function of the seed and `i`, so shards are made in parallel and in any
//! order, and nothing is held but the shard being written. Of all documents:
//!
//! | kind  | share | what                                                        | planted |
//! |-------|-------|-------------------------------------------------------------|---------|
//! | base  | 80%   | new text                                                    | no      |
//! | exact | 5%    | a byte-for-byte copy of an earlier base                     | yes     |
//! | noise | 3%    | an earlier base with other case and spacing                 | if J >= threshold |
//! | near  | 6%    | an earlier base with its last word replaced                 | if J >= threshold |
//! | mid   | 3%    | an earlier base with about one word in 25 replaced          | if J >= threshold |
//! | far   | 3%    | an earlier base with about one word in 3 replaced           | if J >= threshold |
//!
//! `similarity` is the exact Jaccard of a variant's shingle set and its base's, as a run
//! computes it (the job's own normaliser and tokeniser, 5-grams by default), so `planted` (a
//! variant at or above the threshold: the keeper rule drops it, its base coming first) is exact
//! truth for the planted pairs. Unrelated bases share almost no shingle, so any other drop is a
//! false one.

use rayon::prelude::*;

use super::{Rng, HANZI, SYLLABLES};
use crate::config::Tokenizer;
use crate::lsh::mix64;
use crate::text::sets::jaccard;
use crate::text::shingle::{shingle_set, Scratch};

/// How a short document was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortKind {
    Base,
    Exact,
    Noise,
    Near,
    Mid,
    Far,
}

impl ShortKind {
    /// Lowercase name, as written in the `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            ShortKind::Base => "base",
            ShortKind::Exact => "exact",
            ShortKind::Noise => "noise",
            ShortKind::Near => "near",
            ShortKind::Mid => "mid",
            ShortKind::Far => "far",
        }
    }

    /// Every kind, in column order.
    pub const ALL: [ShortKind; 6] = [
        ShortKind::Base,
        ShortKind::Exact,
        ShortKind::Noise,
        ShortKind::Near,
        ShortKind::Mid,
        ShortKind::Far,
    ];
}

/// One generated short document.
#[derive(Debug, Clone)]
pub struct ShortDoc {
    pub text: String,
    pub kind: ShortKind,
    /// Position of the base it derives from (its own for a base).
    pub source: u64,
    /// Exact Jaccard to its base (1 for a base).
    pub similarity: f64,
    /// A variant the keeper rule must drop: similarity at or above the threshold.
    pub planted: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Cyrillic,
    Greek,
    Arabic,
    Hangul,
    Han,
    Thai,
}

impl Script {
    // Shares per 100 bases.
    const WEIGHTS: [(Script, u64); 7] = [
        (Script::Latin, 40),
        (Script::Han, 20),
        (Script::Cyrillic, 10),
        (Script::Arabic, 8),
        (Script::Hangul, 8),
        (Script::Thai, 8),
        (Script::Greek, 6),
    ];

    fn pick(h: u64) -> Script {
        let mut r = h % 100;
        for (s, w) in Self::WEIGHTS {
            if r < w {
                return s;
            }
            r -= w;
        }
        Script::Latin
    }

    /// Written without spaces between words (every character its own token).
    fn unspaced(self) -> bool {
        matches!(self, Script::Han | Script::Thai)
    }
}

const CYRILLIC: &[&str] = &[
    "ка", "ло", "ми", "ран", "те", "су", "вор", "ен", "дал", "по", "бер", "нел", "сор", "тин",
    "га", "фе", "лу", "мон", "ри", "че", "бо", "вен", "хар", "ол", "пи", "дес", "тра", "ве",
];
const GREEK: &[&str] = &[
    "κα", "λο", "μι", "ραν", "τε", "συ", "βορ", "εν", "δαλ", "πο", "θε", "νελ", "σορ", "τιν", "γα",
    "φε", "λυ", "μον", "ρι", "χε", "βο", "ξεν", "αρ", "ολ", "πι", "δες",
];
const ARABIC: &[&str] = &[
    "كا", "لو", "مي", "ران", "تي", "سو", "بر", "ين", "دال", "بو", "نل", "سر", "تن", "غا", "في",
    "لم", "ري", "شي", "هر", "ول", "دس", "ترا", "وي", "نو",
];
const THAI_VOWELS: &[&str] = &["", "า", "ิ", "ี", "ุ", "ู", "ะ", "ั"];

/// Per script, 4,000 words drawn once from the seed.
struct Vocab {
    words: Vec<Vec<String>>,
}

impl Vocab {
    fn new(seed: u64) -> Vocab {
        let han: Vec<char> = HANZI.chars().collect();
        let words = Script::WEIGHTS
            .iter()
            .map(|&(s, _)| {
                let mut rng = Rng::new(seed ^ mix64(s as u64 + 1));
                (0..4000).map(|_| word(s, &mut rng, &han)).collect()
            })
            .collect();
        Vocab { words }
    }

    fn of(&self, s: Script) -> &[String] {
        let i = Script::WEIGHTS
            .iter()
            .position(|&(x, _)| x == s)
            .unwrap_or(0);
        &self.words[i]
    }

    /// A word of `s`, frequent ones more often (a squared uniform draw favours low ranks).
    fn pick(&self, s: Script, rng: &mut Rng) -> &str {
        let words = self.of(s);
        let u = rng.unit();
        &words[((u * u) * words.len() as f64) as usize]
    }
}

fn word(s: Script, rng: &mut Rng, han: &[char]) -> String {
    let syllables = 1 + rng.below(3);
    let mut w = String::new();
    for _ in 0..syllables {
        match s {
            Script::Latin => w.push_str(SYLLABLES[rng.below(SYLLABLES.len())]),
            Script::Cyrillic => w.push_str(CYRILLIC[rng.below(CYRILLIC.len())]),
            Script::Greek => w.push_str(GREEK[rng.below(GREEK.len())]),
            Script::Arabic => w.push_str(ARABIC[rng.below(ARABIC.len())]),
            Script::Hangul => w.extend(char::from_u32(0xAC00 + rng.below(11172) as u32)),
            Script::Han => w.push(han[rng.below(han.len())]),
            Script::Thai => {
                w.extend(char::from_u32(0x0E01 + rng.below(46) as u32));
                w.push_str(THAI_VOWELS[rng.below(THAI_VOWELS.len())]);
            }
        }
    }
    w
}

/// The generator: its seed, vocabularies and the threshold `planted` is judged at.
pub struct ShortCorpus {
    /// The threshold and shingle size the truth is measured at.
    pub threshold: f64,
    pub ngram: usize,
    seed: u64,
    vocab: Vocab,
}

impl ShortCorpus {
    /// A generator for `seed`, labelling variants at `threshold` over `ngram`-shingles.
    pub fn new(seed: u64, threshold: f64, ngram: usize) -> ShortCorpus {
        ShortCorpus {
            seed,
            vocab: Vocab::new(seed),
            threshold,
            ngram,
        }
    }

    fn hash(&self, i: u64, salt: u64) -> u64 {
        mix64(mix64(self.seed ^ mix64(i)) ^ salt)
    }

    /// What document `i` is (document 0 is always a base).
    pub fn kind(&self, i: u64) -> ShortKind {
        if i == 0 {
            return ShortKind::Base;
        }
        match self.hash(i, 0) % 100 {
            0..=79 => ShortKind::Base,
            80..=84 => ShortKind::Exact,
            85..=87 => ShortKind::Noise,
            88..=93 => ShortKind::Near,
            94..=96 => ShortKind::Mid,
            _ => ShortKind::Far,
        }
    }

    /// The earlier base a variant at `i` derives from: a uniform draw below `i`, drawn again
    /// until it lands on a base (4 in 5 do).
    fn source(&self, i: u64) -> u64 {
        (1..)
            .map(|t| self.hash(i, t) % i)
            .find(|&j| self.kind(j) == ShortKind::Base)
            .unwrap_or(0)
    }

    /// The words of base `j`, and its script: 150-600 bytes, log-uniform (median ~300).
    fn base_words(&self, j: u64) -> (Script, Vec<&str>) {
        let mut rng = Rng::new(self.hash(j, u64::MAX));
        let script = Script::pick(rng.next_u64());
        let target = (300.0 * 2f64.powf(2.0 * rng.unit() - 1.0)) as usize;
        let (mut words, mut bytes) = (Vec::new(), 0);
        while bytes < target {
            let w = self.vocab.pick(script, &mut rng);
            bytes += w.len() + usize::from(!script.unspaced());
            words.push(w);
        }
        (script, words)
    }

    /// Document `i`'s kind, base, base text and text.
    fn made(&self, i: u64) -> (ShortKind, u64, String, String) {
        let kind = self.kind(i);
        let source = if kind == ShortKind::Base {
            i
        } else {
            self.source(i)
        };
        let (script, base) = self.base_words(source);
        let base_text = render(script, &base, None);
        let mut rng = Rng::new(self.hash(i, 1 << 40));
        let replace = |rate: f64, rng: &mut Rng| -> Vec<&str> {
            let mut words = base.clone();
            let last = words.len() - 1;
            for (k, w) in words.iter_mut().enumerate() {
                // `rate` 0 replaces the last word alone; a replacement differs from the word.
                if (rate == 0.0 && k == last) || (rate > 0.0 && rng.unit() < rate) {
                    let old = *w;
                    while *w == old {
                        *w = self.vocab.pick(script, rng);
                    }
                }
            }
            words
        };
        let text = match kind {
            ShortKind::Base | ShortKind::Exact => base_text.clone(),
            ShortKind::Noise => render(script, &base, Some(&mut rng)),
            ShortKind::Near => render(script, &replace(0.0, &mut rng), None),
            ShortKind::Mid => render(script, &replace(0.04, &mut rng), None),
            ShortKind::Far => render(script, &replace(0.33, &mut rng), None),
        };
        (kind, source, base_text, text)
    }

    /// Document `i`'s text and facts; `scratch` is reused between calls.
    pub fn doc(&self, i: u64, scratch: &mut Scratch) -> ShortDoc {
        let (kind, source, base_text, text) = self.made(i);
        let similarity = match kind {
            ShortKind::Base | ShortKind::Exact => 1.0,
            _ => self.jaccard(&base_text, &text, scratch),
        };
        ShortDoc {
            planted: kind != ShortKind::Base && similarity >= self.threshold,
            text,
            kind,
            source,
            similarity,
        }
    }

    /// Documents `range`, made in parallel.
    pub fn docs(&self, range: std::ops::Range<u64>) -> Vec<ShortDoc> {
        range
            .into_par_iter()
            .map_init(Scratch::default, |scratch, i| self.doc(i, scratch))
            .collect()
    }

    /// The exact Jaccard of documents `i` and `j`, as the planted truth measures it.
    pub fn similarity(&self, i: u64, j: u64, scratch: &mut Scratch) -> f64 {
        let (a, b) = (self.made(i).3, self.made(j).3);
        self.jaccard(&a, &b, scratch)
    }

    fn jaccard(&self, a: &str, b: &str, scratch: &mut Scratch) -> f64 {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        shingle_set(a, Tokenizer::Auto, self.ngram, scratch, &mut x);
        shingle_set(b, Tokenizer::Auto, self.ngram, scratch, &mut y);
        if x.is_empty() && y.is_empty() {
            return 1.0;
        }
        jaccard(&x, &y)
    }
}

/// Words as text: a sentence mark every 12 words, spaces between words where the script has
/// them. With `noise`, a case and spacing change that the job's normaliser undoes.
fn render(script: Script, words: &[&str], mut noise: Option<&mut Rng>) -> String {
    let mut s = String::with_capacity(words.len() * 8);
    for (k, w) in words.iter().enumerate() {
        if k > 0 && !script.unspaced() {
            s.push(' ');
            if let Some(rng) = noise.as_deref_mut() {
                if rng.below(6) == 0 {
                    s.push(' ');
                }
            }
        }
        let upper = noise.as_deref_mut().is_some_and(|rng| rng.below(5) == 0);
        if upper {
            s.push_str(&w.to_uppercase());
        } else {
            s.push_str(w);
        }
        if k % 12 == 11 {
            s.push_str(match script {
                Script::Han => "。",
                Script::Thai => " ",
                _ => ".",
            });
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pure_function_of_seed_and_position() {
        let g = ShortCorpus::new(7, 0.8, 5);
        let a = g.docs(0..400);
        let b: Vec<ShortDoc> = (0..400)
            .rev()
            .map(|i| g.doc(i, &mut Scratch::default()))
            .collect();
        assert!(a.iter().zip(b.iter().rev()).all(|(x, y)| x.text == y.text));
        assert_ne!(a[1].text, ShortCorpus::new(8, 0.8, 5).docs(0..2)[1].text);
    }

    #[test]
    fn kinds_rates_sizes_and_truth() {
        let g = ShortCorpus::new(3, 0.8, 5);
        let docs = g.docs(0..20_000);
        let share = |k: ShortKind| docs.iter().filter(|d| d.kind == k).count() as f64 / 20_000.0;
        assert!((share(ShortKind::Base) - 0.80).abs() < 0.02);
        assert!((share(ShortKind::Near) - 0.06).abs() < 0.01);
        let mut sizes: Vec<usize> = docs.iter().map(|d| d.text.len()).collect();
        sizes.sort_unstable();
        let median = sizes[sizes.len() / 2];
        assert!((250..=380).contains(&median), "median {median}");
        for d in &docs {
            assert_eq!(g.kind(d.source), ShortKind::Base);
            assert_eq!(d.planted, d.kind != ShortKind::Base && d.similarity >= 0.8);
            if d.kind == ShortKind::Exact {
                assert_eq!(d.text, docs[d.source as usize].text);
            }
        }
        // Case and spacing are undone by the normaliser, a last word rarely matters; but a Greek
        // word ending in a capital sigma lowercases to the non-final form, and a replaced last
        // word of a short Thai text is several tokens.
        let planted = |k: ShortKind| {
            let of: Vec<&ShortDoc> = docs.iter().filter(|d| d.kind == k).collect();
            of.iter().filter(|d| d.planted).count() as f64 / of.len() as f64
        };
        assert!(planted(ShortKind::Noise) > 0.95 && planted(ShortKind::Near) > 0.98);
        // A third of the words replaced leaves few of a text's shingles (a short one may keep
        // enough by chance).
        assert!(planted(ShortKind::Far) < 0.01);
        // Mid variants straddle the threshold, on both sides.
        let mid: Vec<&ShortDoc> = docs.iter().filter(|d| d.kind == ShortKind::Mid).collect();
        assert!(mid.iter().any(|d| d.planted) && mid.iter().any(|d| !d.planted));
        // Seven scripts, spaced and unspaced.
        let has = |f: fn(char) -> bool| docs.iter().any(|d| d.text.chars().any(f));
        assert!(has(|c| ('\u{0E01}'..='\u{0E2E}').contains(&c)));
        assert!(has(|c| ('\u{AC00}'..='\u{D7A3}').contains(&c)));
        assert!(has(|c| ('\u{0400}'..='\u{04FF}').contains(&c)));
        assert!(has(crate::text::tokenize::is_han));
    }
}
