#!/usr/bin/env bash
# make bench-sketch: quality of the two MinHash sketches (classic, oph) over permutation seeds,
# scored against each corpus' exact ground truth. Every seed runs both sketches (paired), so the
# table gives each sketch's mean and spread and the paired difference oph - classic with its
# standard error. Writes benches/results/sketch.md and prints it.
#
#   make bench-sketch                                   # dev-small, seeds 1-15
#   make bench-sketch CORPORA='../shared/corpus/dev-small /tmp/dev-large /tmp/dev-short' SEEDS=15
#
# The corpora beside dev-small are made with the corpus tools (../shared/corpus/README.md,
# "Bigger corpora"): dev-large (100k documents) and dev-short (30k short documents, half Chinese).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPORA=${CORPORA:-../shared/corpus/dev-small}
SEEDS=${SEEDS:-15}
THREADS=${THREADS:-2}
BIN=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
[ -x "$BIN" ] || { echo "bench-sketch: $BIN not built (make build)"; exit 1; }
PY=$(../shared/corpus/tools/setup.sh "${TMPDIR:-/tmp}/corpus-dedup-bench-venv")
# The scorer hashes str tokens, which xxhash 4 no longer accepts.
"$(dirname "$PY")/pip" install -q "xxhash<4"
work=${TMPDIR:-/tmp}/corpus-dedup-bench-sketch
rm -rf "$work"; mkdir -p "$work" benches/results
scores=$work/scores.tsv
for corpus in $CORPORA; do
  [ -f "$corpus/docs.txt" ] || { echo "bench-sketch: $corpus has no ground truth (see the corpus README)"; exit 1; }
  for seed in $(seq 1 "$SEEDS"); do
    for sketch in classic oph; do
      o=$work/out
      rm -rf "$o"
      "$BIN" run --quiet --threads "$THREADS" --seed "$seed" --sketch "$sketch" \
        --input "$corpus/shard-*.parquet" --output "$o" > /dev/null
      s=$("$PY" ../shared/corpus/tools/score_manifest.py "$corpus" "$o" | tail -1)
      r=$(sed -n 's/.*doc_recall=\([^ ]*\).*/\1/p' <<< "$s")
      p=$(sed -n 's/.*doc_precision=\([^ ]*\).*/\1/p' <<< "$s")
      printf '%s\t%s\t%s\t%s\t%s\n' "$corpus" "$seed" "$sketch" "$r" "$p" >> "$scores"
      echo "bench-sketch: $corpus seed $seed $sketch: recall $r precision $p" >&2
    done
  done
done
out=benches/results/sketch.md
python3 - "$scores" "$SEEDS" "$THREADS" > "$out" <<'PY'
import statistics as st, sys, datetime, collections
path, seeds, threads = sys.argv[1:]
rows = collections.defaultdict(dict)
for line in open(path):
    corpus, seed, sketch, r, p = line.split()
    rows[corpus][(int(seed), sketch)] = (float(r), float(p))
print(f"# MinHash sketch quality over seeds ({datetime.date.today()})")
print()
print(f"Command: make bench-sketch (seeds 1-{seeds}, --threads {threads}; each seed runs both sketches).")
print("Mean +- standard deviation over seeds; the paired difference oph - classic with its standard")
print("error (sd of the per-seed differences / sqrt(seeds)).")
print()
print("| corpus | measure | classic | oph | oph - classic | oph no worse beyond noise (diff >= -2 se) |")
print("|---|---|---|---|---|---|")
for corpus, d in rows.items():
    seeds_ = sorted({s for s, _ in d})
    for i, name in enumerate(["doc recall", "doc precision"]):
        c = [d[(s, "classic")][i] for s in seeds_]
        o = [d[(s, "oph")][i] for s in seeds_]
        diff = [b - a for a, b in zip(c, o)]
        m, se = st.mean(diff), (st.stdev(diff) / len(diff) ** 0.5 if len(diff) > 1 else 0.0)
        ok = "yes" if m >= -2 * se else "NO"
        sd = lambda v: st.stdev(v) if len(v) > 1 else 0.0
        print(f"| {corpus} | {name} | {st.mean(c):.4f} +- {sd(c):.4f} | {st.mean(o):.4f} +- {sd(o):.4f} "
              f"| {m:+.4f} +- {se:.4f} | {ok} |")
PY
cat "$out"
