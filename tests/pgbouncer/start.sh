#!/usr/bin/env bash
# Starts Debian's PgBouncer in transaction mode (the usual production
# pooler) in front of the PostgreSQL at 127.0.0.1:5432, listening on
# 127.0.0.1:${CONFAB_PGBOUNCER_PORT:-6432}, for the HTTP suite's run
# through a pooler (.ci/run; docs/deployment.md, "Behind PgBouncer").
# Installs pgbouncer when missing; does nothing when one already answers on
# the port. Its files live in /tmp/confab-pgbouncer.
set -euo pipefail
PORT="${CONFAB_PGBOUNCER_PORT:-6432}"
DIR=/tmp/confab-pgbouncer

if pg_isready -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; then
    exit 0
fi
if ! [ -x /usr/sbin/pgbouncer ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
fi
# The Debian package starts its own instance on 6432 with its own config
# where it can; ours must not meet it.
if [ "$PORT" = 6432 ] && pgrep -f "/etc/pgbouncer/pgbouncer.ini" >/dev/null; then
    pkill -f "/etc/pgbouncer/pgbouncer.ini" || true
    sleep 1
fi

mkdir -p "$DIR"
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
; Every database of the local server, as the superuser (tests create one
; database each).
* = host=127.0.0.1 port=5432 user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
; Trust, as the PostgreSQL it fronts: the name a client gives is ignored.
auth_type = any
; A test's database is dropped at its end: the suite first disables and
; kills its pool on the console (DISABLE, KILL), so that a statement the
; test's server still has in flight fails at once instead of waiting for a
; server connection (query_wait_timeout, 120 s).
admin_users = postgres
pool_mode = transaction
; Enough for the suite's servers at once (each opens a handful).
max_client_conn = 2000
default_pool_size = 20
max_db_connections = 60
; Tests drop their databases WITH (FORCE): idle server connections of a
; dropped database must not linger and count against the pool.
server_idle_timeout = 5
server_lifetime = 60
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
chown -R postgres "$DIR"
su postgres -s /bin/sh -c "/usr/sbin/pgbouncer -d -q $DIR/pgbouncer.ini"
for _ in $(seq 1 50); do
    pg_isready -h 127.0.0.1 -p "$PORT" -q 2>/dev/null && exit 0
    sleep 0.1
done
echo "pgbouncer did not start on 127.0.0.1:$PORT; its log:" >&2
cat "$DIR/pgbouncer.log" >&2 || true
exit 1
