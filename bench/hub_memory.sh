#!/usr/bin/env bash
# The event hub's memory under a big group's renames (docs/api.md
# "Hostile load": the hub's memory is bounded whatever the group
# size or event size). Any contact may put 2,000 contacts in a group and
# rename it: each rename is one `group.updated` for 2,000 recipients. Before
# the fix one rename took the server from 16 MB to 615 MB RSS, and six
# wedged the hub (no live event for anyone).
#
# On each store: seeds MEMBERS contacts (default 2,000) with SQL, has an
# attacker (a plain contact) create a group of all of them (`POST
# /v1/groups` with the first CHUNK `contact_ids[]`, then `PUT
# add_contact_ids[]` chunks: a body is at most 64 KiB), opens the event
# stream of an unrelated contact (curl -N), renames the group RENAMES times
# (default 10), then has that contact's peer send it a message in their
# direct conversation. Prints the server's peak RSS (VmHWM) and the delay
# from the send until its event is on the open stream: PASS when the peak
# is under MAX_RSS_MB (300) and the delay under MAX_DELAY_MS (2000), else
# FAIL; exits 1 when a store FAILs.
#
# Needs: a release build (built here unless BENCH_NO_BUILD=1; CONFAB_BIN
# picks another binary), curl, sqlite3, and psql/createdb with PostgreSQL
# at 127.0.0.1:5432 (user postgres, trust).
#
#   bench/hub_memory.sh                               # both stores
#   BENCH_STORES=postgres MEMBERS=5000 bench/hub_memory.sh
#
# Everything goes to 127.0.0.1 (PORT, default 8091), every wait is bounded,
# and the scratch PostgreSQL database, the SQLite file and the server go at
# the end. The server runs with the benchmark's settings (`serve.sh`: no
# rate limits, warnings only).
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$PWD/bench
BIN=${CONFAB_BIN:-$PWD/target/release/confab}
PORT=${PORT:-8091}
MEMBERS=${MEMBERS:-2000}
RENAMES=${RENAMES:-10}
CHUNK=${CHUNK:-1000}
MAX_RSS_MB=${MAX_RSS_MB:-300}
MAX_DELAY_MS=${MAX_DELAY_MS:-2000}
# How long the message may take to show up before the store FAILs anyway.
PROBE_WAIT=${PROBE_WAIT:-30}
IFS=', ' read -r -a STORES <<<"${BENCH_STORES:-sqlite,postgres}"
DB=confab_bench_hub_$$
SCRATCH=$(mktemp -d)
psql() { command psql -h 127.0.0.1 -U postgres "$@"; }
cleanup() {
    psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" 2>/dev/null || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

if [ "${BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${CONFAB_BIN:-}" ]; then
    cargo build --release -p confab-server
fi

# The members, after `confab migrate`: lowercase UUIDs, usernames member00001...
seed_postgres() {
    psql -d $DB -q <<SQL
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
  SELECT gen_random_uuid(), 'member' || lpad(i::text, 5, '0'), 'member' || lpad(i::text, 5, '0'),
         '+15550100', '', 0, 0
  FROM generate_series(1, $MEMBERS) i;
ANALYZE;
SQL
}
ID="lower(printf('%s-%s-4%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)),
    substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6))))"
seed_sqlite() {
    sqlite3 "$1" <<SQL
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $MEMBERS)
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
  SELECT $ID, printf('member%05d', i), printf('member%05d', i), '+15550100', '', 0, 0 FROM s;
ANALYZE;
SQL
}

# query SQL: one column of the store being measured.
query() {
    case "$STORE" in
    postgres) psql -d $DB -Atc "$1" ;;
    sqlite) sqlite3 "$FILE" "$1" ;;
    esac
}

