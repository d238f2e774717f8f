#!/usr/bin/env bash
# Where a PostgreSQL send's cost lies, on PostgreSQL alone: pgbench runs,
# one client per send target (as bench/run.sh does), in turn:
#
#   least         the hand-written send (token lookup + one
#                 membership-checked insert), one statement
#   least-events  the same with what events and unread counts add (unread counters, the
#                 event and its recipients), one statement
#   confab-1rt    confab's own send statement as captured, alone: one round
#                 trip, committed by itself (what confab sends since it
#                 settles itself, `confab_settle_send`; the "exact" replay)
#   confab-2rt    BEGIN and the statement in one round trip, then COMMIT:
#                 what confab sent before (pipelined BEGIN, COMMIT awaited)
#   confab-3rt    BEGIN, the statement, COMMIT: one round trip each
#
# Each round runs them in the other order. Prints tps per run.
#
# Needs: a database and a raw directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=postgres BENCH_SCENARIOS=send bench/run.sh
# (the database is named in its log, `confab_bench_<pid>`; the raw directory
# is the last line it prints). Usage: bench/send_anatomy.sh DB RAW_DIR
set -euo pipefail
DB=$1
RAW=$2
ROUNDS=${ROUNDS:-2}
SECONDS_EACH=${SECONDS_EACH:-10}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for f in "$RAW"/sql/exact-send-*.sql; do
    b=$(basename "$f" .sql)
    # The statement alone (a capture of an older confab has BEGIN and
    # COMMIT around it), then wrapped.
    grep -v '^BEGIN;$\|^COMMIT;$' "$f" >"$WORK/confab-1rt.$b.sql"
    {
        echo 'BEGIN;'
        grep -v '^BEGIN;$\|^COMMIT;$\|^\\' "$f"
        echo 'COMMIT;'
    } >"$WORK/body.sql"
    { grep '^\\' "$f" || true; cat "$WORK/body.sql"; } >"$WORK/confab-3rt.$b.sql"
    # pgbench's \startpipeline sends what is inside in one round trip.
    { grep '^\\' "$f" || true; awk '/^BEGIN;$/ {print "\\startpipeline"; print; next}
         /^COMMIT;$/ {print "\\endpipeline"; print; next} {print}' "$WORK/body.sql"; } >"$WORK/confab-2rt.$b.sql"
done
# Each kind's scripts are "<kind>.<name>.sql": no kind's files match
# another's pattern (least-events-* would match least-*).
for f in "$RAW"/sql/least-send-*.sql; do cp "$f" "$WORK/least.$(basename "$f")"; done
for f in "$RAW"/sql/least-events-send-*.sql; do cp "$f" "$WORK/least-events.$(basename "$f")"; done

# One pgbench process per script, one client each, as bench/run.sh runs a
# send's scripts: a user's sends never overlap.
run() {
    local kind=$1 f
    for f in "$WORK/$kind".*.sql; do
        pgbench -n -M prepared -c 1 -j 1 -T "$SECONDS_EACH" -h 127.0.0.1 -U postgres -f "$f" "$DB" 2>&1 |
            sed -n 's/^tps = \([0-9.]*\).*/\1/p' &
    done | awk '{s += $1; n++} END {printf "%.0f (%d clients)", s, n}'
}
kinds=(least least-events confab-1rt confab-2rt confab-3rt)
for i in $(seq "$ROUNDS"); do
    order=("${kinds[@]}")
    if [ $((i % 2)) = 0 ]; then
        order=()
        for ((k = ${#kinds[@]} - 1; k >= 0; k--)); do order+=("${kinds[k]}"); done
    fi
    line="round $i:"
    for kind in "${order[@]}"; do
        line+=" $kind $(run "$kind")"
    done
    echo "$line tps"
done
