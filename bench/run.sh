#!/usr/bin/env bash
# confab's benchmark, one command: builds the release binary, seeds scratch
# PostgreSQL and SQLite databases, runs every scenario with wrk (and pgbench
# beside it on PostgreSQL), writes docs/performance.md. See bench/README.md.
#
#   bench/run.sh                      # full scale (~30 min on 2 cores)
#   BENCH_SCALE=small bench/run.sh    # 1/50 of the data, 5 s runs
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/bench.py "$@"
