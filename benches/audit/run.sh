#!/usr/bin/env bash
# make bench-audit: does scoring labels that are the exact truth give the true precision of the
# run's drops, within the interval `audit --score` states? Runs the development corpus (dev-small:
# exact Jaccard >= 0.8 pairs) and the multilingual one (planted pairs, char-5-gram truth) at
# several thresholds, samples PAIRS pairs, labels them from the truth (truth.py), scores them,
# and prints one row per run; then one --sweep run per corpus, whose audit gives each lower
# threshold's precision, beside a run at it. usage: bash benches/audit/run.sh [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/../.."
PAIRS=${1:-200}
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
PY=${PY:-${CORPUS_DEDUP_PY_VENV:-$HOME/.cache/corpus-dedup-py-venv}/bin/python}
SHARED=../shared/corpus
W=${TMPDIR:-/tmp}/corpus-dedup-bench-audit
echo "| corpus | threshold | drops | true precision | audit precision (95% interval) | labelled | inside |"
echo "|---|---|---|---|---|---|---|"
for run in "dev-small 0.7" "dev-small 0.75" "dev-small 0.8" "multi 0.7" "multi 0.75" "multi 0.8"; do
  set -- $run
  corpus=$1 t=$2 out="$W/$1-$2"
  case $corpus in
    dev-small) input="$SHARED/dev-small/shard-*.parquet" truth="$SHARED/dev-small" ;;
    multi) input="$SHARED/multi/data/*.parquet" truth="$SHARED/multi" ;;
  esac
  rm -rf "$out"
  "$BIN" run --quiet --input "$input" --output "$out" --threshold "$t" > /dev/null
  "$BIN" audit "$out" --pairs "$PAIRS" > /dev/null
  true_json=$("$PY" benches/audit/truth.py "$out" "$corpus" "$truth")
  score=$("$BIN" audit "$out" --score "$out/labels.json")
  python3 - "$corpus" "$t" "$true_json" "$score" <<'PY'
import json, sys
corpus, t, truth, s = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
o, p = s["overall"], truth["true_precision"]
inside = "yes" if o["low"] <= p <= o["high"] else "no"
print(f"| {corpus} | {t} | {truth['drops']:,} | {p:.4f} | {o['precision']:.4f} ({o['low']:.4f}-{o['high']:.4f}) | {o['labelled']} | {inside} |")
PY
done
# One run with --sweep at 0.8: the precision its audit gives each lower threshold (the run's
# drops and the sweep's "would drop at S" bands), beside the true precision of a run at S above.
echo
echo "| corpus | threshold | one --sweep run: audit precision (95% interval) | true precision of a run at it | inside |"
echo "|---|---|---|---|---|"
for corpus in dev-small multi; do
  case $corpus in
    dev-small) input="$SHARED/dev-small/shard-*.parquet" truth="$SHARED/dev-small" ;;
    multi) input="$SHARED/multi/data/*.parquet" truth="$SHARED/multi" ;;
  esac
  out="$W/$corpus-sweep"
  rm -rf "$out"
  "$BIN" run --quiet --input "$input" --output "$out" --sweep 0.7,0.75,0.8,0.85,0.9,0.95 > /dev/null
  "$BIN" audit "$out" --pairs "$PAIRS" > /dev/null
  "$PY" benches/audit/truth.py "$out" "$corpus" "$truth" > /dev/null
  score=$("$BIN" audit "$out" --score "$out/labels.json")
  for t in 0.7 0.75; do
    true_json=$("$PY" benches/audit/truth.py "$W/$corpus-$t" "$corpus" "$truth")
    python3 - "$corpus" "$t" "$true_json" "$score" <<'PY'
import json, sys
corpus, t, truth, s = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
row = next(x for x in s["thresholds"] if x["threshold"] == t)["precision"]
p = truth["true_precision"]
inside = "yes" if row["low"] <= p <= row["high"] else "no"
print(f"| {corpus} | {t} | {row['precision']:.4f} ({row['low']:.4f}-{row['high']:.4f}) | {p:.4f} | {inside} |")
PY
  done
done
