#!/usr/bin/env bash
# make s3-demo: the object-storage path end to end on this machine. Starts an S3-compatible server
# (s3s-fs, `cargo install s3s-fs@0.14.1 --locked --features binary`) on loopback, puts the sample
# shards in s3://crawl/samples/, runs `make dedup` with s3:// input and output, shows the result,
# and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
S3S=${CORPUS_DEDUP_S3S:-$HOME/.cargo/bin/s3s-fs}
[ -x "$S3S" ] || { echo "s3-demo: $S3S not found; cargo install s3s-fs@0.14.1 --locked --features binary"; exit 1; }
root=$(mktemp -d)
port=${S3_DEMO_PORT:-9014}
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo-secret-key
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true
"$S3S" --host 127.0.0.1 --port "$port" --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" "$root" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$root"' EXIT
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
mkdir -p "$root/crawl/samples" && cp data-samples/*.parquet "$root/crawl/samples/"   # s3s-fs keeps objects as files
make --no-print-directory dedup INPUT='s3://crawl/samples/*.parquet' OUTPUT='s3://crawl/dedup/demo' ARGS=--quiet
echo "objects written:"; ls -l "$root/crawl/dedup/demo"
