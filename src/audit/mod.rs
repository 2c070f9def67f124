//! `corpus-dedup audit OUT`: how many of a run's drops a person would agree with. A sample of
//! (dropped, kept) pairs, stratified by similarity band, written as `OUT/audit-pairs.parquet` and
//! `OUT/audit.html` (a page to label them with the keyboard, [`page`]); the labels it exports
//! are scored into precision per band and over all the run's drops ([`score`]).
//!
//! The sample is a function of the manifest only: in each band, the drops whose id hashes lowest
//! (so two audits of one run show the same pairs, and a larger `--pairs` adds to a smaller one's).
//! Bands get equal shares of the pairs (a band with fewer drops gives its rest to the others), so
//! every band's precision has its own error bar; the overall precision weights each band by its
//! share of the drops. A drop whose keeper is in an earlier batch of the index (`--index`) is
//! sampled like the others: the keeper's text is read from the shard that batch recorded for it,
//! as `explain` does (a shard gone or changed since leaves the kept text empty, said on the page).

mod keepers;
mod page;
pub(crate) mod score;
mod sweep;

use std::collections::{BTreeMap, HashMap, HashSet};

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::explain::Similarity;
use crate::io::output::{OutputDir, ParquetUse};
use crate::results::{in_output, read_texts, Manifest, RowGroups};
use crate::text::diff::{word_diff, Piece};

/// The sampled pairs' file and the labelling page, in the run's output.
pub(crate) const PAIRS_FILE: &str = "audit-pairs.parquet";
pub(crate) const PAGE: &str = "audit.html";
/// Width of a similarity band.
const BAND_WIDTH: f64 = 0.05;

/// A similarity band: drops with `lo <= similarity < hi` (the last band holds 1.0).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Band {
    /// `--by-group`: the `--report-group` value of the stratum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub name: String,
    pub lo: f64,
    pub hi: f64,
    /// `--sweep`: the threshold below the run's that would drop this stratum's documents, which
    /// the run keeps ([`sweep`]); None for the run's own drops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<f64>,
    /// The run's drops in it (the documents the threshold would drop, for a sweep stratum).
    pub drops: u64,
    /// Pairs sampled from it.
    pub sampled: u64,
}

/// The bands: below the run's threshold (`--cluster components` drops a document far from its
/// kept one through a chain), then from the threshold up to 1, [`BAND_WIDTH`] wide, named by
/// their bounds.
pub(crate) fn bands(threshold: f64) -> Vec<Band> {
    let n = (((1.0 - threshold) / BAND_WIDTH).round() as usize).max(1);
    let step = (1.0 - threshold) / n as f64;
    // Bounds to four places: 0.85, not 0.8500000000000001.
    let at = |i: usize| ((threshold + step * i as f64) * 1e4).round() / 1e4;
    let band = |name: String, lo: f64, hi: f64| Band {
        group: None,
        name,
        lo,
        hi,
        sweep: None,
        drops: 0,
        sampled: 0,
    };
    let below = band(format!("<{threshold:.2}"), 0.0, at(0));
    let above = (0..n).map(|i| band(format!("{:.2}-{:.2}", at(i), at(i + 1)), at(i), at(i + 1)));
    std::iter::once(below).chain(above).collect()
}

/// The band of a similarity.
fn band_of(bands: &[Band], similarity: f64) -> usize {
    // Similarities are stored as f32: one at a bound may read a hair below it.
    (bands.partition_point(|b| b.hi <= similarity + 1e-6)).min(bands.len() - 1)
}

/// One sampled pair.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AuditPair {
    /// `RUN-KEY`: the run's fingerprint and the hash of the dropped document's id, so a pair
    /// keeps its name (and its label) in an audit of more or fewer pairs.
    pub pair: String,
    pub band: String,
    /// `--by-group`: the dropped document's `--report-group` value.
    pub group: Option<String>,
    pub similarity: f32,
    /// Exact Jaccard of the two texts' shingle sets, recomputed (None when one is empty).
    pub jaccard: Option<f64>,
    pub dropped_id: String,
    pub kept_id: String,
    pub dropped_at: (String, u64),
    pub kept_at: (String, u64),
    pub dropped_text: Option<String>,
    pub kept_text: Option<String>,
    pub diff: Vec<Piece>,
}

