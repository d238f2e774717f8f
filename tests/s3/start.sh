#!/usr/bin/env bash
# Starts a local S3 (moto's server, in memory) on
# 127.0.0.1:${CONFAB_MOTO_PORT:-5055} for the file storage's S3 tests
# (crates/files/tests/storage.rs), creates the bucket `confab-test` and
# prints the environment a test needs, as `export` lines:
#
#   eval "$(tests/s3/start.sh)"
#   CONFAB_TEST_S3_URL=s3://confab-test/run-$RANDOM CONFAB_TEST_REQUIRE_S3=1 \
#       cargo test -p confab-files
#
# Installs moto[server] 5.x into the venv ${CONFAB_CI_VENV:-~/.cache/confab-ci-venv}
# (created when missing) unless `moto_server` is already there; does not
# start a second server when one already answers on the port. Only the
# export lines go to stdout; everything else to stderr. The server's log is
# /tmp/confab-moto.log; it runs until killed (its pid is in
# /tmp/confab-moto.pid). Everything stays on 127.0.0.1.
set -euo pipefail
PORT="${CONFAB_MOTO_PORT:-5055}"
VENV="${CONFAB_CI_VENV:-$HOME/.cache/confab-ci-venv}"
LOG=/tmp/confab-moto.log
PIDFILE=/tmp/confab-moto.pid
BUCKET=confab-test
URL="http://127.0.0.1:$PORT"

answers() {
    # Any HTTP answer will do (no -f).
    curl -s -o /dev/null --max-time 2 "$URL/"
}

if ! answers; then
    if ! [ -x "$VENV/bin/moto_server" ]; then
        echo "s3: installing moto[server] into $VENV" >&2
        [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV" >&2
        "$VENV/bin/pip" install -q 'moto[server]>=5,<6' >&2
    fi
    echo "s3: starting moto_server on 127.0.0.1:$PORT (log $LOG)" >&2
    # Detached, its output away from this script's stdout (which
    # `eval "$(...)"` reads to its end).
    setsid "$VENV/bin/moto_server" -H 127.0.0.1 -p "$PORT" </dev/null >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 60); do
        answers && break
        sleep 0.5
    done
    if ! answers; then
        echo "s3: moto_server did not answer on 127.0.0.1:$PORT within 30 s; its log:" >&2
        cat "$LOG" >&2 || true
        exit 1
    fi
fi

# The bucket; moto answers 200 when it is there already (us-east-1), 409
# BucketAlreadyOwnedByYou elsewhere.
status="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X PUT "$URL/$BUCKET")"
case "$status" in
    200|409) ;;
    *)
        echo "s3: PUT $URL/$BUCKET answered $status" >&2
        exit 1
        ;;
esac

cat <<ENV
export AWS_ENDPOINT_URL=$URL
export AWS_ALLOW_HTTP=true
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=testing
export AWS_SECRET_ACCESS_KEY=testing
ENV
