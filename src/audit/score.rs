//! Labels on an audit's pairs -> precision per band and over all the run's drops, each with a
//! 95% interval, and what that means for the run's drops.
//!
//! A band's precision is its `y` share among the pairs labelled `y` or `n` (`s`, skipped, does
//! not count), with a Wilson interval. The overall precision weights each labelled band by its
//! share of the run's drops (bands no label reached are left out, and named); its interval is
//! the normal one of that weighted sum, each band's variance taken at the Agresti-Coull
//! adjusted share, so a band labelled all `y` still counts its uncertainty. With `--by-group`
//! the strata are each group's bands, and each group gets the same figure over its own.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Band;
use crate::error::{Error, Result};

/// 95% two-sided.
const Z: f64 = 1.959_964;

/// A share with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Share {
    pub labelled: u64,
    pub precision: f64,
    pub low: f64,
    pub high: f64,
}

/// One band's labels and precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BandScore {
    /// `--by-group`: the stratum's `--report-group` value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub band: String,
    /// `--sweep`: the threshold below the run's that would drop this band's documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<f64>,
    pub drops: u64,
    pub sampled: u64,
    pub yes: u64,
    pub no: u64,
    pub skipped: u64,
    /// None when no pair of the band is labelled `y` or `n`.
    pub precision: Option<Share>,
}

/// One `--report-group` value's precision, its labelled bands weighted by their drops.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GroupScore {
    pub group: String,
    pub drops: u64,
    pub precision: Option<Share>,
}

/// The precision of the drops of `bands`: each labelled band weighted by its share of their
/// drops, with the normal interval of that sum (None when no band is labelled).
fn stratified<'a>(bands: impl Iterator<Item = &'a BandScore>) -> Option<Share> {
    let labelled: Vec<&BandScore> = bands.filter(|b| b.precision.is_some()).collect();
    let weight: u64 = labelled.iter().map(|b| b.drops).sum();
    if weight == 0 {
        return None;
    }
    let (mut p, mut var) = (0.0, 0.0);
    for b in &labelled {
        let w = b.drops as f64 / weight as f64;
        let n = (b.yes + b.no) as f64;
        p += w * b.yes as f64 / n;
        let adjusted = (b.yes as f64 + 2.0) / (n + 4.0);
        var += w * w * adjusted * (1.0 - adjusted) / (n + 4.0);
    }
    let half = Z * var.sqrt();
    Some(Share {
        labelled: labelled.iter().map(|b| b.yes + b.no).sum(),
        precision: p,
        low: (p - half).max(0.0),
        high: (p + half).min(1.0),
    })
}

/// `--sweep`: the precision a run at a lower threshold would have: its drops are the run's and
/// those of the sweep's bands at or above it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ThresholdScore {
    pub threshold: f64,
    pub drops: u64,
    /// None when no band of its drops is labelled.
    pub precision: Option<Share>,
}

/// The run's drops a person would not have made, estimated, with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Wrong {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// What the labels say about the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Score {
    pub run: String,
    pub drops: u64,
    /// None when no pair is labelled `y` or `n`.
    pub overall: Option<Share>,
    pub bands: Vec<BandScore>,
    /// `--by-group`: each group's precision over its bands (empty without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupScore>,
    /// Drops a person would not have made: the run's drops x (1 - precision), with the interval.
    pub wrong_drops: Option<Wrong>,
    /// Bands with drops but no label, left out of the overall figure.
    pub unlabelled_bands: Vec<String>,
    /// `--sweep`: each threshold below the run's, as if the run had used it (empty without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdScore>,
}

/// Labels as the page exports them: a JSON object of pair -> label.
pub(crate) fn parse_labels(json: &str) -> Result<BTreeMap<String, String>> {
    serde_json::from_str(json).map_err(|e| {
        Error::Config(format!(
            "labels: not a JSON object of pair -> \"y\", \"n\" or \"s\" as the audit page exports ({e})"
        ))
    })
}

/// Wilson's 95% interval of `yes` in `n`.
fn wilson(yes: u64, n: u64) -> Share {
    let (y, n) = (yes as f64, n as f64);
    let p = y / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    // At a share of 0 or 1 the bound on that side is exactly it (rounding would miss it).
    let low = if p == 0.0 { 0.0 } else { centre - half };
    let high = if p == 1.0 { 1.0 } else { centre + half };
    Share {
        labelled: n as u64,
        precision: p,
        low: low.max(0.0),
        high: high.min(1.0),
    }
}

