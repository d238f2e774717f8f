#!/usr/bin/env bash
# A private PostgreSQL primary and a streaming replica of it, on this
# machine, for the topology checks (never the machine's shared cluster):
#
#   tests/topology/pg.sh up DIR             start both; prints `export` lines
#   tests/topology/pg.sh down DIR           stop both (immediate), keep DIR
#   tests/topology/pg.sh replica-stop DIR   stop the replica (fast shutdown)
#   tests/topology/pg.sh replica-start DIR  start it again (it catches up)
#   tests/topology/pg.sh replica-delay DIR MS   recovery_min_apply_delay on
#                                           the replica (0 turns it off)
#   tests/topology/pg.sh wait-replay DIR [SECS] until the replica has
#                                           replayed the primary's WAL as of now
#   tests/topology/pg.sh lag DIR            replay lag, one line of JSON
#   tests/topology/pg.sh stats DIR DB       the replica's read statistics for
#                                           database DB, one line of JSON
#   tests/topology/pg.sh check DIR          the harness's own checks (the
#                                           replica streams, its statistics
#                                           move, lag, stop and start): one
#                                           PASS/FAIL line each
#   tests/topology/pg.sh selftest           up, check and down in a temporary
#                                           directory, removed on any exit
#
# DIR (made when missing, handed to the postgres user) holds the two data
# directories, their socket directory and `ports`. The primary runs with
# wal_level=replica and keeps 512 MB of WAL, so a replica stopped for a
# while catches up by streaming; the replica is made by `pg_basebackup -R`
# (standby.signal and primary_conninfo) and serves reads (hot standby).
# initdb and pg_ctl refuse root: as root they run as the postgres user.
# Both listen on 127.0.0.1 only, on free ports; `up` waits until the
# replica streams and has replayed the primary's WAL. `up` prints:
#
#   export TOPO_PRIMARY_PORT=... TOPO_REPLICA_PORT=...
#   export TOPO_PRIMARY_URL=postgres://postgres@127.0.0.1:PORT
#   export TOPO_REPLICA_URL=postgres://postgres@127.0.0.1:PORT
#
# (URLs without a database: append /NAME). Logs: DIR/primary.log,
# DIR/replica.log. Everything else goes to stderr.
set -euo pipefail

PG_BIN="${CONFAB_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}"

pg_die() {
    echo "pg: $*" >&2
    exit 1
}

pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_load_ports() {
    local dir="$1"
    [ -f "$dir/ports" ] || pg_die "$dir/ports is missing (run: pg.sh up $dir)"
    # shellcheck disable=SC1091
    . "$dir/ports"
}

# psql on one of the two, unaligned, tuples only, stopping at the first error.
pg_psql() {
    local port="$1" db="$2"
    shift 2
    "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$db" -v ON_ERROR_STOP=1 -At "$@"
}

pg_replica_running() {
    local dir="$1"
    pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/replica" status >/dev/null 2>&1
}

pg_start_replica() {
    local dir="$1"
    pg_load_ports "$dir"
    pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/replica" -l "$dir/replica.log" -w -t 60 \
        -o "-p $REPLICA_PORT -k $dir/sock" start >/dev/null
}

pg_stop_replica() {
    local dir="$1"
    pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/replica" -m fast -w -t 60 stop >/dev/null
}

# Waits until the replica has replayed everything the primary had written
# when this was called.
pg_wait_replay() {
    local dir="$1" secs="${2:-30}" target i
    pg_load_ports "$dir"
    target="$(pg_psql "$PRIMARY_PORT" postgres -c 'SELECT pg_current_wal_lsn()')"
    for i in $(seq 1 $((secs * 20))); do
        if [ "$(pg_psql "$REPLICA_PORT" postgres -c "SELECT coalesce(pg_last_wal_replay_lsn() >= '$target'::pg_lsn, false)" 2>/dev/null)" = t ]; then
            return 0
        fi
        sleep 0.05
    done
    pg_die "the replica did not replay up to $target within $secs s"
}

