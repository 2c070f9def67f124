#!/usr/bin/env bash
# Memory per stage at scale: plans a task run over INPUT, then runs every task as its own process
# with one thread (two processes at a time on two cores), the way a cluster would, and reports per
# stage the task count, the largest peak RSS of one task process, the summed task time, the
# stage's wall time and the bytes it wrote, beside what the plan estimated it would write.
# Appends a table to benches/results/scale.md, and writes the same rows as JSON lines to
# $W/stages.jsonl.
#
#   bash benches/scale.sh 'DIR/*.parquet' NAME [extra plan flags, e.g. --tasks 8]
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT=$1; NAME=$2; shift 2
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
W=${TMPDIR:-/tmp}/corpus-dedup-scale/$NAME
rm -rf "$W"; mkdir -p "$W"
# stages.jsonl: one line per stage, for benches/bench-scale.sh's growth table.
counts=$("$BIN" plan --quiet --input "$INPUT" --output "$W/out" --work "$W/work" "$@")
docs=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["documents"])' "$counts")
out=benches/results/scale.md
{
  echo
  echo "### $NAME: $docs documents ($(date -u +%Y-%m-%d), $(nproc) cores, one thread per task, 2 tasks at a time)"
  echo
  echo "Command: bash benches/scale.sh '$INPUT' $NAME $*"
  echo
  echo "| stage | tasks | max task peak RSS MiB | task seconds (sum) | stage wall s | written MB | plan's estimate MB |"
  echo "|---|---|---|---|---|---|---|"
} >> "$out"
# Bytes under a directory (0 when it is gone; files may vanish while it is read).
bytes_of() { du -sb "$1" 2> /dev/null | awk '{print $1; exit}' || true; }
peak=0
for stage in $(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["stages"]))' "$counts"); do
  n=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tasks"][sys.argv[2]])' "$counts" "$stage")
  before=$(bytes_of "$W/work") bands=$(bytes_of "$W/work/bands")
  t0=$(date +%s.%N)
  seq 0 $((n - 1)) | xargs -P 2 -I{} "$BIN" task "$stage" --task {} --tasks "$n" --work "$W/work" --threads 1 > "$W/$stage.jsonl"
  t1=$(date +%s.%N)
  # Written: the growth, plus the band rows a stage after candidates removed.
  after=$(bytes_of "$W/work") bands_after=$(bytes_of "$W/work/bands")
  written=$(( after - before + (bands > bands_after ? bands - bands_after : 0) ))
  [ "$after" -gt "${peak:-0}" ] && peak=$after
  python3 - "$stage" "$n" "$t0" "$t1" "$W/$stage.jsonl" "$written" "$counts" "$after" >> "$out" <<'PY'
import json, sys
stage, n, t0, t1, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
written, estimate = int(sys.argv[6]), json.loads(sys.argv[7])["estimate"]["stages"].get(stage, {})
work_after = int(sys.argv[8])
rows = [json.loads(l) for l in open(path) if l.strip()]
guess = estimate.get("written_bytes")
guess = "-" if guess is None else f"{guess / 1e6:,.1f}"
rss, cpu = max(r['peak_rss_mib'] for r in rows), sum(r['seconds'] for r in rows)
print(f"| {stage} | {n} | {rss:.0f} | {cpu:.1f} | {t1 - t0:.1f} | {written / 1e6:,.1f} | {guess} |")
with open(path.rsplit("/", 1)[0] + "/stages.jsonl", "a") as f:
    f.write(json.dumps({"stage": stage, "tasks": n, "peak_rss_mib": rss, "task_seconds": cpu,
                        "wall_seconds": t1 - t0, "written_bytes": written,
                        "work_bytes_after": work_after}) + "\n")
PY
done
est=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["estimate"]["work_bytes"])' "$counts")
echo "$peak" | awk -v d="$docs" -v e="$est" '{printf "\nWork directory at its largest (after a stage): %.2f GB (%.0f bytes per document); the plan estimated %.2f GB (%.2fx).\n", $1/1e9, $1/d, e/1e9, e/$1}' >> "$out"
tail -n 14 "$out"
