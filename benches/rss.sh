#!/usr/bin/env bash
# Peak RSS of a plain run and of a run with FLAG on CORPUS, ROUNDS alternated pairs: each run's
# KiB appended to WORK/rss and WORK/rssFLAG (the last run's output left in WORK/o), the medians
# printed. Used by the paragraph and substring benches.
#   BIN=... CORPUS=dir THREADS=n ROUNDS=n bash benches/rss.sh WORK FLAG
set -euo pipefail
BIN=${BIN:?} CORPUS=${CORPUS:?} THREADS=${THREADS:?} ROUNDS=${ROUNDS:?}
work=$1 flag=$2
for _ in $(seq "$ROUNDS"); do
  for a in "" "$flag"; do
    rm -rf "$work/o"
    # shellcheck disable=SC2086 # flags meant to split into words
    /usr/bin/time -f "%M" -a -o "$work/rss$a" "$BIN" run --quiet --threads "$THREADS" \
      --input "$CORPUS/shard-*.parquet" --output "$work/o" $a > /dev/null
  done
done
python3 - "$work/rss" "$work/rss$flag" "$flag" <<'PY'
import statistics, sys
plain, other = ([int(x) for x in open(f)] for f in sys.argv[1:3])
print(f"plain {statistics.median(plain) / 1024:.0f} MiB, {sys.argv[3]} {statistics.median(other) / 1024:.0f} MiB")
PY
