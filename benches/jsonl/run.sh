#!/usr/bin/env bash
# JSON Lines input against Parquet (make bench-jsonl): the same shards of CORPUS written as
# .jsonl.zst, one binary run on both, order alternated, one pinned core; the decisions compared;
# then the peak RSS of a run over one generated ~5 GB .jsonl.zst file (not kept).
#   BIN=path/to/corpus-dedup [CORPUS=dir] [ROUNDS=5] [CORES=0] [BIG_COPIES=11] bash benches/jsonl/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
CORPUS=${CORPUS:-/tmp/dev-large} ROUNDS=${ROUNDS:-5} CORES=${CORES:-0} BIG_COPIES=${BIG_COPIES:-11}
PY=$(../shared/corpus/tools/setup.sh)
"$(dirname "$PY")/pip" install -q polars
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-jsonl.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/jl"
"$PY" - "$CORPUS" "$work/jl" <<'PY'
import glob, os, sys
import polars as pl
corpus, out = sys.argv[1:3]
for f in sorted(glob.glob(f"{corpus}/shard-*.parquet")):
    pl.read_parquet(f).write_ndjson(os.path.join(out, os.path.basename(f).replace(".parquet", ".jsonl")))
PY
zstd -q --rm -3 "$work"/jl/*.jsonl
echo "## $CORPUS: Parquet $(du -sh "$CORPUS" | cut -f1), JSON Lines + zstd $(du -sh "$work/jl" | cut -f1); one core, $ROUNDS alternated pairs"
t() { /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null; cat "$work/time"; }
for r in $(seq "$ROUNDS"); do
  order="pq jl"
  [ $((r % 2)) = 0 ] && order="jl pq"
  for v in $order; do
    input="$CORPUS/shard-*.parquet"
    [ "$v" = jl ] && input="$work/jl/*.jsonl.zst"
    rm -rf "$work/out-$v"
    echo "$v $(t taskset -c "$CORES" "$BIN" run --quiet --threads 1 --input "$input" --output "$work/out-$v")" >> "$work/rounds"
  done
done
"$PY" - "$work" <<'PY'
import statistics, sys
import polars as pl
work = sys.argv[1]
runs = {"pq": [], "jl": []}
for line in open(f"{work}/rounds"):
    v, wall, rss = line.split()
    runs[v].append((float(wall), int(rss)))
pairs = [j[0] / p[0] for p, j in zip(runs["pq"], runs["jl"])]
for v, name in [("pq", "Parquet"), ("jl", "JSON Lines (.jsonl.zst)")]:
    print(f"{name}: wall median {statistics.median(w for w, _ in runs[v]):.2f} s, peak RSS median {statistics.median(r for _, r in runs[v]) / 1024:.0f} MiB")
print(f"JSON Lines / Parquet wall, median pair: {statistics.median(pairs):.3f} (pairs {', '.join(f'{x:.3f}' for x in pairs)})")
a, b = (pl.read_parquet(f"{work}/out-{v}/manifest.parquet").drop("file") for v in ("pq", "jl"))
print("decisions identical (manifest without its file column):", a.equals(b))
PY

echo "## Peak RSS reading one ~5 GB .jsonl.zst ($BIG_COPIES copies of the corpus' lines), 2 threads"
for _ in $(seq "$BIG_COPIES"); do zstd -dc "$work"/jl/*.jsonl.zst; done | zstd -q -3 -o "$work/big.jsonl.zst"
rm -rf "$work/jl" "$work/out-jl" "$work/out-pq"
echo "compressed $(du -h "$work/big.jsonl.zst" | cut -f1), $(zstd -dc "$work/big.jsonl.zst" | wc -c) bytes of JSON Lines"
echo "wall s, peak KiB: $(t "$BIN" run --quiet --threads 2 --allow-duplicate-ids --input "$work/big.jsonl.zst" --output "$work/big")"
