#!/usr/bin/env bash
# Hostile load (docs/api.md, "Hostile load"): the real binary, on each
# store in turn (a fresh SQLite file, then a PostgreSQL database made for
# the run on 127.0.0.1:5432), under a 1,024-descriptor limit, against
# clients that try to take it from others (tests/hostile/hostile.py and
# load.py):
#   1. one contact opens more event streams than it may, with two tokens;
#   2. a flood of connections far past what the descriptors allow, from
#      many addresses, while a connection opened before keeps asking
#      /healthz and an authenticated route;
#   3. a trickled body (408 at 10 s) and bodies sent on after a 401, 413
#      and 415 (the connection closes at once);
#   4. one address holding 800 request heads that never end while another
#      contact trickles 784 uploads a byte every 3 s: a third contact's
#      requests are all served (figures printed);
#   5. one contact uploading 20 files of 5 MiB against a 30 MiB quota.
#
#   tests/hostile/run.sh [path/to/confab]      (default target/debug/confab)
#
# Loopback only (the attackers use their own 127.0.0.x addresses), bounded
# (about a minute per store), and everything it started is stopped and
# removed on any exit. Exits non-zero when any check fails on either store.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${1:-target/debug/confab}"
# Descriptors the server gets: the limit of the original finding, small
# enough that the flood below is far past it with a few thousand sockets.
NOFILE="${HOSTILE_NOFILE:-1024}"
PG="${HOSTILE_PG_URL:-postgres://postgres@127.0.0.1:5432}"

if [ ! -x "$BIN" ]; then
    echo "hostile: building $BIN" >&2
    cargo build -q -p confab-server
fi
BIN="$(realpath "$BIN")"

WORK="$(mktemp -d /tmp/confab-hostile.XXXXXX)"
SERVER_PID=""
PG_DB=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
drop_database() {
    if [ -n "$PG_DB" ]; then
        psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true
        PG_DB=""
    fi
}
cleanup() {
    stop_server
    drop_database
    rm -rf "$WORK"
}
trap cleanup EXIT

# Runs every check against a server on `$1` (sqlite or postgres); 0 when
# all passed.
run_store() {
    local store="$1"
    local dir="$WORK/$store"
    mkdir -p "$dir"
    case "$store" in
        sqlite) export DATABASE_URL="$dir/confab.db" ;;
        postgres)
            PG_DB="confab_hostile_$$"
            psql "$PG/postgres" -qc "CREATE DATABASE $PG_DB" >/dev/null
            export DATABASE_URL="$PG/$PG_DB"
            ;;
    esac
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    export CONFAB_LISTEN="127.0.0.1:$port"
    export CONFAB_STORAGE_URL="$dir/files"
    # Case 5's quota: 30 MiB a contact.
    export CONFAB_UPLOAD_QUOTA_BYTES=31457280
    export RUST_LOG=warn

    "$BIN" migrate >/dev/null
    "$BIN" contact create --username mallory --phone-number +15550101 >/dev/null
    "$BIN" contact create --username alice --phone-number +15550102 >/dev/null
    "$BIN" contact create --username trudy --phone-number +15550103 >/dev/null
    local mallory mallory2 alice trudy
    mallory="$("$BIN" token issue --username mallory)"
    mallory2="$("$BIN" token issue --username mallory)"
    alice="$("$BIN" token issue --username alice)"
    trudy="$("$BIN" token issue --username trudy)"

    # The soft and the hard limit both: the server raises its soft limit
    # to the hard one at start.
    prlimit --nofile="$NOFILE:$NOFILE" "$BIN" serve >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2).close()" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done

    local status=0
    python3 tests/hostile/hostile.py \
        --store "$store" --port "$port" --mallory "$mallory" --mallory2 "$mallory2" \
        --alice "$alice" --trudy "$trudy" --nofile "$NOFILE" --pid "$SERVER_PID" || status=$?

    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "hostile: $store: FAIL: the server died" >&2
        status=1
    fi
    if grep -qiE "too many open files|panicked" "$dir/server.log"; then
        echo "hostile: $store: FAIL: the server log shows:" >&2
        grep -iE "too many open files|panicked" "$dir/server.log" | head -5 >&2
        status=1
    fi
    if [ "$status" -ne 0 ]; then
        echo "hostile: $store: the server's log:" >&2
        tail -n 40 "$dir/server.log" >&2
    fi
    stop_server
    drop_database
    return "$status"
}

failed=0
for store in sqlite postgres; do
    run_store "$store" || failed=1
done
if [ "$failed" -ne 0 ]; then
    echo "hostile: FAIL" >&2
    exit 1
fi
echo "hostile: PASS"
