#!/usr/bin/env bash
# What the events' pruning-only indexes cost a send, on PostgreSQL alone.
#
# Migration 2026-11-27-110000_events_lean_writes dropped `events_created_at_idx`,
# `event_recipients_event_id_idx` and the recipients' foreign key to `events`
# (pruning now goes by position). This runs a send's exact statements (as
# `bench/run.sh` captured them) with pgbench on two copies of one seeded
# database, today's schema and one with those three put back, in turn,
# `ROUNDS` times each (each round in the other order), a checkpoint before
# every run. Prints tps per run.
#
# Needs: a database and a raw directory left by
#   BENCH_KEEP_DB=1 BENCH_SCALE=small BENCH_STORES=postgres BENCH_SCENARIOS=send bench/run.sh
# (the database is named in its log, `confab_bench_<pid>`; the raw directory
# is the last line it prints). Usage: bench/events_indexes.sh DB RAW_DIR
set -euo pipefail
DB=$1
RAW=$2
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-10}
OLD=${DB}_old_indexes
psql() { command psql -qX -h 127.0.0.1 -U postgres "$@"; }

psql -c "DROP DATABASE IF EXISTS $OLD"
psql -c "CREATE DATABASE $OLD TEMPLATE $DB"
trap 'psql -c "DROP DATABASE IF EXISTS $OLD"' EXIT
# The schema before the migration (its down.sql).
psql -d "$OLD" -v ON_ERROR_STOP=1 \
    -f "$(dirname "$0")/../migrations/postgres/2026-11-27-110000_events_lean_writes/down.sql"

scripts=()
for f in "$RAW"/sql/exact-send-*.sql; do scripts+=(-f "$f"); done
run() {
    psql -d "$1" -c CHECKPOINT
    pgbench -n -M prepared -c 32 -j 2 -T "$SECONDS_EACH" -h 127.0.0.1 -U postgres \
        "${scripts[@]}" "$1" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
# Each round in the other order, so that neither side always runs second.
for i in $(seq "$ROUNDS"); do
    if [ $((i % 2)) = 1 ]; then
        new=$(run "$DB"); old=$(run "$OLD")
    else
        old=$(run "$OLD"); new=$(run "$DB")
    fi
    echo "round $i: today's schema $new tps, with the old indexes $old tps"
done
