//! Kernel benchmarks: the throughput of each hot step on real text, one thread.
//!
//! usage: cargo run --release --example kernels -- [SHARD_GLOB]   (make bench-kernels)
//! Default input: ../shared/corpus/dev-small/shard-*.parquet. Each step runs on the whole corpus
//! (or its output) three times; the best time is reported as MB/s of input text (docs/s, items/s
//! where text size is not the unit). `--signature-path`: only the kernels every run goes through;
//! `--scaling`: those kernels on one thread and on two, alternated (`make bench-ratios`).

use std::time::Instant;

use polars::prelude::StringChunked;

use corpus_dedup::config::{Keep, Settings, Sketch, Tokenizer};
use corpus_dedup::kernels::band_keys;
use corpus_dedup::kernels::expand_inputs;
use corpus_dedup::kernels::normalize_into;
use corpus_dedup::kernels::pairs_of_rows;
use corpus_dedup::kernels::shingle::{
    ngrams, shingle_hashes, shingle_key, token_hashes as shingle_token_hashes, Scratch,
};
use corpus_dedup::kernels::signatures_only;
use corpus_dedup::kernels::tokenize;
use corpus_dedup::kernels::Clusters;
use corpus_dedup::kernels::Corpus;
use corpus_dedup::kernels::UnionFind;
use corpus_dedup::kernels::{jaccard, KeyTable};
use corpus_dedup::kernels::{paragraphs, ParagraphScratch};
use corpus_dedup::kernels::{substring_windows, WindowScratch};
use corpus_dedup::kernels::{Permutations, Signatures};

/// The sum of `f` over the texts (what a step made, for its rate).
fn total(texts: &[&str], mut f: impl FnMut(&str) -> usize) -> usize {
    texts.iter().map(|t| f(t)).sum()
}

fn best<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("ran three times"))
}

