#!/usr/bin/env bash
# Substring dedup (make bench-substrings): exactness against an independent suffix array
# (check.py), the suffix-array tool of Lee et al. side by side on the same kept text, and the
# cost of --substrings on CORPUS (default /tmp/dev-large).
#
#   BIN=path/to/corpus-dedup [DTD=path/to/dedup_dataset] [CORPUS=dir] [ROUNDS=7] [TOOL_ROUNDS=3]
#     [TOOL_INPUT='shard glob'] [EXACT=0] bash benches/substrings/run.sh
#
# EXACT=0 skips the exactness checks (for a build whose manifests are known to be unchanged).
# TOOL_ROUNDS: rounds of the side-by-side run (each: plain, --substrings, the tool); TOOL_INPUT:
# the shards whose kept text it runs on (default dev-small's; data-samples/rust-docs.parquet or
# ../shared/corpus/real-docs/real-docs.parquet for real templated pages).
#
# DTD: google-research/deduplicate-text-datasets built with `cargo build --release` (not part of
# this project; fetch and build it beside it). Without it that part is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
CORPUS=${CORPUS:-/tmp/dev-large} ROUNDS=${ROUNDS:-7} THREADS=${THREADS:-2} CORES=${CORES:-0,1}
L=${L:-200} TOOL_ROUNDS=${TOOL_ROUNDS:-3} EXACT=${EXACT:-1}
PY=$(../shared/corpus/tools/setup.sh)
"$(dirname "$PY")/pip" install -q pydivsufsort polars
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-substrings.XXXXXX")
trap 'rm -rf "$work"' EXIT
small=../shared/corpus/dev-small

if [ "$EXACT" != 0 ]; then
  echo "## Exactness on $small (L=$L): an independent suffix array over retained and original texts"
  "$BIN" run --quiet --input "$small/shard-*.parquet" --output "$work/s" --substrings \
    --substring-min-bytes "$L" > /dev/null
  "$PY" benches/substrings/check.py "$work/s" "$small/shard-*.parquet" "$L"
  echo "## With --paragraphs too (what --paragraphs alone removes is checked by its own rule)"
  "$BIN" run --quiet --input "$small/shard-*.parquet" --output "$work/sp" --substrings \
    --substring-min-bytes "$L" --paragraphs > /dev/null
  "$BIN" run --quiet --input "$small/shard-*.parquet" --output "$work/p" --paragraphs > /dev/null
  "$PY" benches/substrings/check.py "$work/sp" "$small/shard-*.parquet" "$L" "$work/p"
  if [ -e ../shared/corpus/multi/data ]; then
    echo "## ../shared/corpus/multi (L=$L)"
    "$BIN" run --quiet --input '../shared/corpus/multi/data/*.parquet' --output "$work/m" --substrings \
      --substring-min-bytes "$L" > /dev/null
    "$PY" benches/substrings/check.py "$work/m" '../shared/corpus/multi/data/*.parquet' "$L"
  fi
fi

# The kept text of a plain run, as one Parquet shard (ours) and as the suffix-array tool's
# input (each document after b"\xff\xff" and its 4-byte index, as its loaders write it).
TOOL_INPUT=${TOOL_INPUT:-$small/shard-*.parquet}
"$BIN" run --quiet --input "$TOOL_INPUT" --output "$work/plain" > /dev/null
"$PY" - "$work" "$TOOL_INPUT" <<'PY'
import glob, struct, sys
import polars as pl
work, pattern = sys.argv[1:3]
texts = pl.concat([pl.read_parquet(f, columns=["id", "text"]) for f in sorted(glob.glob(pattern))])
keep = pl.read_parquet(f"{work}/plain/manifest.parquet", columns=["keep"])["keep"]
kept = texts.filter(keep)
kept.write_parquet(f"{work}/kept.parquet")
with open(f"{work}/kept.bin", "wb") as f:
    for i, t in enumerate(kept["text"]):
        f.write(b"\xff\xff" + struct.pack("<I", i) + t.encode())
print(f"kept text: {kept.height} documents, {sum(len(t.encode()) for t in kept['text']) / 1e6:.1f} MB")
PY

