#!/usr/bin/env bash
# make bench: end-to-end speed, memory and quality of corpus-dedup on the development corpus
# (../shared/corpus/dev-small), one thread pinned to one core, then two threads.
# Writes benches/results/latest.md (quoted in README) and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus/dev-small}
BIN=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
[ -d "$CORPUS" ] || { echo "bench: corpus $CORPUS not found (set CORPUS=dir)"; exit 1; }
[ -x "$BIN" ] || { echo "bench: $BIN not built (make build)"; exit 1; }
PY=$(../shared/corpus/tools/setup.sh "${TMPDIR:-/tmp}/corpus-dedup-bench-venv")
# The scorer hashes str tokens, which xxhash 4 no longer accepts.
"$(dirname "$PY")/pip" install -q "xxhash<4"
work=${TMPDIR:-/tmp}/corpus-dedup-bench
rm -rf "$work"; mkdir -p "$work" benches/results
bytes=$(cat "$CORPUS/bytes.txt" 2>/dev/null || echo 0)
docs=$(cat "$CORPUS/docs.txt" 2>/dev/null || echo 0)
out=benches/results/latest.md
{
  echo "# corpus-dedup benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "Corpus: $CORPUS ($docs docs, $bytes bytes of text). Command: make bench"
  echo
  echo "| run | wall s | CPU s | docs/s | MB/s | MB/s per core | peak RSS MiB | doc recall | doc precision | recall en | recall zh |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out"
run() { # name, cores, args...
  local name=$1 cores=$2; shift 2
  local o="$work/$name"
  /usr/bin/time -f '%e %U %S %M' -o "$work/$name.time" taskset -c "$cores" "$BIN" run --quiet --input "$CORPUS/shard-*.parquet" --output "$o" "$@" > /dev/null
  read -r wall user sys rss < "$work/$name.time"
  local all json score; all=$("$PY" ../shared/corpus/tools/score_manifest.py "$CORPUS" "$o")
  json=$(head -1 <<< "$all"); score=$(tail -1 <<< "$all")
  echo "$name|$json" >> "$work/scores.txt"
  local r p en zh
  r=$(sed -n 's/.*doc_recall=\([^ ]*\).*/\1/p' <<< "$score"); p=$(sed -n 's/.*doc_precision=\([^ ]*\).*/\1/p' <<< "$score")
  en=$(sed -n 's/.* en=\([^ ]*\).*/\1/p' <<< "$score"); zh=$(sed -n 's/.* zh=\([^ ]*\).*/\1/p' <<< "$score")
  local ncores; ncores=$(awk -F, '{print NF}' <<< "$cores")
  python3 - "$name" "$wall" "$user" "$sys" "$rss" "$docs" "$bytes" "$ncores" "$r" "$p" "$en" "$zh" >> "$out" <<'PY'
import sys
name, wall, user, sys_, rss, docs, nbytes, ncores, r, p, en, zh = sys.argv[1:]
wall = float(wall); cpu = float(user) + float(sys_); mb = int(nbytes) / 1e6
print(f"| {name} | {wall:.2f} | {cpu:.2f} | {int(docs)/wall:,.0f} | {mb/wall:.1f} | {mb/wall/int(ncores):.1f} | {int(rss)/1024:.0f} | {r} | {p} | {en} | {zh} |")
PY
}
run "threads=1 (default, chars)" 0 --threads 1
run "threads=2" 0,1 --threads 2
run "threads=1 --tokenizer jieba" 0 --threads 1 --tokenizer jieba
run "threads=1 --verify exact" 0 --threads 1 --verify exact
run "threads=1 --verify estimate" 0 --threads 1 --verify estimate
run "threads=1 --sketch classic" 0 --threads 1 --sketch classic
for k in 3 4 5 6 7 8; do
  run "threads=1 --method simhash --hamming $k" 0 --threads 1 --method simhash --hamming "$k"
done
run "threads=1 --method simhash --simhash-min-features 0" 0 --threads 1 --method simhash --simhash-min-features 0
# End to end against the kernels it cannot skip (Parquet decode, shingle hashes, MinHash), both
# on one pinned core over the same shards (make bench-ratios alternates them for the medians).
kernels=$(RAYON_NUM_THREADS=1 POLARS_MAX_THREADS=1 taskset -c 0 cargo run --release --locked --quiet \
  --example kernels -- --signature-path "$CORPUS/shard-*.parquet" | sed -n 's/^signature-path kernels: .* = \([0-9.]*\) s$/\1/p')
wall1=$(cut -d' ' -f1 < "$work/threads=1 (default, chars).time")
python3 - "$wall1" "$kernels" >> "$out" <<'PY'
import sys
wall, kernels = map(float, sys.argv[1:])
print()
print(f"End to end vs the signature-path kernels (one core, same shards): {wall:.2f} s / {kernels:.3f} s = {wall / kernels:.2f}x")
PY
{
  echo
  echo "Detected share of each planted variant kind (the corpus' planted.parquet; not all light/medium variants reach Jaccard 0.8):"
  echo
  echo "| run | exact | noise | boilerplate | light | medium | heavy |"
  echo "|---|---|---|---|---|---|---|"
  python3 - "$work/scores.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    name, js = line.rstrip("\n").split("|", 1)
    k = json.loads(js).get("planted_by_kind", {})
    print("| " + name + " | " + " | ".join(str(k.get(x, {}).get("detected", "")) for x in ["exact", "noise", "boilerplate", "light", "medium", "heavy"]) + " |")
PY
} >> "$out"
cat "$out"
