# Sourced by bench/sync_trace.sh, bench/tail_split.sh, bench/cpu_split.sh,
# bench/instructions.sh and bench/feed_scale.sh: serves a kept benchmark
# database for a load run by the script, and defines `load SECONDS`, that
# load (feed_scale.sh runs its own).
#
# Expects STORE (postgres or sqlite), WHERE (the PostgreSQL database's name,
# or the SQLite file), BIN and PORT. Starts `confab serve` there with the
# benchmark's settings (no rate limits, warnings only), at
# 127.0.0.1:$PORT, and waits up to SERVE_WAIT seconds (default 10) for its
# /readyz; BENCH_URL_QUERY is appended to a PostgreSQL URL, and
# SERVE_WRAPPER (words, e.g. a valgrind command line) runs the server under
# that. Leaves WORK (a scratch directory holding server.log) and SERVER
# (its pid); both go when the (sub)shell exits. `load` needs HERE (this
# folder) and RAW, and SCENARIO if not send.
case "$STORE" in
postgres) URL="postgres://postgres@127.0.0.1:5432/$WHERE${BENCH_URL_QUERY:-}" ;;
sqlite) URL="sqlite://$WHERE" ;;
*) echo "store: postgres or sqlite" >&2; exit 2 ;;
esac
WORK=$(mktemp -d)
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # SERVE_WRAPPER is words on purpose
DATABASE_URL=$URL CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn \
    CONFAB_RATE_LIMIT_PER_SECOND=0 CONFAB_RATE_LIMIT_ANON_PER_SECOND=0 \
    ${SERVE_WRAPPER:-} "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq $((${SERVE_WAIT:-10} * 10))); do
    curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
    sleep 0.1
done

# load SECONDS: wrk runs SCENARIO's targets (default send) from RAW against
# the server, as bench.py runs them: one thread per connection, each a
# client of one group, for the write loads; two threads picking any line
# otherwise. Prints wrk's output.
load() {
    local scenario=${SCENARIO:-send} threads=2 per_connection=0
    case "$scenario" in
    send | mixed) threads=32 per_connection=1 ;;
    esac
    BENCH_TARGETS=$RAW/targets-$STORE-$scenario.txt BENCH_PER_CONNECTION=$per_connection \
        wrk -t$threads -c32 -d"$1"s --timeout 5s -s "$HERE/wrk.lua" "http://127.0.0.1:$PORT"
}
