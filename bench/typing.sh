#!/usr/bin/env bash
# Typing indicators' reach (docs/api.md "Typing": a typing event reaches the
# other members' open event streams within 100 ms, across instances). On
# each store, one group conversation of POSTERS (10) posters and LISTENERS
# listeners (50, then 200), one `GET /v1/events` stream per listener, and
# for DURATION (20) s each poster's `POST /v1/conversations/:id/typing`: a
# `start` every PERIOD (2.5) s, staggered over the posters, and a `stop`
# halfway between (STOPS=0: starts only). Measures, for every 204 and every
# listener, the delay from just before the POST is written until that
# listener's stream has its `event: typing` frame (one process, one
# monotonic clock: bench/typing.py, asyncio sockets), and the frames lost
# (not there within LOSS_WINDOW, 1 s).
#
# 1. postgres: two `confab serve` on one scratch database
#    (confab_bench_typing_<pid>), instance A at PORT (8093) takes the
#    POSTs, instance B at PORT+1 holds the streams: every frame crosses
#    instances (PostgreSQL LISTEN/NOTIFY).
# 2. sqlite: one `confab serve` on an SQLite file in a temporary directory.
#
# Prints a table (count, p50, p99, max, lost per store and listener count)
# and exits 1 when a scenario's p99 >= MAX_P99_MS (100) ms, a frame is lost
# or a POST failed, naming which; 2 when a run broke. Contacts and their
# tokens are made through the server API (`confab key create`, then `POST
# /v1/admin/contacts` and `.../tokens`), the group and its conversation by
# the first poster.
#
# Needs: a release build (built here with `cargo build --release -p
# confab-server` unless BENCH_NO_BUILD=1 or CONFAB_BIN names a binary; the
# default is $CARGO_TARGET_DIR/release/confab, else target/release/confab),
# curl, python3 (standard library only), and psql with PostgreSQL at
# BENCH_PG (postgres://postgres@127.0.0.1:5432, trust) for the postgres
# store.
#
#   bench/typing.sh                                 # both stores, 50 and 200 listeners
#   BENCH_STORES=sqlite LISTENERS=50 DURATION=5 CONFAB_BIN=target/release/confab bench/typing.sh
#
# Other knobs: POSTERS (10), PERIOD (2.5 s; at least 2.2, the server drops
# starts closer than 2 s apart), STOPS (1), LOSS_WINDOW (1 s), MAX_P99_MS
# (100), SETTLE (1 s between the streams' opening and the first POST),
# RUN_TIMEOUT (600 s per store), BENCH_KEEP=1 (keep the servers' logs and
# the results). The servers run without rate limits (CONFAB_RATE_LIMIT_*=0)
# and with warnings only; everything goes to 127.0.0.1, every wait is
# bounded, and the servers, the scratch database and the SQLite file go at
# the end.
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$PWD/bench
BIN=${CONFAB_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/confab}
PG=${BENCH_PG:-postgres://postgres@127.0.0.1:5432}
PORT=${PORT:-8093}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
IFS=', ' read -r -a STORES <<<"${BENCH_STORES:-postgres,sqlite}"
DB=confab_bench_typing_$$
SCRATCH=$(mktemp -d)
RESULTS=$SCRATCH/results.jsonl
SERVERS=()
RUNNER=

stop_servers() {
    local pid
    for pid in "${SERVERS[@]}"; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    SERVERS=()
}
cleanup() {
    [ -z "${RUNNER:-}" ] || { kill "$RUNNER" 2>/dev/null && wait "$RUNNER" 2>/dev/null || true; }
    stop_servers
    if [ "${DROP_DB:-0}" = 1 ]; then
        psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
    fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "servers' logs and results kept in $SCRATCH" >&2
    else
        rm -rf "$SCRATCH"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${CONFAB_BIN:-}" ]; then
    cargo build --release -p confab-server
fi
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }
for tool in curl python3; do
    command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
# 200 streams, and the server's connection budget follows its descriptor limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 8192 2>/dev/null || true

# serve NAME PORT: `confab serve` on DATABASE_URL at 127.0.0.1:PORT, its log
# in SCRATCH; waits up to 30 s for its /readyz.
serve() {
    if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
        echo "$STORE: port $2 is taken (PORT picks others)" >&2
        return 1
    fi
    DATABASE_URL=$DATABASE_URL CONFAB_LISTEN=127.0.0.1:$2 RUST_LOG=warn \
        CONFAB_RATE_LIMIT_PER_SECOND=0 CONFAB_RATE_LIMIT_ANON_PER_SECOND=0 \
        CONFAB_RATE_LIMIT_KEY_PER_SECOND=0 CONFAB_STORAGE_URL="$SCRATCH/files" \
        "$BIN" serve >"$SCRATCH/server-$STORE-$1.log" 2>&1 &
    SERVERS+=($!)
    for _ in $(seq 300); do
        curl -sf --max-time 1 "http://127.0.0.1:$2/readyz" >/dev/null && return 0
        kill -0 "$!" 2>/dev/null || break
        sleep 0.1
    done
    echo "$STORE: server $1 did not start; its log:" >&2
    tail -20 "$SCRATCH/server-$STORE-$1.log" >&2
    return 1
}

# broken WHY: a result line saying this store's run broke.
broken() {
    printf '{"store": "%s", "instances": %s, "listeners": "-", "broken": "%s"}\n' \
        "$STORE" "$INSTANCES" "$1" >>"$RESULTS"
}

: >"$RESULTS"
for STORE in "${STORES[@]}"; do
    case "$STORE" in
    postgres)
        command -v psql >/dev/null || { echo "needs psql" >&2; exit 2; }
        INSTANCES=2
        export DATABASE_URL=$PG/$DB
        psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
        DROP_DB=1
        psql "$PG/postgres" -qc "CREATE DATABASE $DB"
        ;;
    sqlite)
        INSTANCES=1
        export DATABASE_URL="sqlite://$SCRATCH/typing.db"
        rm -f "$SCRATCH"/typing.db*
        ;;
    *) echo "store: postgres or sqlite" >&2; exit 2 ;;
    esac
    echo "== $STORE: $INSTANCES instance(s), LISTENERS=\"${LISTENERS:-50 200}\"," \
        "POSTERS=${POSTERS:-10}, DURATION=${DURATION:-20} s"
    # Migrated once, before any server starts (two servers would both try),
    # and a server key for the contacts' setup.
    timeout 120 "$BIN" migrate >"$SCRATCH/migrate-$STORE.log" 2>&1 ||
        { cat "$SCRATCH/migrate-$STORE.log" >&2; exit 2; }
    ADMIN_KEY=$("$BIN" key create --name typing-bench |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])') ||
        { echo "$STORE: confab key create failed" >&2; exit 2; }

    status=0
    if serve A "$PORT" && { [ "$INSTANCES" = 1 ] || serve B $((PORT + 1)); }; then
        STREAM_PORT=$PORT
        [ "$INSTANCES" = 1 ] || STREAM_PORT=$((PORT + 1))
        # In the background, so that a signal to this script stops it at once.
        STORE=$STORE INSTANCES=$INSTANCES POST_PORT=$PORT STREAM_PORT=$STREAM_PORT \
            ADMIN_KEY=$ADMIN_KEY RESULTS=$RESULTS \
            timeout "$RUN_TIMEOUT" python3 "$HERE/typing.py" run &
        RUNNER=$!
        wait "$RUNNER" || status=$?
        RUNNER=
        for pid in "${SERVERS[@]}"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "$STORE: a server died; the logs' tails:" >&2
                tail -n 20 "$SCRATCH"/server-"$STORE"-*.log >&2
                broken "a server died"
            fi
        done
        if [ "$status" -eq 124 ]; then
            echo "$STORE: the run took over $RUN_TIMEOUT s; stopped" >&2
            broken "over RUN_TIMEOUT"
        fi
    else
        broken "a server did not start"
    fi
    # A run that broke before writing any line still gets a row.
    if [ "$status" -ne 0 ] && ! grep -q "\"store\": \"$STORE\"" "$RESULTS"; then
        broken "exit $status"
    fi
    stop_servers
    if [ "$STORE" = postgres ]; then
        psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
        DROP_DB=0
    else
        rm -f "$SCRATCH"/typing.db*
    fi
done

echo
python3 "$HERE/typing.py" report "$RESULTS"
