#!/usr/bin/env bash
# A big erase under load (docs/api.md, "Jobs"): the real binary on a fresh
# database; a contact with 60,000 messages (most in a direct conversation,
# a tenth in a group; copied by SQL from one real send), erased over the
# server API while two other contacts send to each other without pause
# (tests/hostile/erase.py). The erase must answer at once (202 with a job),
# the contact's token be refused within 5 s, the server be killed (-9)
# mid-job and started again, the job still finish, nothing of the contact
# be left, and every send of the others be served; their p50/p99 is
# printed (p99 over 2 s fails).
#
#   tests/hostile/erase.sh BIN STORE      STORE: sqlite | postgres
#
# PostgreSQL: a database of its own on 127.0.0.1:5432 (user postgres),
# created here and dropped on exit. Loopback only; ERASE_BULK changes the
# number of messages. About a minute per store in a debug build.
# Everything it started is stopped and removed on any exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$#" -ne 2 ] || { [ "$2" != sqlite ] && [ "$2" != postgres ]; }; then
    echo "usage: $0 BIN sqlite|postgres" >&2
    exit 2
fi
BIN="$(realpath "$1")"
STORE="$2"
BULK="${ERASE_BULK:-60000}"

WORK="$(mktemp -d /tmp/confab-erase.XXXXXX)"
SERVER_PID=""
PG_DB=""
PSQL=(psql -h 127.0.0.1 -p 5432 -U postgres -v ON_ERROR_STOP=1 -qAt)
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "${1:-TERM}" "$SERVER_PID" 2>/dev/null || kill "-${1:-TERM}" "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    stop_server TERM
    if [ -n "$PG_DB" ]; then
        "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$STORE" = postgres ]; then
    PG_DB="confab_erase_$$_$(date +%s)"
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE $PG_DB" >/dev/null
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$PG_DB"
else
    export DATABASE_URL="$WORK/confab.db"
fi

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export CONFAB_LISTEN="127.0.0.1:$PORT"
export CONFAB_STORAGE_URL="$WORK/files"
export RUST_LOG=warn

"$BIN" migrate >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; exit 1; }
KEY="$("$BIN" key create --name erase | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')"

start_server() {
    "$BIN" serve >>"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "erase: the server did not start" >&2
    return 1
}
start_server

# Killed mid-job (as a crash would) and started again: the job resumes
# once its lease (10 s) runs out.
RESTART="$WORK/restart.sh"
cat >"$RESTART" <<EOS
#!/usr/bin/env bash
kill -KILL \$(cat "$WORK/server.pid")
while kill -0 \$(cat "$WORK/server.pid") 2>/dev/null; do sleep 0.1; done
"$BIN" serve >>"$WORK/server.log" 2>&1 &
echo \$! >"$WORK/server.pid"
for _ in \$(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2).close()" 2>/dev/null && exit 0
    sleep 0.1
done
exit 1
EOS
chmod +x "$RESTART"
echo "$SERVER_PID" >"$WORK/server.pid"

status=0
python3 tests/hostile/erase.py --port "$PORT" --key "$KEY" --store "$STORE" --db "$DATABASE_URL" \
    --bulk "$BULK" --restart-cmd "$RESTART" --job-timeout 150 || status=$?
SERVER_PID="$(cat "$WORK/server.pid")"

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "erase: FAIL: the server died" >&2
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "erase: the server's log:" >&2
    tail -n 20 "$WORK/server.log" >&2
    echo "erase ($STORE): FAIL" >&2
    exit 1
fi
echo "erase ($STORE): PASS"
