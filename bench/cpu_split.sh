#!/usr/bin/env bash
# Where a scenario's CPU and disk writes go: runs its load (wrk, as
# bench/run.sh runs it) against a server on a kept benchmark database and
# prints req/s, p50 and p99, the cores used meanwhile by confab, by
# PostgreSQL's processes and by wrk (user + system time over the run's
# wall time, from /proc), and the bytes confab's process caused to be
# written to disk per request (`write_bytes` of /proc/PID/io: for SQLite,
# its WAL and the checkpoints' copies into the file).
#
# Needs wrk and a database and raw directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=postgres,sqlite BENCH_SCENARIOS=send bench/run.sh
# Usage: bench/cpu_split.sh postgres confab_bench_<pid> RAW_DIR SCENARIO [SECONDS]
#        bench/cpu_split.sh sqlite RAW_DIR/bench.db RAW_DIR SCENARIO [SECONDS]
# BENCH_BIN picks the binary (default target/release/confab).
set -euo pipefail
STORE=$1
WHERE=$2
RAW=$3
SCENARIO=$4
SECONDS_EACH=${5:-12}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BENCH_BIN:-$HERE/../target/release/confab}
PORT=${PORT:-18191}
# shellcheck source=bench/serve.sh
. "$HERE/serve.sh"
# Clock ticks (user + system) of the given pids, summed.
ticks() {
    local total=0 pid t
    for pid in "$@"; do
        t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || continue
        total=$((total + t))
    done
    echo "$total"
}
written() { awk '/^write_bytes/ {print $2}' "/proc/$SERVER/io"; }
load 3 >/dev/null
load "$SECONDS_EACH" >"$WORK/wrk.out" &
LOADER=$!
sleep 0.5
WRK=$(pgrep -n -x wrk)
PG=$(pgrep -x postgres | tr '\n' ' ')
start=$(date +%s.%N)
c0=$(ticks "$SERVER")
# shellcheck disable=SC2086 # one pid per word
p0=$(ticks $PG)
w0=$(ticks "$WRK")
b0=$(written)
sleep $((SECONDS_EACH - 2))
c1=$(ticks "$SERVER")
# shellcheck disable=SC2086
p1=$(ticks $PG)
w1=$(ticks "$WRK")
b1=$(written)
end=$(date +%s.%N)
wait "$LOADER"
line=$(grep '^BENCH' "$WORK/wrk.out" | sed 's/^BENCH //')
python3 - "$line" "$start" "$end" "$c0" "$c1" "$p0" "$p1" "$w0" "$w1" "$b0" "$b1" "$SECONDS_EACH" "$(getconf CLK_TCK)" <<'PY'
import sys
line, start, end, c0, c1, p0, p1, w0, w1, b0, b1, secs, hz = sys.argv[1:]
f = dict(kv.split("=") for kv in line.split())
wall = float(end) - float(start)
rps = int(f["requests"]) / (int(f["duration_us"]) / 1e6)
cores = lambda a, b: (int(b) - int(a)) / int(hz) / wall
print(f"req/s {rps:.0f}, p50 {int(f['p50_us']) / 1000:.1f} ms, p99 {int(f['p99_us']) / 1000:.1f} ms; "
      f"cores: confab {cores(c0, c1):.2f}, postgres {cores(p0, p1):.2f}, wrk {cores(w0, w1):.2f}; "
      f"written by confab {(int(b1) - int(b0)) / (rps * wall) / 1024:.1f} KB a request")
PY
