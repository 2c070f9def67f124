//! The tokenisations weighed for scripts written without spaces: see run.sh.
use icu_properties::props::{LineBreak, Script};
use icu_properties::CodePointMapData;
use icu_segmenter::options::WordBreakInvariantOptions;
use icu_segmenter::WordSegmenter;
use std::collections::{HashMap, HashSet};
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
use unicode_segmentation::UnicodeSegmentation;

fn norm(s: &str) -> String {
    let mut o = String::new();
    for c in s.nfkc() {
        if c == '\u{200B}' {
            o.push(' ');
            continue;
        }
        if matches!(
            c,
            '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{00AD}' | '\u{FEFF}'
        ) {
            continue;
        }
        for l in c.to_lowercase() {
            o.push(
                if l.general_category_group() == GeneralCategoryGroup::Punctuation
                    || l.is_whitespace()
                {
                    ' '
                } else {
                    l
                },
            );
        }
    }
    o
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF)
}

#[derive(Clone, Copy, PartialEq, Debug)]
/// Today: whitespace words; Cp: a code point per token; Cluster: UAX #29 grapheme clusters;
/// Marks: a character with its combining marks (what corpus-dedup does); Dict and Auto: ICU4X
/// word segmenter, dictionary and LSTM models. CJK characters are tokens in every mode.
enum Mode {
    Today,
    Cp,
    Cluster,
    Marks,
    Dict,
    Auto,
}

fn sa(c: char) -> bool {
    CodePointMapData::<LineBreak>::new().get(c) == LineBreak::ComplexContext
}

fn toks(text: &str, mode: Mode, out: &mut Vec<String>) {
    out.clear();
    let dict = WordSegmenter::new_dictionary(WordBreakInvariantOptions::default());
    let auto = WordSegmenter::new_auto(WordBreakInvariantOptions::default());
    for w in text.split(' ').filter(|w| !w.is_empty()) {
        // split into runs: cjk char, SA run, other run
        let mut start = 0;
        let cs: Vec<(usize, char)> = w.char_indices().collect();
        let mut i = 0;
        while i < cs.len() {
            let (bi, c) = cs[i];
            if is_cjk(c) {
                if start < bi {
                    out.push(w[start..bi].to_string());
                }
                out.push(c.to_string());
                start = bi + c.len_utf8();
                i += 1;
            } else if mode != Mode::Today && sa(c) {
                if start < bi {
                    out.push(w[start..bi].to_string());
                }
                let mut j = i;
                while j < cs.len()
                    && (sa(cs[j].1)
                        || cs[j].1.general_category_group() == GeneralCategoryGroup::Mark)
                {
                    j += 1;
                }
                let end = if j < cs.len() { cs[j].0 } else { w.len() };
                let run = &w[bi..end];
                match mode {
                    Mode::Cp => {
                        for c in run.chars() {
                            out.push(c.to_string())
                        }
                    }
                    Mode::Cluster => {
                        for g in run.graphemes(true) {
                            out.push(g.to_string())
                        }
                    }
                    Mode::Marks => {
                        let mut s = 0;
                        for (k, c) in run.char_indices() {
                            if k > s && c.general_category_group() != GeneralCategoryGroup::Mark {
                                out.push(run[s..k].to_string());
                                s = k;
                            }
                        }
                        if s < run.len() {
                            out.push(run[s..].to_string());
                        }
                    }
                    Mode::Dict | Mode::Auto => {
                        let seg = if mode == Mode::Dict { &dict } else { &auto };
                        let b: Vec<usize> = seg.segment_str(run).collect();
                        for p in b.windows(2) {
                            out.push(run[p[0]..p[1]].to_string())
                        }
                    }
                    Mode::Today => unreachable!(),
                }
                start = end;
                i = j;
            } else {
                i += 1;
            }
        }
        if start < w.len() {
            out.push(w[start..].to_string());
        }
    }
}

fn shingles(t: &[String]) -> HashSet<String> {
    if t.len() < 5 {
        return [t.join("\u{1}")].into_iter().collect();
    }
    t.windows(5).map(|w| w.join("\u{1}")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut texts = HashMap::new();
    let mut langs = HashMap::new();
    for line in std::fs::read_to_string(&args[1]).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_str().unwrap().to_string();
        langs.insert(id.clone(), v["lang"].as_str().unwrap().to_string());
        texts.insert(id, norm(v["text"].as_str().unwrap()));
    }
    let pairs = std::fs::read_to_string(&args[2]).unwrap();
    let modes = [
        Mode::Today,
        Mode::Cp,
        Mode::Cluster,
        Mode::Marks,
        Mode::Dict,
        Mode::Auto,
    ];
    println!("lang\tchar5\tmode\tJ");
    let mut v = Vec::new();
    for line in pairs.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (lang, a, b, c5) = (f[0], f[4], f[5], f[9]);
        for m in modes {
            toks(&texts[a], m, &mut v);
            let sa_ = shingles(&v);
            toks(&texts[b], m, &mut v);
            let sb = shingles(&v);
            let i = sa_.intersection(&sb).count() as f64;
            let u = sa_.union(&sb).count() as f64;
            println!("{lang}\t{c5}\t{m:?}\t{:.4}", i / u);
        }
    }
    // speed on Thai / km / my texts
    for lang in ["th", "km", "my"] {
        let all: String = texts
            .iter()
            .filter(|(k, _)| langs[*k] == lang)
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        for m in modes {
            let t0 = std::time::Instant::now();
            let mut n = 0;
            for _ in 0..3 {
                toks(&all, m, &mut v);
                n += v.len();
            }
            let s = t0.elapsed().as_secs_f64();
            eprintln!(
                "speed {lang} {m:?}: {:.1} MB/s ({} tokens)",
                3.0 * all.len() as f64 / s / 1e6,
                n / 3
            );
        }
    }
}
