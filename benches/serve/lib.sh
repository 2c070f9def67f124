# Shared by the serve benches (sourced): start_server INDEX LOG starts `serve` on INDEX with a
# fresh journal, on a free loopback port, logging to LOG; sets $pid and $port. It returns once
# the server has read the index's lookup files into the page cache (its preload; printed), so a
# bench measures a warm server; PRELOAD=no measures one that starts cold (`--no-preload`).
start_server() {
  rm -rf "$1/online"
  local flags=()
  [ "${PRELOAD:-yes}" = no ] && flags=(--no-preload)
  "$BIN" serve --index "$1" --listen 127.0.0.1:0 "${flags[@]}" 2> "$2" &
  pid=$!
  until grep -q "serving" "$2" 2>/dev/null; do sleep 0.1; done
  port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$2")
  until curl -s "http://127.0.0.1:$port/stats" | grep -qv '"running":true'; do sleep 0.5; done
  grep "preloaded" "$2" || true
}