# user NAME: a contact and a token through the CLI; sets NAME_ID, NAME_TOKEN.
user() {
    local json
    json=$("$BIN" contact create --username "$1" --phone-number +15550100)
    printf -v "${1}_ID" '%s' "$(sed 's/^{"id":"\([^"]*\)".*/\1/' <<<"$json")"
    printf -v "${1}_TOKEN" '%s' "$("$BIN" token issue --username "$1")"
}

# kib FIELD: a line of the server's /proc status, in KiB.
kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$SERVER/status"; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

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
        FILE=$SCRATCH/hub.db
        WHERE=$FILE
        export DATABASE_URL="sqlite://$FILE"
        ;;
    *) echo "store: postgres or sqlite" >&2; exit 2 ;;
    esac
    "$BIN" migrate >"$SCRATCH/migrate.log" 2>&1 || { cat "$SCRATCH/migrate.log" >&2; exit 1; }
    user attacker
    user watcher
    user peer
    case "$STORE" in
    postgres) seed_postgres ;;
    sqlite) seed_sqlite "$FILE" ;;
    esac
    mapfile -t IDS < <(query "SELECT id FROM contacts WHERE username LIKE 'member%' ORDER BY username")
    [ ${#IDS[@]} -eq "$MEMBERS" ] || { echo "$STORE: seeded ${#IDS[@]} members" >&2; exit 1; }

    set +e
    (
        set -e
        # shellcheck source=bench/serve.sh
        . "$HERE/serve.sh" # the server, stopped when this subshell ends
        STREAM=
        trap '[ -n "$STREAM" ] && kill "$STREAM" 2>/dev/null; cleanup' EXIT
        curl -sf --max-time 2 "http://127.0.0.1:$PORT/readyz" >/dev/null ||
            { echo "$STORE: the server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
        URL=http://127.0.0.1:$PORT
        # api TOKEN CURL_ARGS...: a request, its body on stdout; fails on a
        # status that is not 2xx.
        api() {
            local token=$1
            shift
            curl -sS --fail-with-body --max-time 30 -H "Authorization: Bearer $token" "$@"
        }
        started_rss=$(kib VmRSS)

        # The attacker's group: every member, in chunks of CHUNK ids.
        form() {
            local first=$1 key=$2 body=$3 i
            for ((i = first; i < first + CHUNK && i < MEMBERS; i++)); do
                body+="&$key=${IDS[$i]}"
            done
            printf '%s' "$body" >"$WORK/body"
        }
        t=$(now_ms)
        form 0 'contact_ids[]' 'name=hub-bench'
        group=$(api "$attacker_TOKEN" --data-binary @"$WORK/body" "$URL/v1/groups")
        GID=$(sed 's/^{"id":"\([^"]*\)".*/\1/' <<<"$group")
        for ((at = CHUNK; at < MEMBERS; at += CHUNK)); do
            form "$at" 'add_contact_ids[]' ''
            group=$(api "$attacker_TOKEN" -X PUT --data-binary @"$WORK/body" "$URL/v1/groups/$GID")
        done
        count=$(sed -n 's/.*"member_count":\([0-9]*\).*/\1/p' <<<"$group")
        echo "$STORE: group of ${count:-?} members (member_count) made in $(($(now_ms) - t)) ms"

        # The unrelated contact's stream, and its peer's conversation.
        conv=$(api "$peer_TOKEN" -d "contact_id=$watcher_ID" "$URL/v1/conversations")
        CONV=$(sed 's/^{"id":"\([^"]*\)".*/\1/' <<<"$conv")
        curl -sN --max-time $((PROBE_WAIT + 120)) -H "Authorization: Bearer $watcher_TOKEN" \
            -H 'Accept: text/event-stream' "$URL/v1/events" >"$WORK/stream" 2>/dev/null &
        STREAM=$!
        for _ in $(seq 50); do
            grep -q '^: connected' "$WORK/stream" && break
            sleep 0.1
        done
        grep -q '^: connected' "$WORK/stream" || { echo "$STORE: the stream did not open" >&2; exit 1; }
        before_rss=$(kib VmRSS)

        # The renames: each a group.updated for every member.
        times=()
        for ((i = 1; i <= RENAMES; i++)); do
            out=$(curl -sS -o /dev/null --max-time 30 -w '%{http_code} %{time_total}' -X PUT \
                -H "Authorization: Bearer $attacker_TOKEN" -d "name=renamed-$i" "$URL/v1/groups/$GID") ||
                out="000 30"
            read -r code secs <<<"$out"
            [ "$code" = 200 ] || { echo "$STORE: rename $i answered $code" >&2; exit 1; }
            times+=("$(awk -v s="$secs" 'BEGIN { printf "%.0f", s * 1000 }')")
        done

        # The peer's message: from the send until its event is on the stream.
        marker="hub-probe-$$-$STORE"
        t0=$(now_ms)
        curl -sS -o /dev/null --max-time "$PROBE_WAIT" -H "Authorization: Bearer $peer_TOKEN" \
            -d "conversation_id=$CONV" -d "message=$marker" "$URL/v1/messages" &
        sent=$!
        delay=
        while [ $(($(now_ms) - t0)) -lt $((PROBE_WAIT * 1000)) ]; do
            if grep -q "$marker" "$WORK/stream"; then
                delay=$(($(now_ms) - t0))
                break
            fi
            sleep 0.01
        done
        wait "$sent" || true
        sleep 1 # whatever the hub still does with the renames
        peak_rss=$(kib VmHWM)
        end_rss=$(kib VmRSS)
        warnings=$(grep -c 'event hub' "$WORK/server.log" || true)

        peak_mb=$((peak_rss / 1024))
        verdict=PASS
        if [ -z "$delay" ] || [ "$delay" -ge "$MAX_DELAY_MS" ] || [ "$peak_mb" -ge "$MAX_RSS_MB" ]; then
            verdict=FAIL
        fi
        echo "$STORE: $RENAMES renames of a $((MEMBERS + 1))-member group, ms each: ${times[*]}"
        echo "$STORE: RSS at start $((started_rss / 1024)) MB, stream open $((before_rss / 1024)) MB, after $((end_rss / 1024)) MB"
        echo "$STORE: hub warnings in the log: $warnings"
        shown="none within $PROBE_WAIT s"
        [ -z "$delay" ] || shown="$delay ms"
        printf '%s: peak RSS %d MB (target < %d), message delay %s (target < %d ms): %s\n' \
            "$STORE" "$peak_mb" "$MAX_RSS_MB" "$shown" "$MAX_DELAY_MS" "$verdict"
        [ "$verdict" = PASS ]
    )
    status=$?
    set -e
    [ $status -eq 0 ] || FAILED=1
    if [ "$STORE" = postgres ]; then
        psql -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
    fi
done
exit $FAILED