/// A run's audit sample.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Audit {
    /// What labels are checked against: a hash of the run's recorded settings and inputs.
    pub run: String,
    pub threshold: f64,
    pub bands: Vec<Band>,
    pub pairs: Vec<AuditPair>,
}

/// The fingerprint of the run that wrote `m`: its settings and inputs as recorded.
pub(crate) fn run_fingerprint(m: &Manifest) -> String {
    let what = serde_json::json!([m.config.result_json(), &m.inputs]);
    format!(
        "{:08x}",
        xxhash_rust::xxh3::xxh3_64(what.to_string().as_bytes()) as u32
    )
}

/// A drop as the first pass sees it: the hash that orders its band, its manifest row and what
/// the pair needs from the row.
struct Drop {
    key: u64,
    at: (String, u64),
    id: String,
    keeper: String,
    /// The earlier batch of the index the keeper is in (None: in this run).
    batch: Option<String>,
    similarity: f32,
    /// A sweep drop's keeper, by manifest row, until its id is read.
    keeper_row: Option<u64>,
}

/// Offers a drop to its stratum's list of the `per_band` whose ids hash lowest.
fn offer(list: &mut Vec<Drop>, per_band: usize, key: u64, drop: impl FnOnce() -> Drop) {
    if per_band == 0 || (list.len() == per_band && list.last().is_some_and(|d| d.key <= key)) {
        return;
    }
    let pos = list.partition_point(|x| x.key < key);
    list.insert(pos, drop());
    list.truncate(per_band);
}

/// The manifest's columns the audit reads.
const COLUMNS: [&str; 7] = [
    "id",
    "file",
    "row",
    "keep",
    "similarity",
    "duplicate_of",
    "duplicate_of_batch",
];

/// A stratum: a band (of one group, with `--by-group`) and its drops whose ids hash lowest.
type Stratum = (Band, Vec<Drop>);

/// Each manifest row's `--report-group` value, read from the input shards a file at a time as
/// the manifest's rows reach it (they come in input order).
struct Groups<'a> {
    cfg: &'a crate::config::Config,
    file: String,
    values: Option<StringChunked>,
}

impl Groups<'_> {
    /// The group of row `row` of `file` ("(null)" for a null value, as the report counts it).
    fn of(&mut self, file: &str, row: u64) -> Result<String> {
        if self.file != file {
            let bytes = match crate::io::object::is_url(file) {
                true => crate::io::object::get_all(&[file.to_string()])?.pop(),
                false => None,
            };
            self.values = crate::io::input::read_groups(file, bytes, self.cfg)?;
            self.file = file.to_string();
        }
        let value = self.values.as_ref().and_then(|v| v.get(row as usize));
        Ok(value.unwrap_or("(null)").to_string())
    }
}

