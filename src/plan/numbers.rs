//! How documents are numbered: globally in 64 bits; in 32 bits within a task's part, and across
//! the run by the stages that hold an array per document in memory (the in-memory keeper rules,
//! the index, the span rules), which the plan refuses beyond 32 bits, naming the option.

use crate::config::Config;
use crate::error::{Error, Result};

/// A global document number as the stages that number in 32 bits take it (the options of
/// [`numbers_in_32_bits`]): a plan holds fewer than [`MAX_DOCS_32`] documents whenever one of
/// them runs ([`check_documents`]).
pub(crate) fn doc32(doc: u64) -> u32 {
    debug_assert!(doc < MAX_DOCS_32, "document {doc} needs 64 bits");
    doc as u32
}

/// 32-bit document numbers (see [`doc32`]) as the 64-bit numbers the stores and key files take.
pub(crate) fn docs64(docs: &[u32]) -> Vec<u64> {
    docs.iter().map(|&d| u64::from(d)).collect()
}

/// Documents a run may hold while a stage numbers them in 32 bits (u32::MAX is a sentinel).
pub(crate) const MAX_DOCS_32: u64 = u32::MAX as u64;

/// The option of `cfg` that makes the cluster task run a rule in memory, with an array per
/// document, if it has one; without one the keeper rule runs streamed
/// ([`crate::stages::cluster`]).
pub(crate) fn in_memory_rule(cfg: &Config) -> Option<&'static str> {
    use crate::config::{ClusterRule, Keep};
    [
        (cfg.index.is_some(), "--index"),
        (cfg.across.is_some(), "--across"),
        (!matches!(cfg.keep, Keep::First), "--keep"),
        (
            cfg.cluster == ClusterRule::Components,
            "--cluster components",
        ),
    ]
    .into_iter()
    .find_map(|(on, option)| on.then_some(option))
}

/// The option of `cfg` whose stages number a run's documents in 32 bits, if it has one: an
/// in-memory rule ([`in_memory_rule`]) or a span rule. The default run numbers them in 64 bits.
pub(crate) fn numbers_in_32_bits(cfg: &Config) -> Option<&'static str> {
    let spans = [
        (cfg.paragraphs.is_some(), "--paragraphs"),
        (cfg.substrings.is_some(), "--substrings"),
    ];
    in_memory_rule(cfg).or_else(|| spans.into_iter().find_map(|(on, o)| on.then_some(o)))
}

/// Refuses a run whose documents its numbers cannot hold: [`MAX_DOCS_32`] or more under an
/// option of [`numbers_in_32_bits`], or a part of that many (a task numbers its own part's
/// documents in 32 bits).
pub(super) fn check_documents(cfg: &Config, documents: u64, parts: &[(u64, u64)]) -> Result<()> {
    if let Some(option) = numbers_in_32_bits(cfg).filter(|_| documents >= MAX_DOCS_32) {
        return Err(Error::TooManyDocuments {
            what: option.into(),
            documents,
            advice: "run without it, or split the input into several runs".into(),
        });
    }
    match parts.iter().position(|&(_, n)| n >= MAX_DOCS_32) {
        Some(part) => Err(Error::TooManyDocuments {
            what: format!("part {part} (one task)"),
            documents: parts[part].1,
            advice: format!(
                "pass --tasks {} or more",
                documents.div_ceil(MAX_DOCS_32 - 1)
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_beyond_32_bits_are_refused_only_where_a_stage_needs_32() {
        let cfg = super::super::tests::tiny_plan().config;
        let n = 5_000_000_000u64;
        let parts: Vec<(u64, u64)> = (0..4).map(|i| (i * n / 4, n / 4)).collect();
        assert!(check_documents(&cfg, n, &parts).is_ok());
        let mut spans = cfg.clone();
        spans.paragraphs = Some(crate::config::ParagraphConfig { min_bytes: 100 });
        let e = check_documents(&spans, n, &parts).unwrap_err().to_string();
        assert!(
            e.contains("5000000000 documents") && e.contains("--paragraphs"),
            "{e}"
        );
        assert!(check_documents(&spans, MAX_DOCS_32 - 1, &[(0, MAX_DOCS_32 - 1)]).is_ok());
        let mut components = cfg.clone();
        components.cluster = crate::config::ClusterRule::Components;
        assert_eq!(
            numbers_in_32_bits(&components),
            Some("--cluster components")
        );
        // One part of them all: a task numbers its own part's documents in 32 bits.
        let e = check_documents(&cfg, n, &[(0, n)]).unwrap_err().to_string();
        assert!(e.contains("part 0") && e.contains("--tasks 2"), "{e}");
    }
}
