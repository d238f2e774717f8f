#!/usr/bin/env bash
# Where is a scenario's tail: in confab, or outside it (the load tool, the
# kernel)? Runs a scenario's load (wrk, as bench/run.sh runs it) against a
# server on a kept benchmark database and prints wrk's percentiles beside
# the server's own latency histogram for the same requests (the
# difference of `confab_http_request_duration_seconds` scraped from
# /metrics before and after), per route.
#
# Needs wrk and a database and raw directory left by
#   BENCH_KEEP_DB=1 BENCH_STORES=postgres,sqlite BENCH_SCENARIOS=send,mixed bench/run.sh
# Usage: bench/tail_split.sh postgres confab_bench_<pid> RAW_DIR SCENARIO [SECONDS]
#        bench/tail_split.sh sqlite RAW_DIR/bench.db RAW_DIR SCENARIO [SECONDS]
# BENCH_BIN picks the binary (default target/release/confab);
# BENCH_URL_QUERY is appended to the PostgreSQL URL, e.g.
# '?options=-c%20log_min_duration_statement%3D20' to have PostgreSQL log
# the server's slow statements meanwhile.
set -euo pipefail
STORE=$1
WHERE=$2
RAW=$3
SCENARIO=$4
SECONDS_EACH=${5:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BENCH_BIN:-$HERE/../target/release/confab}
PORT=${PORT:-18190}
# shellcheck source=bench/serve.sh
. "$HERE/serve.sh"
histogram() {
    curl -s "http://127.0.0.1:$PORT/metrics" | grep '^confab_http_request_duration_seconds_bucket' || true
}
load 3 >/dev/null
histogram >"$WORK/before"
echo "wrk: $(load "$SECONDS_EACH" | grep '^BENCH' | sed 's/^BENCH //')"
histogram >"$WORK/after"
python3 - "$WORK/before" "$WORK/after" <<'PY'
import collections, re, sys

def read(path):
    counts = collections.defaultdict(dict)
    for line in open(path):
        m = re.match(r"\w+\{(.*)\} (\S+)$", line.strip())
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        key = (labels.get("method"), labels.get("route"))
        le = labels["le"]
        counts[key][le] = counts[key].get(le, 0) + float(m.group(2))
    return counts

before, after = read(sys.argv[1]), read(sys.argv[2])
for key, buckets in sorted(after.items()):
    n = buckets["+Inf"] - before.get(key, {}).get("+Inf", 0)
    if n < 1:
        continue
    share = lambda le: (buckets[le] - before.get(key, {}).get(le, 0)) / n * 100
    print(f"server {key[0]} {key[1]}: {n:.0f} requests; " + ", ".join(
        f"<= {float(le) * 1000:g} ms {share(le):.2f} %"
        for le in ("0.005", "0.01", "0.025", "0.05", "0.1") if le in buckets))
PY
