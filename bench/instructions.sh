#!/usr/bin/env bash
# How many instructions confab's own process runs per request: the server
# under valgrind's callgrind, on a kept benchmark database, serves N
# requests of a scenario one after the other (after 200 unmeasured),
# and the count of the measured part is divided by N. Instructions, not
# seconds: the figure repeats to within a fraction of a percent whatever
# else the machine runs, so two binaries compare in one run of this script
# where wrk's throughput moves by 10 % between runs. It counts confab's
# user space only (not the kernel's side of its sockets, not PostgreSQL).
#
# Needs valgrind, python3, and a database and raw directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=postgres bench/run.sh
# Usage: bench/instructions.sh DB RAW_DIR [BINARY...]
# (default binary target/release/confab). DB is the PostgreSQL database's
# name, or with STORE=sqlite the SQLite file (RAW_DIR/bench.db). SCENARIOS (default
# "page_first get_message"; any scenario: a send writes its messages to the
# kept database) and N (default 2000) pick
# the load. Prints one line per binary and scenario, and keeps each
# callgrind profile (callgrind_annotate reads it) in the directory it
# names.
set -euo pipefail
DB=$1
RAW=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- "$HERE/../target/release/confab"
N=${N:-2000}
PORT=${PORT:-18195}
STORE=${STORE:-postgres}
OUT=$(mktemp -d)

# N requests of a targets file (bench/wrk.lua's format), in turn, on one
# kept-alive connection; every answer must be 200 (201 for a send).
requests() {
    python3 - "$1" "$2" "$PORT" <<'PY'
import http.client, sys
lines = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
n, port = int(sys.argv[2]), int(sys.argv[3])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(n):
    method, path, body, token = lines[i % len(lines)][:4]
    headers = {"Authorization": "Bearer " + token}
    if method == "POST":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=body if method == "POST" else None, headers=headers)
    response = conn.getresponse()
    response.read()
    if response.status not in (200, 201):
        sys.exit(f"{method} {path}: {response.status}")
PY
}

k=0
for scenario in ${SCENARIOS:-page_first get_message}; do
    targets="$RAW/targets-$STORE-$scenario.txt"
    for bin in "$@"; do
        k=$((k + 1))
        profile="$OUT/callgrind.$k.$scenario"
        # A subshell per server: serve.sh's exit trap stops it.
        (
            WHERE=$DB BIN=$bin SERVE_WAIT=60
            SERVE_WRAPPER="valgrind --tool=callgrind --callgrind-out-file=$profile"
            # shellcheck source=bench/serve.sh
            . "$HERE/serve.sh"
            requests "$targets" 200
            callgrind_control -z "$SERVER" >/dev/null 2>&1
            requests "$targets" "$N"
            callgrind_control -d "$SERVER" >/dev/null 2>&1
        )
        # The dump of the measured part is the first numbered file.
        total=$(callgrind_annotate "$profile.1" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
        echo "$scenario $bin: $((total / N)) instructions per request ($N requests; profile $profile.1)"
    done
done
