#!/usr/bin/env bash
# Benchmark decontamination (make bench-decontam): the planted set (measure.py: the job's
# --reference beside the measures it was chosen from), then the cost of 100k reference items
# against CORPUS (default /tmp/dev-large): plain vs --reference alternated (ab.sh, the same
# binary), cold (the table built) and nightly with --index (the table read from the index's
# cache), and peak RSS of each.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Outputs on tmpfs where there is one: the intermediate files' writes into the page cache
# otherwise dominate the scatter between runs (docs/PERFORMANCE.md).
[ -d /dev/shm ] && export TMPDIR=${TMPDIR:-/dev/shm}
BIN=${BIN:?BIN=path of corpus-dedup} GEN=${GEN:?GEN=path of gen-corpus}
CORPUS=${CORPUS:-/tmp/dev-large} ROUNDS=${ROUNDS:-12} THREADS=${THREADS:-2} CORES=${CORES:-0,1}
PY=$(../shared/corpus/tools/setup.sh)
"$(dirname "$PY")/pip" install -q polars
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-decontam.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "## Planted set"
"$PY" benches/decontam/measure.py --job "$BIN"
echo
echo "## 100k reference items against $CORPUS"
"$PY" benches/decontam/make_reference.py "$GEN" "$work/ref.parquet"
ab() { OLD=$BIN NEW=$BIN CORPUS=$CORPUS ROUNDS=$ROUNDS THREADS=$THREADS CORES=$CORES bash benches/ab.sh 2>/dev/null; }
echo "### cold: plain (old) vs --reference (new)"
NEW_ARGS="--reference $work/ref.parquet" ab
echo "### nightly with --index (cache warm): without (old) vs with --reference (new)"
"$BIN" run --quiet --input "$CORPUS/shard-*.parquet" --output "$work/warm" --index "$work/ix" \
  --batch n1 --reference "$work/ref.parquet" > /dev/null
ARGS="--index $work/ix --batch n1" NEW_ARGS="--reference $work/ref.parquet" ab
echo "### peak RSS (MiB)"
for a in "" "--reference $work/ref.parquet" "--index $work/ix --batch n1 --reference $work/ref.parquet"; do
  rm -rf "$work/o"
  # shellcheck disable=SC2086 # flags meant to split into words
  /usr/bin/time -f "%M" -o "$work/rss" "$BIN" run --quiet --threads "$THREADS" \
    --input "$CORPUS/shard-*.parquet" --output "$work/o" $a > /dev/null
  echo "$(( $(cat "$work/rss") / 1024 )) MiB: run ${a:-(plain)}" | sed "s|$work/||g"
done
