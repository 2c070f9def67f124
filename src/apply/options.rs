//! What `apply` is asked to do (its flags, `--upsample`) and what it reports (per shard, and the
//! `--dry-run` table).

use serde::Serialize;

/// What `apply` is asked to do (its command-line flags).
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyOptions {
    /// The manifest a run wrote (OUT/manifest.parquet, local or s3://).
    #[arg(long, value_name = "FILE|URL")]
    pub manifest: String,
    /// Directory (or s3:// prefix) for the kept rows.
    #[arg(long, value_name = "DIR|URL")]
    pub output: String,
    /// Also write the dropped rows here, with duplicate_of and similarity, for audit.
    #[arg(long, value_name = "DIR|URL")]
    pub dropped: Option<String>,
    /// Print rows and bytes per shard; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Add the manifest's cluster_size to the written rows as a UInt32 column of this name.
    #[arg(long, value_name = "NAME")]
    pub cluster_size_column: Option<String>,
    /// Repeat each kept row by its cluster size: `fineweb2` (FineWeb-2's published weights) or
    /// size ranges and copies, `1=1,2-4=2,5-99=4,100-=1` (sizes no range names: 1 copy).
    #[arg(long, value_name = "fineweb2|RANGES")]
    pub upsample: Option<Upsample>,
    /// Write every shard in this format (default: each in its input's format): `parquet`
    /// (zstd), or JSON Lines, plain or compressed (`jsonl`, `jsonl.gz`, `jsonl.zst`). The file
    /// name's extension changes with it.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,
}

/// The format `apply --format` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Parquet,
    Jsonl,
    #[value(name = "jsonl.gz")]
    JsonlGz,
    #[value(name = "jsonl.zst")]
    JsonlZst,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<OutputFormat, String> {
        <OutputFormat as clap::ValueEnum>::from_str(s, false)
            .map_err(|_| format!("format '{s}': expected parquet, jsonl, jsonl.gz or jsonl.zst"))
    }
}

impl OutputFormat {
    /// The extension of a file in this format.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            OutputFormat::Parquet => ".parquet",
            OutputFormat::Jsonl => ".jsonl",
            OutputFormat::JsonlGz => ".jsonl.gz",
            OutputFormat::JsonlZst => ".jsonl.zst",
        }
    }
}

/// Copies of a kept row by its cluster size (`--upsample`): ranges of sizes, each with a number
/// of copies; a size no range holds gets one copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upsample {
    /// (first size, last size, copies), sorted, not overlapping.
    ranges: Vec<(u32, u32, u32)>,
}

impl Upsample {
    /// FineWeb-2's weights: 1 -> 1, 2 -> 2, 3 -> 3, 4 -> 3, 5-99 -> 5, 100-999 -> 8, 1000+ -> 1
    /// (very large clusters are taken to be lower quality).
    pub const FINEWEB2: &'static str = "1=1,2=2,3=3,4=3,5-99=5,100-999=8,1000-=1";

    /// Copies of a kept row whose cluster has `size` documents.
    pub fn copies(&self, size: u32) -> u32 {
        self.ranges
            .iter()
            .find(|&&(lo, hi, _)| lo <= size && size <= hi)
            .map_or(1, |&(_, _, c)| c)
    }
}

impl std::str::FromStr for Upsample {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let spec = if s == "fineweb2" { Self::FINEWEB2 } else { s };
        let bad = |why: &str| {
            format!("--upsample '{s}': {why}; write `fineweb2` or size ranges with copies such as `1=1,2-4=2,5-99=4,100-=1`")
        };
        let number = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| bad(&format!("'{t}' is not a whole number")))
        };
        let mut ranges = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (sizes, copies) = part
                .split_once('=')
                .ok_or_else(|| bad(&format!("'{part}' has no '='")))?;
            let (lo, hi) = match sizes.split_once('-') {
                Some((lo, "")) => (number(lo)?, u32::MAX),
                Some((lo, hi)) => (number(lo)?, number(hi)?),
                None => (number(sizes)?, number(sizes)?),
            };
            let copies = number(copies)?;
            if lo == 0 || hi < lo {
                return Err(bad(&format!(
                    "'{sizes}' is no range of cluster sizes (1 or more, first <= last)"
                )));
            }
            if copies == 0 {
                return Err(bad(&format!("'{part}' would drop kept documents; upsampling only repeats them (filter on the cluster size column to drop)")));
            }
            ranges.push((lo, hi, copies));
        }
        if ranges.is_empty() {
            return Err(bad("no range given"));
        }
        ranges.sort_unstable();
        if let Some(w) = ranges.windows(2).find(|w| w[1].0 <= w[0].1) {
            return Err(bad(&format!(
                "sizes {}-{} and {}-{} overlap",
                w[0].0, w[0].1, w[1].0, w[1].1
            )));
        }
        Ok(Upsample { ranges })
    }
}

