#!/usr/bin/env bash
# Page latency at scale on PostgreSQL, from a second process (curl).
#
# Seeds a scratch database with 500 contacts, 2,001 direct conversations and
# 1,002,000 messages, of which the measured user (alice) sees 2,000 (0.2 %),
# then times pages of the all-conversations feed and of one conversation,
# first page and deep page (keyset cursor ~1,900 messages in). Prints the
# median of 15 requests each, and the ratios that matter.
#
# Needs: a release build (`cargo build --release`), psql/createdb, PostgreSQL
# at 127.0.0.1:5432 (user postgres). Usage: bench/feed_scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONFAB_BIN:-target/release/confab}
DB=confab_bench_scale
PORT=${PORT:-8090}
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB
psql() { command psql -h 127.0.0.1 -U postgres "$@"; }

psql -qc "DROP DATABASE IF EXISTS $DB" 2>/dev/null
createdb -h 127.0.0.1 -U postgres $DB
"$BIN" migrate
"$BIN" contact create --username alice --phone-number +15550100 >/dev/null
"$BIN" contact create --username bob --phone-number +15550101 >/dev/null
TOKEN=$("$BIN" token issue --username alice)

psql -d $DB -q <<'SQL'
INSERT INTO contacts SELECT gen_random_uuid(), 'u'||i, 'u'||i, '+1555', '', 0, 0 FROM generate_series(1,500) i;
CREATE TEMP TABLE others AS SELECT id, row_number() OVER () rn FROM contacts WHERE username LIKE 'u%';
INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
  SELECT gen_random_uuid(), a.id, b.id, 1, 1
  FROM others a JOIN others b ON b.rn = (a.rn % 500) + 1 CROSS JOIN generate_series(1,4);
CREATE TEMP TABLE convs AS SELECT id, creator_id, peer_id, row_number() OVER () rn FROM conversations;
-- Each message with its audience (direct conversations: creator and peer),
-- as a send copies it from the conversation.
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

CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn "$BIN" serve &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "127.0.0.1:$PORT/healthz" && break; sleep 0.2; done

CONV=$(psql -d $DB -Atc "SELECT id FROM conversations WHERE peer_id = (SELECT id FROM contacts WHERE username='bob')")
DEEP=$(psql -d $DB -Atc "SELECT id FROM messages WHERE conversation_id='$CONV' ORDER BY created_at DESC, id DESC OFFSET 1900 LIMIT 1")
median_ms() {
    for _ in $(seq 15); do
        curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT$1"
    done | sort -n | sed -n 8p | awk '{printf "%.1f", $1 * 1000}'
}
me=$(median_ms "/v1/contacts/me")
feed=$(median_ms "/v1/messages?limit=10")
feed_deep=$(median_ms "/v1/messages?limit=10&starting_after=$DEEP")
conv=$(median_ms "/v1/messages?limit=10&conversation_id=$CONV")
conv_deep=$(median_ms "/v1/messages?limit=10&conversation_id=$CONV&starting_after=$DEEP")
convs=$(median_ms "/v1/conversations?limit=10")
printf '%-40s %8s ms\n' "GET /v1/contacts/me (baseline)" "$me" \
    "feed, first page" "$feed" "feed, deep page" "$feed_deep" \
    "one conversation, first page" "$conv" "one conversation, deep page" "$conv_deep" \
    "conversation list, first page" "$convs"
awk -v a="$conv_deep" -v b="$conv" -v c="$feed" -v d="$feed_deep" 'BEGIN {
    printf "deep / first page, one conversation: %.2f\n", a / b
    printf "deep / first page, feed:             %.2f\n", d / c
    printf "feed / one conversation, first page: %.2f\n", c / b }'
