#!/usr/bin/env bash
# `plan` over FILES small Parquet files on an S3-compatible server (s3s-fs) behind a proxy that
# delays each chunk DELAY_MS each way: OLD and NEW binaries alternated, ROUNDS each; prints the
# wall times. The files are copies of data-samples' first shard, so each footer is a real one.
#
#   OLD=old-binary NEW=new-binary [FILES=1000] [DELAY_MS=10] [ROUNDS=3] bash benches/s3/plan.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OLD:?set OLD}" "${NEW:?set NEW}"
FILES=${FILES:-1000} DELAY_MS=${DELAY_MS:-10} ROUNDS=${ROUNDS:-3}
S3S=${CORPUS_DEDUP_S3S:-$HOME/.cargo/bin/s3s-fs}
root=$(mktemp -d) port=${S3_BENCH_PORT:-9024}
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret-key AWS_ALLOW_HTTP=true
export AWS_ENDPOINT_URL=http://127.0.0.1:$((port + 1))
mkdir -p "$root/crawl/many"
shard=$(ls data-samples/*.parquet | head -1)
for i in $(seq -f '%06g' 1 "$FILES"); do cp "$shard" "$root/crawl/many/s-$i.parquet"; done
"$S3S" --host 127.0.0.1 --port "$port" --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$root" >/dev/null 2>&1 &
server=$!
python3 benches/s3/latency-proxy.py $((port + 1)) "$port" "$DELAY_MS" &
proxy=$!
trap 'kill $server $proxy 2>/dev/null; rm -rf "$root"' EXIT
for p in $port $((port + 1)); do
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
done
echo "plan over $FILES s3:// Parquet files, ${DELAY_MS} ms each way per chunk, $(nproc) cores"
for r in $(seq "$ROUNDS"); do
  for b in OLD NEW; do
    [ $((r % 2)) = 0 ] && b=$([ $b = OLD ] && echo NEW || echo OLD)
    t0=$(date +%s.%N)
    "${!b}" plan --quiet --input 's3://crawl/many/*.parquet' --output "$root/out" --work "$root/work-$b-$r" > /dev/null
    echo "round $r $b $(python3 -c "import time; print(f'{time.time() - $t0:.2f}')") s"
  done
done
