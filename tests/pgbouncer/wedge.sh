#!/usr/bin/env bash
# The migration lock behind a real PgBouncer in transaction mode
# (tests/pgbouncer/start.sh, started here when it is not running), against
# the binary given (default target/debug/confab):
#
# 1. On a new, empty database, a command that does not migrate (`token
#    issue`), run through PgBouncer WITHOUT CONFAB_DB_POOLER (the
#    misconfiguration that once left a session's migration lock on a pooled
#    server connection, so that every later `migrate` and `serve` waited
#    forever without a word), refuses at once and leaves no lock and no
#    table.
# 2. `confab migrate` through PgBouncer, still without CONFAB_DB_POOLER,
#    leaves no lock on any server connection either.
# 3. `confab migrate` directly, then `confab serve` through PgBouncer
#    (correctly configured), finish and answer /readyz within seconds.
#    A session-level lock left on a pooled server connection by a client
#    that exited (the wedge): `confab migrate` names it while it waits.
# 4. A psql session holding the lock (BEGIN; SELECT pg_advisory_xact_lock):
#    `confab migrate` logs the holder while it waits and gives up at 30 s
#    naming it; held for 5 s only, `confab migrate` goes on once released.
#
# About a minute (the 30 s wait is the point of step 4).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:-target/debug/confab}")
PORT="${CONFAB_PGBOUNCER_PORT:-6432}"
DIRECT="${CONFAB_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
DIRECT_ROOT="${DIRECT%/*}"
BOUNCER_ROOT="postgres://postgres@127.0.0.1:$PORT"
DB="confab_wedge_$$_$(date +%s)"
# The key `confab migrate` locks (crates/store-postgres).
KEY=$((0x636f6e6661620001))
WORK=$(mktemp -d)

tests/pgbouncer/start.sh

