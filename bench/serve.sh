# Sourced by bench/sync_trace.sh and bench/tail_split.sh: serves a kept
# benchmark database for a load run by the script.
#
# Expects STORE (postgres or sqlite), WHERE (the PostgreSQL database's name,
# or the SQLite file), BIN and PORT. Starts `confab serve` there with the
# benchmark's settings (no rate limits, warnings only), at
# 127.0.0.1:$PORT, and waits for its /readyz; BENCH_URL_QUERY is appended to
# a PostgreSQL URL. Leaves WORK (a scratch directory holding server.log) and
# SERVER (its pid); both go when the script exits.
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

DATABASE_URL=$URL CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn \
    CONFAB_RATE_LIMIT_PER_SECOND=0 CONFAB_RATE_LIMIT_ANON_PER_SECOND=0 \
    "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
    sleep 0.1
done
