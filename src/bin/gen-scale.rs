//! `gen-scale`: short documents at any scale with planted variants and their exact truth
//! (`corpus_dedup::synth::short`), and the score of a run's manifest against that truth. Used by
//! `make bench-scale N=...`.
//!
//! Columns written: id (`d<position>`), text, kind, source (position of the base), similarity
//! (exact Jaccard to the base), planted (the keeper rule must drop it).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use polars::prelude::*;
use rayon::prelude::*;

use corpus_dedup::kernels::shingle::Scratch;
use corpus_dedup::synth::short::{ShortCorpus, ShortDoc, ShortKind};
use corpus_dedup::testing::{write_parquet_atomic, ParquetUse};

#[derive(Parser)]
#[command(about = "Short documents with planted variants at any scale, and scoring against them")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write N documents as Parquet shards `DIR/short-NNNNN.parquet`.
    Generate {
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        docs: u64,
        /// Documents per shard.
        #[arg(long, default_value_t = 250_000)]
        shard_docs: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The similarity at and above which a variant counts as planted (the run's threshold).
        #[arg(long, default_value_t = 0.8)]
        threshold: f64,
        /// Shingle size the similarity is measured over (the run's --ngram).
        #[arg(long, default_value_t = 5)]
        ngram: usize,
    },
    /// Recall of the planted variants and precision of all drops (each checked against the
    /// document it was dropped against), as one JSON line.
    Score {
        /// The directory `generate` wrote.
        #[arg(long)]
        corpus: PathBuf,
        /// The run's manifest.parquet.
        #[arg(long)]
        manifest: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Command::Generate {
            out,
            docs,
            shard_docs,
            seed,
            threshold,
            ngram,
        } => generate(&out, docs, shard_docs.max(1), seed, threshold, ngram),
        Command::Score { corpus, manifest } => score(&corpus, &manifest),
    }
}

/// The file beside the shards that says how they were made, for `score`.
const SETTINGS: &str = "gen-scale.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Settings {
    docs: u64,
    seed: u64,
    threshold: f64,
    ngram: usize,
}

fn generate(
    out: &Path,
    docs: u64,
    shard_docs: u64,
    seed: u64,
    threshold: f64,
    ngram: usize,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let g = ShortCorpus::new(seed, threshold, ngram);
    let settings = serde_json::to_vec(&Settings {
        docs,
        seed,
        threshold,
        ngram,
    })?;
    let made = out.join(SETTINGS);
    match std::fs::read(&made) {
        Ok(before) if before != settings => bail!(
            "{} holds a corpus made with other settings; give another --out",
            out.display()
        ),
        Ok(_) => {}
        Err(_) => std::fs::write(&made, &settings)?,
    }
    let shards = docs.div_ceil(shard_docs);
    for s in 0..shards {
        let path = out.join(format!("short-{s:05}.parquet"));
        if path.exists() {
            continue; // made by an earlier, interrupted call: documents are a function of the seed
        }
        let first = s * shard_docs;
        let batch = g.docs(first..(first + shard_docs).min(docs));
        let mut df = frame(first, &batch)?;
        let meta = format!("gen-scale seed={seed} threshold={threshold} ngram={ngram}");
        write_parquet_atomic(
            &path,
            &mut df,
            vec![("generator".into(), meta)],
            ParquetUse::Output,
        )?;
        eprintln!(
            "wrote {} ({} of {docs} documents)",
            path.display(),
            first + batch.len() as u64
        );
    }
    Ok(())
}

fn frame(first: u64, batch: &[ShortDoc]) -> anyhow::Result<DataFrame> {
    let ids: Vec<String> = (first..first + batch.len() as u64)
        .map(|i| format!("d{i}"))
        .collect();
    let text: Vec<&str> = batch.iter().map(|d| d.text.as_str()).collect();
    let kind: Vec<&str> = batch.iter().map(|d| d.kind.name()).collect();
    let source: Vec<u64> = batch.iter().map(|d| d.source).collect();
    let similarity: Vec<f64> = batch.iter().map(|d| d.similarity).collect();
    let planted: Vec<bool> = batch.iter().map(|d| d.planted).collect();
    Ok(DataFrame::new(
        batch.len(),
        vec![
            Column::new("id".into(), ids),
            Column::new("text".into(), text),
            Column::new("kind".into(), kind),
            Column::new("source".into(), source),
            Column::new("similarity".into(), similarity),
            Column::new("planted".into(), planted),
        ],
    )?)
}

