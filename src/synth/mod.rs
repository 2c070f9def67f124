//! Synthetic corpora with planted near-duplicates, for samples, tests and benchmarks.
//!
//! All text is generated here: English-like words are built from syllables, Chinese text from a
//! pool of common characters grouped into 1-3 character words. Each base document may get variants:
//! an exact copy, a noisy copy (case, punctuation, whitespace), light (1-3%), medium (5-10%) and
//! heavy (20-40%) token edits, and copies wrapped in web boilerplate. Output order is shuffled so
//! duplicates are spread over shards. Deterministic for a given seed.

use std::fmt::Write;

pub mod short;

/// Language of generated documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
    /// Each document mixes English and Chinese paragraphs.
    Mixed,
}

/// How a document was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Base,
    Exact,
    Noise,
    Light,
    Medium,
    Heavy,
    Boilerplate,
}

impl Kind {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Base => "base",
            Kind::Exact => "exact",
            Kind::Noise => "noise",
            Kind::Light => "light",
            Kind::Medium => "medium",
            Kind::Heavy => "heavy",
            Kind::Boilerplate => "boilerplate",
        }
    }
}

/// One generated document.
#[derive(Debug, Clone)]
pub struct Doc {
    pub id: String,
    pub text: String,
    /// Index of the base document it derives from (itself for a base).
    pub source: usize,
    pub kind: Kind,
}

/// A small deterministic PRNG (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::lsh::mix64(self.0)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ran", "te", "su", "vor", "en", "dal", "qui", "po", "ber", "ax", "nel",
    "sor", "tin", "ga", "fe", "lu", "mon", "ri", "che", "bo", "wen", "zy", "har", "ol", "pi",
    "des", "tra", "ve", "nu", "sa", "gro",
];

const HANZI: &str = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持音";

fn english_word(rng: &mut Rng) -> String {
    let n = 1 + rng.below(3);
    (0..n)
        .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
        .collect()
}

fn chinese_word(rng: &mut Rng, pool: &[char]) -> String {
    let n = 1 + rng.below(3);
    (0..n).map(|_| pool[rng.below(pool.len())]).collect()
}

/// A vocabulary of 3,000 English-like and 3,000 Chinese words with a Zipf-like draw.
struct Vocab {
    en: Vec<String>,
    zh: Vec<String>,
}

impl Vocab {
    fn new(rng: &mut Rng) -> Self {
        let pool: Vec<char> = HANZI.chars().collect();
        Vocab {
            en: (0..3000).map(|_| english_word(rng)).collect(),
            zh: (0..3000).map(|_| chinese_word(rng, &pool)).collect(),
        }
    }
    fn pick<'a>(words: &'a [String], rng: &mut Rng) -> &'a str {
        // Squaring a uniform draw favours low ranks: frequent words recur, as in real text.
        let u = rng.unit();
        &words[((u * u) * words.len() as f64) as usize]
    }
}

/// Tokens of a generated document: (token, is_chinese).
type Tokens = Vec<(String, bool)>;

fn base_tokens(lang: Lang, rng: &mut Rng, vocab: &Vocab) -> Tokens {
    let len = 80 + rng.below(400);
    let mut zh = match lang {
        Lang::En => false,
        Lang::Zh => true,
        Lang::Mixed => rng.below(2) == 0,
    };
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        if lang == Lang::Mixed && i % 60 == 59 {
            zh = !zh;
        }
        let w = if zh {
            Vocab::pick(&vocab.zh, rng)
        } else {
            Vocab::pick(&vocab.en, rng)
        };
        out.push((w.to_string(), zh));
    }
    out
}

fn render(tokens: &Tokens, noisy: bool, rng: &mut Rng) -> String {
    let mut s = String::new();
    for (i, (t, zh)) in tokens.iter().enumerate() {
        let end_sentence = i % 13 == 12;
        if *zh {
            s.push_str(t);
            if end_sentence {
                s.push_str(if noisy && rng.below(2) == 0 {
                    "！"
                } else {
                    "。"
                });
            } else if i % 5 == 4 {
                s.push('，');
            }
        } else {
            if !s.is_empty() && !s.ends_with(' ') && !s.ends_with('\n') {
                s.push(' ');
            }
            if noisy && rng.below(10) == 0 {
                s.push_str(&t.to_uppercase());
            } else if i % 13 == 0 {
                let mut c = t.chars();
                if let Some(f) = c.next() {
                    s.extend(f.to_uppercase());
                    s.push_str(c.as_str());
                }
            } else {
                s.push_str(t);
            }
            if end_sentence {
                s.push_str(if noisy { " ." } else { "." });
            } else if i % 7 == 6 {
                s.push(',');
            }
            if noisy && rng.below(8) == 0 {
                s.push_str("  ");
            }
        }
        if i % 50 == 49 {
            s.push('\n');
        }
    }
    s
}

