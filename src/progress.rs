//! Progress a person can read: one bar per stage counting documents (or rows) with rate and ETA,
//! on stderr when it is a terminal and `--quiet` is off (indicatif draws nothing otherwise).
//!
//! Stages advance the bar of the stage that runs as they go ([`advance`]), a chunk or window of
//! documents at a time, so a stage of one big task moves too; a stage that cannot tell its
//! progress within a task advances by the task's documents when the task ends.

use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};

/// The bar of the running stage (none: progress is not shown).
static CURRENT: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// A progress bar of `len` `unit`s for `what` (hidden with `quiet`).
pub(crate) fn bar(quiet: bool, len: u64, what: &str, unit: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    let template = format!(
        "{{msg:>12}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{rate}}/s, eta {{eta}})"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", thousands(state.per_sec() as u64));
        };
        pb.set_style(style.progress_chars("=> ").with_key("rate", rate));
    }
    pb.set_message(what.to_string());
    pb
}

/// Makes `pb` the bar that [`advance`] moves (`None`: no bar).
pub(crate) fn set_current(pb: Option<ProgressBar>) {
    *CURRENT.lock().unwrap_or_else(|p| p.into_inner()) = pb;
}

/// Advances the running stage's bar by `n` documents.
pub(crate) fn advance(n: u64) {
    if let Some(pb) = CURRENT.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        pb.inc(n);
    }
}

/// `n` with thousands separators (`12,345`), for the human summary.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
