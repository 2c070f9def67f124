#!/usr/bin/env bash
# `serve` against a nightly run (make bench-serve): CORPUS's shards split into two nights; night 1
# indexed by `run --index`; night 2 decided by the nightly run (reference) and sent to the server
# one text at a time, at RATE adds a second (paced, one client, a kept-alive connection), then
# unpaced from CLIENTS clients at once. Prints the decisions against the nightly run's, latency
# percentiles (HTTP and the journal's sync included), adds a second and the server's peak RSS;
# then MIX adds at RATE, one in 20 a long text (~100 KB: 24 of night 2's texts joined), the rest
# short (a text's first 180 bytes), with their latencies apart.
#   BIN=path/to/corpus-dedup [CORPUS=/tmp/dev-large] [RATE=280] [CLIENTS=4] [MIX=20000] bash benches/serve/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
CORPUS=${CORPUS:-/tmp/dev-large} RATE=${RATE:-280} CLIENTS=${CLIENTS:-4} MIX=${MIX:-20000}
PY=$(../shared/corpus/tools/setup.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-serve.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
shards=("$CORPUS"/shard-*.parquet)
half=$(( ${#shards[@]} / 2 ))
mkdir -p "$work/n1" "$work/n2"
for i in "${!shards[@]}"; do
  [ "$i" -lt "$half" ] && ln -s "${shards[$i]}" "$work/n1/" || ln -s "${shards[$i]}" "$work/n2/"
done
"$BIN" run --quiet --input "$work/n1/*.parquet" --output "$work/o1" --index "$work/index" --batch n1 > /dev/null
cp -r "$work/index" "$work/ref-index"
"$BIN" run --quiet --input "$work/n2/*.parquet" --output "$work/o2" --index "$work/ref-index" --batch n2 > /dev/null
source benches/serve/lib.sh
serve() { start_server "$work/index" "$work/serve.log"; }
serve
"$PY" - "$port" "$work/n2" "$work/o2/manifest.parquet" "$RATE" <<'PY'
import glob, sys
import pyarrow.parquet as pq
sys.path.insert(0, "benches/serve")
from client import agreement, paced, percentiles
port, shards, manifest, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
docs = [r for f in sorted(glob.glob(f"{shards}/*.parquet")) for r in pq.read_table(f, columns=["id", "text"]).to_pylist()]
answers, lat, wall = paced(port, [(d["id"], d["text"]) for d in docs], rate)
keep, of = agreement(answers, manifest)
text_kb = sum(len((d["text"] or "").encode()) for d in docs) / len(docs) / 1024
print(f"paced at {rate:.0f}/s, one client: {len(docs)} adds (mean text {text_kb:.1f} KiB) in {wall:.1f} s; latency ms {percentiles(lat)}")
print(f"decisions as the nightly run's: keep/drop {keep} of {len(docs)}, duplicate_of {of} of {len(docs)}")
PY
grep VmHWM "/proc/$pid/status" | awk '{print "server peak RSS after night 2: " $2 / 1024 " MiB"}'
curl -s "http://127.0.0.1:$port/stats" | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print("indexed", s["indexed_documents"], "online", s["online_documents"], "; in the server (no HTTP), add ms:", s["latency_ms"]["add"])'
kill -TERM "$pid"; wait "$pid" || true
# Unpaced, CLIENTS clients at once, on a fresh journal: the most adds a second.
serve
"$PY" - "$port" "$work/n2" "$CLIENTS" <<'PY'
import glob, sys
import pyarrow.parquet as pq
sys.path.insert(0, "benches/serve")
from client import unpaced
port, shards, clients = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [(r["id"], r["text"]) for f in sorted(glob.glob(f"{shards}/*.parquet")) for r in pq.read_table(f, columns=["id", "text"]).to_pylist()]
print(f"unpaced, {clients} clients: {len(docs)} adds = {unpaced(port, docs, clients):.0f} adds/s")
PY
kill -TERM "$pid"; wait "$pid" || true
# Short and long texts in one stream, paced, one client.
serve
"$PY" - "$port" "$work/n2" "$RATE" "$MIX" <<'PY'
import glob, sys
import pyarrow.parquet as pq
sys.path.insert(0, "benches/serve")
from client import paced, percentiles
port, shards, rate, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
texts = [r["text"] or "" for f in sorted(glob.glob(f"{shards}/*.parquet")) for r in pq.read_table(f, columns=["text"]).to_pylist()]
def text(i):
    if i % 20 == 0:
        return "\n\n".join(texts[(i + j) % len(texts)] for j in range(24))
    return texts[i % len(texts)].encode()[:180].decode(errors="ignore")
items = [(f"m{i}", text(i)) for i in range(n)]
_, lat, _ = paced(port, items, rate)
for kind, keep in [("short", lambda i: i % 20 != 0), ("long", lambda i: i % 20 == 0)]:
    mine = [i for i in range(n) if keep(i)]
    kib = sum(len(items[i][1].encode()) for i in mine) / len(mine) / 1024
    print(f"mix at {rate:.0f}/s, {kind}: {len(mine)} adds, mean {kib:.1f} KiB; latency ms {percentiles([lat[i] for i in mine])}")
PY
kill -TERM "$pid"; wait "$pid" || true
