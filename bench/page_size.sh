#!/usr/bin/env bash
# What SQLite's page size does to a scenario: copies a kept benchmark
# database once per page size (`VACUUM` after `PRAGMA page_size`, so every
# copy's B-trees are packed alike, as the seed leaves them), then runs the
# scenarios on each copy in turn, ROUNDS times, with bench/cpu_split.sh
# (req/s, p50, p99, cores, bytes written a request). The server sets its
# checkpoints' thresholds in bytes, so each copy restarts its WAL after as
# much writing (crates/store-sqlite/src/checkpoint.rs).
#
# Needs a raw directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=sqlite BENCH_SCENARIOS=send,mixed,page_first,get_message,feed bench/run.sh
# Usage: bench/page_size.sh RAW_DIR [SIZES] [SCENARIOS] [ROUNDS]
#   defaults: "4096 2048" "send" 2. The copies stay in RAW_DIR (page-N.db).
set -euo pipefail
RAW=$1
SIZES=${2:-4096 2048}
SCENARIOS=${3:-send}
ROUNDS=${4:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
for size in $SIZES; do
    copy=$RAW/page-$size.db
    [ -f "$copy" ] && continue
    python3 - "$RAW/bench.db" "$copy" "$size" <<'PY'
import sqlite3, sys
source, copy, size = sys.argv[1:]
# The backup API copies what the WAL holds too; then the copy is rebuilt
# with the new page size (which WAL mode refuses: rollback journal first).
src = sqlite3.connect(source)
dst = sqlite3.connect(copy, isolation_level=None)
src.backup(dst)
src.close()
dst.execute("PRAGMA journal_mode = DELETE")
dst.execute(f"PRAGMA page_size = {int(size)}")
dst.execute("VACUUM")
dst.execute("PRAGMA journal_mode = WAL")
got = dst.execute("PRAGMA page_size").fetchone()[0]
assert got == int(size), f"page size {got}, asked {size}"
PY
done
for round in $(seq "$ROUNDS"); do
    for scenario in $SCENARIOS; do
        for size in $SIZES; do
            echo "round $round, $scenario, pages of $size bytes: $("$HERE/cpu_split.sh" sqlite "$RAW/page-$size.db" "$RAW" "$scenario")"
        done
    done
done
