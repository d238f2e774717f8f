#!/usr/bin/env bash
# A contact's export (docs/api.md "Server API: from an app's backend"): streamed, so the
# server's memory does not grow with the contact's history.
#
# On each store: a contact `small` with SMALL messages (default 1,000) and a
# contact `big` with BIG messages (default 100,000), seeded with SQL into one
# direct conversation each (after `confab migrate`; 64-byte texts). Then,
# against a release `confab serve`, exports each contact in turn with curl
# (`GET /v1/admin/contacts/:id/export`, a server key made by the CLI),
# reading the server's RSS every 20 ms meanwhile. Prints, per export: its
# lines, bytes and time, and the server's RSS before and at its peak
# (CLIENT_RATE=4M reads at 4 MB/s, as a slow client would); PASS
# when the big export's peak RSS is at most MAX_GROWTH_MB (default 20) above
# the small export's and every message came out, else FAIL (exit 1).
#
# Needs: a release build (built here unless BENCH_NO_BUILD=1; CONFAB_BIN
# picks another binary), curl, sqlite3, and psql/createdb with PostgreSQL
# at 127.0.0.1:5432 (user postgres, trust).
#
#   bench/export_memory.sh                         # both stores
#   BENCH_STORES=sqlite BIG=20000 bench/export_memory.sh
#
# Everything goes to 127.0.0.1 (PORT, default 8092); the scratch database,
# the SQLite file and the server go at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONFAB_BIN:-$PWD/target/release/confab}
PORT=${PORT:-8092}
SMALL=${SMALL:-1000}
BIG=${BIG:-100000}
MAX_GROWTH_MB=${MAX_GROWTH_MB:-20}
# The client's reading speed (curl --limit-rate), e.g. 4M: a slow reader
# shows whether the server buffers what the client has not taken yet.
RATE=${CLIENT_RATE:+--limit-rate $CLIENT_RATE}
IFS=', ' read -r -a STORES <<<"${BENCH_STORES:-sqlite,postgres}"
DB=confab_bench_export_$$
SCRATCH=$(mktemp -d)
SERVER=
psql() { command psql -h 127.0.0.1 -U postgres "$@"; }
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

if [ "${BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${CONFAB_BIN:-}" ]; then
    cargo build --release -p confab-server
fi

query() {
    case "$STORE" in
    postgres) psql -d $DB -Atc "$1" ;;
    sqlite) sqlite3 "$FILE" "$1" ;;
    esac
}

# contact NAME: made by the CLI; prints its id.
contact() {
    "$BIN" contact create --username "$1" --phone-number +15550100 |
        sed 's/^{"id":"\([^"]*\)".*/\1/'
}

# seed SENDER PEER N: a direct conversation of SENDER with PEER holding N
# messages from SENDER, numbered 1..N as a send numbers them.
seed() {
    local sender=$1 peer=$2 n=$3 text
    text=$(printf 'x%.0s' $(seq 64))
    case "$STORE" in
    postgres)
        psql -d $DB -q <<SQL
WITH c AS (
  INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at, message_seq)
  VALUES (gen_random_uuid(), '$sender', '$peer', 0, 0, $n) RETURNING id)
INSERT INTO messages (id, conversation_id, sender_id, body, created_at,
                      direct_creator_id, direct_peer_id, seq)
SELECT gen_random_uuid(), c.id, '$sender', '$text', i, '$sender', '$peer', i
FROM c, generate_series(1, $n) i;
INSERT INTO conversation_states (conversation_id, contact_id)
SELECT id, '$sender'::uuid FROM conversations WHERE creator_id = '$sender'
UNION ALL SELECT id, '$peer'::uuid FROM conversations WHERE creator_id = '$sender';
ANALYZE;
SQL
        ;;
    sqlite)
        local id="lower(printf('%s-%s-4%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)),
            substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6))))"
        sqlite3 "$FILE" <<SQL
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at, message_seq)
VALUES ($id, '$sender', '$peer', 0, 0, $n);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $n)
INSERT INTO messages (id, conversation_id, sender_id, body, created_at,
                      direct_creator_id, direct_peer_id, seq)
