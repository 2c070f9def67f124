#!/usr/bin/env bash
# make bench-sweep: does one `run --sweep` count what separate runs at each threshold drop, and
# what does the sweep cost? For each corpus: one run with --sweep 0.7,...,0.95 at the default
# threshold 0.8, then one plain run per threshold; prints the sweep's drops beside each separate
# run's, and the sweep run's wall time beside the plain 0.8 run's (best of ROUNDS each).
# usage: bash benches/sweep.sh [CORPUS ...]   (dev-small multi rust-docs, or a directory)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
ROUNDS=${ROUNDS:-3}
SWEEP=0.7,0.75,0.8,0.85,0.9,0.95
W=${TMPDIR:-/tmp}/corpus-dedup-bench-sweep
mkdir -p "$W"
input_of() {
  case $1 in
    dev-small) echo "../shared/corpus/dev-small/shard-*.parquet" ;;
    multi) echo "../shared/corpus/multi/data/*.parquet" ;;
    rust-docs) echo "data-samples/rust-docs.parquet" ;;
    *) echo "$1/shard-*.parquet" ;;
  esac
}
# Best wall time of ROUNDS runs of "$@" (seconds).
best() {
  local b=""
  for _ in $(seq "$ROUNDS"); do
    local s e
    s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
    b=$(python3 -c "print(min(float('${b:-inf}'), $e - $s))")
  done
  echo "$b"
}
echo "| corpus | threshold | sweep drops | separate run drops | difference | LSH recall at t (at least) |"
echo "|---|---|---|---|---|---|"
costs=()
for corpus in "${@:-dev-small multi rust-docs}"; do
  for c in $corpus; do
    name=$(basename "$c") input=$(input_of "$c")
    plain=$(best "$BIN" run --quiet --input "$input" --output "$W/$name-plain")
    sweep=$(best "$BIN" run --quiet --input "$input" --output "$W/$name-sweep" --sweep "$SWEEP")
    cmp -s "$W/$name-plain/manifest.parquet" "$W/$name-sweep/manifest.parquet" ||
      { echo "$name: the sweep run's manifest differs from the plain run's" >&2; exit 1; }
    for t in ${SWEEP//,/ }; do
      "$BIN" run --quiet --input "$input" --output "$W/$name-$t" --threshold "$t" > /dev/null
    done
    python3 - "$W" "$name" "$SWEEP" <<'PY'
import json, sys
w, name, sweep = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
rows = json.load(open(f"{w}/{name}-sweep/summary.json"))["sweep"]
for r in rows:
    t = r["threshold"]
    sep = json.load(open(f"{w}/{name}-{t}/summary.json"))["documents_dropped"]
    d = r["dropped"] - sep
    rel = d / sep if sep else 0.0
    print(f"| {name} | {t} | {r['dropped']:,} | {sep:,} | {d:+,} ({rel:+.2%}) | {r['lsh_recall']:.4f} |")
PY
    costs+=("| $name | $(printf %.2f "$plain") | $(printf %.2f "$sweep") | $(python3 -c "print(f'{$sweep / $plain:.2f}')") |")
  done
done
echo
echo "| corpus | plain run (s) | --sweep $SWEEP (s) | ratio |"
echo "|---|---|---|---|"
printf '%s\n' "${costs[@]}"
