//! The `corpus-dedup` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use corpus_dedup::{executor, Settings};

#[derive(Parser)]
#[command(
    name = "corpus-dedup",
    version,
    about = "Find near-duplicate documents in Parquet text corpora and write a keep/drop manifest"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the whole job: read shards, find near-duplicates, write manifest.parquet and summary.json.
    Run {
        /// TOML file with the same keys as the flags (`num-perm = 128`); flags override it.
        #[arg(long, value_name = "FILE.toml")]
        config: Option<PathBuf>,
        #[command(flatten)]
        settings: Settings,
    },
}

fn run(config: Option<PathBuf>, flags: Settings) -> anyhow::Result<()> {
    let file = match &config {
        Some(p) => Settings::from_toml_file(p)?,
        None => Settings::default(),
    };
    let cfg = flags.over(file).resolve()?;
    // polars keeps its own thread pool; size it before its first use so --threads holds for it too.
    std::env::set_var("POLARS_MAX_THREADS", cfg.threads.to_string());
    let summary = executor::local::run(&cfg)
        .with_context(|| format!("corpus-dedup run failed (output '{}')", cfg.output))?;
    let line = serde_json::json!({
        "documents_in": summary.documents_in,
        "documents_kept": summary.documents_kept,
        "documents_dropped": summary.documents_dropped,
        "clusters": summary.clusters,
        "seconds": (summary.total_seconds * 1000.0).round() / 1000.0,
        "peak_rss_mib": summary.peak_rss_mib.round(),
        "output": cfg.output,
    });
    println!("{line}");
    Ok(())
}

fn main() -> ExitCode {
    // A panic is a bug, not a user error: one paragraph on stderr, no backtrace dump.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        eprintln!("error: internal error in corpus-dedup{at}: {msg}. This is a bug; please report it with the command line.");
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { config, settings } => run(config, settings),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One paragraph: the context chain, outermost first.
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", msg.join(": "));
            ExitCode::FAILURE
        }
    }
}