fn main() -> anyhow::Result<()> {
    // `--signature-path`: only the kernels every run goes through, and their sum (`make
    // bench-ratios` alternates this with whole runs).
    let path_only = std::env::args().any(|a| a == "--signature-path");
    // `--scaling`: how much faster two threads make the signature kernels alone (no I/O, no
    // serial part): the ceiling of a whole run's two-thread speed-up on this machine.
    let scaling = std::env::args().any(|a| a == "--scaling");
    let glob = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "../shared/corpus/dev-small/shard-*.parquet".into());
    let cfg = Settings {
        input: vec![glob.clone()],
        output: Some("/tmp/unused".into()),
        ..Default::default()
    }
    .resolve()?;
    let files = expand_inputs(&cfg.input)?;
    let (t_read, corpus) = best(|| Corpus::load(&files, &cfg, |_| {}));
    let corpus = corpus?;
    let texts: Vec<&str> = (0..corpus.len() as u32)
        .filter_map(|d| corpus.text(d))
        .collect();
    let mb = texts.iter().map(|t| t.len()).sum::<usize>() as f64 / 1e6;
    let n = texts.len();
    if scaling {
        return two_thread_scaling(&texts);
    }
    println!("input: {glob}: {n} docs, {mb:.1} MB of text, 1 thread\n");
    println!("| step | seconds | MB/s of text | other rate |");
    println!("|---|---|---|---|");
    let row = |name: &str, s: f64, other: String| {
        println!("| {name} | {s:.3} | {:.0} | {other} |", mb / s)
    };
    row(
        "Parquet read + decode (polars)",
        t_read,
        format!("{:.0} docs/s", n as f64 / t_read),
    );
    // The same, one file at a time, each dropped before the next (as a signatures task holds a
    // chunk, not the corpus): the first row also pays for mapping fresh memory for all of it.
    let (t_each, _) = best(|| -> anyhow::Result<()> {
        for f in &files {
            drop(Corpus::load(std::slice::from_ref(f), &cfg, |_| {})?);
        }
        Ok(())
    });
    row(
        "Parquet read + decode, one file at a time (memory reused)",
        t_each,
        format!("{:.0} docs/s", n as f64 / t_each),
    );

    if !path_only {
        steps(&texts, &row);
    }

    let mut scratch = Scratch::default();
    let mut hashes = Vec::new();
    let (t_shingle, count) = best(|| {
        total(&texts, |t| {
            shingle_hashes(t, Tokenizer::Chars, 5, &mut scratch, &mut hashes);
            hashes.len()
        })
    });
    row(
        "shingle hashes of a text (normalise + tokenise chars + hash + 5-grams)",
        t_shingle,
        format!("{:.0} M shingles/s", count as f64 / t_shingle / 1e6),
    );
    let shingles: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| {
            let mut v = Vec::new();
            shingle_hashes(t, Tokenizer::Chars, 5, &mut scratch, &mut v);
            v.iter().map(|&h| shingle_key(h)).collect()
        })
        .collect();
    let total_shingles: usize = shingles.iter().map(Vec::len).sum();
    let perms = Permutations::new(128, 42);
    let mut sig = vec![0u32; 128];
    if !path_only {
        let (t, _) = best(|| {
            for s in &shingles {
                perms.signature(s, &mut sig);
            }
        });
        row(
            "MinHash K=128 over shingle keys",
            t,
            format!(
                "{:.1} M shingles/s, {:.2} G hash-min/s",
                total_shingles as f64 / t / 1e6,
                total_shingles as f64 * 128.0 / t / 1e9
            ),
        );
    }
    let oph = Permutations::with_sketch(128, 42, Sketch::Oph);
    let (t_oph, _) = best(|| {
        for s in &shingles {
            oph.signature(s, &mut sig);
        }
    });
    row(
        "MinHash K=128, one-permutation (--sketch oph, the default)",
        t_oph,
        format!("{:.1} M shingles/s", total_shingles as f64 / t_oph / 1e6),
    );
    // The same two steps as one column kernel, as the signatures stage and the Python package's
    // minhash() run them: per batch of 64 texts, each text's keys made, then its signature.
    let column: StringChunked = texts.iter().map(|t| Some(*t)).collect();
    let (t_column, _) = best(|| signatures_only(&column, &oph, Tokenizer::Chars, 5));
    row(
        "signatures of a text column (shingle hashes + keys + MinHash oph, batches of 64)",
        t_column,
        format!("{:.0} docs/s", n as f64 / t_column),
    );
    // The kernels no run can skip, at the default settings: `make bench` divides a one-thread
    // run's wall time by this sum.
    let path = t_read + t_shingle + t_oph;
    println!(
        "\nsignature-path kernels: read + decode {t_read:.3} s + shingle hashes {t_shingle:.3} s + MinHash (oph) {t_oph:.3} s = {path:.3} s; as one column kernel {t_column:.3} s\n"
    );
    if path_only {
        return Ok(());
    }

    let mut values = vec![0u32; n * 128];
    for (i, s) in shingles.iter().enumerate() {
        perms.signature(s, &mut values[i * 128..(i + 1) * 128]);
    }
    let sigs = Signatures {
        k: 128,
        values,
        shingles: shingles.iter().map(|s| s.len() as u32).collect(),
    };
    // Band keys and rows as the signatures task makes them, pairs as the candidates task does.
    let (t, keys) = best(|| {
        let mut keys = vec![0u64; n * 18];
        for (d, out) in keys.chunks_mut(18).enumerate() {
            band_keys(sigs.get(d as u32), 7, out);
        }
        keys
    });
    row(
        "band keys 18 x 7",
        t,
        format!("{:.1} M docs/s", n as f64 / t / 1e6),
    );
    // All bands in one call: the band goes into the bucket's top bits.
    let rows: Vec<(u64, u64)> = keys
        .chunks(18)
        .enumerate()
        .flat_map(|(d, ks)| {
            ks.iter()
                .enumerate()
                .map(move |(b, &k)| ((k >> 5) | ((b as u64) << 59), d as u64))
        })
        .collect();
    let (t, pairs) = best(|| pairs_of_rows(rows.clone(), 64, None, false));
    let (pairs, _, _) = pairs;
    row(
        "candidates: group by (band, bucket) + pairs",
        t,
        format!("{:.1} M rows/s", rows.len() as f64 / t / 1e6),
    );

    // Exact sets of every document from its keys, as verification builds those it needs.
    let (t, sets) = best(|| {
        let mut sets: Vec<Vec<u32>> = shingles.clone();
        for s in &mut sets {
            s.sort_unstable();
            s.dedup();
        }
        sets
    });
    row(
        "exact sets: sort + dedup keys (all documents)",
        t,
        format!("{:.1} M keys/s", total_shingles as f64 / t / 1e6),
    );
    let (t, _) = best(|| {
        pairs
            .iter()
            .filter(|&&(a, b)| jaccard(&sets[a as usize], &sets[b as usize]) >= 0.8)
            .count()
    });
    row(
        "exact Jaccard of candidate pairs (sorted-set merge)",
        t,
        format!(
            "{:.2} M pairs/s ({} pairs)",
            pairs.len() as f64 / t / 1e6,
            pairs.len()
        ),
    );

    let (t, _) = best(|| {
        let mut table = KeyTable::default();
        pairs
            .iter()
            .filter(|&&(a, b)| table.jaccard(&shingles[a as usize], &shingles[b as usize]) >= 0.8)
            .count()
    });
    row(
        "exact Jaccard of candidate pairs (hash table on unsorted keys)",
        t,
        format!(
            "{:.2} M pairs/s ({} pairs)",
            pairs.len() as f64 / t / 1e6,
            pairs.len()
        ),
    );

    // As verification does it: pairs sorted, a first document's keys loaded once for its pairs.
    let mut sorted = pairs.clone();
    sorted.sort_unstable();
    let (t, _) = best(|| {
        let mut table = KeyTable::default();
        let mut n = 0;
        for group in sorted.chunk_by(|x, y| x.0 == y.0) {
            let others: Vec<&[u32]> = group
                .iter()
                .map(|&(_, b)| &shingles[b as usize][..])
                .collect();
            table.jaccards(&shingles[group[0].0 as usize], &others, |_, j| {
                n += usize::from(j >= 0.8)
            });
        }
        n
    });
    row(
        "exact Jaccard of candidate pairs (hash table, one load per first document)",
        t,
        format!(
            "{:.2} M pairs/s ({} pairs)",
            sorted.len() as f64 / t / 1e6,
            sorted.len()
        ),
    );

    let (t, _) = best(|| {
        let mut uf = UnionFind::new(n);
        for &(a, b) in &pairs {
            uf.union(a as u32, b as u32);
        }
        Clusters::build(uf, &Keep::First, |_| 0, |_| None)
    });
    let edges = &pairs;
    row(
        "union-find + keep rule",
        t,
        format!("{:.1} M edges/s", edges.len() as f64 / t / 1e6),
    );
    Ok(())
}

