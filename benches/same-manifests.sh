#!/usr/bin/env bash
# Whether two binaries give byte-identical manifests for every option family on the development
# corpora (dev-small, and multi when present): the check for a change meant to alter no result
# (a refactor, a speed-up). Each family's report is rebuilt by both from the same output
# (`corpus-dedup report`) and compared too. Two nights through an index, and a rerun of the
# second, compare the index heads too.
#   make bench-same OLD=old-binary NEW=new-binary
set -uo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:?OLD=path of the old binary} NEW=${NEW:?NEW=path of the new binary}
small=../shared/corpus/dev-small multi=../shared/corpus/multi/data
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-same.XXXXXX")
trap 'rm -rf "$work"' EXIT
PY=$(../shared/corpus/tools/setup.sh)
# A --reference file: the first 200 texts of dev-small's first shard.
"$PY" - "$small" "$work/ref.parquet" <<'PY'
import glob, sys
import pyarrow.parquet as pq
t = pq.read_table(sorted(glob.glob(f"{sys.argv[1]}/shard-*.parquet"))[0], columns=["id", "text"])
pq.write_table(t.slice(0, 200), sys.argv[2])
PY
differ=0 n=0
# same CORPUS_GLOB ARGS...: both binaries, then the manifests compared.
same() {
  local glob=$1; shift; n=$((n + 1))
  for v in old new; do
    local bin=$OLD; [ "$v" = new ] && bin=$NEW
    "$bin" run --quiet --threads 2 --input "$glob" --output "$work/$v-$n" "$@" > /dev/null \
      2> "$work/err" || { echo "FAILED ($v): $* : $(head -c 300 "$work/err")"; differ=1; }
  done
  if cmp -s "$work/old-$n/manifest.parquet" "$work/new-$n/manifest.parquet"; then
    echo "same       $glob $*"
  else
    echo "DIFFERENT  $glob $*"; differ=1
  fi
  same_report "$work/new-$n" "$glob $*"
}
# same_report OUT WHAT: the report both binaries rebuild from one output.
same_report() {
  "$OLD" report "$1" > /dev/null 2>&1 && mv "$1/report.html" "$work/report-old.html" \
    && "$NEW" report "$1" > /dev/null 2>&1 \
    && cmp -s "$work/report-old.html" "$1/report.html" \
    && echo "same       report: $2" || { echo "DIFFERENT  report: $2"; differ=1; }
}
s="$small/shard-*.parquet"
same "$s"
same "$s" --method simhash
same "$s" --paragraphs
same "$s" --substrings
same "$s" --paragraphs --substrings
same "$s" --cluster components
same "$s" --sketch classic
same "$s" --reference "$work/ref.parquet"
same "$s" --reference "$work/ref.parquet" --substrings
same "$s" --tasks 3
same "$s" --work-keys remade
same "$s" --work-keys remade --cluster components --tasks 3
same "$s" --work-keys remade --paragraphs --substrings --verify exact
same "$s" --work-keys remade --max-bucket-pairs 3
if [ -d "$multi" ]; then
  same "$multi/*.parquet"
  same "$multi/*.parquet" --paragraphs --substrings
  same "$multi/*.parquet" --method simhash
  same "$multi/*.parquet" --work-keys remade
fi
# The same shards as plain JSON Lines.
mkdir -p "$work/jl"
"$PY" - "$small" "$work/jl" <<'PY'
import glob, json, os, sys
import pyarrow.parquet as pq
for f in sorted(glob.glob(f"{sys.argv[1]}/shard-*.parquet")):
    with open(os.path.join(sys.argv[2], os.path.basename(f).replace(".parquet", ".jsonl")), "w") as out:
        for row in pq.read_table(f).to_pylist():
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
PY
j="$work/jl/shard-*.jsonl"
same "$j"
same "$j" --method simhash
same "$j" --paragraphs --substrings
same "$j" --tasks 3
same "$j" --work-keys remade --cluster components --tasks 3
# Two nights through one index (window 1), then night 2 again: manifests and heads.
for v in old new; do
  bin=$OLD; [ "$v" = new ] && bin=$NEW
  for night in "n1 0000[0-3]" "n2 0000[4-7]" "n2 0000[4-7]"; do
    set -- $night
    "$bin" run --quiet --input "$small/shard-$2.parquet" --output "$work/$v-idx-$1" \
      --index "$work/idx-$v" --batch "$1" --window 1 --paragraphs > /dev/null \
      || { echo "FAILED ($v): index night $1"; differ=1; }
  done
done
for night in n1 n2; do
  cmp -s "$work/old-idx-$night/manifest.parquet" "$work/new-idx-$night/manifest.parquet" \
    && echo "same       index night $night" || { echo "DIFFERENT  index night $night"; differ=1; }
  same_report "$work/new-idx-$night" "index night $night"
done
strip() { "$PY" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True, indent=0))" "$1" | grep -v -e time -e seconds; }
diff <(strip "$work/idx-old/index.json") <(strip "$work/idx-new/index.json") > /dev/null \
  && echo "same       index head" || { echo "DIFFERENT  index head"; differ=1; }
exit $differ
