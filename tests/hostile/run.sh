#!/usr/bin/env bash
# Hostile load (issue 32, API.md section 9 "Hostile load"): the real binary,
# on a fresh SQLite file, under a small open-file limit, against clients
# that try to take it from others (tests/hostile/hostile.py):
#   1. one contact opens more event streams than it may, with two tokens;
#   2. a flood of connections far past what the descriptors allow, while a
#      connection opened before keeps asking /healthz and an authenticated
#      route;
#   3. a trickled body (408 at 10 s) and bodies sent on after a 401, 413
#      and 415 (the connection closes at once).
#
#   tests/hostile/run.sh [path/to/confab]      (default target/debug/confab)
#
# Loopback only, bounded (about 40 s), and everything it started is stopped
# and removed on any exit. Exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${1:-target/debug/confab}"
# Descriptors the server gets: small, so that the flood below is far past
# them with a few hundred sockets.
NOFILE="${HOSTILE_NOFILE:-256}"

if [ ! -x "$BIN" ]; then
    echo "hostile: building $BIN" >&2
    cargo build -q -p confab-server
fi
BIN="$(realpath "$BIN")"

WORK="$(mktemp -d /tmp/confab-hostile.XXXXXX)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export DATABASE_URL="$WORK/confab.db"
export CONFAB_LISTEN="127.0.0.1:$PORT"
export RUST_LOG=warn

"$BIN" migrate >/dev/null
"$BIN" contact create --username mallory --phone-number +15550101 >/dev/null
"$BIN" contact create --username alice --phone-number +15550102 >/dev/null
MALLORY="$("$BIN" token issue --username mallory)"
MALLORY2="$("$BIN" token issue --username mallory)"
ALICE="$("$BIN" token issue --username alice)"

# The soft and the hard limit both: the server raises its soft limit to
# the hard one at start.
prlimit --nofile="$NOFILE:$NOFILE" "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null; then
        break
    fi
    sleep 0.1
done

status=0
python3 tests/hostile/hostile.py \
    --port "$PORT" --mallory "$MALLORY" --mallory2 "$MALLORY2" --alice "$ALICE" \
    --nofile "$NOFILE" --pid "$SERVER_PID" || status=$?

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "hostile: FAIL: the server died" >&2
    status=1
fi
if grep -qiE "too many open files|panicked" "$WORK/server.log"; then
    echo "hostile: FAIL: the server log shows:" >&2
    grep -iE "too many open files|panicked" "$WORK/server.log" | head -5 >&2
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "hostile: the server's log:" >&2
    tail -n 40 "$WORK/server.log" >&2
    echo "hostile: FAIL" >&2
    exit 1
fi
echo "hostile: PASS"