/// The steps inside "shingle hashes of a text", each alone: normalise, the three tokenisers,
/// token hashing, rolling n-grams.
/// Shingle hashes, keys and the oph signature of every text, in batches of 64 texts spread over
/// a pool of one thread and one of two, alternated five times: the median of the per-round
/// ratios is what two cores can give a perfectly parallel kernel here.
fn two_thread_scaling(texts: &[&str]) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let oph = Permutations::with_sketch(128, 42, Sketch::Oph);
    let work = |pool: &rayon::ThreadPool| {
        let t = Instant::now();
        let sum: u64 = pool.install(|| {
            texts
                .par_chunks(64)
                .map(|batch| {
                    let (mut scratch, mut hashes, mut keys) =
                        (Scratch::default(), Vec::new(), Vec::new());
                    let mut sig = vec![0u32; 128];
                    let mut sum = 0u64;
                    for t in batch {
                        shingle_hashes(t, Tokenizer::Chars, 5, &mut scratch, &mut hashes);
                        keys.clear();
                        keys.extend(hashes.iter().map(|&h| shingle_key(h)));
                        oph.signature(&keys, &mut sig);
                        sum = sum.wrapping_add(u64::from(sig[0]));
                    }
                    sum
                })
                .reduce(|| 0, u64::wrapping_add)
        });
        (t.elapsed().as_secs_f64(), sum)
    };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
    let mut ratios = Vec::new();
    for _ in 0..5 {
        let (t1, s1) = work(&one);
        let (t2, s2) = work(&two);
        anyhow::ensure!(s1 == s2, "the two pools computed different signatures");
        println!(
            "one thread {t1:.3} s, two threads {t2:.3} s: {:.2}x",
            t1 / t2
        );
        ratios.push(t1 / t2);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "two-thread scaling of the signature kernels: {:.2}x (median of 5)",
        ratios[2]
    );
    Ok(())
}

