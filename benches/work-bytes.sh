#!/usr/bin/env bash
# Bytes written to the work directory per document, by stage, and the work directory at its
# largest (after some stage: the band rows go once the candidates are found, every other file
# stays until the run succeeds), for `--work-keys stored` and `remade`. The stages run as tasks
# (`plan`, then `task` for each), so each stage's files are measured as it leaves them.
#   make bench-work-bytes [CORPUS='dir/*.parquet'] [ARGS='flags for both']
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
CORPUS=${CORPUS:-../shared/corpus/dev-small/shard-*.parquet} ARGS=${ARGS:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-bytes.XXXXXX")
trap 'rm -rf "$work"' EXIT
bytes_of() { du -sb "$1" 2> /dev/null | awk '{print $1; exit}' || true; }
for keys in stored remade; do
  w=$work/$keys
  # shellcheck disable=SC2086 # flags meant to split into words
  counts=$("$BIN" plan --quiet --input "$CORPUS" --output "$w/out" --work "$w/work" \
    --work-keys "$keys" $ARGS)
  for stage in $(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["stages"]))' "$counts"); do
    n=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tasks"][sys.argv[2]])' "$counts" "$stage")
    before=$(bytes_of "$w/work") bands=$(bytes_of "$w/work/bands")
    for t in $(seq 0 $((n - 1))); do
      "$BIN" task "$stage" --task "$t" --tasks "$n" --work "$w/work" --threads 2 > /dev/null
    done
    after=$(bytes_of "$w/work") bands_after=$(bytes_of "$w/work/bands")
    # Written: the growth, plus the band rows a stage after candidates removed.
    echo "$keys $stage $(( after - before + (bands > bands_after ? bands - bands_after : 0) )) $after" >> "$work/rows"
  done
done
python3 - "$work" "$CORPUS $ARGS" <<'PY'
import json, sys
root, what = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(f"{root}/rows")]
docs = json.load(open(f"{root}/stored/out/summary.json"))["documents_in"]
written = {(k, s): int(b) for k, s, b, _ in rows}
peak = {k: max(int(a) for kk, _, _, a in rows if kk == k) for k in ("stored", "remade")}
print(f"{what.strip()}: {docs} documents; bytes written per document")
print()
print("| stage | stored | remade |")
print("|---|---|---|")
for s in dict.fromkeys(s for k, s, _, _ in rows if k == "remade"):
    if s != "merge":
        print(f"| {s} | {written.get(('stored', s), 0) / docs:,.0f} | {written.get(('remade', s), 0) / docs:,.0f} |")
st, re = peak["stored"] / docs, peak["remade"] / docs
print(f"| work directory at its largest | {st:,.0f} | {re:,.0f} ({re / st:.2f}x) |")
PY
