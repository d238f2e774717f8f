#!/usr/bin/env bash
# Event streams under load: the release binary on a scratch
# PostgreSQL database, 1,000 open GET /v1/events streams and 200 sends per
# second for 30 s. Prints the p99 from a send's 201 to its event on each
# recipient's stream, lost/duplicated deliveries, and the server's RSS.
#
#   bench/events.sh                    # PostgreSQL at 127.0.0.1:5432
#   STREAMS=500 RATE=100 DURATION=10 bench/events.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p confab-server
BIN="$PWD/target/release/confab"
PG="${BENCH_PG:-postgres://postgres@127.0.0.1:5432}"
DB="confab_bench_events_$$"
PORT="${CONFAB_PORT:-18180}"
ulimit -n 8192 || true
psql "$PG/postgres" -qc "CREATE DATABASE $DB"
export DATABASE_URL="$PG/$DB"
cleanup() {
    [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
    psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" || true
}
trap cleanup EXIT
# The per-token rate limit is off: one sender makes every send.
CONFAB_LISTEN="127.0.0.1:$PORT" CONFAB_RATE_LIMIT_PER_SECOND=0 RUST_LOG=warn \
    "$BIN" serve &
SERVER=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
CONFAB_PORT="$PORT" CONFAB_BIN="$BIN" CONFAB_PID="$SERVER" python3 bench/events_load.py