/// Counts the run's drops per stratum and keeps, per stratum, the `per_band` drops whose ids
/// hash lowest. The strata are `bands`, or with `by_group` each band of each `--report-group`
/// value, in group order; then one per band of `sweep` (the documents the run keeps that a
/// lower threshold would drop, by manifest row, [`sweep::read`]), after `bands`. `tonight`:
/// the run's own batch name (`--index`), which a keeper in this run carries.
fn first_pass(
    rows: &crate::results::ManifestRows,
    m: &Manifest,
    bands: &[Band],
    sweep: &[sweep::SweepDrop],
    by_group: bool,
    per_band: usize,
) -> Result<Vec<Stratum>> {
    let tonight = m.config.batch.as_deref();
    let run_bands = bands.iter().filter(|b| b.sweep.is_none()).count();
    let mut strata: BTreeMap<(Option<String>, usize), Stratum> = BTreeMap::new();
    for (b, band) in bands.iter().enumerate() {
        if !by_group || band.sweep.is_some() {
            strata.insert((None, b), (band.clone(), Vec::new()));
        }
    }
    let sweep_band = |t: f64| (bands.iter()).position(|b| b.sweep == Some(t));
    let mut groups = Groups {
        cfg: &m.config,
        file: String::new(),
        values: None,
    };
    let mut next = 0;
    rows.each_group(&COLUMNS, |first, df| {
        let err = |e| rows.error(e);
        let col = |name: &str| df.column(name).map_err(err);
        let (ids, files) = (
            col("id")?.str().map_err(err)?,
            col("file")?.str().map_err(err)?,
        );
        let (rws, keep) = (
            col("row")?.u64().map_err(err)?,
            col("keep")?.bool().map_err(err)?,
        );
        let sims = col("similarity")?.f32().map_err(err)?;
        let dup = col("duplicate_of")?.str().map_err(err)?;
        let batch = (df.column("duplicate_of_batch").ok()).and_then(|c| c.str().ok());
        for i in 0..df.height() {
            let (file, row) = (files.get(i).unwrap_or_default(), rws.get(i).unwrap_or(0));
            let id = ids.get(i).unwrap_or_default();
            let key = || xxhash_rust::xxh3::xxh3_64(id.as_bytes());
            let r = (first + i) as u64;
            while sweep.get(next).is_some_and(|d| d.row < r) {
                next += 1;
            }
            if let Some(d) = sweep.get(next).filter(|d| d.row == r) {
                if let Some((band, list)) =
                    sweep_band(d.threshold).and_then(|b| strata.get_mut(&(None, b)))
                {
                    band.drops += 1;
                    let key = key();
                    offer(list, per_band, key, || Drop {
                        key,
                        at: (file.to_string(), row),
                        id: id.to_string(),
                        keeper: String::new(),
                        batch: None,
                        similarity: d.similarity,
                        keeper_row: Some(d.keeper_row),
                    });
                }
            }
            let (Some(false), Some(s), Some(k)) = (keep.get(i), sims.get(i), dup.get(i)) else {
                continue;
            };
            let b = band_of(&bands[..run_bands], s as f64);
            let group = match by_group {
                true => Some(groups.of(file, row)?),
                false => None,
            };
            let (band, list) = strata.entry((group.clone(), b)).or_insert_with(|| {
                let band = Band {
                    group,
                    ..bands[b].clone()
                };
                (band, Vec::new())
            });
            band.drops += 1;
            let key = key();
            let earlier = batch.and_then(|c| c.get(i)).filter(|b| Some(*b) != tonight);
            offer(list, per_band, key, || Drop {
                key,
                at: (file.to_string(), row),
                id: id.to_string(),
                keeper: k.to_string(),
                batch: earlier.map(str::to_string),
                similarity: s,
                keeper_row: None,
            });
        }
        Ok(())
    })?;
    // Sweep strata last, after every group's bands.
    let (run, swept): (Vec<_>, Vec<_>) =
        (strata.into_iter()).partition(|((_, b), _)| *b < run_bands);
    Ok(run.into_iter().chain(swept).map(|(_, s)| s).collect())
}

/// The bands of the run in `out` (`threshold`'s) and of its sweep, and its sweep drops.
fn all_bands(out: &str, threshold: f64) -> Result<(Vec<Band>, Vec<sweep::SweepDrop>)> {
    let drops = sweep::read(out)?;
    let mut all = bands(threshold);
    all.extend(sweep::bands(&drops, threshold));
    Ok((all, drops))
}

/// Names the keeper of each sampled sweep drop: its id, read by manifest row.
fn name_sweep_keepers(rows: &crate::results::ManifestRows, strata: &mut [Stratum]) -> Result<()> {
    let drops = strata.iter_mut().flat_map(|(_, list)| list.iter_mut());
    let wanted: Vec<u64> = drops.filter_map(|d| d.keeper_row).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let found = sweep::ids_at(rows, &wanted)?;
    for d in strata.iter_mut().flat_map(|(_, list)| list.iter_mut()) {
        if let Some(id) = d.keeper_row.and_then(|r| found.get(&r)) {
            d.keeper = id.clone();
        }
    }
    Ok(())
}

