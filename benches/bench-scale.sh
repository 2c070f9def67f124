#!/usr/bin/env bash
# One row of the growth table: N generated short documents (gen-scale: median ~300 bytes, seven
# scripts, exact copies and planted variants with exact truth), run on the task path (every task
# its own process, two at a time: benches/scale.sh, which also writes the per-stage table) and by
# the local `run`; both manifests scored against the planted truth. Appends the row to
# benches/results/scale-growth.md.
#
#   N=1000000 [ARGS='--work-keys remade'] [KEEP=1] [BIN=a copy of corpus-dedup] bash benches/bench-scale.sh
#
# The corpus is kept in $SCALE_DIR/corpus-short-N (made again only if missing); the work directories
# are removed after measuring unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${N:?set N, the number of documents}"
T=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release
export BIN=${BIN:-$T/corpus-dedup} GEN=${GEN:-$T/gen-scale}
D=${SCALE_DIR:-${TMPDIR:-/tmp}/corpus-dedup-scale}
C=$D/corpus-short-$N NAME=short-$N${ARGS:+-$(echo "$ARGS" | tr -c 'a-z0-9\n' '-' | tr -s '-')}
W=$D/$NAME
read -r -a args <<< "${ARGS:-}"

t0=$(date +%s.%N)
"$GEN" generate --out "$C" --docs "$N"
gen_s=$(python3 -c "import time; print(f'{time.time() - $t0:.0f}')")
input_bytes=$(du -sb "$C" | cut -f1)

# The task path (per-stage table in benches/results/scale.md).
bash benches/scale.sh "$C/short-*.parquet" "$NAME" "${args[@]}" > /dev/null
task_score=$("$GEN" score --corpus "$C" --manifest "$W/out/manifest.parquet")
# The work directory at its largest: after some stage (the band rows go after candidates).
task_work=$(python3 -c 'import json,sys; print(max(json.loads(l)["work_bytes_after"] for l in open(sys.argv[1])))' "$W/stages.jsonl")
[ "${KEEP:-0}" = 1 ] || rm -rf "$W/work"

# The local run, its work directory measured every 2 s while it runs (its largest is mid-run).
/usr/bin/time -f '%e %M' -o "$W/local.time" "$BIN" run --quiet --keep-work --input "$C/short-*.parquet" \
  --output "$W/local/out" --work "$W/local/work" "${args[@]}" > /dev/null &
run_pid=$!
local_work=0
while kill -0 "$run_pid" 2> /dev/null; do
  now=$(du -sb "$W/local/work" 2> /dev/null | awk '{print $1; exit}' || true)
  [ "${now:-0}" -gt "$local_work" ] && local_work=$now
  sleep 2
done
wait "$run_pid"
now=$(du -sb "$W/local/work" | cut -f1)
[ "$now" -gt "$local_work" ] && local_work=$now
local_score=$("$GEN" score --corpus "$C" --manifest "$W/local/out/manifest.parquet")
cmp -s "$W/out/manifest.parquet" "$W/local/out/manifest.parquet" && same=yes || same=NO
[ "${KEEP:-0}" = 1 ] || rm -rf "$W/local/work"

out=benches/results/scale-growth.md
[ -f "$out" ] || cat > "$out" <<'EOF'
# Growth with the number of documents

`make bench-scale N=...` (benches/bench-scale.sh): generated short documents, the task path
(every task its own process with one thread, two at a time on two cores) and the local `run`
(two threads). Task path: wall is the sum of the stages' wall times, CPU the summed task seconds,
RSS the largest one task reached. Recall and precision are of the planted variants (the keeper
rule must drop every variant at or above the threshold, and nothing else); "same" says whether
the two manifests are byte-identical. Per-stage tables: scale.md.

| N | date, cores | args | input GB | task path wall s | task CPU s | largest task MiB | work dir GB (B/doc) | recall | precision | local run wall s | local peak MiB | local work GB | local recall / precision | same |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
python3 - "$N" "$W" "$input_bytes" "$task_work" "$local_work" "$task_score" "$local_score" "$same" "${ARGS:-}" "$gen_s" >> "$out" <<'PY'
import json, sys, datetime, os
n, w, inp, tw, lw = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ts, ls, same, args = json.loads(sys.argv[6]), json.loads(sys.argv[7]), sys.argv[8], sys.argv[9]
rows = [json.loads(l) for l in open(f"{w}/stages.jsonl")]
wall = open(f"{w}/local.time").read().split()
day = datetime.date.today().isoformat()
print(f"| {n:,} | {day}, {os.cpu_count()} | {args or '-'} | {inp / 1e9:.2f} "
      f"| {sum(r['wall_seconds'] for r in rows):.0f} | {sum(r['task_seconds'] for r in rows):.0f} "
      f"| {max(r['peak_rss_mib'] for r in rows):.0f} | {tw / 1e9:.2f} ({tw / n:.0f}) "
      f"| {ts['recall']:.4f} | {ts['precision']:.6f} | {float(wall[0]):.0f} | {int(wall[1]) / 1024:.0f} "
      f"| {lw / 1e9:.2f} | {ls['recall']:.4f} / {ls['precision']:.6f} | {same} |")
print(json.dumps({"n": n, "generate_seconds": float(sys.argv[10]), "task": ts, "local": ls}),
      file=sys.stderr)
PY
tail -n 3 "$out"
