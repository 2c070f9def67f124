//! Numbers as the report shows them: short counts, bytes, shares; and file names.

/// `n` as a short count: 950, 12.3K, 4.5M.
pub(crate) fn short_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}K", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

/// Bytes for a person: 512 B, 3.4 MB, 1.2 GB.
pub(crate) fn bytes(n: u64) -> String {
    match n {
        0..=999 => format!("{n} B"),
        1_000..=999_999 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.2} GB", n as f64 / 1e9),
    }
}

pub(crate) fn pct(part: u64, whole: u64) -> String {
    format!("{:.1}%", 100.0 * part as f64 / whole.max(1) as f64)
}

pub(crate) fn num(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// The file name of a path or URL.
pub(crate) fn short_name(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}