SELECT $id, (SELECT id FROM conversations WHERE creator_id = '$sender'), '$sender', '$text', i,
       '$sender', '$peer', i
FROM s;
INSERT INTO conversation_states (conversation_id, contact_id)
SELECT id, '$sender' FROM conversations WHERE creator_id = '$sender'
UNION ALL SELECT id, '$peer' FROM conversations WHERE creator_id = '$sender';
ANALYZE;
SQL
        ;;
    esac
}

kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$SERVER/status"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

FAILED=0
for STORE in "${STORES[@]}"; do
    case "$STORE" in
    postgres)
        export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
        createdb -h 127.0.0.1 -U postgres $DB
        ;;
    sqlite)
        FILE=$SCRATCH/export.db
        rm -f "$FILE"*
        export DATABASE_URL="sqlite://$FILE"
        ;;
    *) echo "store: postgres or sqlite" >&2; exit 2 ;;
    esac
    "$BIN" migrate >"$SCRATCH/migrate.log" 2>&1 || { cat "$SCRATCH/migrate.log" >&2; exit 1; }
    small=$(contact small)
    big=$(contact big)
    peer=$(contact peer)
    t=$(now_ms)
    seed "$small" "$peer" "$SMALL"
    seed "$big" "$peer" "$BIG"
    echo "$STORE: seeded $(query "SELECT COUNT(*) FROM messages") messages in $(($(now_ms) - t)) ms"
    KEY=$("$BIN" key create --name export-bench | sed 's/.*"key":"\([^"]*\)".*/\1/')
    CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn "$BIN" serve >"$SCRATCH/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
        sleep 0.1
    done
    # export NAME ID WANT: one export, RSS sampled meanwhile.
    export_one() {
        local name=$1 id=$2 want=$3 before peak=0 pid rss t lines bytes messages
        before=$(kib VmRSS)
        t=$(now_ms)
        # shellcheck disable=SC2086 # RATE is words on purpose
        curl -sS --fail-with-body --max-time 600 $RATE -H "Authorization: Bearer $KEY" \
            "http://127.0.0.1:$PORT/v1/admin/contacts/$id/export" -o "$SCRATCH/$name.ndjson" &
        pid=$!
        while kill -0 $pid 2>/dev/null; do
            rss=$(kib VmRSS)
            [ "$rss" -gt "$peak" ] && peak=$rss
            sleep 0.02
        done
        wait $pid
        t=$(($(now_ms) - t))
        lines=$(wc -l <"$SCRATCH/$name.ndjson")
        bytes=$(wc -c <"$SCRATCH/$name.ndjson")
        messages=$(grep -c '^{"kind":"message"' "$SCRATCH/$name.ndjson" || true)
        tail -n1 "$SCRATCH/$name.ndjson" | grep -q '^{"kind":"end"}$' ||
            { echo "$STORE: the $name export did not end with its end line" >&2; FAILED=1; }
        [ "$messages" -eq "$want" ] ||
            { echo "$STORE: the $name export has $messages messages of $want" >&2; FAILED=1; }
        echo "$STORE: $name: $messages messages, $lines lines, $((bytes / 1024)) KiB in $t ms;" \
            "server RSS $((before / 1024)) MB before, $((peak / 1024)) MB at its peak"
        PEAK=$peak
    }
    export_one small "$small" "$SMALL"
    small_peak=$PEAK
    export_one big "$big" "$BIG"
    big_peak=$PEAK
    growth=$(((big_peak - small_peak) / 1024))
    if [ "$growth" -le "$MAX_GROWTH_MB" ]; then
        echo "$STORE: PASS: the export of $BIG messages peaks $growth MB above that of $SMALL (limit $MAX_GROWTH_MB MB)"
    else
        echo "$STORE: FAIL: the export of $BIG messages peaks $growth MB above that of $SMALL (limit $MAX_GROWTH_MB MB)"
        FAILED=1
    fi
    kill "$SERVER" && wait "$SERVER" 2>/dev/null || true
    SERVER=
done
exit $FAILED
