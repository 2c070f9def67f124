#!/usr/bin/env bash
# JSON Lines input against Parquet (make bench-jsonl): the same shards of CORPUS written as
# .jsonl and .jsonl.zst, one binary run on all three, order rotated, one pinned core; the
# decisions compared; the plan's counting pass alone; then the peak RSS of a run over one
# generated ~5 GB .jsonl.zst file (not kept; BIG_COPIES=0 skips it).
#   BIN=path/to/corpus-dedup [CORPUS=dir] [ROUNDS=6] [CORES=0] [BIG_COPIES=11] bash benches/jsonl/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
CORPUS=${CORPUS:-/tmp/dev-large} ROUNDS=${ROUNDS:-6} CORES=${CORES:-0} BIG_COPIES=${BIG_COPIES:-11}
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
mkdir -p "$work/jz"
for f in "$work"/jl/*.jsonl; do zstd -q -3 "$f" -o "$work/jz/$(basename "$f").zst"; done
echo "## $CORPUS: Parquet $(du -sh "$CORPUS" | cut -f1), JSON Lines $(du -sh "$work/jl" | cut -f1), JSON Lines + zstd $(du -sh "$work/jz" | cut -f1); one core, $ROUNDS rounds, order rotated"
t() { /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null; cat "$work/time"; }
for r in $(seq "$ROUNDS"); do
  # The order rotates by one each round.
  all=(pq jl jz pz pp) order=""
  for k in 0 1 2 3 4; do order="$order ${all[$(((r + k) % 5))]}"; done
  for v in $order; do
    if [ "$v" = pz ] || [ "$v" = pp ]; then
      # The plan alone: it reads every file through to count its documents, so over the .zst
      # files less over the .jsonl files it is one decompression, in process.
      files="$work/jz/*.jsonl.zst"
      [ "$v" = pp ] && files="$work/jl/*.jsonl"
      rm -rf "$work/plan-out" "$work/plan-work"
      echo "$v $(t taskset -c "$CORES" "$BIN" plan --quiet --input "$files" --output "$work/plan-out" --work "$work/plan-work")" >> "$work/rounds"
      continue
    fi
    case $v in
      pq) input="$CORPUS/shard-*.parquet" ;;
      jl) input="$work/jl/*.jsonl" ;;
      *) input="$work/jz/*.jsonl.zst" ;;
    esac
    rm -rf "$work/out-$v"
    echo "$v $(t taskset -c "$CORES" "$BIN" run --quiet --threads 1 --input "$input" --output "$work/out-$v")" >> "$work/rounds"
  done
done
"$PY" - "$work" <<'PY'
import statistics, sys
import polars as pl
work = sys.argv[1]
runs = {"pq": [], "jl": [], "jz": [], "pz": [], "pp": []}
for line in open(f"{work}/rounds"):
    v, wall, rss = line.split()
    runs[v].append((float(wall), int(rss)))
names = {"pq": "Parquet", "jl": "JSON Lines (.jsonl)", "jz": "JSON Lines + zstd (.jsonl.zst)", "pz": "plan alone over .jsonl.zst", "pp": "plan alone over .jsonl"}
for v in runs:
    print(f"{names[v]}: wall median {statistics.median(w for w, _ in runs[v]):.2f} s, peak RSS median {statistics.median(r for _, r in runs[v]) / 1024:.0f} MiB")
for v in ("jl", "jz"):
    ratios = [j[0] / p[0] for p, j in zip(runs["pq"], runs[v])]
    print(f"{names[v]} / Parquet wall, median of rounds: {statistics.median(ratios):.3f} ({', '.join(f'{x:.3f}' for x in ratios)})")
# A reader that decompressed each .zst file once (no counting pass first) would take the plain
# run plus one decompression (the plan over the .zst files less the plan over the .jsonl ones):
# its estimate against Parquet, per round.
once = [(j[0] + z[0] - p2[0]) / p[0] for p, j, z, p2 in zip(runs["pq"], runs["jl"], runs["pz"], runs["pp"])]
print(f"one decompression per file (estimate), (.jsonl + plan .zst - plan .jsonl) / Parquet, median of rounds: {statistics.median(once):.3f} ({', '.join(f'{x:.3f}' for x in once)})")
base = pl.read_parquet(f"{work}/out-pq/manifest.parquet").drop("file")
for v in ("jl", "jz"):
    print(f"{names[v]}: decisions identical to Parquet's (manifest without its file column):", base.equals(pl.read_parquet(f"{work}/out-{v}/manifest.parquet").drop("file")))
PY

echo "## Peak RSS reading one ~5 GB .jsonl.zst ($BIG_COPIES copies of the corpus' lines), 2 threads"
[ "$BIG_COPIES" = 0 ] && exit 0
for _ in $(seq "$BIG_COPIES"); do cat "$work"/jl/*.jsonl; done | zstd -q -3 -o "$work/big.jsonl.zst"
rm -rf "$work/jl" "$work/jz" "$work"/out-*
echo "compressed $(du -h "$work/big.jsonl.zst" | cut -f1), $(zstd -dc "$work/big.jsonl.zst" | wc -c) bytes of JSON Lines"
echo "wall s, peak KiB: $(t "$BIN" run --quiet --threads 2 --allow-duplicate-ids --input "$work/big.jsonl.zst" --output "$work/big")"
