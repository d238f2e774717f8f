#!/usr/bin/env bash
# Writes that change nothing write nothing (docs/api.md, "Writes that change
# nothing"): the real binary on a fresh database, a group of 2,000 members
# seeded through the server API, and one member pinning the message that is
# already pinned, as fast as the server answers, for 30 s. The database must
# grow by less than 1 MB. Then it prints what one real pin change and one
# group rename cost in that group (the database's growth, each).
#
#   tests/hostile/repin.sh BIN STORE      STORE: sqlite | postgres
#
# PostgreSQL: a database of its own on 127.0.0.1:5432 (user postgres),
# created here and dropped on exit. Loopback only; about a minute per store
# (REPIN_SECONDS, REPIN_MEMBERS change the load). Everything it started is
# stopped and removed on any exit; non-zero when the limit is passed or a
# request fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$#" -ne 2 ] || { [ "$2" != sqlite ] && [ "$2" != postgres ]; }; then
    echo "usage: $0 BIN sqlite|postgres" >&2
    exit 2
fi
BIN="$(realpath "$1")"
STORE="$2"
SECONDS_OF_REPINS="${REPIN_SECONDS:-30}"
MEMBERS="${REPIN_MEMBERS:-2000}"

WORK="$(mktemp -d /tmp/confab-repin.XXXXXX)"
SERVER_PID=""
PG_DB=""
PSQL=(psql -h 127.0.0.1 -p 5432 -U postgres -v ON_ERROR_STOP=1 -qAt)
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ -n "$PG_DB" ]; then
        "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$STORE" = postgres ]; then
    PG_DB="confab_repin_$$_$(date +%s)"
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE $PG_DB" >/dev/null
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$PG_DB"
    SIZE_CMD="${PSQL[*]} -d $PG_DB -c 'SELECT pg_database_size(current_database())'"
else
    export DATABASE_URL="$WORK/confab.db"
    # The file and its write-ahead log (the -shm index is memory, not data).
    SIZE_CMD="cat $WORK/confab.db $WORK/confab.db-wal 2>/dev/null | wc -c"
fi

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export CONFAB_LISTEN="127.0.0.1:$PORT"
export CONFAB_STORAGE_URL="$WORK/files"
export CONFAB_MAX_GROUP_MEMBERS="$MEMBERS"
export RUST_LOG=warn

"$BIN" migrate >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; exit 1; }
KEY="$("$BIN" key create --name repin | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')"

"$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null; then
        break
    fi
    sleep 0.1
done

status=0
python3 tests/hostile/repin.py --port "$PORT" --key "$KEY" --size-cmd "$SIZE_CMD" \
    --members "$MEMBERS" --seconds "$SECONDS_OF_REPINS" || status=$?

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "repin: FAIL: the server died" >&2
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "repin: the server's log:" >&2
    tail -n 20 "$WORK/server.log" >&2
    echo "repin ($STORE): FAIL" >&2
    exit 1
fi
echo "repin ($STORE): PASS"
