#!/usr/bin/env bash
# make bench-ratios: the speed ratios of issue 22, measured the way this project makes speed
# claims: rounds alternated in the same minutes, medians of the per-round ratios. Each round runs,
# on the same shards, the signature-path kernels on one pinned core (`kernels --signature-path`:
# Parquet read + decode, shingle hashes, MinHash oph; best of three each), a whole run on that
# core (--threads 1) and a whole run on two cores (--threads 2), and how much two cores speed up
# the signature kernels alone (`kernels --scaling`, in memory: the ceiling of the two-thread
# ratio on this machine). Writes benches/results/ratios.md. Issue 60's ratios come from the same
# rounds: the whole run on one core over the time to read and decode the text column (the
# kernels' first step, the job's own reader: the floor), and with GAOYA=1 gaoya-words (the
# fastest peer, `make bench-peers`) on the same core in each round, over the whole run.
#
#   make bench-ratios                                  # dev-small, 5 rounds
#   make bench-ratios CORPUS=/tmp/dev-large ROUNDS=7   # the 100k corpus
#   make bench-ratios CORPUS=/tmp/dev-large GAOYA=1    # and gaoya-words in every round
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus/dev-small}
ROUNDS=${ROUNDS:-5}
target=${CARGO_TARGET_DIR:-$HOME/.cache/corpus-dedup-target}
BIN=$target/release/corpus-dedup
KERNELS=$target/release/examples/kernels
[ -d "$CORPUS" ] || { echo "bench-ratios: corpus $CORPUS not found (set CORPUS=dir)"; exit 1; }
[ -x "$BIN" ] && [ -x "$KERNELS" ] || { echo "bench-ratios: build first (make bench-ratios builds both)"; exit 1; }
work=${TMPDIR:-/tmp}/corpus-dedup-ratios
rm -rf "$work"; mkdir -p "$work" benches/results
input="$CORPUS/shard-*.parquet"

wall() { # wall CORES THREADS: seconds of one run
  rm -rf "$work/out"
  /usr/bin/time -f '%e' -o "$work/time" taskset -c "$1" "$BIN" run --quiet --threads "$2" \
    --input "$input" --output "$work/out" > /dev/null
  cat "$work/time"
}
: > "$work/rounds"
if [ "${GAOYA:-0}" = 1 ]; then
  VENV=${PEERS_VENV:-${TMPDIR:-/tmp}/corpus-dedup-peers-venv}
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # As bench-peers pins them; the corpus tools the runner imports hash with xxhash<4.
  "$VENV/bin/pip" install -q gaoya==0.2.2 pyarrow numpy pandas "xxhash<4"
fi
gaoya() { # seconds of gaoya-words on core 0, or 0 without GAOYA=1
  [ "${GAOYA:-0}" = 1 ] || { echo 0; return; }
  rm -rf "$work/gaoya"
  /usr/bin/time -f '%e' -o "$work/time" taskset -c 0 "$VENV/bin/python" benches/peers/run_peer.py \
    gaoya-words "$CORPUS" "$work/gaoya" > /dev/null || { echo "bench-ratios: gaoya-words failed" >&2; exit 1; }
  cat "$work/time"
}
for r in $(seq 1 "$ROUNDS"); do
  line=$(RAYON_NUM_THREADS=1 POLARS_MAX_THREADS=1 taskset -c 0 "$KERNELS" --signature-path "$input" |
    grep '^signature-path kernels: ')
  k=$(sed -n 's/^.* = \([0-9.]*\) s;.*$/\1/p' <<< "$line")
  d=$(sed -n 's/^signature-path kernels: read + decode \([0-9.]*\) s.*$/\1/p' <<< "$line")
  t1=$(wall 0 1)
  t2=$(wall 0,1 2)
  c=$(taskset -c 0,1 "$KERNELS" --scaling "$input" |
    sed -n 's/^two-thread scaling of the signature kernels: \([0-9.]*\)x.*$/\1/p')
  g=$(gaoya)
  echo "$r $k $t1 $t2 $c $d $g" | tee -a "$work/rounds" >&2
done
out=benches/results/ratios.md
python3 - "$work/rounds" "$CORPUS" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" > "$out" <<'PY'
import statistics, sys, datetime
rounds = [list(map(float, l.split()))[1:] for l in open(sys.argv[1]) if l.strip()]
print(f"# Speed ratios ({datetime.date.today()}, {sys.argv[3]}; command: make bench-ratios CORPUS={sys.argv[2]} ROUNDS={len(rounds)})")
print()
print("| round | read + decode, 1 core | signature-path kernels, 1 core | run, 1 thread | run, 2 threads | run / decode | run / kernels | 1 thread / 2 threads | kernels alone, 1 / 2 threads | gaoya-words, 1 core | gaoya / run |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for i, (k, t1, t2, c, d, g) in enumerate(rounds, 1):
    peer = f"{g:.2f} s | {g / t1:.1f}x" if g else "- | -"
    print(f"| {i} | {d:.3f} s | {k:.3f} s | {t1:.2f} s | {t2:.2f} s | {t1 / d:.2f}x | {t1 / k:.2f}x | {t1 / t2:.2f}x | {c:.2f}x | {peer} |")
med = lambda xs: statistics.median(xs)
print()
print(f"Median of the rounds: end to end / decode **{med([t1 / d for _, t1, _, _, d, _ in rounds]):.2f}x** "
      f"(target <= 3x), end to end / kernels **{med([t1 / k for k, t1, *_ in rounds]):.2f}x** "
      f"(target <= 1.5x), two threads over one **{med([t1 / t2 for _, t1, t2, *_ in rounds]):.2f}x** (target >= 1.8x); "
      f"the signature kernels alone, in memory, scale {med([c for _, _, _, c, *_ in rounds]):.2f}x on the two cores.")
if all(g for *_, g in rounds):
    print(f"gaoya-words over the whole run, one core each, same rounds: **{med([g / t1 for _, t1, _, _, _, g in rounds]):.1f}x** (target >= 14x).")
PY
cat "$out"