/// How many of `total` pairs each stratum gets: equal shares, a stratum with fewer candidates
/// giving the rest to the others in turn; what does not divide goes to the strata with the most
/// `drops` (more strata than pairs, with many groups: the largest groups, not the first names).
fn shares(available: &[usize], drops: &[u64], total: usize) -> Vec<usize> {
    let mut take = vec![0; available.len()];
    let mut left = total;
    let mut order: Vec<usize> = (0..available.len()).collect();
    order.sort_by_key(|&b| (std::cmp::Reverse(drops[b]), b));
    loop {
        let open: Vec<usize> = (order.iter().copied())
            .filter(|&b| take[b] < available[b])
            .collect();
        if left == 0 || open.is_empty() {
            return take;
        }
        let each = (left / open.len()).max(1);
        for b in open {
            let n = each.min(available[b] - take[b]).min(left);
            take[b] += n;
            left -= n;
        }
    }
}

/// The audit sample of the run in `out`: `pairs` pairs at most, read with their texts.
pub(crate) fn sample(out: &str, pairs: usize, by_group: bool) -> Result<Audit> {
    let (m, rows) = Manifest::open(&in_output(out, "manifest.parquet"))?;
    if by_group && m.config.report_group.is_none() {
        return Err(Error::Config(format!(
            "audit --by-group: the run in '{out}' had no --report-group; run it with --report-group COLUMN (a source or domain column), or audit without --by-group"
        )));
    }
    let threshold = m.config.threshold;
    let (all, swept) = all_bands(out, threshold)?;
    let mut strata = first_pass(&rows, &m, &all, &swept, by_group, pairs)?;
    name_sweep_keepers(&rows, &mut strata)?;
    let available: Vec<usize> = strata.iter().map(|s| s.1.len()).collect();
    let drops: Vec<u64> = strata.iter().map(|s| s.0.drops).collect();
    let take = shares(&available, &drops, pairs);
    let chosen: Vec<(usize, &Drop)> = (strata.iter().enumerate())
        .flat_map(|(b, (_, list))| list.iter().take(take[b]).map(move |d| (b, d)))
        .collect();
    let bands: Vec<Band> = (strata.iter().zip(&take))
        .map(|((band, _), &n)| Band {
            sampled: n as u64,
            ..band.clone()
        })
        .collect();
    let here: HashSet<&str> = (chosen.iter())
        .filter(|(_, d)| d.batch.is_none())
        .map(|(_, d)| d.keeper.as_str())
        .collect();
    let here = keepers::here(&rows, &here)?;
    let earlier: Vec<(&str, &str)> = (chosen.iter())
        .filter_map(|(_, d)| Some((d.batch.as_deref()?, d.keeper.as_str())))
        .collect();
    let earlier = keepers::earlier(out, &m, &earlier);
    let earlier_of = |d: &Drop| {
        let batch = d.batch.clone()?;
        earlier.get(&(batch, d.keeper.clone()))
    };
    // Texts read from this run's shards: the dropped document of pair n is row 2n, its keeper
    // (when in this run) 2n + 1.
    let mut places: Vec<(String, u64)> = Vec::with_capacity(2 * chosen.len());
    let mut which = Vec::with_capacity(2 * chosen.len());
    for (n, (_, d)) in chosen.iter().enumerate() {
        let kept = match d.batch {
            None => here.get(&d.keeper).cloned(),
            Some(_) => earlier_of(d).map(|(place, _)| place.clone()),
        };
        which.push(2 * n);
        if d.batch.is_none() && kept.is_some() {
            which.push(2 * n + 1);
        }
        places.extend([d.at.clone(), kept.unwrap_or_default()]);
    }
    let groups = RowGroups::of(&m, None)?;
    let at = |i: usize| (places[i].0.as_str(), places[i].1);
    let texts = read_texts(&m, &groups, &which, &at)?;
    let sim = Similarity::new(&m.config);
    let run = run_fingerprint(&m);
    let pairs = (chosen.iter().enumerate())
        .map(|(n, (b, d))| {
            let dropped = texts.get(&(2 * n)).cloned().flatten();
            let kept = match d.batch {
                None => texts.get(&(2 * n + 1)).cloned().flatten(),
                Some(_) => earlier_of(d).and_then(|(_, text)| text.clone()),
            };
            let (a, k) = (
                dropped.as_deref().unwrap_or(""),
                kept.as_deref().unwrap_or(""),
            );
            AuditPair {
                pair: format!("{run}-{:016x}", d.key),
                band: bands[*b].name.clone(),
                group: bands[*b].group.clone(),
                similarity: d.similarity,
                jaccard: sim.jaccard(&sim.sets(k), &sim.sets(a)),
                dropped_id: d.id.clone(),
                kept_id: d.keeper.clone(),
                dropped_at: d.at.clone(),
                kept_at: places[2 * n + 1].clone(),
                diff: word_diff(k, a),
                dropped_text: dropped,
                kept_text: kept,
            }
        })
        .collect();
    Ok(Audit {
        run,
        threshold,
        bands,
        pairs,
    })
}

