#!/usr/bin/env bash
# Big groups (docs/api.md "Groups": everything a member does in a
# group costs the same whatever the group's size). On each store, one
# server run (the logic is in bench/groups.py, a process of its own):
#
# 1. Send rate: `POST /v1/messages` with wrk (BENCH_CONNECTIONS=8
#    connections, one sender, one token, BENCH_WARMUP s of warm-up then
#    BENCH_DURATION s) into a direct conversation, then into the
#    conversation of a group of each of SIZES members (default 100, 1,000
#    and 10,000). Prints req/s, p50, p99, failed requests (non-2xx, errors,
#    timeouts) and group / direct; targets per group: ratio >= 0.66, none
#    failed, p99 < 25 ms (the direct conversation: the last two).
#    The groups are made over HTTP: `POST /v1/groups` with the first
#    CHUNK - 1 `contact_ids` (a body is at most 64 KiB), then `PUT
#    add_contact_ids` chunks of CHUNK (1,000), each timed; then, on the
#    largest group (its conversation has the sends' history), one PUT
#    `remove_contact_ids` of its last 1,000 members and one adding them
#    back. Target: each PUT under 1 s.
# 2. Event reach: STREAMS (1,000) `GET /v1/events` streams, one per member
#    of the largest group (asyncio sockets), then EVENT_MESSAGES (20) sends
#    into its conversation EVENT_GAP_MS (200) ms apart. Prints p50/p99/max
#    of the delay from a send's response to its `message.created` on each
#    stream and the (message, stream) pairs missed within EVENT_TIMEOUT (5
#    s). Targets: p99 < 1 s, none missed.
# 3. Inbox and open: viewer A is a member of INBOX_GROUPS (200) groups of
#    INBOX_SMALL (10) members, viewer B of as many groups of INBOX_BIG
#    (the largest size) members; each group has a conversation with
#    INBOX_MESSAGES (3) messages from its owner. wrk runs `GET
#    /v1/conversations?limit=INBOX_LIMIT` (100) as A then B, and `GET
#    /v1/conversations/:id` (opening one of their group conversations; the
#    first open, timed alone, marks its messages read) as A then B. Target:
#    B's req/s at least 1/1.2 of A's.
# Then the server's peak RSS (VmHWM, end of run): target < 150 MB.
#
# Prints a table per store with PASS/FAIL per target and exits 1 if any
# target fails (2 if a run broke); BENCH_OUT=FILE also writes the tables as
# markdown (for docs/performance.md). The raw wrk outputs stay in a
# temporary directory when BENCH_KEEP=1.
#
# Needs: a release build (built here unless BENCH_NO_BUILD=1; CONFAB_BIN
# picks another binary; the default is $CARGO_TARGET_DIR/release/confab,
# else target/release/confab), wrk, curl, python3 (standard library only),
# and psql/createdb with PostgreSQL at 127.0.0.1:5432 (user postgres,
# trust). Contacts and tokens (`cfb_bench_<n>`, stored as SHA-256 like
# `confab token issue` does) are seeded with set-based SQL before the
# server starts; everything else goes through the API (INBOX_SEED=sql adds
# viewer B's big groups' members with SQL instead: groups.py,
# `sql_add_pool_members`).
#
#   bench/groups.sh                                    # both stores, full sizes
#   BENCH_STORES=sqlite SIZES="100 1000" bench/groups.sh
#   SIZES="10 100" STREAMS=100 INBOX_GROUPS=20 BENCH_DURATION=3 BENCH_WARMUP=1 \
#       BENCH_NO_BUILD=1 bench/groups.sh              # a quick look (~3 min)
#
# Other knobs: PORT (8092), CHUNK (1000), WRK_TIMEOUT (10 s), the targets
# (MIN_SEND_RATIO, MAX_P99_MS, MAX_PUT_MS, MAX_EVENT_P99_MS, MAX_RSS_MB,
# MAX_INBOX_SLOWDOWN), SETUP_WORKERS (4 connections making the inbox's
# groups), RUN_TIMEOUT (3600 s: a store's whole run). Everything goes to
# 127.0.0.1, every wait is bounded, and the scratch database
# (confab_bench_groups_<pid>), the SQLite file and the server go at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$PWD/bench
BIN=${CONFAB_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/confab}
PORT=${PORT:-8092}
RUN_TIMEOUT=${RUN_TIMEOUT:-3600}
IFS=', ' read -r -a STORES <<<"${BENCH_STORES:-postgres,sqlite}"
DB=confab_bench_groups_$$
SCRATCH=$(mktemp -d)
psql() { command psql -h 127.0.0.1 -U postgres "$@"; }
cleanup() {
    psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        echo "raw outputs kept in $SCRATCH" >&2
    else
        rm -rf "$SCRATCH"
    fi
}
trap cleanup EXIT

