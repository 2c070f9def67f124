#!/usr/bin/env bash
# `serve` on a real re-crawl (make bench-serve-recrawl): four successive releases of three
# projects' documentation, one a night (recrawl.py). Nights 1-3 are indexed by nightly
# `run --index`; night 4 is decided by the nightly run (on a copy of the index, for reference)
# and sent to the server one page at a time at RATE adds a second. Per method: each night's
# pages and drops, night 4's decisions against the nightly run's, latency percentiles.
#   BIN=path/to/corpus-dedup [RATE=280] [RECRAWL_DIR=/tmp/corpus-dedup-serve-recrawl] bash benches/serve/recrawl.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
RATE=${RATE:-280} D=${RECRAWL_DIR:-${TMPDIR:-/tmp}/corpus-dedup-serve-recrawl}
PY=$(../shared/corpus/tools/setup.sh)
[ -e "$D/night-4.parquet" ] || "$PY" benches/serve/recrawl.py "$D"
source benches/serve/lib.sh
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
for method in minhash simhash; do
  w=$D/$method
  rm -rf "$w"
  for n in 1 2 3 4; do
    index=$w/index
    # Night 4 on a copy of the index: the nightly run's decisions, for reference.
    [ "$n" = 4 ] && { cp -r "$w/index" "$w/ref-index"; index=$w/ref-index; }
    "$BIN" run --quiet --method "$method" --input "$D/night-$n.parquet" --output "$w/o$n" \
      --index "$index" --batch "night-$n" > /dev/null
    "$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); i = s["index"]["dropped_against"]
print(sys.argv[2], "night", sys.argv[3] + ":", s["documents_in"], "pages,", s["documents_dropped"],
      "dropped,", sum(i.values()), "against earlier nights")' "$w/o$n/summary.json" "$method" "$n"
  done
  start_server "$w/index" "$w/serve.log"
  "$PY" - "$port" "$D/night-4.parquet" "$w/o4/manifest.parquet" "$RATE" "$method" <<'PY'
import sys
import pyarrow.parquet as pq
sys.path.insert(0, "benches/serve")
from client import agreement, paced, percentiles
port, night, manifest, rate, method = sys.argv[1:6]
docs = pq.read_table(night, columns=["id", "text"]).to_pylist()
answers, lat, _ = paced(port, [(d["id"], d["text"]) for d in docs], float(rate))
keep, of = agreement(answers, manifest)
near = sum(a["duplicate"] and a["similarity"] < 1 for a in answers)
kib = sum(len((d["text"] or "").encode()) for d in docs) / len(docs) / 1024
print(f"{method} night 4 sent to serve ({near} near copies answered, mean page {kib:.1f} KiB): "
      f"keep/drop as the nightly run's {keep} of {len(docs)}, duplicate_of {of} of {len(docs)}; "
      f"latency ms {percentiles(lat)}")
PY
  kill -TERM "$pid"; wait "$pid" || true
done
