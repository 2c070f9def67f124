#!/usr/bin/env bash
# Bytes written to the work directory per document, by stage, and the work directory at its
# largest (a run keeps every work file until it succeeds), for `--work-keys stored` and `remade`.
#   make bench-work-bytes [CORPUS='dir/*.parquet'] [ARGS='flags for both']
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}/release/corpus-dedup}
CORPUS=${CORPUS:-../shared/corpus/dev-small/shard-*.parquet} ARGS=${ARGS:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-bytes.XXXXXX")
trap 'rm -rf "$work"' EXIT
for keys in stored remade; do
  # shellcheck disable=SC2086 # flags meant to split into words
  "$BIN" run --quiet --threads 2 --input "$CORPUS" --output "$work/$keys" --keep-work \
    --work-keys "$keys" $ARGS > /dev/null
done
python3 - "$work" "$CORPUS $ARGS" <<'PY'
import json, os, sys
root, what = sys.argv[1], sys.argv[2]
# Which stage writes each work folder (the store and key files: signatures, or keys when remade).
stage_of = {"store": "signatures", "bands": "signatures", "exact": "signatures", "docs": "signatures",
            "paragraphs": "signatures", "substrings": "signatures", "candidates": "candidates",
            "giant": "candidates", "estimated": "verify", "checks": "verify", "needs": "verify",
            "edges": "exact", "cluster": "cluster", "manifest": "manifest", "lookup": "lookup"}
def sizes(keys):
    w = os.path.join(root, keys, "_work")
    out = {}
    for d in sorted(os.listdir(w)):
        p = os.path.join(w, d)
        if not os.path.isdir(p) or d == "done":
            continue
        n = sum(os.path.getsize(os.path.join(a, f)) for a, _, fs in os.walk(p) for f in fs)
        s = "keys" if d == "keys" and keys == "remade" else ("signatures" if d == "keys" else stage_of.get(d, d))
        out[s] = out.get(s, 0) + n
    docs = json.load(open(os.path.join(root, keys, "summary.json")))["documents_in"]
    total = sum(os.path.getsize(os.path.join(a, f)) for a, _, fs in os.walk(w) for f in fs)
    return out, docs, total
(st, docs, t_st), (re, _, t_re) = sizes("stored"), sizes("remade")
print(f"{what.strip()}: {docs} documents; bytes written per document")
print()
print("| stage | stored | remade |")
print("|---|---|---|")
for s in ["signatures", "candidates", "verify", "keys", "exact", "cluster", "manifest"]:
    if s in st or s in re:
        print(f"| {s} | {st.get(s, 0) / docs:,.0f} | {re.get(s, 0) / docs:,.0f} |")
print(f"| work directory at its largest | {t_st / docs:,.0f} | {t_re / docs:,.0f} ({t_re / t_st:.2f}x) |")
PY
