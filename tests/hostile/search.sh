#!/usr/bin/env bash
# Costly searches may not starve anyone else (docs/api.md, "Hostile load"):
# the real binary on a fresh database, one contact with SEARCH_MESSAGES
# messages (default 50,000) keeping 8 searches in flight that each read
# everything it can see (tests/hostile/search_load.py), while another
# contact reads its inbox and sends. The victim's inbox must stay under
# 50 ms at the 99th percentile, every one of its requests served.
#
#   tests/hostile/search.sh BIN STORE      STORE: sqlite | postgres
#
# PostgreSQL: a database of its own on 127.0.0.1:5432 (CONFAB_PG_URL's
# server, user postgres), created here and dropped on any exit. SQLite: a
# file in a temporary folder. The attacker's messages are seeded in SQL
# (psql or sqlite3) from one it sent, with the server stopped. Prints the
# victim's p50/p99 without and with the attack; exits non-zero when the
# target fails. About a minute.
#
# Knobs (environment): SEARCH_MESSAGES (50000), SEARCH_BASELINE_SECS (10),
# SEARCH_ATTACK_SECS (20), SEARCH_TARGET_P99_MS (50), SEARCH_QUERIES (the
# attacker's queries, comma-separated; default search_load.py's COSTLY),
# SEARCH_KEEP=1 keeps the work folder; CONFAB_* variables reach the server.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -ne 2 ] || { [ "$2" != sqlite ] && [ "$2" != postgres ]; }; then
    echo "usage: $0 BIN sqlite|postgres" >&2
    exit 2
fi
BIN="$(realpath "$1")"
STORE="$2"
MESSAGES="${SEARCH_MESSAGES:-50000}"
BASELINE_SECS="${SEARCH_BASELINE_SECS:-10}"
ATTACK_SECS="${SEARCH_ATTACK_SECS:-20}"
TARGET_P99_MS="${SEARCH_TARGET_P99_MS:-50}"
PG_SERVER="${CONFAB_PG_URL:-postgres://postgres@127.0.0.1:5432}"

WORK="$(mktemp -d /tmp/confab-search.XXXXXX)"
SERVER_PID=""
ATTACK_PID=""
DB_NAME=""
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() {
    if [ -n "$ATTACK_PID" ]; then
        kill "$ATTACK_PID" 2>/dev/null || true
        wait "$ATTACK_PID" 2>/dev/null || true
    fi
    stop_server
    if [ -n "$DB_NAME" ]; then
        psql -q "$PG_SERVER/postgres" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
    fi
    if [ -z "${SEARCH_KEEP:-}" ]; then rm -rf "$WORK"; else echo "search: kept $WORK" >&2; fi
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
if [ "$STORE" = postgres ]; then
    DB_NAME="confab_search_$$_$RANDOM"
    psql -q "$PG_SERVER/postgres" -c "CREATE DATABASE $DB_NAME" >/dev/null
    export DATABASE_URL="$PG_SERVER/$DB_NAME"
else
    export DATABASE_URL="$WORK/confab.db"
fi
export CONFAB_LISTEN="127.0.0.1:$PORT"
export RUST_LOG=warn

start_server() {
    "$BIN" serve >>"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 150); do
        if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/readyz', timeout=1)" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "search: the server did not start:" >&2
    tail -n 20 "$WORK/server.log" >&2
    exit 1
}

contact() {
    "$BIN" contact create --username "$1" --phone-number "+1555010$2" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}

started=$(date +%s)
"$BIN" migrate >/dev/null 2>&1
MALLORY_ID="$(contact mallory 0)"
BOB_ID="$(contact bob 1)"
ALICE_ID="$(contact alice 2)"
FRIENDS=""
for i in 0 1 2 3 4 5 6 7; do
    FRIENDS="$FRIENDS${FRIENDS:+,}$(contact "friend$i" "$((i + 3))")"
done
MALLORY="$("$BIN" token issue --username mallory)"
ALICE="$("$BIN" token issue --username alice)"
: "$BOB_ID" "$ALICE_ID"

start_server
SETUP="$(python3 tests/hostile/search_load.py setup --port "$PORT" \
    --attacker "$MALLORY" --peer-id "$BOB_ID" --victim "$ALICE" --friends "$FRIENDS")"
field() { python3 -c "import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$SETUP" "$1"; }
TEMPLATE="$(field message)"
VICTIM_CONV="$(field victim_conversation)"
stop_server

# The attacker's history: copies of its one message, a millisecond apart
# going back, each with another word, "dolor" and "lorem" in every one.
COLUMNS="id, conversation_id, sender_id, body, read_at, created_at, updated_at, \
direct_creator_id, direct_peer_id, group_id, seq, reply_to_id, parent_id, reply_count, \
last_reply_at, edited_at, mentions, body_folded"
BODY="'lorem ipsum dolor sit amet... consectetur adipiscing elit, ' || \
(CASE n % 8 WHEN 0 THEN 'alpha' WHEN 1 THEN 'bravo' WHEN 2 THEN 'charlie' WHEN 3 THEN 'delta' \
WHEN 4 THEN 'echo' WHEN 5 THEN 'foxtrot' WHEN 6 THEN 'golf' ELSE 'hotel' END) || ' ' || n"
seed_started=$(date +%s.%N)
if [ "$STORE" = postgres ]; then
    psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" >/dev/null <<SQL
BEGIN;
INSERT INTO messages ($COLUMNS)
SELECT gen_random_uuid(), t.conversation_id, t.sender_id, b.body, NULL,
       t.created_at - n * 1000, NULL, t.direct_creator_id, t.direct_peer_id, t.group_id,
       t.seq + n, NULL, NULL, 0, NULL, NULL, NULL, b.body
FROM messages t, generate_series(1, $MESSAGES) AS n,
     LATERAL (SELECT $BODY AS body) b
WHERE t.id = '$TEMPLATE';
UPDATE conversations SET message_seq = message_seq + $MESSAGES
WHERE id = (SELECT conversation_id FROM messages WHERE id = '$TEMPLATE');
COMMIT;
VACUUM ANALYZE messages;
SQL
else
    sqlite3 -bail "$DATABASE_URL" >/dev/null <<SQL
PRAGMA busy_timeout = 5000;
BEGIN IMMEDIATE;
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $MESSAGES),
ids AS MATERIALIZED (SELECT n, lower(hex(randomblob(16))) AS h FROM g)
INSERT INTO messages ($COLUMNS)
SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(h, 14, 3) || '-8'
           || substr(h, 18, 3) || '-' || substr(h, 21, 12),
       t.conversation_id, t.sender_id, $BODY, NULL,
       t.created_at - n * 1000, NULL, t.direct_creator_id, t.direct_peer_id, t.group_id,
       t.seq + n, NULL, NULL, 0, NULL, NULL, NULL, $BODY