/// Reads `columns` of every Parquet file matching `glob`, in file-name order.
fn read(glob: &Path, columns: &[&str]) -> anyhow::Result<DataFrame> {
    let glob = glob.to_string_lossy();
    let cols: Vec<Expr> = columns.iter().map(|c| polars::prelude::col(*c)).collect();
    LazyFrame::scan_parquet(PlRefPath::new(&*glob), ScanArgsParquet::default())
        .and_then(|lf| lf.select(cols).collect())
        .map_err(|e| anyhow::anyhow!("reading {glob}: {e}"))
}

fn score(corpus: &Path, manifest: &Path) -> anyhow::Result<()> {
    let made = corpus.join(SETTINGS);
    let settings: Settings = serde_json::from_slice(
        &std::fs::read(&made).with_context(|| format!("reading {}", made.display()))?,
    )
    .with_context(|| format!("reading {}", made.display()))?;
    let g = ShortCorpus::new(settings.seed, settings.threshold, settings.ngram);
    let truth = read(&corpus.join("short-*.parquet"), &["kind", "planted"])?;
    let kinds = truth.column("kind")?.str()?;
    let planted = truth.column("planted")?.bool()?;
    let n = truth.height();
    let m = read(manifest, &["id", "keep", "duplicate_of"])?;
    if m.height() != n {
        bail!("the manifest has {} rows, the corpus {n}", m.height());
    }
    let position = |id: Option<&str>| -> anyhow::Result<usize> {
        id.and_then(|id| id.strip_prefix('d'))
            .and_then(|p| p.parse().ok())
            .filter(|&p: &usize| p < n)
            .with_context(|| format!("id {id:?} is not one of this corpus's"))
    };
    // For every dropped document, the document it was dropped against.
    let mut against: Vec<Option<u64>> = vec![None; n];
    let cols = (
        m.column("id")?.str()?,
        m.column("keep")?.bool()?,
        m.column("duplicate_of")?.str()?,
    );
    for ((id, keep), of) in cols.0.iter().zip(cols.1.iter()).zip(cols.2.iter()) {
        if keep == Some(false) {
            against[position(id)?] = Some(position(of)? as u64);
        }
    }
    // A drop is right when its text is within the threshold of the one it was dropped against.
    let similarity: Vec<Option<f64>> = against
        .par_iter()
        .enumerate()
        .map_init(Scratch::default, |scratch, (i, of)| {
            of.map(|j| g.similarity(i as u64, j, scratch))
        })
        .collect();
    let right: Vec<bool> = similarity
        .iter()
        .map(|s| s.is_some_and(|s| s >= g.threshold))
        .collect();
    // The first wrong drops, to look at: (dropped, kept, exact Jaccard).
    let wrong: Vec<(String, String, f64)> = (similarity.iter().zip(&against).enumerate())
        .filter_map(|(i, (s, of))| Some((i, (*s)?, (*of)?)))
        .filter(|&(_, s, _)| s < g.threshold)
        .take(5)
        .map(|(i, s, of)| (format!("d{i}"), format!("d{of}"), s))
        .collect();
    // Per kind: documents, planted, dropped, planted and dropped, dropped rightly.
    let mut by_kind = [[0u64; 5]; 6];
    for (i, (kind, p)) in kinds.iter().zip(planted.iter()).enumerate() {
        let k = ShortKind::ALL
            .iter()
            .position(|x| Some(x.name()) == kind)
            .unwrap_or(0);
        let (p, d) = (p == Some(true), against[i].is_some());
        for (slot, on) in by_kind[k].iter_mut().zip([true, p, d, p && d, right[i]]) {
            *slot += u64::from(on);
        }
    }
    let total = |c: usize| by_kind.iter().map(|r| r[c]).sum::<u64>();
    let (planted, drops, hits, right) = (total(1), total(2), total(3), total(4));
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let kinds: serde_json::Map<String, serde_json::Value> = ShortKind::ALL
        .iter()
        .zip(by_kind)
        .map(|(k, [docs, p, d, pd, r])| {
            let v = serde_json::json!({"documents": docs, "planted": p, "dropped": d,
                "planted_dropped": pd, "dropped_rightly": r});
            (k.name().to_string(), v)
        })
        .collect();
    let out = serde_json::json!({
        "documents": n, "planted": planted, "dropped": drops, "dropped_rightly": right,
        "recall": ratio(hits, planted), "precision": ratio(right, drops), "kinds": kinds,
        "wrong_drops": wrong,
    });
    println!("{out}");
    Ok(())
}