/// What `audit` wrote.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Written {
    pub run: String,
    pub pairs: usize,
    pub bands: Vec<Band>,
    pub pairs_file: String,
    pub page: String,
}

/// Samples the run in `out` and writes [`PAIRS_FILE`] and [`PAGE`] there.
pub(crate) fn write(out: &str, pairs: usize, by_group: bool) -> Result<Written> {
    let audit = sample(out, pairs, by_group)?;
    let dir = OutputDir::parse(out);
    let mut df = frame(&audit).map_err(|e| Error::Output {
        path: in_output(out, PAIRS_FILE),
        source: e.into(),
    })?;
    let meta = vec![("corpus_dedup.audit_run".to_string(), audit.run.clone())];
    dir.write_parquet(PAIRS_FILE, &mut df, meta, ParquetUse::Output)?;
    dir.write_bytes(PAGE, page::render(&audit).into_bytes())?;
    Ok(Written {
        run: audit.run.clone(),
        pairs: audit.pairs.len(),
        bands: audit.bands,
        pairs_file: in_output(out, PAIRS_FILE),
        page: in_output(out, PAGE),
    })
}

/// The sampled pairs as the Parquet file's frame.
fn frame(a: &Audit) -> PolarsResult<DataFrame> {
    let p = &a.pairs;
    let strs = |f: &dyn Fn(&AuditPair) -> Option<&str>| p.iter().map(f).collect::<Vec<_>>();
    let rows = |f: &dyn Fn(&AuditPair) -> u64| p.iter().map(f).collect::<Vec<_>>();
    DataFrame::new_infer_height(vec![
        Column::new("pair".into(), strs(&|x| Some(&x.pair))),
        Column::new("band".into(), strs(&|x| Some(&x.band))),
        Column::new("group".into(), strs(&|x| x.group.as_deref())),
        Column::new(
            "similarity".into(),
            p.iter().map(|x| x.similarity).collect::<Vec<_>>(),
        ),
        Column::new(
            "jaccard".into(),
            p.iter().map(|x| x.jaccard).collect::<Vec<_>>(),
        ),
        Column::new("dropped_id".into(), strs(&|x| Some(&x.dropped_id))),
        Column::new("kept_id".into(), strs(&|x| Some(&x.kept_id))),
        Column::new("dropped_file".into(), strs(&|x| Some(&x.dropped_at.0))),
        Column::new("dropped_row".into(), rows(&|x| x.dropped_at.1)),
        Column::new("kept_file".into(), strs(&|x| Some(&x.kept_at.0))),
        Column::new("kept_row".into(), rows(&|x| x.kept_at.1)),
        Column::new("dropped_text".into(), strs(&|x| x.dropped_text.as_deref())),
        Column::new("kept_text".into(), strs(&|x| x.kept_text.as_deref())),
    ])
}

/// The Parquet file at `path` in a run's output, or None when there is none.
fn output_frame(path: &str) -> Result<Option<DataFrame>> {
    let Some(bytes) = crate::results::read_location(path)? else {
        return Ok(None);
    };
    let reader = ParquetReader::new(std::io::Cursor::new(bytes));
    reader.finish().map(Some).map_err(frame_error(path))
}

/// An error reading the output file at `path` (not Parquet, a column missing or of another
/// type), naming it.
fn frame_error(path: &str) -> impl Fn(PolarsError) -> Error + '_ {
    move |e| Error::Manifest {
        path: path.to_string(),
        source: e.into(),
    }
}