FROM messages t, ids
WHERE t.id = '$TEMPLATE';
UPDATE conversations SET message_seq = message_seq + $MESSAGES
WHERE id = (SELECT conversation_id FROM messages WHERE id = '$TEMPLATE');
INSERT INTO messages_search (rowid, body_folded)
SELECT m.rowid, m.body_folded FROM messages_search_backlog b JOIN messages m ON m.rowid = b.message_rowid;
DELETE FROM messages_search_backlog;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
fi
seed_secs=$(python3 -c "import time; print(f'{time.time() - $seed_started:.1f}')")
echo "search: $STORE: seeded $MESSAGES messages of the attacker's in ${seed_secs} s"

start_server
victim() {
    python3 tests/hostile/search_load.py victim --port "$PORT" --token "$ALICE" \
        --conversation "$VICTIM_CONV" --seconds "$1"
}
# Warm: the server's connections and caches, and one search of each kind.
victim 1 >/dev/null
python3 tests/hostile/search_load.py attack --port "$PORT" --token "$MALLORY" \
    --seconds 1 --parallel 1 >/dev/null

BASE="$(victim "$BASELINE_SECS")"
python3 tests/hostile/search_load.py attack --port "$PORT" --token "$MALLORY" \
    --seconds "$((ATTACK_SECS + 3))" --parallel 8 >"$WORK/attack.json" &
ATTACK_PID=$!
sleep 2
UNDER="$(victim "$ATTACK_SECS")"
wait "$ATTACK_PID"
ATTACK_PID=""
ATTACKER="$(cat "$WORK/attack.json")"

status=0
python3 - "$STORE" "$BASE" "$UNDER" "$ATTACKER" "$TARGET_P99_MS" <<'PY' || status=$?
import json, sys
store, base, under, attacker, target = sys.argv[1], *map(json.loads, sys.argv[2:5]), float(sys.argv[5])
def line(what, r):
    return (f"inbox p50 {r['inbox']['p50']:.1f} ms p99 {r['inbox']['p99']:.1f} ms "
            f"(n={r['inbox']['n']}), send p50 {r['send']['p50']:.1f} ms p99 {r['send']['p99']:.1f} ms "
            f"(n={r['send']['n']}), failures {r['failures'] or 'none'}")
print(f"search: {store}: without the attack: {line('base', base)}")
print(f"search: {store}: with 8 costly searches in flight: {line('under', under)}")
print(f"search: {store}: the attacker's answers: {attacker}")
failed = []
if under["inbox"]["p99"] >= target:
    failed.append(f"the victim's inbox p99 {under['inbox']['p99']:.1f} ms is not under {target:.0f} ms")
if under["failures"] or base["failures"]:
    failed.append(f"the victim's requests failed: {under['failures'] or base['failures']}")
for f in failed:
    print(f"search: {store}: FAIL: {f}")
sys.exit(1 if failed else 0)
PY
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "search: FAIL: the server died" >&2
    status=1
fi
if grep -qi "panicked" "$WORK/server.log"; then
    echo "search: FAIL: the server log shows a panic" >&2
    status=1
fi
echo "search: $STORE: $(( $(date +%s) - started )) s in all"
if [ "$status" -ne 0 ]; then
    echo "search: the server's log (last lines):" >&2
    tail -n 20 "$WORK/server.log" >&2
    echo "search: $STORE: FAIL"
    exit 1
fi
echo "search: $STORE: PASS"