echo "## One core, the same kept text, L=$L: corpus-dedup without and with --substrings, and the suffix-array tool, rounds alternated"
t() { /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > /dev/null 2>&1; cat "$work/time"; }
ours() {
  rm -rf "$work/k"
  t taskset -c 0 "$BIN" run --quiet --threads 1 --input "$work/kept.parquet" --output "$work/k" "$@"
}
: > "$work/times"
for i in $(seq "$TOOL_ROUNDS"); do
  echo "plain $(ours)" >> "$work/times"
  echo "substrings $(ours --substrings --substring-min-bytes "$L")" >> "$work/times"
  if [ -n "${DTD:-}" ]; then
    rm -rf "$work/cache" "$work"/kept.bin.table.bin*; mkdir -p "$work/cache"
    echo "tool-make $(t taskset -c 0 "$DTD" make --data-file "$work/kept.bin")" >> "$work/times"
    echo "tool-self-similar $(t taskset -c 0 "$DTD" self-similar --data-file "$work/kept.bin" \
      --length-threshold "$L" --cache-dir "$work/cache" --num-threads 1)" >> "$work/times"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" taskset -c 0 "$DTD" collect \
      --data-file "$work/kept.bin" --cache-dir "$work/cache" --length-threshold "$L" \
      > "$work/ranges" 2> /dev/null
    echo "tool-collect $(cat "$work/time")" >> "$work/times"
  fi
done
"$PY" - "$work/times" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, wall, user, sys_, kib = line.split()
    rows.setdefault(name, []).append((float(wall), float(user) + float(sys_), int(kib) / 1024))
med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in rows.items()}
print("| | wall | CPU (user + sys) | peak RSS MiB |")
print("|---|---|---|---|")
for k, (w, c, m) in med.items():
    print(f"| {k} | {w:.2f} s | {c:.2f} s | {m:.0f} |")
if "tool-make" in med:
    tool = sum(med[k][1] for k in med if k.startswith("tool-"))
    peak = max(med[k][2] for k in med if k.startswith("tool-"))
    whole, plain = med["substrings"][1], med["plain"][1]
    print(f"tool CPU {tool:.2f} s, peak {peak:.0f} MiB")
    print(f"CPU: tool / whole --substrings run = {tool / whole:.1f}x; "
          f"tool / (--substrings run - plain run) = {tool / (whole - plain):.1f}x")
    # The same ratios within each round (its runs back to back), which this VM's drift
    # between rounds does not move.
    n = len(rows["plain"])
    tools = [sum(rows[k][i][1] for k in rows if k.startswith("tool-")) for i in range(n)]
    subs = [rows["substrings"][i][1] for i in range(n)]
    plains = [rows["plain"][i][1] for i in range(n)]
    whole_r = sorted(t / s for t, s in zip(tools, subs))
    work_r = sorted(t / (s - p) for t, s, p in zip(tools, subs, plains))
    print(f"per round: whole {' '.join(f'{x:.1f}' for x in whole_r)}x (median "
          f"{statistics.median(whole_r):.1f}x); substring work {' '.join(f'{x:.1f}' for x in work_r)}x "
          f"(median {statistics.median(work_r):.1f}x)")
    print(f"peak RSS: --substrings run / tool = {med['substrings'][2] / peak:.2f}")
PY
"$PY" -c "import json; s=json.load(open('$work/k/summary.json'))['substrings']; print('corpus-dedup removes', s['bytes_removed'], 'bytes')"
if [ -n "${DTD:-}" ]; then
  "$PY" - "$work/ranges" <<'PY'
import sys
n = 0
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 2 and p[0].isdigit():
        n += int(p[1]) - int(p[0])
print("suffix-array tool removes", n, "bytes (every copy, separators included)")
PY
fi

echo "## Cost on $CORPUS: plain (old) vs --substrings (new), the same binary, alternated"
OLD=$BIN NEW=$BIN CORPUS=$CORPUS ROUNDS=$ROUNDS THREADS=$THREADS CORES=$CORES \
  NEW_ARGS="--substrings" bash benches/ab.sh 2>/dev/null
echo "## Peak RSS, $ROUNDS alternated pairs, medians"
BIN=$BIN CORPUS=$CORPUS THREADS=$THREADS ROUNDS=$ROUNDS bash benches/rss.sh "$work" --substrings
