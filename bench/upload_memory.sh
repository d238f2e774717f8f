#!/usr/bin/env bash
# Uploads stream to the storage (docs/api.md "Files and attachments"): the server's
# memory does not grow with the files' sizes.
#
# Against a release `confab serve` (SQLite, files in a local folder, or in
# S3 when CONFAB_STORAGE_URL and the AWS_* variables are set), uploads
# first N small files (1 KiB) at once, then N big ones (default 8 x 25 MiB,
# the default limit minus room for the form) at once, with curl, reading
# the server's RSS every 20 ms meanwhile. Prints the RSS before, the peak
# during the small uploads and the peak during the big ones; PASS when the
# big uploads' peak is at most MAX_GROWTH_MB (default 120) above the small
# ones' (8 writers each hold at most 15 MiB: a 5 MiB part buffered and two
# in flight), and every upload answered 201, else FAIL (exit 1).
#
#   bench/upload_memory.sh
#   N=4 SIZE_MB=10 bench/upload_memory.sh
#
# Needs a release build (built here unless BENCH_NO_BUILD=1; CONFAB_BIN
# picks another binary) and curl. Everything goes to 127.0.0.1 (PORT,
# default 8093); the scratch folder and the server go at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONFAB_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/confab}
PORT=${PORT:-8093}
N=${N:-8}
SIZE_MB=${SIZE_MB:-25}
MAX_GROWTH_MB=${MAX_GROWTH_MB:-120}
SCRATCH=$(mktemp -d)
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

if [ "${BENCH_NO_BUILD:-0}" != 1 ] && [ -z "${CONFAB_BIN:-}" ]; then
    cargo build --release -p confab-server
fi

export DATABASE_URL="$SCRATCH/confab.db"
export CONFAB_STORAGE_URL="${CONFAB_STORAGE_URL:-$SCRATCH/files}"
# The upload's bytes are the file less the form's few hundred bytes.
export CONFAB_MAX_UPLOAD_BYTES=$(( (SIZE_MB + 1) * 1024 * 1024 ))
"$BIN" migrate 2>/dev/null
"$BIN" contact create --username alice --phone-number +15550100 >/dev/null
TOKEN=$("$BIN" token issue --username alice)
CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn "$BIN" serve 2>"$SCRATCH/serve.log" &
SERVER=$!
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break
    sleep 0.1
done

head -c 1024 /dev/urandom >"$SCRATCH/small.bin"
head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$SCRATCH/big.bin"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER/status"; }

# upload_all FILE: N uploads of FILE at once; prints the peak RSS (KiB)
# seen meanwhile; fails unless all answered 201.
upload_all() {
    local file=$1 peak pids=() codes=()
    peak=$(rss_kb)
    for i in $(seq 1 "$N"); do
        curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" \
            -F "file=@$file" "http://127.0.0.1:$PORT/v1/attachments" >"$SCRATCH/code.$i" &
        pids+=($!)
    done
    while kill -0 "${pids[@]}" 2>/dev/null; do
        local now
        now=$(rss_kb)
        [ "$now" -gt "$peak" ] && peak=$now
        sleep 0.02
    done
    wait "${pids[@]}" || true
    for i in $(seq 1 "$N"); do codes+=("$(cat "$SCRATCH/code.$i")"); done
    for c in "${codes[@]}"; do
        if [ "$c" != 201 ]; then
            echo "FAIL: an upload answered $c" >&2
            exit 1
        fi
    done
    echo "$peak"
}

before=$(rss_kb)
small_peak=$(upload_all "$SCRATCH/small.bin")
big_peak=$(upload_all "$SCRATCH/big.bin")
growth_mb=$(( (big_peak - small_peak) / 1024 ))
echo "storage:                      ${CONFAB_STORAGE_URL}"
echo "RSS before:                   $((before / 1024)) MiB"
echo "peak, $N x 1 KiB at once:      $((small_peak / 1024)) MiB"
echo "peak, $N x $SIZE_MB MiB at once:     $((big_peak / 1024)) MiB"
echo "growth for $((N * SIZE_MB)) MiB uploaded:  ${growth_mb} MiB"
if [ "$growth_mb" -le "$MAX_GROWTH_MB" ]; then
    echo "PASS (at most $MAX_GROWTH_MB MiB)"
else
    echo "FAIL (more than $MAX_GROWTH_MB MiB)"
    exit 1
fi