if [ "${BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${CONFAB_BIN:-}" ]; then
    cargo build --release -p confab-server
fi
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }
for tool in wrk curl python3 psql createdb; do
    command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
# 1,000 streams on each side, and the server's connection budget follows
# its descriptor limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 8192 2>/dev/null || true
export SIZES="${SIZES:-100 1000 10000}" PORT RAW=$SCRATCH

FAILED=0
for STORE in "${STORES[@]}"; do
    case "$STORE" in
    postgres)
        WHERE=$DB
        export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
        createdb -h 127.0.0.1 -U postgres $DB
        ;;
    sqlite)
        FILE=$SCRATCH/groups.db
        rm -f "$FILE" "$FILE-wal" "$FILE-shm"
        WHERE=$FILE
        export DATABASE_URL="sqlite://$FILE"
        ;;
    *) echo "store: postgres or sqlite" >&2; exit 2 ;;
    esac
    export STORE DB DB_FILE=${FILE:-} GROUPS_MD=$SCRATCH/result-$STORE.md
    rm -f "$GROUPS_MD"
    timeout 120 "$BIN" migrate >"$SCRATCH/migrate.log" 2>&1 || { cat "$SCRATCH/migrate.log" >&2; exit 2; }
    timeout 600 python3 "$HERE/groups.py" seed

    set +e
    (
        set -e
        # shellcheck source=bench/serve.sh
        SERVE_WAIT=30 . "$HERE/serve.sh" # the server, stopped when this subshell ends
        curl -sf --max-time 2 "http://127.0.0.1:$PORT/readyz" >/dev/null ||
            { echo "$STORE: the server did not start:" >&2; cat "$WORK/server.log" >&2; exit 2; }
        set +e
        SERVER_PID=$SERVER timeout "$RUN_TIMEOUT" python3 "$HERE/groups.py" run
        status=$?
        set -e
        if ! kill -0 "$SERVER" 2>/dev/null; then
            echo "$STORE: the server died; its log:" >&2
            tail -20 "$WORK/server.log" >&2
            status=2
        fi
        [ $status -ne 124 ] || echo "$STORE: the run took over $RUN_TIMEOUT s; stopped" >&2
        cp "$WORK/server.log" "$SCRATCH/server-$STORE.log" 2>/dev/null || true
        exit $status
    )
    status=$?
    set -e
    if [ $status -ne 0 ]; then
        [ $status -eq 1 ] && [ "$FAILED" = 0 ] && FAILED=1
        [ $status -eq 1 ] || FAILED=2
        [ -s "$GROUPS_MD" ] || printf '### %s\n\n**%s: the run broke (exit %s)**\n' \
            "$STORE" "$STORE" "$status" >"$GROUPS_MD"
    fi
    if [ "$STORE" = postgres ]; then
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
    else
        rm -f "$FILE" "$FILE-wal" "$FILE-shm"
    fi
done

if [ -n "${BENCH_OUT:-}" ]; then
    {
        echo "## Big groups ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
        echo
        echo "\`bench/groups.sh\`: SIZES=\"$SIZES\", STREAMS=${STREAMS:-1000}," \
            "INBOX_GROUPS=${INBOX_GROUPS:-200}, BENCH_DURATION=${BENCH_DURATION:-10} s" \
            "after ${BENCH_WARMUP:-3} s of warm-up, $(nproc) cores."
        echo
        for STORE in "${STORES[@]}"; do
            cat "$SCRATCH/result-$STORE.md" 2>/dev/null || true
            echo
        done
    } >"$BENCH_OUT"
    echo "results written to $BENCH_OUT"
fi
exit $FAILED
