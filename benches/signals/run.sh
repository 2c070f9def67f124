#!/usr/bin/env bash
# --partition-by equivalence and --across quality on the development corpora (make bench-signals):
# prints one JSON object (benches/signals/check.py says what each number is).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:?BIN=path of corpus-dedup}
PY=$(../shared/corpus/tools/setup.sh)
"$(dirname "$PY")/pip" install -q polars
work=$(mktemp -d "${TMPDIR:-/tmp}/corpus-dedup-signals.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$PY" benches/signals/check.py "$BIN" "$work"
