#!/usr/bin/env bash
# The topology measurements, printed as a small table (run it on a quiet
# machine; tests/topology/README.md):
#
#   tests/topology/measure.sh BIN
#
# - sends per second through HAProxy with 1 and 3 instances, and the
#   delivery p99 to a stream on instance A meanwhile (sent through A, and
#   through B or C), with NOTIFY, then with NATS when the server has it;
# - pages of messages read per second without and with a read replica,
#   and the share of them the replica served (by its statistics).
#
# TOPO_MEASURE_SECS (default 10) per measurement, TOPO_MEASURE_CLIENTS
# (default 8) clients. Starts the same private engines as run.sh (a
# PostgreSQL primary and streaming replica, HAProxy, nats-server), all on
# 127.0.0.1, and removes everything on any exit. About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${1:-target/release/confab}"
if [ ! -x "$BIN" ]; then
    echo "measure: $BIN is missing (cargo build --release -p confab-server)" >&2
    exit 2
fi
BIN="$(realpath "$BIN")"
for tool in haproxy nats-server pg_basebackup; do
    if ! command -v "$tool" >/dev/null; then
        echo "measure: $tool is missing (tests/topology/run.sh installs it)" >&2
        exit 2
    fi
done

WORK="$(mktemp -d /tmp/confab-topology-measure.XXXXXX)"
chmod 755 "$WORK"
export TOPO_WORK="$WORK" TOPO_PG_DIR="$WORK/pg" PYTHONDONTWRITEBYTECODE=1
: >"$WORK/pids"
CHECKS_PID=""
cleanup() {
    local status=$?
    set +e
    trap '' INT TERM
    [ -n "$CHECKS_PID" ] && kill "$CHECKS_PID" 2>/dev/null && wait "$CHECKS_PID" 2>/dev/null
    while read -r pid; do
        [ -n "$pid" ] || continue
        if [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ]; then
            kill -9 -- "-$pid" 2>/dev/null
        fi
    done <"$WORK/pids"
    [ -d "$WORK/pg" ] && tests/topology/pg.sh down "$WORK/pg"
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PG_ENV="$(tests/topology/pg.sh up "$WORK/pg")"
eval "$PG_ENV"
export TOPO_PRIMARY_URL TOPO_REPLICA_URL
python3 tests/topology/topology.py measure "$BIN" &
CHECKS_PID=$!
wait "$CHECKS_PID"
CHECKS_PID=""
