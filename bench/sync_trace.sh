#!/usr/bin/env bash
# Do the sends wait on the disk? Runs the `send` scenario's load (wrk, as
# bench/run.sh runs it) against a server on a kept benchmark database while
# `perf` records every fsync/fdatasync system-wide, then prints the sends'
# p50/p99 beside how long each process's syncs took (p50, p90, p99, max,
# how many over 10 and 25 ms).
#
# Needs root (perf's syscall tracepoints), wrk, perf, and a database and raw
# directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=postgres BENCH_SCENARIOS=send bench/run.sh
#   BENCH_KEEP_DB=1 BENCH_STORES=sqlite BENCH_SCENARIOS=send bench/run.sh
# Usage: bench/sync_trace.sh postgres confab_bench_<pid> RAW_DIR [SECONDS]
#        bench/sync_trace.sh sqlite RAW_DIR/bench.db RAW_DIR [SECONDS]
set -euo pipefail
STORE=$1
WHERE=$2
RAW=$3
SECONDS_EACH=${4:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BENCH_BIN:-$HERE/../target/release/confab}
PORT=${PORT:-18189}
# shellcheck source=bench/serve.sh
. "$HERE/serve.sh"
load 3 >/dev/null
# The trace covers the middle of the measured run.
(
    sleep 1
    perf record -a -o "$WORK/sync.data" \
        -e syscalls:sys_enter_fdatasync,syscalls:sys_exit_fdatasync \
        -e syscalls:sys_enter_fsync,syscalls:sys_exit_fsync \
        -- sleep $((SECONDS_EACH - 2)) >/dev/null 2>&1
) &
TRACER=$!
echo "sends: $(load "$SECONDS_EACH" | grep '^BENCH')"
wait "$TRACER"
perf script -i "$WORK/sync.data" -F comm,tid,time,event 2>/dev/null | python3 -c '
import collections, sys
start, took = {}, collections.defaultdict(list)
for line in sys.stdin:
    f = line.split()
    if len(f) < 4:
        continue
    # comm may hold spaces: the last three fields are tid, time, event.
    comm, tid, t, event = " ".join(f[:-3]), f[-3], float(f[-2].rstrip(":")), f[-1]
    if "sys_enter" in event:
        start[tid] = t
    elif tid in start:
        took[comm].append((t - start.pop(tid)) * 1000)
for comm, ms in sorted(took.items()):
    ms.sort()
    q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
    print(f"syncs by {comm}: {len(ms)}, p50 {q(.5):.2f} ms, p90 {q(.9):.2f}, p99 {q(.99):.2f}, "
          f"max {ms[-1]:.2f}; over 10 ms: {sum(x > 10 for x in ms)}, over 25 ms: {sum(x > 25 for x in ms)}")
if not took:
    print("no syncs recorded")
'
