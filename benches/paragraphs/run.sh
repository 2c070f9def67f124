#!/usr/bin/env bash
# Paragraph dedup (make bench-paragraphs): what --paragraphs removes on the development corpora,
# checked against an independent implementation (measure.py), then its cost on CORPUS (default
# /tmp/dev-large): plain vs --paragraphs alternated (ab.sh, the same binary), peak RSS of each
# (medians of alternated runs) with the bytes per distinct paragraph, and the index's paragraph
# file per held document.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
CORPUS=${CORPUS:-/tmp/dev-large} ROUNDS=${ROUNDS:-7} THREADS=${THREADS:-2} CORES=${CORES:-0,1}
PY=$(../shared/corpus/tools/setup.sh)
"$(dirname "$PY")/pip" install -q polars
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-paragraphs.XXXXXX")
trap 'rm -rf "$work"' EXIT
for c in ../shared/corpus/dev-small ../shared/corpus/multi/data "$CORPUS"; do
  [ -e "$c" ] || continue
  echo "## $c"
  rm -rf "$work/q"
  "$BIN" run --quiet --input "$c/shard-*.parquet" --output "$work/q" --paragraphs > /dev/null
  meta=$(ls "$c"/docs_meta.parquet 2>/dev/null || true)
  "$PY" benches/paragraphs/measure.py "$work/q" "$c/shard-*.parquet" $meta
done
echo
echo "## Cost on $CORPUS: plain (old) vs --paragraphs (new)"
OLD=$BIN NEW=$BIN CORPUS=$CORPUS ROUNDS=$ROUNDS THREADS=$THREADS CORES=$CORES \
  NEW_ARGS="--paragraphs" bash benches/ab.sh 2>/dev/null
echo "## Peak RSS, $ROUNDS alternated pairs, medians"
BIN=$BIN CORPUS=$CORPUS THREADS=$THREADS ROUNDS=$ROUNDS bash benches/rss.sh "$work" --paragraphs
distinct=$("$PY" -c "import json; print(json.load(open('$work/o/summary.json'))['paragraphs']['distinct'])")
"$PY" - "$work/rss" "$work/rss--paragraphs" "$distinct" <<'PY'
import statistics, sys
plain, paras = ([int(x) for x in open(f)] for f in sys.argv[1:3])
distinct = int(sys.argv[3])
mp, mq = statistics.median(plain), statistics.median(paras)
pairs = statistics.median(q - p for p, q in zip(plain, paras))
print(f"KiB: {sorted(plain)} / {sorted(paras)}")
print(f"bytes of peak RSS per distinct paragraph ({distinct} distinct): {(mq - mp) * 1024 / distinct:.1f} "
      f"from the medians, {pairs * 1024 / distinct:.1f} from the median pair")
PY
echo "## The index's paragraph texts per held document"
"$BIN" run --quiet --input "$CORPUS/shard-*.parquet" --output "$work/n1" --index "$work/ix" \
  --batch n1 --paragraphs > /dev/null
b=$(ls -d "$work"/ix/batches/n1-*)
held=$("$PY" -c "import json; print(json.load(open('$work/n1/summary.json'))['documents_kept'])")
bytes=$(( $(stat -c %s "$b/paragraphs.bin") + $(stat -c %s "$b/paragraphs.bin.meta") ))
echo "paragraphs.bin: $bytes bytes, $(( bytes / held )) per held document ($held held)"