/// The strata's drop counts and each sampled pair's stratum (an index into them) of an audit
/// written before, for scoring: from the manifest (counts, fingerprint) and the pairs file (an
/// audit `--by-group` has a group on every pair).
pub(crate) fn recorded(out: &str) -> Result<(String, Vec<Band>, BTreeMap<String, usize>)> {
    let path = in_output(out, PAIRS_FILE);
    let missing = || Error::Manifest {
        path: path.clone(),
        source: "no such file; run `corpus-dedup audit OUT` first to sample the pairs".into(),
    };
    let df = output_frame(&path)?.ok_or_else(missing)?;
    let err = frame_error(&path);
    let column = |name: &str| -> Result<Vec<Option<String>>> {
        let c = df.column(name).map_err(&err)?.str().map_err(&err)?;
        Ok(c.iter().map(|x| x.map(str::to_string)).collect())
    };
    let (pair, band, group) = (column("pair")?, column("band")?, column("group")?);
    let by_group = group.iter().any(Option::is_some);
    let (m, rows) = Manifest::open(&in_output(out, "manifest.parquet"))?;
    let (all, swept) = all_bands(out, m.config.threshold)?;
    let strata = first_pass(&rows, &m, &all, &swept, by_group, 0)?;
    let mut strata: Vec<Band> = strata.into_iter().map(|(band, _)| band).collect();
    let index: HashMap<(Option<&str>, &str), usize> = (strata.iter().enumerate())
        .map(|(i, b)| ((b.group.as_deref(), b.name.as_str()), i))
        .collect();
    let mut of_pair = BTreeMap::new();
    let mut sampled = vec![0u64; strata.len()];
    for ((p, b), g) in pair.iter().zip(&band).zip(&group) {
        let (Some(p), Some(b)) = (p, b) else {
            continue;
        };
        if let Some(&i) = index.get(&(g.as_deref(), b.as_str())) {
            of_pair.insert(p.clone(), i);
            sampled[i] += 1;
        }
    }
    for (b, n) in strata.iter_mut().zip(sampled) {
        b.sampled = n;
    }
    Ok((run_fingerprint(&m), strata, of_pair))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_cover_zero_to_one_split_at_the_threshold() {
        let b = bands(0.8);
        let names: Vec<&str> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["<0.80", "0.80-0.85", "0.85-0.90", "0.90-0.95", "0.95-1.00"]
        );
        assert_eq!(band_of(&b, 0.8), 1);
        assert_eq!(band_of(&b, 0.8f32 as f64), 1);
        assert_eq!(band_of(&b, 0.87), 2);
        assert_eq!(band_of(&b, 1.0), 4);
        assert_eq!(band_of(&b, 0.5), 0);
        assert_eq!(band_of(&b, 0.0), 0);
        // A threshold that does not divide: bands as close to 0.05 as fit, the last ending at 1.
        let b = bands(0.93);
        assert_eq!(b.len(), 2);
        assert_eq!((b[1].lo, b[1].hi), (0.93, 1.0));
        assert_eq!(bands(0.7).len(), 7);
    }

    #[test]
    fn a_band_short_of_pairs_gives_its_share_to_the_others() {
        let same = |n: usize| vec![1u64; n];
        assert_eq!(
            shares(&[100, 100, 100, 100], &same(4), 200),
            [50, 50, 50, 50]
        );
        assert_eq!(shares(&[10, 100, 0, 100], &same(4), 200), [10, 95, 0, 95]);
        assert_eq!(shares(&[3, 2], &same(2), 200), [3, 2]);
        assert_eq!(shares(&[5, 5, 5], &same(3), 7), [3, 2, 2]);
        assert_eq!(shares(&[], &[], 7), Vec::<usize>::new());
        // More strata than pairs: the ones with the most drops.
        let drops = [1, 50, 2, 40, 3, 30];
        assert_eq!(shares(&[5; 6], &drops, 3), [0, 1, 0, 1, 0, 1]);
        assert_eq!(shares(&[5, 5, 5], &[1, 9, 1], 7), [2, 3, 2]);
    }
}
