#!/usr/bin/env bash
# Builds the Python package's wheel with maturin, in the shared cargo target directory and the
# release profile (so it compiles only pyo3 and the bindings), and installs it into the test venv
# and, when CORPUS_DEDUP_RAY names a Ray venv's bin directory, into that one too (the Ray test
# runs `python -m corpus_dedup.ray` there). usage: python/build.sh  (make test runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}
VENV=${CORPUS_DEDUP_PY_VENV:-$HOME/.cache/corpus-dedup-py-venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# Pinned, so a test run does not change with PyPI.
"$VENV/bin/pip" install -q maturin==1.16.0 pytest==9.2.0 pyarrow==26.0.1 polars==2.1.0 \
  numpy==2.4.6 pydivsufsort==0.0.20
rm -rf "$CARGO_TARGET_DIR/wheels"
"$VENV/bin/maturin" build --release --locked --quiet --manifest-path python/Cargo.toml \
  --interpreter "$VENV/bin/python" --out "$CARGO_TARGET_DIR/wheels"
wheel=$(ls "$CARGO_TARGET_DIR"/wheels/corpus_dedup-*.whl)
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$wheel"
if [ -n "${CORPUS_DEDUP_RAY:-}" ] && [ -x "$CORPUS_DEDUP_RAY/pip" ]; then
  "$CORPUS_DEDUP_RAY/pip" install -q --force-reinstall "$wheel" polars==2.1.0
fi
echo "python: $(basename "$wheel") built and installed in $VENV in ${SECONDS} s"
