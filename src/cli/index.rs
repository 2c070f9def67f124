//! `corpus-dedup index`: status, remove and export of an index, and the status as text.

use std::io::IsTerminal;

use anyhow::Context;

use crate::visible::visible;

use super::args::{IndexArgs, IndexCommand};
use super::commands::print_json;

pub(super) fn index_command(command: IndexCommand) -> anyhow::Result<()> {
    use crate::index::{export, inspect};
    let failed = |what: &str, index: &IndexArgs| {
        format!("corpus-dedup index {what} failed (index '{}')", index.index)
    };
    match command {
        IndexCommand::Export { index, output } => {
            let done = export::export(&index.index, &output, index.lock())
                .with_context(|| failed("export", &index))?;
            print_json(&serde_json::to_value(&done)?);
        }
        IndexCommand::Status { index, json } => {
            let s = inspect::status(&index.index, index.lock())
                .with_context(|| failed("status", &index))?;
            match json {
                true => print_json(&serde_json::to_value(&s)?),
                false => print!("{}", visible(&status_text(&s))),
            }
        }
        IndexCommand::Remove { index, batch } => {
            let r = crate::index::remove(&index.index, &batch, index.lock())
                .with_context(|| failed("remove", &index))?;
            if std::io::stdout().is_terminal() {
                println!(
                    "removed batch {}: its {} documents are no longer matched, so a later night's copies of them are kept{}; {} freed",
                    visible(&r.batch),
                    crate::progress::thousands(r.documents_forgotten),
                    match r.batches_expired.is_empty() {
                        true => String::new(),
                        false => format!(" (expired with it: {})", visible(&r.batches_expired.join(", "))),
                    },
                    crate::report::numbers::bytes(r.bytes_freed)
                );
            }
            print_json(&serde_json::to_value(&r)?);
        }
        IndexCommand::Verify { index, json } => {
            let v = inspect::verify(&index.index, index.lock())
                .with_context(|| failed("verify", &index))?;
            match json {
                true => print_json(&serde_json::to_value(&v)?),
                false => {
                    for d in &v.damaged {
                        println!(
                            "damaged: batch {}: {}",
                            visible(&d.batch),
                            visible(&d.error)
                        );
                    }
                    println!(
                        "{} batches, {} files, {} read in {:.1} s: {}",
                        v.batches,
                        v.files,
                        crate::report::numbers::bytes(v.bytes),
                        v.seconds,
                        match v.damaged.len() {
                            0 => "no damage".to_string(),
                            n => format!("{n} damaged file(s); restore the index from a backup, or start a new --index"),
                        }
                    );
                }
            }
            if !v.damaged.is_empty() {
                anyhow::bail!(
                    "index '{}' has {} damaged file(s), listed above: restore the index from a backup, or start a new --index",
                    index.index,
                    v.damaged.len()
                );
            }
        }
    }
    Ok(())
}

/// `index status` for a person: one line per batch, then the totals.
fn status_text(s: &crate::index::inspect::Status) -> String {
    use crate::progress::thousands;
    use crate::report::numbers::bytes;
    let mut out = format!(
        "index {} (format {}, generation {}), newest batch {}\n{:<24} {:>12} {:>12} {:>12} {:>12}\n",
        s.index,
        s.format,
        s.generation,
        s.newest_batch.as_deref().unwrap_or("-"),
        "batch",
        "documents",
        "held",
        "live",
        "on disk"
    );
    for b in &s.batches {
        let name = format!(
            "{}{}",
            b.batch,
            if b.lingering { " (lingering)" } else { "" }
        );
        out += &format!(
            "{name:<24} {:>12} {:>12} {:>12} {:>12}\n",
            thousands(b.documents),
            thousands(b.held),
            thousands(b.live),
            bytes(b.bytes_on_disk)
        );
    }
    out += &format!(
        "{} live documents in {} batches ({} lingering); {} on disk ({:.0} B per live document), {} in memory for a lookup ({:.0} B per live document)\n",
        thousands(s.live_documents),
        s.batches.len(),
        s.lingering,
        bytes(s.bytes_on_disk),
        s.bytes_on_disk_per_live_document,
        bytes(s.bytes_in_memory),
        s.bytes_in_memory_per_live_document
    );
    out
}