pg_up() {
    local dir="$1"
    [ -x "$PG_BIN/initdb" ] || pg_die "initdb not found (install PostgreSQL or set CONFAB_PG_BINDIR)"
    command -v pg_basebackup >/dev/null || [ -x "$PG_BIN/pg_basebackup" ] || pg_die "pg_basebackup not found"
    mkdir -p "$dir/sock"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
    [ ! -e "$dir/primary" ] || pg_die "$dir/primary exists already"
    local primary_port replica_port
    primary_port="$(pg_free_port)"
    replica_port="$(pg_free_port)"
    while [ "$replica_port" = "$primary_port" ]; do replica_port="$(pg_free_port)"; done
    printf 'PRIMARY_PORT=%s\nREPLICA_PORT=%s\n' "$primary_port" "$replica_port" >"$dir/ports"

    pg_as_owner "$PG_BIN/initdb" -D "$dir/primary" -A trust -U postgres -E UTF8 --locale=C --no-sync >/dev/null
    # In postgresql.conf, not on the command line, so that the base backup
    # carries them to the replica (a hot standby needs max_connections at
    # least the primary's).
    pg_as_owner tee -a "$dir/primary/postgresql.conf" >/dev/null <<CONF
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 5
wal_keep_size = 512MB
hot_standby = on
hot_standby_feedback = on
max_connections = 200
shared_buffers = 64MB
CONF
    pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/primary" -l "$dir/primary.log" -w -t 60 \
        -o "-p $primary_port -k $dir/sock" start >/dev/null
    echo "pg: primary on 127.0.0.1:$primary_port ($dir/primary)" >&2

    pg_as_owner "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres \
        -D "$dir/replica" -R -X stream -c fast --no-sync
    pg_start_replica "$dir"
    local i
    for i in $(seq 1 300); do
        [ "$(pg_psql "$primary_port" postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ] && break
        sleep 0.1
    done
    [ "$(pg_psql "$replica_port" postgres -c 'SELECT pg_is_in_recovery()')" = t ] ||
        pg_die "the replica is not in recovery"
    pg_wait_replay "$dir" 30
    echo "pg: replica on 127.0.0.1:$replica_port ($dir/replica), streaming" >&2
    cat <<ENV
export TOPO_PRIMARY_PORT=$primary_port TOPO_REPLICA_PORT=$replica_port
export TOPO_PRIMARY_URL=postgres://postgres@127.0.0.1:$primary_port
export TOPO_REPLICA_URL=postgres://postgres@127.0.0.1:$replica_port
ENV
}

pg_down() {
    local dir="$1" which
    for which in replica primary; do
        if [ -f "$dir/$which/postmaster.pid" ]; then
            pg_as_owner "$PG_BIN/pg_ctl" -D "$dir/$which" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
        fi
    done
}

# Replay lag as one line of JSON:
#   bytes       WAL the primary has written that the replica has not replayed
#   replay_lag_ms  the primary's view (pg_stat_replication.replay_lag; null
#               when nothing was written lately)
#   probe_ms    how long a commit made now takes to be replayed (null when
#               not replayed within 10 s)
pg_lag() {
    local dir="$1" current replayed bytes reported start end probe i
    pg_load_ports "$dir"
    current="$(pg_psql "$PRIMARY_PORT" postgres -c 'SELECT pg_current_wal_lsn()')"
    replayed="$(pg_psql "$REPLICA_PORT" postgres -c 'SELECT pg_last_wal_replay_lsn()')"
    bytes="$(pg_psql "$PRIMARY_PORT" postgres -c "SELECT pg_wal_lsn_diff('$current', '$replayed')::bigint")"
    reported="$(pg_psql "$PRIMARY_PORT" postgres -c \
        "SELECT coalesce((extract(epoch FROM replay_lag) * 1000)::bigint::text, 'null') FROM pg_stat_replication LIMIT 1")"
    start="$(date +%s%N)"
    probe="$(pg_psql "$PRIMARY_PORT" postgres \
        -c 'CREATE TABLE IF NOT EXISTS topology_probe (at bigint)' \
        -c 'INSERT INTO topology_probe VALUES (1) RETURNING pg_current_wal_insert_lsn()')"
    end=null
    for i in $(seq 1 1000); do
        if [ "$(pg_psql "$REPLICA_PORT" postgres -c "SELECT pg_last_wal_replay_lsn() >= '$probe'::pg_lsn")" = t ]; then
            end=$((($(date +%s%N) - start) / 1000000))
            break
        fi
        sleep 0.01
    done
    printf '{"bytes": %s, "replay_lag_ms": %s, "probe_ms": %s}\n' "$bytes" "${reported:-null}" "$end"
}

# The replica's read statistics for one database, one line of JSON: from
# pg_stat_database (transactions and rows read there) and the sums over
# its user tables (scans). A read served by the replica moves them; the
# primary's writes do not (replay is not counted as reads).
pg_stats() {
    local dir="$1" db="$2"
    pg_load_ports "$dir"
    pg_psql "$REPLICA_PORT" "$db" -c "
        SELECT json_build_object(
            'xact_commit', d.xact_commit,
            'tup_returned', d.tup_returned,
            'tup_fetched', d.tup_fetched,
            'seq_scan', coalesce(t.seq_scan, 0),
            'idx_scan', coalesce(t.idx_scan, 0),
            'idx_tup_fetch', coalesce(t.idx_tup_fetch, 0),
            'messages_idx_scan', coalesce(m.idx_scan, 0))
        FROM pg_stat_database d,
             (SELECT sum(seq_scan)::bigint AS seq_scan, sum(idx_scan)::bigint AS idx_scan,
                     sum(idx_tup_fetch)::bigint AS idx_tup_fetch FROM pg_stat_user_tables) t,
             (SELECT sum(idx_scan)::bigint AS idx_scan FROM pg_stat_user_tables WHERE relname = 'messages') m
        WHERE d.datname = current_database()"
}

pg_result() {
    # $1 PASS|FAIL, $2 name, $3 detail
    printf '%-15s %-34s %s\n' "$1" "$2" "$3"
    [ "$1" = PASS ] || PG_CHECK_STATUS=1
}

# The harness's own checks: what the replica checks of the server rely on.
pg_check() {
    local dir="$1" got before after lag
    PG_CHECK_STATUS=0
    pg_load_ports "$dir"
    local db="topology_pgcheck_$$"
    pg_psql "$PRIMARY_PORT" postgres -c "CREATE DATABASE $db" >/dev/null
    pg_psql "$PRIMARY_PORT" "$db" \
        -c 'CREATE TABLE items (id int PRIMARY KEY, body text)' \
        -c "INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 1000) g" >/dev/null
    pg_wait_replay "$dir" 30
    got="$(pg_psql "$REPLICA_PORT" "$db" -c 'SELECT count(*) FROM items')"
    if [ "$got" = 1000 ] && [ "$(pg_psql "$REPLICA_PORT" "$db" -c 'SELECT pg_is_in_recovery()')" = t ]; then
        pg_result PASS pg-replica-streams "a write on the primary is read on the replica (hot standby, pg_basebackup -R)"
    else
        pg_result FAIL pg-replica-streams "the replica holds $got of 1000 rows"
    fi

    # Reads on the replica show in its statistics (what proves a server's
    # reads came from it); 50 reads by key, then up to 5 s for the counters
    # to be flushed (a backend flushes at most once a second).
    before="$(pg_stats "$dir" "$db" | python3 -c 'import json, sys; print(json.load(sys.stdin)["idx_scan"])')"
    pg_psql "$REPLICA_PORT" "$db" -c "$(for i in $(seq 1 50); do printf 'SELECT body FROM items WHERE id = %d;' "$i"; done)" >/dev/null
    after="$before"
    for _ in $(seq 1 50); do
        after="$(pg_stats "$dir" "$db" | python3 -c 'import json, sys; print(json.load(sys.stdin)["idx_scan"])')"
        [ "$((after - before))" -ge 50 ] && break
        sleep 0.1
    done
    if [ "$((after - before))" -ge 50 ]; then
        pg_result PASS pg-replica-stats "50 reads by key on the replica: its idx_scan moved by $((after - before))"
    else
        pg_result FAIL pg-replica-stats "50 reads by key on the replica: its idx_scan moved by $((after - before))"
    fi
    # ... and writes on the primary do not move them.
    before="$after"
    pg_psql "$PRIMARY_PORT" "$db" -c "UPDATE items SET body = body || '!' WHERE id <= 50" >/dev/null
    pg_wait_replay "$dir" 30
    sleep 1.2
    after="$(pg_stats "$dir" "$db" | python3 -c 'import json, sys; print(json.load(sys.stdin)["idx_scan"])')"
    if [ "$after" = "$before" ]; then
        pg_result PASS pg-replica-stats-quiet "writes replayed from the primary leave the replica's scan counters alone"
    else
        pg_result FAIL pg-replica-stats-quiet "replaying writes moved the replica's idx_scan by $((after - before))"
    fi

    lag="$(pg_lag "$dir")"
    if python3 -c 'import json, sys; v = json.loads(sys.argv[1]); sys.exit(0 if v["probe_ms"] is not None and v["probe_ms"] < 5000 else 1)' "$lag"; then
        pg_result PASS pg-replica-lag "$lag"
    else
        pg_result FAIL pg-replica-lag "$lag"
    fi

    # Stopped mid-run, the primary writes on; started again, it catches up.
    pg_stop_replica "$dir"
    pg_psql "$PRIMARY_PORT" "$db" -c "INSERT INTO items SELECT g, 'late ' || g FROM generate_series(1001, 1500) g" >/dev/null
    if pg_psql "$REPLICA_PORT" "$db" -c 'SELECT 1' >/dev/null 2>&1; then
        pg_result FAIL pg-replica-stop "the replica still answers after pg_ctl stop"
    else
        pg_start_replica "$dir"
        pg_wait_replay "$dir" 30
        got="$(pg_psql "$REPLICA_PORT" "$db" -c 'SELECT count(*) FROM items')"
        if [ "$got" = 1500 ]; then
            pg_result PASS pg-replica-stop-start "stopped, the primary wrote 500 rows, started: it caught up"
        else
            pg_result FAIL pg-replica-stop-start "after its restart the replica holds $got of 1500 rows"
        fi
    fi
    pg_psql "$PRIMARY_PORT" postgres -c "DROP DATABASE $db" >/dev/null
    return "$PG_CHECK_STATUS"
}

pg_delay() {
    local dir="$1" ms="$2"
    pg_load_ports "$dir"
    pg_psql "$REPLICA_PORT" postgres -c "ALTER SYSTEM SET recovery_min_apply_delay = '${ms}ms'" >/dev/null
    pg_psql "$REPLICA_PORT" postgres -c 'SELECT pg_reload_conf()' >/dev/null
}

pg_main() {
    local cmd="${1:-}"
    shift || true
    case "$cmd" in
        up) pg_up "${1:?DIR}" ;;
        down) pg_down "${1:?DIR}" ;;
        replica-stop) pg_stop_replica "${1:?DIR}" ;;
        replica-start) pg_start_replica "${1:?DIR}" ;;
        replica-delay) pg_delay "${1:?DIR}" "${2:?MS}" ;;
        wait-replay) pg_wait_replay "${1:?DIR}" "${2:-30}" ;;
        lag) pg_lag "${1:?DIR}" ;;
        stats) pg_stats "${1:?DIR}" "${2:?DB}" ;;
        check) pg_check "${1:?DIR}" ;;
        selftest)
            local dir
            dir="$(mktemp -d /tmp/confab-pg.XXXXXX)"
            # shellcheck disable=SC2064
            trap "pg_down '$dir'; rm -rf '$dir'" EXIT
            pg_up "$dir" >/dev/null
            pg_check "$dir"
            ;;
        *)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
            exit 2
            ;;
    esac
}

# Sourced, it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    pg_main "$@"
fi
