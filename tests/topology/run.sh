#!/usr/bin/env bash
# The topology checks: confab past one machine, on real engines started
# here (tests/topology/README.md):
#
#   tests/topology/run.sh BIN [--expect-missing] [GROUP...]
#
#   BIN               the confab binary (target/debug/confab)
#   --expect-missing  the checks listed in topology.py's EXPECTED_TO_FAIL
#                     must fail (what the server does not do yet); one that
#                     passes fails the run, so the list stays exact.
#                     Without it, such a pass is reported, not fatal.
#   GROUP             pg cluster limits local nats replica (default: all)
#
# Starts, all on 127.0.0.1 and free ports, never the machine's shared
# services: a private PostgreSQL primary and its streaming replica
# (tests/topology/pg.sh), moto's S3 (tests/s3/start.sh on a port of its
# own), HAProxy and nats-server (Debian's, installed when missing; own
# processes and configuration), and confab instances. Prints one
# PASS/FAIL/EXPECTED-FAIL line per check and FIGURE lines (cross-instance
# delivery p99, sends/s through the balancer); exits non-zero on any
# unexpected failure. Bounded (TOPO_TIMEOUT_SECS, default 600; about 2
# minutes here); every process and directory it made is removed on any
# exit (TOPO_KEEP=1 keeps the directory, with every log, for a look).
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=""
STRICT=""
GROUPS_ASKED=()
for arg in "$@"; do
    case "$arg" in
        --expect-missing) STRICT=--expect-missing ;;
        pg|cluster|limits|local|nats|replica) GROUPS_ASKED+=("$arg") ;;
        -*) echo "topology: unknown option $arg" >&2; exit 2 ;;
        *) [ -z "$BIN" ] && BIN="$arg" || { echo "topology: unknown group $arg" >&2; exit 2; } ;;
    esac
done
BIN="${BIN:-target/debug/confab}"
[ "${#GROUPS_ASKED[@]}" -gt 0 ] || GROUPS_ASKED=(pg cluster limits local nats replica)
TIMEOUT="${TOPO_TIMEOUT_SECS:-600}"

if [ ! -x "$BIN" ]; then
    echo "topology: building $BIN" >&2
    cargo build -q -p confab-server
fi
BIN="$(realpath "$BIN")"

# Outside tools, installed only when missing (Debian's packages).
need=()
command -v haproxy >/dev/null || need+=(haproxy)
command -v nats-server >/dev/null || need+=(nats-server)
command -v pg_basebackup >/dev/null || need+=(postgresql-client)
if [ "${#need[@]}" -gt 0 ]; then
    echo "topology: installing ${need[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

WORK="$(mktemp -d /tmp/confab-topology.XXXXXX)"
# PostgreSQL runs as its own user under it.
chmod 755 "$WORK"
MOTO_PID=""
CHECKS_PID=""
export TOPO_WORK="$WORK" TOPO_PG_DIR="$WORK/pg" PYTHONDONTWRITEBYTECODE=1
: >"$WORK/pids"

cleanup() {
    local status=$?
    set +e
    trap '' INT TERM
    [ -n "$CHECKS_PID" ] && kill "$CHECKS_PID" 2>/dev/null && wait "$CHECKS_PID" 2>/dev/null
    # Every process the checks started leads a process group of its own.
    while read -r pid; do
        [ -n "$pid" ] || continue
        if [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ]; then
            kill -9 -- "-$pid" 2>/dev/null
        fi
    done <"$WORK/pids"
    [ -n "$MOTO_PID" ] && kill "$MOTO_PID" 2>/dev/null
    [ -d "$WORK/pg" ] && tests/topology/pg.sh down "$WORK/pg"
    if [ "${TOPO_KEEP:-0}" = 1 ]; then
        echo "topology: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

T0="$(date +%s)"
status=0
PG_ENV="$(tests/topology/pg.sh up "$WORK/pg")"
eval "$PG_ENV"
export TOPO_PRIMARY_URL TOPO_REPLICA_URL
for g in "${GROUPS_ASKED[@]}"; do
    if [ "$g" = pg ]; then
        tests/topology/pg.sh check "$WORK/pg" || status=1
    fi
done

py_groups=()
for g in "${GROUPS_ASKED[@]}"; do [ "$g" = pg ] || py_groups+=("$g"); done
if [ "${#py_groups[@]}" -gt 0 ]; then
    # S3 on a port of its own, stopped on exit.
    MOTO_PORT="$(free_port)"
    S3_ENV="$(CONFAB_MOTO_PORT="$MOTO_PORT" tests/s3/start.sh)"
    eval "$S3_ENV"
    MOTO_PID="$(ss -ltnpH "sport = :$MOTO_PORT" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)"
    export TOPO_S3_URL="s3://confab-test/topology-$$-$RANDOM"

    timeout --signal=TERM "$TIMEOUT" python3 tests/topology/topology.py $STRICT "$BIN" "${py_groups[@]}" &
    CHECKS_PID=$!
    wait "$CHECKS_PID" || status=$?
    CHECKS_PID=""
    [ "$status" = 124 ] && echo "topology: FAIL: the checks took over $TIMEOUT s" >&2
fi

echo "topology: $(( $(date +%s) - T0 )) s; $([ "$status" = 0 ] && echo PASS || echo FAIL)"
exit "$status"