/// Scores `labels` (pair -> "y", "n" or "s") of the audit of run `run` whose strata are
/// `bands` (`of_pair`: each sampled pair's stratum, an index into them).
pub(crate) fn score(
    run: &str,
    bands: &[Band],
    of_pair: &BTreeMap<String, usize>,
    labels: &BTreeMap<String, String>,
) -> Result<Score> {
    let bad = |what: String| Error::Config(format!("labels: {what}"));
    let mut counts = vec![(0u64, 0u64, 0u64); bands.len()];
    for (pair, label) in labels {
        let their_run = pair.split('-').next().unwrap_or_default();
        if their_run != run {
            return Err(bad(format!(
                "pair '{pair}' is from run '{their_run}', not this output's run '{run}'; score the labels against the output they were made on"
            )));
        }
        let Some(&stratum) = of_pair.get(pair) else {
            return Err(bad(format!(
                "pair '{pair}' is not among this output's audit pairs; score the labels against the audit that showed them"
            )));
        };
        let c = &mut counts[stratum];
        match label.as_str() {
            "y" => c.0 += 1,
            "n" => c.1 += 1,
            "s" => c.2 += 1,
            other => {
                return Err(bad(format!(
                    "pair '{pair}' has the label '{other}'; each label is \"y\", \"n\" or \"s\""
                )))
            }
        }
    }
    let drops: u64 = (bands.iter())
        .filter(|b| b.sweep.is_none())
        .map(|b| b.drops)
        .sum();
    let scored: Vec<BandScore> = (bands.iter().zip(&counts))
        .map(|(b, &(yes, no, skipped))| BandScore {
            group: b.group.clone(),
            band: b.name.clone(),
            sweep: b.sweep,
            drops: b.drops,
            sampled: b.sampled,
            yes,
            no,
            skipped,
            precision: (yes + no > 0).then(|| wilson(yes, yes + no)),
        })
        .collect();
    let run_bands = || scored.iter().filter(|b| b.sweep.is_none());
    let overall = stratified(run_bands());
    // `--by-group`: each group's precision over its own bands.
    let mut by_group: BTreeMap<&str, Vec<&BandScore>> = BTreeMap::new();
    for b in run_bands() {
        if let Some(g) = &b.group {
            by_group.entry(g.as_str()).or_default().push(b);
        }
    }
    let groups = (by_group.into_iter())
        .map(|(group, bands)| GroupScore {
            group: group.to_string(),
            drops: bands.iter().map(|b| b.drops).sum(),
            precision: stratified(bands.into_iter()),
        })
        .collect();
    let wrong_drops = overall.map(|s| {
        let d = drops as f64;
        Wrong {
            estimate: d * (1.0 - s.precision),
            low: d * (1.0 - s.high),
            high: d * (1.0 - s.low),
        }
    });
    let unlabelled_bands = (scored.iter())
        .filter(|b| b.precision.is_none() && b.drops > 0)
        .map(|b| match &b.group {
            Some(g) => format!("{g} {}", b.band),
            None => b.band.clone(),
        })
        .collect();
    let mut lower: Vec<f64> = scored.iter().filter_map(|b| b.sweep).collect();
    lower.sort_by(f64::total_cmp);
    lower.dedup();
    let thresholds = (lower.into_iter())
        .map(|t| {
            let at = || (scored.iter()).filter(move |b| b.sweep.is_none_or(|s| s >= t));
            ThresholdScore {
                threshold: t,
                drops: at().map(|b| b.drops).sum(),
                precision: stratified(at()),
            }
        })
        .collect();
    Ok(Score {
        run: run.to_string(),
        drops,
        overall,
        bands: scored,
        groups,
        wrong_drops,
        unlabelled_bands,
        thresholds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(name: &str, drops: u64) -> Band {
        Band {
            group: None,
            name: name.into(),
            lo: 0.0,
            hi: 0.0,
            sweep: None,
            drops,
            sampled: 0,
        }
    }

    fn labels(run: &str, ls: &[(&str, &str)]) -> BTreeMap<String, String> {
        (ls.iter())
            .map(|(p, l)| (format!("{run}-{p}"), l.to_string()))
            .collect()
    }

    fn pairs(run: &str, ps: &[(&str, usize)]) -> BTreeMap<String, usize> {
        (ps.iter())
            .map(|&(p, b)| (format!("{run}-{p}"), b))
            .collect()
    }

    #[test]
    fn precision_weights_bands_by_their_drops() {
        let bands = [band("lo", 900), band("hi", 100), band("empty", 0)];
        let of = pairs("r1", &[("0", 0), ("1", 0), ("2", 1), ("3", 1), ("4", 1)]);
        let l = labels(
            "r1",
            &[("0", "y"), ("1", "n"), ("2", "y"), ("3", "y"), ("4", "s")],
        );
        let s = score("r1", &bands, &of, &l).unwrap();
        // lo: 1 of 2; hi: 2 of 2 (the skip does not count).
        assert_eq!((s.bands[0].yes, s.bands[0].no), (1, 1));
        assert_eq!((s.bands[1].yes, s.bands[1].skipped), (2, 1));
        let o = s.overall.unwrap();
        assert!((o.precision - (0.9 * 0.5 + 0.1 * 1.0)).abs() < 1e-12);
        assert!(o.low < o.precision && o.precision < o.high && o.high <= 1.0);
        assert_eq!(o.labelled, 4);
        let w = s.wrong_drops.unwrap();
        assert!((w.estimate - 450.0).abs() < 1e-9 && w.low < w.estimate && w.estimate < w.high);
        // An empty band is said, not scored; no band without labels is left out here.
        assert_eq!(s.bands[2].precision, None);
        assert!(s.unlabelled_bands.is_empty());
    }

    #[test]
    fn each_group_is_scored_over_its_own_bands() {
        let strata = [("a", 100), ("a", 300), ("b", 50)].map(|(g, drops)| Band {
            group: Some(g.into()),
            ..band("0.80-0.90", drops)
        });
        let of = pairs("r1", &[("0", 0), ("1", 1), ("2", 1), ("3", 2)]);
        let l = labels("r1", &[("0", "n"), ("1", "y"), ("2", "y"), ("3", "y")]);
        let s = score("r1", &strata, &of, &l).unwrap();
        let g: Vec<(&str, u64, f64)> = (s.groups.iter())
            .map(|g| (g.group.as_str(), g.drops, g.precision.unwrap().precision))
            .collect();
        assert_eq!(g, [("a", 400, 0.75), ("b", 50, 1.0)]);
        assert!((s.overall.unwrap().precision - (300.0 + 50.0) / 450.0).abs() < 1e-12);
    }

    #[test]
    fn labels_from_another_run_or_unknown_values_are_refused() {
        let bands = [band("b", 10)];
        let of = pairs("r1", &[("0", 0)]);
        let err = score("r1", &bands, &of, &labels("r2", &[("0", "y")])).unwrap_err();
        assert!(err.to_string().contains("run 'r2'"), "{err}");
        let err = score("r1", &bands, &of, &labels("r1", &[("0", "maybe")])).unwrap_err();
        assert!(err.to_string().contains("'maybe'"), "{err}");
        let err = score("r1", &bands, &of, &labels("r1", &[("9", "y")])).unwrap_err();
        assert!(err.to_string().contains("r1-9"), "{err}");
        // No labels: nothing to say overall, the band named.
        let s = score("r1", &bands, &of, &BTreeMap::new()).unwrap();
        assert_eq!(
            (s.overall, s.unlabelled_bands),
            (None, vec!["b".to_string()])
        );
    }

    #[test]
    fn a_lower_threshold_adds_its_sweep_bands_to_the_run_drops() {
        let sweep = |t: f64, drops| Band {
            sweep: Some(t),
            ..band(&format!("would drop at {t}"), drops)
        };
        let bands = [
            band("0.80-0.90", 300),
            band("0.90-1.00", 100),
            sweep(0.7, 100),
            sweep(0.75, 100),
        ];
        let of = pairs("r1", &[("0", 0), ("1", 1), ("2", 2), ("3", 2), ("4", 3)]);
        let l = labels(
            "r1",
            &[("0", "y"), ("1", "y"), ("2", "n"), ("3", "n"), ("4", "y")],
        );
        let s = score("r1", &bands, &of, &l).unwrap();
        // The run's own figures leave the sweep's bands out.
        assert_eq!(s.drops, 400);
        assert_eq!(s.overall.unwrap().precision, 1.0);
        assert_eq!(s.wrong_drops.unwrap().estimate, 0.0);
        // At 0.75: 500 drops, all agreed; at 0.7: 600, the 100 of 0.7 all wrong.
        let t: Vec<(f64, u64, f64)> = (s.thresholds.iter())
            .map(|t| (t.threshold, t.drops, t.precision.unwrap().precision))
            .collect();
        assert_eq!(t[1], (0.75, 500, 1.0));
        assert_eq!((t[0].0, t[0].1), (0.7, 600));
        assert!((t[0].2 - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(s.bands[2].sweep, Some(0.7));
    }

    #[test]
    fn wilson_interval_holds_the_share() {
        let s = wilson(50, 50);
        assert_eq!(s.precision, 1.0);
        assert!(s.low > 0.9 && s.low < 1.0 && s.high == 1.0);
        let s = wilson(0, 10);
        assert!(s.low == 0.0 && s.high > 0.2 && s.high < 0.35);
    }
}
