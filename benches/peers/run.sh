#!/usr/bin/env bash
# make bench-peers: corpus-dedup beside peer tools (PyPI: datasketch, rensa, gaoya, datatrove) on the same
# Parquet shards, each pinned to one core, scored by the corpus' own scorer. Writes
# benches/results/peers.md and prints it. CORPUS defaults to ../shared/corpus/dev-small (it needs
# the corpus' ground truth files for the quality columns). PEERS='gaoya-words rensa' runs only those
# peers (default: all five) beside the two corpus-dedup rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${CORPUS:-../shared/corpus/dev-small}
BIN=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup
[ -d "$CORPUS" ] || { echo "bench-peers: corpus $CORPUS not found (set CORPUS=dir)"; exit 1; }
[ -x "$BIN" ] || { echo "bench-peers: $BIN not built (make build)"; exit 1; }
VENV=${PEERS_VENV:-${TMPDIR:-/tmp}/corpus-dedup-peers-venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# Pinned versions; xxhash<4 because the corpus scorer hashes str tokens.
# datatrove 0.10.1 imports regex and tokenizers without declaring them.
"$VENV/bin/pip" install -q datasketch==2.0.0 rensa==0.5.0 gaoya==0.2.2 datatrove==0.10.1 regex tokenizers \
  pyarrow numpy pandas "xxhash<4"
PY="$VENV/bin/python"
work=${TMPDIR:-/tmp}/corpus-dedup-peers
rm -rf "$work"; mkdir -p "$work" benches/results
bytes=$(python3 -c "import sys,glob; import os; print(sum(os.path.getsize(f) for f in glob.glob(sys.argv[1]+'/shard-*.parquet')))" "$CORPUS")
text_bytes=$(cat "$CORPUS/bytes.txt" 2>/dev/null || echo 0)
docs=$(cat "$CORPUS/docs.txt" 2>/dev/null || echo 0)
ver() { "$PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }
out=benches/results/peers.md
{
  echo "# Peer benchmark ($(date -u +%Y-%m-%d), one pinned core each, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "Corpus: $CORPUS ($docs docs, $text_bytes bytes of text in $bytes bytes of Parquet). Command: make bench-peers."
  echo "Peers run: ${PEERS:-all}."
  echo "All tools: 128 permutations, threshold 0.8, word 5-grams, LSH 16x8 (corpus-dedup: 18x7 + exact check; datatrove: bucket matches, no check)."
  echo
  echo "| tool | version | settings | wall s | CPU s | docs/s | MB/s | peak RSS MiB | doc recall | doc precision | recall en | recall zh |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out"
row() { # name version settings command...
  local name=$1 version=$2 settings=$3; shift 3
  local o="$work/$name"
  /usr/bin/time -f '%e %U %S %M' -o "$work/$name.time" taskset -c 0 "$@" > /dev/null
  read -r wall user sys rss < "$work/$name.time"
  local score; score=$("$PY" ../shared/corpus/tools/score_manifest.py "$CORPUS" "$o" | tail -1)
  python3 - "$name" "$version" "$settings" "$wall" "$user" "$sys" "$rss" "$docs" "$text_bytes" "$score" >> "$out" <<'PY'
import re, sys
name, version, settings, wall, user, sys_, rss, docs, nbytes, score = sys.argv[1:]
g = lambda k: re.search(k + r"=(\S+)", score).group(1)
wall = float(wall)
print(f"| {name} | {version} | {settings} | {wall:.2f} | {float(user)+float(sys_):.2f} | {int(docs)/wall:,.0f} | "
      f"{int(nbytes)/1e6/wall:.1f} | {int(rss)/1024:.0f} | {g('doc_recall')} | {g('doc_precision')} | {g('en')} | {g('zh')} |")
PY
}
want() { [ -z "${PEERS:-}" ] || [[ " $PEERS " == *" $1 "* ]]; }
row corpus-dedup "$("$BIN" --version | cut -d' ' -f2)" "defaults, --threads 1" \
  "$BIN" run --quiet --threads 1 --input "$CORPUS/shard-*.parquet" --output "$work/corpus-dedup"
row corpus-dedup-classic "$("$BIN" --version | cut -d' ' -f2)" "--sketch classic, --threads 1" \
  "$BIN" run --quiet --threads 1 --sketch classic --input "$CORPUS/shard-*.parquet" --output "$work/corpus-dedup-classic"
want gaoya-words && row gaoya-words "$(ver gaoya)" "native word 5-grams (CJK runs = 1 word)" "$PY" benches/peers/run_peer.py gaoya-words "$CORPUS" "$work/gaoya-words"
want rensa && row rensa "$(ver rensa)" "canonical shingles, RMinHashLSH + est. J" "$PY" benches/peers/run_peer.py rensa "$CORPUS" "$work/rensa"
want datasketch && row datasketch "$(ver datasketch)" "canonical shingles, MinHashLSH + est. J" "$PY" benches/peers/run_peer.py datasketch "$CORPUS" "$work/datasketch"
want gaoya-canon && row gaoya-canon "$(ver gaoya)" "canonical shingles (Python analyzer)" "$PY" benches/peers/run_peer.py gaoya-canon "$CORPUS" "$work/gaoya-canon"
want datatrove && row datatrove "$(ver datatrove)" "own MinHash stages 16x8, canonical tokens, no Jaccard check" "$PY" benches/peers/run_peer.py datatrove "$CORPUS" "$work/datatrove"
python3 - "$out" <<'PY' >> "$out"
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| ") and not l.startswith("| tool")]
mbs = {r.split("|")[1].strip(): float(r.split("|")[7]) for r in rows}
us = mbs.pop("corpus-dedup")
classic = mbs.pop("corpus-dedup-classic")
print()
print("Speed ratio of corpus-dedup (MB/s) over each peer in this run: " + ", ".join(f"{k} {us / v:.1f}x" for k, v in mbs.items()))
print()
print("With --sketch classic: " + ", ".join(f"{k} {classic / v:.1f}x" for k, v in mbs.items()))
PY
cat "$out"