fn edit(tokens: &Tokens, rate: f64, rng: &mut Rng, vocab: &Vocab) -> Tokens {
    let mut out = Tokens::with_capacity(tokens.len());
    for (t, zh) in tokens {
        if rng.unit() >= rate {
            out.push((t.clone(), *zh));
            continue;
        }
        let words = if *zh { &vocab.zh } else { &vocab.en };
        match rng.below(3) {
            0 => {}                                                    // delete
            1 => out.push((Vocab::pick(words, rng).to_string(), *zh)), // substitute
            _ => {
                out.push((t.clone(), *zh));
                out.push((Vocab::pick(words, rng).to_string(), *zh)); // insert
            }
        }
    }
    out
}

/// Generates `n` documents of `lang` (about 45% of them variants of earlier ones) with ids
/// `{prefix}-{i:06}`, shuffled.
pub fn generate(n: usize, lang: Lang, seed: u64, prefix: &str) -> Vec<Doc> {
    let mut rng = Rng::new(seed);
    let vocab = Vocab::new(&mut rng);
    let mut bases: Vec<Tokens> = Vec::new();
    let mut docs: Vec<Doc> = Vec::with_capacity(n);
    while docs.len() < n {
        if bases.is_empty() || rng.unit() < 0.55 {
            let t = base_tokens(lang, &mut rng, &vocab);
            docs.push(Doc {
                id: String::new(),
                text: render(&t, false, &mut rng),
                source: bases.len(),
                kind: Kind::Base,
            });
            bases.push(t);
            continue;
        }
        let src = rng.below(bases.len());
        let base = &bases[src];
        let (kind, text) = match rng.below(7) {
            0 => (Kind::Exact, render(base, false, &mut rng)),
            1 => (Kind::Noise, render(base, true, &mut rng)),
            2 | 3 => {
                let r = 0.01 + 0.02 * rng.unit();
                (
                    Kind::Light,
                    render(&edit(base, r, &mut rng, &vocab), false, &mut rng),
                )
            }
            4 => {
                let r = 0.05 + 0.05 * rng.unit();
                (
                    Kind::Medium,
                    render(&edit(base, r, &mut rng, &vocab), false, &mut rng),
                )
            }
            5 => {
                let r = 0.2 + 0.2 * rng.unit();
                (
                    Kind::Heavy,
                    render(&edit(base, r, &mut rng, &vocab), false, &mut rng),
                )
            }
            _ => {
                let mut s = String::from("Home | News | About us | Contact\n");
                s.push_str(&render(base, false, &mut rng));
                s.push_str("\nCopyright all rights reserved. Privacy policy. Terms of use.");
                (Kind::Boilerplate, s)
            }
        };
        docs.push(Doc {
            id: String::new(),
            text,
            source: src,
            kind,
        });
    }
    // Fisher-Yates shuffle, then ids in final order.
    for i in (1..docs.len()).rev() {
        let j = rng.below(i + 1);
        docs.swap(i, j);
    }
    for (i, d) in docs.iter_mut().enumerate() {
        let mut id = String::with_capacity(prefix.len() + 8);
        let _ = write!(id, "{prefix}-{i:06}");
        d.id = id;
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = generate(50, Lang::Mixed, 3, "m");
        let b = generate(50, Lang::Mixed, 3, "m");
        assert_eq!(a.len(), 50);
        assert!(a
            .iter()
            .zip(&b)
            .all(|(x, y)| x.text == y.text && x.id == y.id));
        assert!(a.iter().any(|d| d.kind != Kind::Base));
        assert!(a
            .iter()
            .any(|d| d.text.chars().any(crate::text::tokenize::is_han)));
        assert!(a
            .iter()
            .any(|d| d.text.contains(|c: char| c.is_ascii_alphabetic())));
    }
}
