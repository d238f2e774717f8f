#!/usr/bin/env bash
# The all-conversations feed when the caller sees a sliver of the
# messages: 1,002,000 messages, of which the measured user (alice) sees
# 2,000 (0.2 %), on each store. Seeds a scratch database (PostgreSQL) or
# file (SQLite) with 500 contacts, 2,001 direct conversations and those
# messages, serves it, and loads four pages with wrk from this second
# process, 32 connections, a warm-up then FEED_SECONDS (default 10) each:
# the feed's first page and a page ~1,900 messages deep in it (by
# `starting_after`), and the same two pages of alice's one conversation.
# Prints req/s, p50, p99 and failed requests of each, then the ratios of
# time per page the target sets: feed within 1.5x of a one-conversation
# page, a deep page within 1.2x of the first.
#
# Needs: a release build (`cargo build --release`), wrk, sqlite3, and
# psql/createdb with PostgreSQL at 127.0.0.1:5432 (user postgres).
# Usage: bench/feed_scale.sh [postgres] [sqlite]   (default: both)
# CONFAB_BIN picks the binary, PORT the port (default 8090). The server
# runs with the benchmark's settings (`serve.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$PWD/bench
BIN=${CONFAB_BIN:-target/release/confab}
PORT=${PORT:-8090}
SECONDS_EACH=${FEED_SECONDS:-10}
STORES=("$@")
[ ${#STORES[@]} -gt 0 ] || STORES=(postgres sqlite)
DB=confab_bench_scale
SCRATCH=$(mktemp -d)
FILE=$SCRATCH/scale.db
psql() { command psql -h 127.0.0.1 -U postgres "$@"; }
cleanup() {
    psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# The set, after `confab migrate` and the two users: 500 others in a ring,
# each pair with 4 direct conversations (2,000), 1,000,000 messages spread
# over them; then alice's one conversation with bob and its 2,000 messages.
# Each message carries its audience (creator and peer) as a send copies it.
seed_postgres() {
    psql -d $DB -q <<'SQL'
INSERT INTO contacts SELECT gen_random_uuid(), 'u'||i, 'u'||i, '+1555', '', 0, 0 FROM generate_series(1,500) i;
CREATE TEMP TABLE others AS SELECT id, row_number() OVER () rn FROM contacts WHERE username LIKE 'u%';
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
  SELECT gen_random_uuid(), a.id, b.id, 1, 1
  FROM others a JOIN others b ON b.rn = (a.rn % 500) + 1 CROSS JOIN generate_series(1,4);
CREATE TEMP TABLE convs AS SELECT id, creator_id, peer_id, row_number() OVER () rn FROM conversations;
INSERT INTO messages (id, conversation_id, sender_id, body, created_at, direct_creator_id, direct_peer_id)
  SELECT gen_random_uuid(), c.id, c.creator_id, 'hello', 1700000000000000 + i*1000, c.creator_id, c.peer_id
  FROM generate_series(1,1000000) i JOIN convs c ON c.rn = (i % 2000) + 1;
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
  SELECT gen_random_uuid(), (SELECT id FROM contacts WHERE username='alice'),
         (SELECT id FROM contacts WHERE username='bob'), 1, 1;
INSERT INTO messages (id, conversation_id, sender_id, body, created_at, direct_creator_id, direct_peer_id)
  SELECT gen_random_uuid(), c.id, c.creator_id, 'hi bob', 1700000000000000 + i*500*1000 + 1,
         c.creator_id, c.peer_id
  FROM generate_series(1,2000) i, conversations c
  WHERE c.peer_id = (SELECT id FROM contacts WHERE username='bob');
INSERT INTO conversation_states (conversation_id, contact_id) SELECT id, creator_id FROM conversations;
INSERT INTO conversation_states (conversation_id, contact_id) SELECT id, peer_id FROM conversations;
ANALYZE;
SQL
}

# The same set in SQLite: ids are lowercase hyphenated UUID text, made
# afresh for each row ($ID; a subquery would be computed once).
ID="lower(printf('%s-%s-4%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)),
    substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6))))"
seed_sqlite() {
    sqlite3 "$1" <<SQL
BEGIN;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 500)
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
  SELECT $ID, 'u'||i, 'u'||i, '+1555', '', 0, 0 FROM s;
CREATE TEMP TABLE others AS SELECT id, row_number() OVER () rn FROM contacts WHERE username LIKE 'u%';
WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 4)
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
  SELECT $ID, a.id, b.id, 1, 1
  FROM others a JOIN others b ON b.rn = (a.rn % 500) + 1 CROSS JOIN k;
CREATE TEMP TABLE convs AS SELECT id, creator_id, peer_id, row_number() OVER () rn FROM conversations;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000000)
INSERT INTO messages (id, conversation_id, sender_id, body, created_at, direct_creator_id, direct_peer_id)
  SELECT $ID, c.id, c.creator_id, 'hello', 1700000000000000 + i*1000, c.creator_id, c.peer_id
  FROM s JOIN convs c ON c.rn = (i % 2000) + 1;
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
  SELECT $ID, (SELECT id FROM contacts WHERE username='alice'),
         (SELECT id FROM contacts WHERE username='bob'), 1, 1;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 2000)