fn steps(texts: &[&str], row: &impl Fn(&str, f64, String)) {
    let mut norm = String::new();
    let (t, _) = best(|| {
        texts
            .iter()
            .map(|t| {
                normalize_into(t, &mut norm);
                norm.len()
            })
            .sum::<usize>()
    });
    row(
        "normalise (NFKC on non-trivial runs, lowercase, punctuation)",
        t,
        String::new(),
    );

    let mut scratch = ParagraphScratch::default();
    let mut paras = Vec::new();
    let (t, count) = best(|| {
        total(texts, |t| {
            paras.clear();
            paragraphs(t, 100, &mut scratch, &mut paras);
            paras.len()
        })
    });
    row(
        "paragraphs (--paragraphs: lines, whitespace runs as one space, hash; 100 bytes or more)",
        t,
        format!("{:.1} M paragraphs/s", count as f64 / t / 1e6),
    );

    let mut scratch = WindowScratch::default();
    let mut windows = Vec::new();
    let (t, count) = best(|| {
        total(texts, |t| {
            windows.clear();
            substring_windows(t.as_bytes(), 200, &mut scratch, &mut windows);
            windows.len()
        })
    });
    row(
        "substring windows (--substrings: chunk edges, hash of each 200-byte window)",
        t,
        format!("{:.1} M windows/s", count as f64 / t / 1e6),
    );

    let normalized: Vec<String> = texts
        .iter()
        .map(|t| {
            let mut s = String::new();
            normalize_into(t, &mut s);
            s
        })
        .collect();
    for (name, tok) in [
        (
            "tokenise: chars (a CJK or spaceless-script character = token)",
            Tokenizer::Chars,
        ),
        ("tokenise: words (whitespace)", Tokenizer::Words),
        ("tokenise: jieba (Han runs)", Tokenizer::Jieba),
    ] {
        let (t, count) = best(|| {
            normalized
                .iter()
                .map(|s| {
                    let mut c = 0usize;
                    tokenize(s, tok, |_| c += 1);
                    c
                })
                .sum::<usize>()
        });
        row(name, t, format!("{:.0} M tokens/s", count as f64 / t / 1e6));
    }

    // The pipeline's path: tokens hashed in place in a padded copy of the normalised text.
    let mut buf = String::new();
    let token_hashes: Vec<Vec<u64>> = normalized
        .iter()
        .map(|s| {
            let mut v = Vec::new();
            buf.clear();
            buf.push_str(s);
            shingle_token_hashes(&mut buf, Tokenizer::Chars, &mut v);
            v
        })
        .collect();
    let mut v = Vec::new();
    let (t, count) = best(|| {
        normalized
            .iter()
            .map(|s| {
                buf.clear();
                buf.push_str(s);
                shingle_token_hashes(&mut buf, Tokenizer::Chars, &mut v);
                v.len()
            })
            .sum::<usize>()
    });
    let _ = count;
    row("tokenise + token hash (chars)", t, String::new());
    let mut out = Vec::new();
    let (t, count) = best(|| {
        token_hashes
            .iter()
            .map(|h| {
                out.clear();
                ngrams(h, 5, &mut out);
                out.len()
            })
            .sum::<usize>()
    });
    row(
        "5-gram hashes from token hashes (rolling)",
        t,
        format!("{:.0} M shingles/s", count as f64 / t / 1e6),
    );
}
