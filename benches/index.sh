#!/usr/bin/env bash
# The retained index at scale (`make bench-index`): NIGHTS generated nights of NIGHT_DOCS documents
# are added to an index one by one, then a new night of NEW_DOCS documents is deduplicated three
# ways on 2 threads, alternated REPEAT times: alone (no index), against an index of the first
# night only, and against the index of all nights. Prints time ratios, peak RSS and the index's
# bytes per document on disk and in memory. Corpora and indexes are kept under BENCH_DIR between
# runs (delete it to start over).
#
#   make bench-index                                  # 10 x 1M indexed, 1M new (~25 min, ~10 GB)
#   make bench-index NIGHTS=10 NIGHT_DOCS=100000 NEW_DOCS=100000
#   make bench-index METHOD=simhash ARGS='--simhash-min-features 0'
#   make bench-index METHOD=simhash NIGHTS=50 DISTINCT=10 ARGS='--simhash-min-features 0'
#
# DISTINCT (default NIGHTS) corpora are generated; night n indexes corpus (n - 1) % DISTINCT + 1, so
# 50 nights of 1M documents need 10 corpora on disk, not 50. A repeated corpus is indexed again in
# full (a batch holds every document of its night, duplicates of earlier nights included), so the
# index holds NIGHTS x NIGHT_DOCS entries either way, and a lookup's cost follows the number of
# entries in the buckets it reads, not whether they repeat. A stopped build resumes at the first
# night its index lacks.
set -euo pipefail
target=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}
bin=$target/release/corpus-dedup
gen=$target/release/gen-corpus
nights=${NIGHTS:-10}
distinct=${DISTINCT:-$nights}
per=${NIGHT_DOCS:-1000000}
new=${NEW_DOCS:-1000000}
keys=${KEYS:-short}
method=${METHOD:-minhash}
repeat=${REPEAT:-2}
args=${ARGS:-}
base=${BENCH_DIR:-/tmp/corpus-dedup-bench-index}
corpora=$base/corpora-$distinct-$per-$new
root=$base/$method-$keys-$nights-$per-$new${args:+-$(printf %s "$args" | tr -c 'a-z0-9' '_')}
mkdir -p "$root" "$corpora"
say() { echo "bench-index: $*" >&2; }
# Copies of the binaries, so a rebuild during the benchmark does not change what it measures.
cp "$bin" "$root/corpus-dedup"; cp "$gen" "$root/gen-corpus"
bin=$root/corpus-dedup gen=$root/gen-corpus

corpus() { # corpus DIR DOCS SEED NAME
  [ -f "$1/done" ] && return
  rm -rf "$1"
  "$gen" --out "$1" --docs "$2" --shards 4 --lang mixed --seed "$3" --name "$4" >/dev/null
  touch "$1/done"
}
for n in $(seq 1 "$distinct"); do corpus "$corpora/n$n" "$per" $((100 + n)) "n$n"; done
corpus "$corpora/new" "$new" 99 new
say "corpora ready under $corpora"

# run INPUT OUT [ARGS...]: one run on 2 threads; prints "seconds peak_rss_mib".
run() {
  local input=$1 out=$2; shift 2
  # shellcheck disable=SC2086 # ARGS are flags meant to split into words
  /usr/bin/time -f "%e %M" -o "$root/time.txt" "$bin" run --input "$input" --output "$out" \
    --method "$method" --threads 2 --quiet $args "$@" >/dev/null
  awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$root/time.txt"
}
build() { # build INDEX NIGHTS: adds the nights INDEX does not list yet
  [ -f "$1/built" ] && return
  for n in $(seq 1 "$2"); do
    local name c
    name=night-$(printf %03d "$n")
    grep -q "\"$name\"" "$1/index.json" 2>/dev/null && continue
    c=$(( (n - 1) % distinct + 1 ))
    say "indexing night $n of $2 (corpus n$c) into $1"
    run "$corpora/n$c/*.parquet" "$root/out-build" --index "$1" --batch "$name" \
      --window 100000 --index-keys "$keys" >/dev/null
  done
  touch "$1/built"
}
build "$root/index-1" 1
build "$root/index-all" "$nights"

# Tonight against each index is a rerun of the same newest batch after the first time, so every
# repetition compares with exactly the same batches.
declare -A secs rss
for r in $(seq 0 "$repeat"); do
  for way in alone index-1 index-all; do
    case $way in
      alone) t=$(run "$corpora/new/*.parquet" "$root/out-$way") ;;
      *) t=$(run "$corpora/new/*.parquet" "$root/out-$way" --index "$root/$way" --batch tonight \
              --window 100000 --index-keys "$keys") ;;
    esac
    # Repetition 0 warms the page cache and adds tonight's batch; it is not counted.
    [ "$r" = 0 ] && continue
    secs[$way]="${secs[$way]:-} ${t%% *}"
    rss[$way]=${t##* }
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
python3 - "$root" "$nights" "$per" "$new" "$keys" "$method $args" \
  "$(echo "${secs[alone]}" | median)" "$(echo "${secs[index-1]}" | median)" "$(echo "${secs[index-all]}" | median)" \
  "${rss[alone]}" "${rss[index-1]}" "${rss[index-all]}" <<'PY'
import json, sys
root, nights, per, new, keys, method = sys.argv[1:7]
t0, t1, tn = map(float, sys.argv[7:10])
r0, r1, rn = sys.argv[10:13]
s = json.load(open(f"{root}/out-index-all/summary.json"))["index"]
s1 = json.load(open(f"{root}/out-index-1/summary.json"))["index"]
indexed = int(nights) * int(per)
print(f"| {method}, --index-keys {keys} | alone | vs 1 night ({per}) | vs {nights} nights ({indexed}) |")
print("|---|---|---|---|")
print(f"| wall, 2 threads (median of alternated runs) | {t0:.1f} s | {t1:.1f} s ({t1/t0:.2f}x) | {tn:.1f} s ({tn/t0:.2f}x) |")
print(f"| peak RSS | {r0} MiB | {r1} MiB | {rn} MiB |")
extra = f"{(tn - t0) / (t1 - t0):.2f}x" if t1 - t0 > 0.05 * t0 else "n/a (vs 1 night is within 5% of alone)"
print(f"| cost per new document, index of {nights} nights vs 1 night | | | total {tn/t1:.2f}x, over alone {extra} |")
print(f"| index on disk per document | | {s1['index_bytes_per_document']} B | {s['index_bytes_per_document']} B |")
print(f"| filters + block tables in memory per indexed document | | {s1['filter_bytes_per_document']} B | {s['filter_bytes_per_document']} B |")
print(f"| lookup: filter passes / candidates / matched | | {s1['lookup']['filter_passes']} / {s1['lookup']['candidates']} / {s1['lookup']['matched']} | {s['lookup']['filter_passes']} / {s['lookup']['candidates']} / {s['lookup']['matched']} |")
PY