INSERT INTO messages (id, conversation_id, sender_id, body, created_at, direct_creator_id, direct_peer_id)
  SELECT $ID, c.id, c.creator_id, 'hi bob', 1700000000000000 + i*500*1000 + 1,
         c.creator_id, c.peer_id
  FROM s, conversations c
  WHERE c.peer_id = (SELECT id FROM contacts WHERE username='bob');
INSERT INTO conversation_states (conversation_id, contact_id) SELECT id, creator_id FROM conversations;
INSERT INTO conversation_states (conversation_id, contact_id) SELECT id, peer_id FROM conversations;
COMMIT;
ANALYZE;
SQL
}

# run SQL: one value from the store being measured.
query() {
    case "$STORE" in
    postgres) psql -d $DB -Atc "$1" ;;
    sqlite) sqlite3 "$FILE" "$1" ;;
    esac
}

# load_page PATH: wrk against PATH as alice; prints "req/s p50_ms p99_ms
# errors" (errors: answers not 2xx and socket errors, shown as run.sh shows
# them). Fails when more than 1 % of the requests failed: then the figures
# do not measure the page.
load_page() {
    local url="http://127.0.0.1:$PORT$1"
    wrk -t2 -c32 -d2s -H "Authorization: Bearer $TOKEN" "$url" >/dev/null
    wrk -t2 -c32 -d"${SECONDS_EACH}"s --timeout 5s --latency -H "Authorization: Bearer $TOKEN" "$url" |
        awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
             /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
             / requests in / { n = $1 } /Non-2xx/ { bad += $NF }
             /Socket errors/ { gsub(",", ""); bad += $4 + $6 + $8 + $10 }
             /^Requests\/sec/ { rps = $2 }
             END { if (n == 0 || bad * 100 > n) { print "wrk: " bad + 0 " of " n + 0 " requests failed" > "/dev/stderr"; exit 1 }
                   printf "%.0f %.2f %.2f %d\n", rps, p50, p99, bad }'
}

# page NAME PATH: loads PATH, setting NAME (req/s), NAME_p50, NAME_p99 and
# NAME_errors.
page() {
    local out
    out=$(load_page "$2") # apart from `local`, so that a failed load stops the script
    read -r "$1" "$1_p50" "$1_p99" "$1_errors" <<<"$out"
}

for STORE in "${STORES[@]}"; do
    case "$STORE" in
    postgres)
        WHERE=$DB
        export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null
        createdb -h 127.0.0.1 -U postgres $DB
        ;;
    sqlite)
        WHERE=$FILE
        export DATABASE_URL="sqlite://$FILE"
        ;;
    *) echo "store: postgres or sqlite" >&2; exit 2 ;;
    esac
    started=$(date +%s)
    "$BIN" migrate >/dev/null
    "$BIN" contact create --username alice --phone-number +15550100 >/dev/null
    "$BIN" contact create --username bob --phone-number +15550101 >/dev/null
    TOKEN=$("$BIN" token issue --username alice)
    case "$STORE" in
    postgres) seed_postgres ;;
    sqlite) seed_sqlite "$FILE" ;;
    esac
    echo "$STORE: seeded in $(($(date +%s) - started)) s: $(query "SELECT count(*) FROM messages") messages"

    CONV=$(query "SELECT id FROM conversations WHERE peer_id = (SELECT id FROM contacts WHERE username='bob')")
    DEEP=$(query "SELECT id FROM messages WHERE conversation_id='$CONV' ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET 1900")
    # The caller's share: what alice's feed may see, of all messages.
    query "SELECT 'alice sees ' || count(*) || ' messages' FROM messages WHERE conversation_id='$CONV'"
    (
        # shellcheck source=bench/serve.sh
        . "$HERE/serve.sh" # the server, stopped when this subshell ends
        page feed "/v1/messages?limit=10"
        page feed_deep "/v1/messages?limit=10&starting_after=$DEEP"
        page conv "/v1/messages?limit=10&conversation_id=$CONV"
        page conv_deep "/v1/messages?limit=10&conversation_id=$CONV&starting_after=$DEEP"
        printf '%-36s %8s %8s %8s %8s\n' "$STORE, 32 connections" "req/s" "p50 ms" "p99 ms" "errors" \
            "feed, first page" "$feed" "$feed_p50" "$feed_p99" "$feed_errors" \
            "feed, deep page" "$feed_deep" "$feed_deep_p50" "$feed_deep_p99" "$feed_deep_errors" \
            "one conversation, first page" "$conv" "$conv_p50" "$conv_p99" "$conv_errors" \
            "one conversation, deep page" "$conv_deep" "$conv_deep_p50" "$conv_deep_p99" "$conv_deep_errors"
        # Time per page is 1 / req/s: a ratio of times is the inverse ratio of rates.
        awk -v f="$feed" -v fd="$feed_deep" -v c="$conv" -v cd="$conv_deep" 'BEGIN {
            printf "feed / one conversation, first page: %.2fx (target <= 1.5x)\n", c / f
            printf "deep / first page, feed:             %.2fx (target <= 1.2x)\n", f / fd
            printf "deep / first page, one conversation: %.2fx (target <= 1.2x)\n", c / cd }'
    )
    if [ "$STORE" = postgres ]; then
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
    fi
done
