# Shared by the serve benches (sourced): start_server INDEX LOG starts `serve` on INDEX with a
# fresh journal, on a free loopback port, logging to LOG; sets $pid and $port.
start_server() {
  rm -rf "$1/online"
  "$BIN" serve --index "$1" --listen 127.0.0.1:0 2> "$2" &
  pid=$!
  until grep -q "serving" "$2" 2>/dev/null; do sleep 0.1; done
  port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$2")
}
