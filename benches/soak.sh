#!/usr/bin/env bash
# The soak of issue 21: one uninterrupted run, then the same run killed with SIGKILL at three
# random moments (each attempt resumes the previous one), then run to the end; the manifests must
# be byte-identical. Prints wall time and peak RSS of each attempt.
#   make soak INPUT='dir/*.parquet' [SOAK_DIR=/tmp/corpus-dedup-soak] [SEED=1] [THREADS=2]
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
INPUT=$1
DIR=${SOAK_DIR:-/tmp/corpus-dedup-soak}
SEED=${SEED:-1}
THREADS=${THREADS:-2}
rm -rf "$DIR"
mkdir -p "$DIR"
run() { "$BIN" run --input "$INPUT" --output "$DIR/$1" --quiet --threads "$THREADS"; }

/usr/bin/time -f "%e %M" -o "$DIR/whole.time" "$BIN" run --input "$INPUT" --output "$DIR/whole" \
  --quiet --threads "$THREADS" > "$DIR/whole.json"
read -r whole_s whole_kb < "$DIR/whole.time"
echo "uninterrupted: ${whole_s} s, peak RSS $((whole_kb / 1024)) MiB"

# Kill delays, drawn once from SEED: each a random moment within the first half of a run.
delays=$(python3 -c "import random; random.seed($SEED); print(' '.join(f'{random.uniform(0.05, 0.5) * $whole_s:.1f}' for _ in range(3)))")
i=0
for d in $delays; do
  i=$((i + 1))
  "$BIN" run --input "$INPUT" --output "$DIR/killed" --threads "$THREADS" \
    > /dev/null 2> "$DIR/attempt-$i.err" &
  pid=$!
  sleep "$d"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "attempt $i: killed after ${d} s; $(grep -c resuming "$DIR/attempt-$i.err" || true) stages resumed: $(grep resuming "$DIR/attempt-$i.err" | tr '\n' ';')"
done
/usr/bin/time -f "%e %M" -o "$DIR/final.time" "$BIN" run --input "$INPUT" --output "$DIR/killed" \
  --threads "$THREADS" > /dev/null 2> "$DIR/final.err"
read -r final_s final_kb < "$DIR/final.time"
echo "final attempt: ${final_s} s, peak RSS $((final_kb / 1024)) MiB; $(grep resuming "$DIR/final.err" | tr '\n' ';')"
if cmp -s "$DIR/whole/manifest.parquet" "$DIR/killed/manifest.parquet"; then
  echo "manifests: byte-identical"
else
  echo "manifests: DIFFER"
  exit 1
fi
