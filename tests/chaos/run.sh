#!/usr/bin/env bash
# Chaos test (docs/api.md "Limits"): nothing acknowledged is lost,
# nothing is duplicated, nobody waits on a stalled database.
#
#   tests/chaos/run.sh [path/to/confab]      (default target/debug/confab)
#
# Starts a PRIVATE PostgreSQL (initdb as the postgres user, its own port and
# socket directory under /tmp; never the machine's shared server), migrates
# it and creates contacts and tokens with the CLI, then runs confab serve and
# CHAOS_CLIENTS clients (tests/chaos/chaos.py) sending messages with unique
# texts and Idempotency-Keys, retrying on any failure. Meanwhile:
#   1. the server is killed with SIGKILL and started again;
#   2. PostgreSQL is restarted in immediate mode (a crash, then recovery),
#      CHAOS_PG_RESTARTS times (default 10), CHAOS_RESTART_GAP_SECS (2) apart;
#   3. PostgreSQL's processes are stopped with SIGSTOP for CHAOS_STALL_SECS
#      seconds (sockets open, nothing answers), then resumed.
# Then every message text is read from the database (psql) and checked
# against what the clients sent and had acknowledged. Exits non-zero on any
# loss, duplicate, text never sent, or request in flight during the stall
# that took over 2.5 s. Everything it started is stopped and removed on any
# exit. About a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${1:-target/debug/confab}"
CLIENTS="${CHAOS_CLIENTS:-16}"
STALL_SECS="${CHAOS_STALL_SECS:-4}"
# More crashes make a rare window likelier to be hit: each write in its
# commit when PostgreSQL is stopped is one chance to acknowledge what was
# never committed.
RESTARTS="${CHAOS_PG_RESTARTS:-10}"
RESTART_GAP="${CHAOS_RESTART_GAP_SECS:-2}"

if [ ! -x "$BIN" ]; then
    echo "chaos: building $BIN" >&2
    cargo build -q -p confab-server
fi
BIN="$(realpath "$BIN")"

PG_BIN="${CONFAB_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"
if [ ! -x "$PG_BIN/initdb" ]; then
    echo "chaos: initdb not found (install PostgreSQL or set CONFAB_PG_BINDIR)" >&2
    exit 1
fi

WORK="$(mktemp -d /tmp/confab-chaos.XXXXXX)"
DATA="$WORK/data"
SERVER_PID=""
LOAD_PID=""

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The postmaster and its children.
pg_pids() {
    local master
    master="$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null)" || return 0
    [ -n "$master" ] || return 0
    echo "$master"
    pgrep -P "$master" || true
}

cleanup() {
    local status=$?
    set +e
    [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null && wait "$LOAD_PID" 2>/dev/null
    [ -n "$SERVER_PID" ] && kill -9 "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    if [ -f "$DATA/postmaster.pid" ]; then
        kill -CONT $(pg_pids) 2>/dev/null
        as_owner "$PG_BIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1
    fi
    if [ "$status" != 0 ] && [ -f "$WORK/server.log" ]; then
        echo "chaos: last server log lines:" >&2
        tail -n 20 "$WORK/server.log" >&2
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
say() { awk -v t="$(now)" -v t0="$T0" -v m="$*" 'BEGIN { printf "chaos: %5.1f s  %s\n", t - t0, m }'; }
T0="$(now)"

# A private PostgreSQL.
[ "$(id -u)" = 0 ] && chown postgres:postgres "$WORK"
PG_PORT="$(free_port)"
as_owner "$PG_BIN/initdb" -D "$DATA" -A trust -U postgres -E UTF8 --locale=C --no-sync >/dev/null
as_owner "$PG_BIN/pg_ctl" -D "$DATA" -l "$WORK/postgres.log" -w -t 30 \
    -o "-p $PG_PORT -k $WORK -c listen_addresses=127.0.0.1 -c max_connections=60" start >/dev/null
say "private PostgreSQL on port $PG_PORT ($DATA)"

export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
export CONFAB_DB_WAIT_SECS=30
API_PORT="$(free_port)"
BASE="http://127.0.0.1:$API_PORT"
"$BIN" migrate

# Contacts and tokens, with the CLI.
PEER="$("$BIN" contact create --username peer --phone-number +15550199 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
{
    printf '{"peer": "%s", "clients": [' "$PEER"
    for i in $(seq 1 "$CLIENTS"); do
        name="$(printf 'c%02d' "$i")"
        "$BIN" contact create --username "$name" --phone-number "+1555010$(printf '%02d' "$i")" >/dev/null
        token="$("$BIN" token issue --username "$name")"
        [ "$i" = 1 ] || printf ', '
        printf '{"name": "%s", "token": "%s"}' "$name" "$token"
    done
    printf ']}\n'
} >"$WORK/clients.json"
say "$CLIENTS contacts and tokens created"

start_server() {
    CONFAB_LISTEN="127.0.0.1:$API_PORT" \
        CONFAB_RATE_LIMIT_PER_SECOND=0 CONFAB_RATE_LIMIT_ANON_PER_SECOND=0 \
        RUST_LOG=warn "$BIN" serve >>"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 300); do
        curl -fsS -o /dev/null "$BASE/readyz" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "chaos: the server did not become ready" >&2
    return 1
}

start_server
say "server ready on $BASE; $CLIENTS clients sending"
python3 tests/chaos/chaos.py load "$BASE" "$WORK/clients.json" "$WORK/stop" "$WORK/results.json" &
LOAD_PID=$!
: >"$WORK/events"

sleep 6
echo "server_kill $(now)" >>"$WORK/events"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
say "server killed (SIGKILL)"
start_server
say "server restarted"

for i in $(seq 1 "$RESTARTS"); do
    if [ "$i" = 1 ]; then sleep 6; else sleep "$RESTART_GAP"; fi
    echo "postgres_restart$([ "$i" = 1 ] || echo "_$i") $(now)" >>"$WORK/events"
    as_owner "$PG_BIN/pg_ctl" -D "$DATA" -m immediate -w restart >/dev/null
    say "PostgreSQL restarted in immediate mode ($i of $RESTARTS)"
done

sleep 6
# Every process of the server, read after the restart: the postmaster
# first (stopped, it forks no new backend), then its children (one may
# have just exited).
MASTER="$(head -n 1 "$DATA/postmaster.pid")"
echo "stall_start $(now)" >>"$WORK/events"
kill -STOP "$MASTER"
CHILDREN="$(pgrep -P "$MASTER" | tr '\n' ' ')"
kill -STOP $CHILDREN 2>/dev/null || true
say "PostgreSQL stalled (SIGSTOP to $MASTER $CHILDREN)"
sleep "$STALL_SECS"
kill -CONT $CHILDREN 2>/dev/null || true
kill -CONT "$MASTER"
echo "stall_end $(now)" >>"$WORK/events"
say "PostgreSQL resumed (SIGCONT)"

sleep 6
touch "$WORK/stop"
wait "$LOAD_PID"
LOAD_PID=""
say "clients done"

as_owner "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -At \
    -c "SELECT body FROM messages" >"$WORK/found.txt"
set +e
python3 tests/chaos/chaos.py check "$WORK/results.json" "$WORK/events" "$WORK/found.txt"
verdict=$?
set -e
say "done"
exit "$verdict"
