#!/usr/bin/env bash
# `serve` over a large retained index (make bench-serve-retained N=50000000): N generated short
# documents (gen-scale, as bench-scale makes them) indexed by BATCHES nightly `run --index` (the
# shards in BATCHES consecutive groups, so a night's work directory holds N/BATCHES documents;
# METHOD minhash or simhash), then 50,000 adds
# at RATE a second from one client: 25,000 new texts (another seed) and 25,000 of the indexed
# ones (the last shard's: duplicates), interleaved. Prints latency percentiles (HTTP and the
# journal's sync included), the server's peak RSS and what it holds per retained document, and
# adds a second unpaced from CLIENTS clients. The corpus and index are kept in $SCALE_DIR
# (made again only if missing).
# ARGS are added to each nightly run (e.g. '--simhash-ngram 2': the generator's small vocabularies
# make unigram fingerprints collide, see docs/PERFORMANCE.md).
# The adds start once the server has preloaded the index's lookup files (PRELOAD=no: started
# with --no-preload, so the first reads of each block go to the disk).
#   N=50000000 BIN=path/to/corpus-dedup [BATCHES=1] [METHOD=minhash] [ARGS=...] [RATE=280] \
#     [CLIENTS=4] [PRELOAD=no] bash benches/serve/retained.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${N:?set N, the number of retained documents}"
BIN=${BIN:?BIN=path of corpus-dedup}
GEN=${GEN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/gen-scale}
RATE=${RATE:-280} CLIENTS=${CLIENTS:-4} BATCHES=${BATCHES:-1} METHOD=${METHOD:-minhash} ARGS=${ARGS:-}
D=${SCALE_DIR:-${TMPDIR:-/tmp}/corpus-dedup-scale}
C=$D/corpus-short-$N Q=$D/queries-50000 IX=$D/index-short-$N-$METHOD-$BATCHES$(echo "$ARGS" | tr -d ' ')
PY=$(../shared/corpus/tools/setup.sh)
[ -e "$C/done" ] || { "$GEN" generate --out "$C" --docs "$N" > /dev/null 2>&1 && touch "$C/done"; }
[ -e "$Q/done" ] || { "$GEN" generate --out "$Q" --docs 50000 --seed 2 > /dev/null 2>&1 && touch "$Q/done"; }
mapfile -t shards < <(ls "$C"/short-*.parquet)
((BATCHES <= ${#shards[@]})) || { echo "BATCHES=$BATCHES: more than the ${#shards[@]} shards" >&2; exit 1; }
if [ ! -e "$IX/batches.done" ]; then
  rm -rf "$IX"
  for ((b = 0; b < BATCHES; b++)); do
    inputs=()
    for ((s = b * ${#shards[@]} / BATCHES; s < (b + 1) * ${#shards[@]} / BATCHES; s++)); do
      inputs+=(--input "${shards[s]}")
    done
    /usr/bin/time -f "night $((b + 1)) of $BATCHES: %e s, peak %M KB" "$BIN" run --quiet --threads 2 \
      "${inputs[@]}" --method "$METHOD" $ARGS --output "$D/out-short-$N" --index "$IX" --batch "n$((b + 1))" > /dev/null
    rm -rf "$D/out-short-$N"
  done
  touch "$IX/batches.done"
fi
echo "index ($METHOD $ARGS, $BATCHES batches): $(du -sb "$IX/batches" | cut -f1) bytes on disk for $N documents"
source benches/serve/lib.sh
start_server "$IX" "$D/serve.log"
trap 'kill $pid 2>/dev/null || true' EXIT
start_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
"$PY" - "$port" "$Q" "$C" "$RATE" "$CLIENTS" <<'PY'
import glob, sys
import pyarrow.parquet as pq
sys.path.insert(0, "benches/serve")
from client import paced, percentiles, unpaced
port, queries, corpus, rate, clients = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
new = pq.read_table(sorted(glob.glob(f"{queries}/*.parquet"))[0], columns=["text"]).to_pylist()[:25000]
old = pq.read_table(sorted(glob.glob(f"{corpus}/*.parquet"))[-1], columns=["text"]).to_pylist()[:25000]
texts = [d["text"] for pair in zip(new, old) for d in pair]
answers, lat, wall = paced(port, [(f"q{i}", t) for i, t in enumerate(texts)], rate)
dup = sum(a["duplicate"] for a in answers)
print(f"paced at {rate:.0f}/s, one client: {len(texts)} adds ({dup} duplicates) in {wall:.1f} s; latency ms {percentiles(lat)}")
per_second = unpaced(port, [(f"u{i}", t) for i, t in enumerate(texts)], clients)
print(f"unpaced, {clients} clients: {len(texts)} adds = {per_second:.0f} adds/s")
PY
peak_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
curl -s "http://127.0.0.1:$port/stats" | "$PY" -c '
import json, sys
s, start, peak = json.load(sys.stdin), int(sys.argv[1]) * 1024, int(sys.argv[2]) * 1024
n, online = s["indexed_documents"], s["online_documents"]
print(f"indexed {n} (of {sys.argv[3]} generated), online {online}; server RSS once started "
      f"{start / 2**20:.0f} MiB ({start / n:.1f} bytes per indexed document), peak {peak / 2**20:.0f} MiB")
print("in the server, add ms:", s["latency_ms"]["add"])' "$start_kb" "$peak_kb" "$N"
kill -TERM "$pid"; wait "$pid" || true
