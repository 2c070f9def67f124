#!/usr/bin/env bash
# Old and new binary alternated on the same shards: per-stage medians (from summary.json), wall
# time per pair, and whether the manifests are byte-identical. The way to measure a change on a
# VM whose speed drifts within the hour (docs/PERFORMANCE.md).
#   make bench-ab OLD=/path/old-binary NEW=/path/new-binary [CORPUS=dir] [ROUNDS=5]
#   [THREADS=1] [CORES=0] [ARGS='flags for both'] [NEW_ARGS='flags for the new binary only']
set -euo pipefail
OLD=${OLD:?OLD=path of the old binary} NEW=${NEW:?NEW=path of the new binary}
CORPUS=${CORPUS:-../shared/corpus/dev-small} ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-1} CORES=${CORES:-0} ARGS=${ARGS:-} NEW_ARGS=${NEW_ARGS:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Odd rounds run the old binary first, even rounds the new one: on this VM the second run of a
# pair is faster (~7% in an A/A run), so a fixed order would favour one side.
for r in $(seq 1 "$ROUNDS"); do
  order="old new"
  [ $((r % 2)) = 0 ] && order="new old"
  for v in $order; do
    bin=$OLD extra=$ARGS
    [ "$v" = new ] && bin=$NEW extra="$ARGS $NEW_ARGS"
    rm -rf "$work/$v"
    # shellcheck disable=SC2086 # flags meant to split into words
    /usr/bin/time -f '%e' -o "$work/time" taskset -c "$CORES" "$bin" run --quiet \
      --threads "$THREADS" --input "$CORPUS/shard-*.parquet" --output "$work/$v" $extra > /dev/null
    echo "$v $(cat "$work/time") $work/$v/summary.json" >> "$work/rounds"
    python3 - "$work/$v/summary.json" "$(cat "$work/time")" "$v" >> "$work/stages" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = {x["stage"]: x["seconds"] for x in s["stages"]}
d["report"] = s["report_seconds"]
d["wall"] = float(sys.argv[2])
print(sys.argv[3], json.dumps(d))
PY
  done
  echo "round $r done" >&2
done
same=no
cmp -s "$work/old/manifest.parquet" "$work/new/manifest.parquet" && same=yes
python3 - "$work/stages" "$ROUNDS" "$THREADS" "$CORES" "$same" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    v, d = line.split(" ", 1)
    by.setdefault(v, []).append(json.loads(d))
print(f"{sys.argv[2]} alternated pairs, --threads {sys.argv[3]}, cores {sys.argv[4]}; medians:")
print("| stage | old | new | new/old, median pair (order-balanced) |")
print("|---|---|---|---|")
# Stages of either binary, in run order (a stage one of them lacks counts 0 s there).
stages = list(dict.fromkeys([*by["new"][0], *by["old"][0]]))
stages = [k for k in stages if k not in ("report", "wall")] + ["report", "wall"]
for k in stages:
    o = statistics.median(x.get(k, 0) for x in by["old"])
    n = statistics.median(x.get(k, 0) for x in by["new"])
    # Per pair, then the order-balanced median as for the wall below (stages under 1 ms: -).
    r = [b.get(k, 0) / a[k] for a, b in zip(by["old"], by["new"]) if a.get(k, 0) > 0.001]
    ratio = "-"
    if len(r) >= 2:
        ratio = f"{(statistics.median(r[0::2]) * statistics.median(r[1::2])) ** 0.5:.3f}"
    print(f"| {k} | {o:.3f} s | {n:.3f} s | {ratio} |")
pairs = [b["wall"] / a["wall"] for a, b in zip(by["old"], by["new"])]
print(f"Wall new/old per pair: {' '.join(f'{p:.3f}' for p in pairs)}; "
      f"median {statistics.median(pairs):.3f}. Manifests byte-identical (last pair): {sys.argv[5]}.")
# Pairs 1, 3, ... ran old first, 2, 4, ... new first: the geometric mean of the two medians
# cancels a speed-up of whichever runs second.
if len(pairs) >= 2:
    first, second = statistics.median(pairs[0::2]), statistics.median(pairs[1::2])
    print(f"Median pair, old run first: {first:.3f}; new run first: {second:.3f}; "
          f"order-balanced: {(first * second) ** 0.5:.3f}.")
PY