impl std::fmt::Display for Upsample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|&(lo, hi, c)| match (lo == hi, hi == u32::MAX) {
                (true, _) => format!("{lo}={c}"),
                (false, true) => format!("{lo}-={c}"),
                (false, false) => format!("{lo}-{hi}={c}"),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// One input shard's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ShardReport {
    pub input: String,
    /// The output file name (the input's).
    pub name: String,
    pub rows_in: u64,
    pub rows_kept: u64,
    pub rows_dropped: u64,
    /// Rows in the kept rows' file: the kept rows, each repeated by `--upsample`.
    pub rows_written: u64,
    pub bytes_in: u64,
    /// Bytes of the kept rows' file (for a dry run: the input's bytes times the written share).
    pub bytes_out: u64,
    /// The output already held this manifest's rows (a rerun), so it was not written again.
    pub already_complete: bool,
}

/// What `apply` did (printed as JSON at the end).
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    pub manifest: String,
    pub output: String,
    pub dropped: Option<String>,
    pub dry_run: bool,
    pub shards: Vec<ShardReport>,
    pub shards_written: usize,
    pub shards_already_complete: usize,
    pub rows_in: u64,
    pub rows_kept: u64,
    pub rows_dropped: u64,
    pub rows_written: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub seconds: f64,
}

/// The per-shard table of a dry run, for a person.
pub(crate) fn dry_run_table(report: &ApplyReport) -> String {
    use crate::progress::thousands as t;
    let width = report
        .shards
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:<width$} {:>12} {:>12} {:>12} {:>14} {:>14}\n",
        "shard", "rows", "kept", "dropped", "bytes", "kept bytes ~"
    );
    let line = |name: &str, r: [u64; 5]| {
        format!(
            "{name:<width$} {:>12} {:>12} {:>12} {:>14} {:>14}\n",
            t(r[0]),
            t(r[1]),
            t(r[2]),
            t(r[3]),
            t(r[4])
        )
    };
    for s in &report.shards {
        out += &line(
            &s.name,
            [
                s.rows_in,
                s.rows_kept,
                s.rows_dropped,
                s.bytes_in,
                s.bytes_out,
            ],
        );
    }
    out += &line(
        "total",
        [
            report.rows_in,
            report.rows_kept,
            report.rows_dropped,
            report.bytes_in,
            report.bytes_out,
        ],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upsample_tables() {
        let f: Upsample = "fineweb2".parse().unwrap();
        let got: Vec<u32> = [1, 2, 3, 4, 5, 99, 100, 999, 1000, 5_000_000]
            .map(|s| f.copies(s))
            .to_vec();
        assert_eq!(got, [1, 2, 3, 3, 5, 5, 8, 8, 1, 1]);
        assert_eq!(f.to_string(), Upsample::FINEWEB2);
        let u: Upsample = " 3-=2, 2=4 ".parse().unwrap();
        assert_eq!((u.copies(1), u.copies(2), u.copies(70)), (1, 4, 2));
        assert_eq!(u.to_string(), "2=4,3-=2");
        for bad in ["", "2", "0=1", "2=0", "3-1=2", "1-4=2,4=1", "a=1", "1=b"] {
            assert!(bad.parse::<Upsample>().is_err(), "{bad}");
        }
    }
}