server=
holder=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    [ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
    psql "$BOUNCER_ROOT/pgbouncer" -qX -c "DISABLE $DB" -c "KILL $DB" >/dev/null 2>&1 || true
    psql "$DIRECT" -qXc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "wedge: FAILED: $*" >&2
    for f in "$WORK"/*.log; do
        [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}
say() { echo "wedge: $*"; }
sql() { psql "$DIRECT_ROOT/$DB" -AtqXc "$1"; }
# Advisory locks held in the test's database, by any session.
advisory_locks() {
    sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database =
         (SELECT oid FROM pg_database WHERE datname = current_database())"
}
# Runs confab with a clean environment plus the given variables; at most
# $1 seconds. Its exit status; stdout and stderr in $WORK/$2.log.
run() {
    local limit=$1 log=$2
    shift 2
    set +e
    timeout "$limit" env -u CONFAB_DB_POOLER -u CONFAB_LISTEN_DATABASE_URL -u CONFAB_LISTEN \
        RUST_LOG=warn "$@" >"$WORK/$log.log" 2>&1
    local status=$?
    set -e
    return $status
}

psql "$DIRECT" -qXc "CREATE DATABASE $DB"
THROUGH="$BOUNCER_ROOT/$DB"
STRAIGHT="$DIRECT_ROOT/$DB"

# 1. A command that does not migrate, through PgBouncer, misconfigured.
status=0
run 20 refused DATABASE_URL="$THROUGH" "$BIN" token issue --username alice || status=$?
[ "$status" = 1 ] || fail "token issue on an empty database exited $status (want 1)"
grep -q 'migrations are pending' "$WORK/refused.log" &&
    grep -q 'run `confab migrate` first' "$WORK/refused.log" ||
    fail "token issue did not say migrations are pending"
[ "$(advisory_locks)" = 0 ] || fail "token issue left an advisory lock"
[ "$(sql "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")" = 0 ] ||
    fail "token issue made a table"
say "1. token issue through PgBouncer (no CONFAB_DB_POOLER) refused: $(tail -n 1 "$WORK/refused.log")"

# 2. migrate through PgBouncer, misconfigured: whatever else goes wrong
# there, no server connection may keep the lock.
status=0
run 60 misconfigured DATABASE_URL="$THROUGH" "$BIN" migrate || status=$?
[ "$status" != 124 ] || fail "migrate through PgBouncer did not finish in 60 s"
[ "$(advisory_locks)" = 0 ] || fail "migrate through PgBouncer left the lock on a server connection"
say "2. migrate through PgBouncer (no CONFAB_DB_POOLER) exited $status, no lock left"

# 3. migrate directly, then serve through PgBouncer as documented.
started=$(date +%s)
run 15 migrate DATABASE_URL="$STRAIGHT" "$BIN" migrate || fail "migrate directly failed or hung"
grep -q 'migrations are up to date' "$WORK/migrate.log" || fail "migrate said nothing"
say "3. migrate directly: $(tail -n 1 "$WORK/migrate.log") in $(($(date +%s) - started)) s"
run 15 contact DATABASE_URL="$THROUGH" CONFAB_DB_POOLER=transaction \
    "$BIN" contact create --username alice --phone-number +15550100 ||
    fail "contact create through PgBouncer failed"
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
env DATABASE_URL="$THROUGH" CONFAB_DB_POOLER=transaction CONFAB_LISTEN_DATABASE_URL="$STRAIGHT" \
    CONFAB_LISTEN="127.0.0.1:$http_port" RUST_LOG=warn "$BIN" serve >"$WORK/serve.log" 2>&1 &
server=$!
started=$(date +%s)
ready=
for _ in $(seq 150); do
    if curl -sf -o /dev/null "http://127.0.0.1:$http_port/readyz"; then
        ready=1
        break
    fi
    kill -0 "$server" 2>/dev/null || fail "serve exited"
    sleep 0.1
done
[ -n "$ready" ] || fail "serve through PgBouncer did not answer /readyz within 15 s"
say "3. serve through PgBouncer answers /readyz after $(($(date +%s) - started)) s"
kill "$server"
wait "$server" 2>/dev/null || true
server=

# The wedge itself, by hand: a session-level lock taken through PgBouncer
# (what a migrator once took there) outlives its client, which exits 0; the
# pooled server connection keeps it until PgBouncer closes that connection
# (server_idle_timeout, 5 s in start.sh's configuration; never, with a busy
# pool). `confab migrate` now names that holder while it waits, instead of
# waiting without a word, and goes on once it is gone.
PGAPPNAME=wedge-leak psql "$THROUGH" -qAtX -c "SELECT pg_advisory_lock($KEY)" >/dev/null
[ "$(advisory_locks)" = 1 ] || fail "the session lock did not stay on PgBouncer's server connection"
started=$(date +%s)
run 40 leaked DATABASE_URL="$STRAIGHT" "$BIN" migrate || fail "migrate after the leaked lock failed"
took=$(($(date +%s) - started))
grep -q 'waiting for the migration lock, held by pid .*wedge-leak' "$WORK/leaked.log" ||
    fail "migrate did not name the leaked lock's server connection"
say "3. a session lock left through PgBouncer: migrate named its holder and went on after $took s:"
grep -m 1 'waiting for the migration lock' "$WORK/leaked.log" | sed 's/^/     /'

# 4. A session holding the lock: migrate names it while waiting, and gives
# up at 30 s naming it.
PGAPPNAME=wedge-holder psql "$STRAIGHT" -qX -c "BEGIN" \
    -c "SELECT pg_advisory_xact_lock($KEY)" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 50); do
    [ "$(advisory_locks)" = 1 ] && break
    sleep 0.1
done
[ "$(advisory_locks)" = 1 ] || fail "the psql session did not take the lock"
started=$(date +%s)
status=0
run 45 held DATABASE_URL="$STRAIGHT" "$BIN" migrate || status=$?
took=$(($(date +%s) - started))
[ "$status" = 1 ] || fail "migrate with the lock held exited $status (want 1)"
[ "$took" -ge 29 ] && [ "$took" -le 40 ] || fail "migrate gave up after $took s (want 30)"
grep -q 'WARN.*waiting for the migration lock, held by pid .*wedge-holder' "$WORK/held.log" ||
    fail "migrate did not log the holder while waiting"
grep -q 'error: .*the migration lock is held by pid .*wedge-holder.*not released within 30 s' \
    "$WORK/held.log" || fail "migrate's error does not name the holder"
say "4. with the lock held, migrate gave up after $took s:"
sed 's/^/     /' "$WORK/held.log"
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wedge-holder'" >/dev/null
wait "$holder" 2>/dev/null || true
holder=

# ... and held for 5 s only, migrate goes on once it is released.
PGAPPNAME=wedge-holder psql "$STRAIGHT" -qX -c "BEGIN" \
    -c "SELECT pg_advisory_xact_lock($KEY)" -c "SELECT pg_sleep(5)" -c "COMMIT" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 50); do
    [ "$(advisory_locks)" = 1 ] && break
    sleep 0.1
done
started=$(date +%s)
run 20 released DATABASE_URL="$STRAIGHT" "$BIN" migrate || fail "migrate after the holder let go failed"
took=$(($(date +%s) - started))
grep -q 'waiting for the migration lock, held by pid .*wedge-holder' "$WORK/released.log" ||
    fail "migrate did not log the holder while waiting"
[ "$took" -le 10 ] || fail "migrate took $took s once the lock was free"
wait "$holder" 2>/dev/null || true
holder=
say "4. with the lock held for 5 s, migrate waited and finished after $took s"
say "ok"
