//! `gen-corpus`: writes a synthetic Parquet corpus with planted near-duplicates (see
//! `corpus_dedup::synth`). Used by `make samples`, the tests and the benchmarks.
//!
//! Columns: id (Utf8), text (Utf8), url (Utf8), kind (Utf8: base/exact/noise/light/medium/heavy/
//! boilerplate), source (UInt64: index of the base document it derives from).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use polars::prelude::*;

use corpus_dedup::synth::{generate, Lang};
use corpus_dedup::testing::{write_parquet_atomic, ParquetUse};

#[derive(Clone, Copy, ValueEnum)]
enum LangArg {
    En,
    Zh,
    Mixed,
}

#[derive(Parser)]
#[command(about = "Write a synthetic Parquet corpus with planted near-duplicates")]
struct Args {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Number of documents.
    #[arg(long, default_value_t = 200)]
    docs: usize,
    /// Number of shards (files `{name}-NNNNN.parquet`).
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// Language.
    #[arg(long, value_enum, default_value_t = LangArg::En)]
    lang: LangArg,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// File name stem and id prefix.
    #[arg(long, default_value = "shard")]
    name: String,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    anyhow::ensure!(a.shards >= 1, "--shards must be at least 1");
    let lang = match a.lang {
        LangArg::En => Lang::En,
        LangArg::Zh => Lang::Zh,
        LangArg::Mixed => Lang::Mixed,
    };
    let docs = generate(a.docs, lang, a.seed, &a.name);
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let per = docs.len().div_ceil(a.shards).max(1);
    for (s, chunk) in docs.chunks(per).enumerate() {
        let id: Vec<&str> = chunk.iter().map(|d| d.id.as_str()).collect();
        let text: Vec<&str> = chunk.iter().map(|d| d.text.as_str()).collect();
        let url: Vec<String> = chunk
            .iter()
            .map(|d| format!("https://example.org/{}/{}", a.name, d.id))
            .collect();
        let kind: Vec<&str> = chunk.iter().map(|d| d.kind.name()).collect();
        let source: Vec<u64> = chunk.iter().map(|d| d.source as u64).collect();
        let mut df = DataFrame::new(
            chunk.len(),
            vec![
                Column::new("id".into(), id),
                Column::new("text".into(), text),
                Column::new("url".into(), url),
                Column::new("kind".into(), kind),
                Column::new("source".into(), source),
            ],
        )?;
        let path = a.out.join(format!("{}-{s:05}.parquet", a.name));
        write_parquet_atomic(
            &path,
            &mut df,
            vec![(
                "generator".into(),
                format!("gen-corpus seed={} lang={:?}", a.seed, lang),
            )],
            ParquetUse::Output,
        )?;
        eprintln!("wrote {} ({} docs)", path.display(), chunk.len());
    }
    Ok(())
}
