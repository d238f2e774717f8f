#!/usr/bin/env bash
# Runs schemathesis against a live confab: the binary given as $1 (default:
# target/release/confab if built, else target/debug/confab), on a fresh
# SQLite file, with two contacts (CLI) and conversations, messages and
# groups (API) for the operations on one object to act on. Fails on any
# server error or any response that breaks the OpenAPI document the server
# itself publishes.
#
# Needs `schemathesis` on PATH or in $CONFAB_CI_VENV (what .ci/run installs).
# Bounded: SCHEMATHESIS_MAX_EXAMPLES per operation (default 20) and
# SCHEMATHESIS_MAX_TIME seconds in all (default 180).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

bin="${1:-}"
if [ -z "$bin" ]; then
    if [ -x "$root/target/release/confab" ]; then
        bin="$root/target/release/confab"
    else
        bin="$root/target/debug/confab"
    fi
fi
venv="${CONFAB_CI_VENV:-$HOME/.cache/confab-ci-venv}"
if [ -x "$venv/bin/schemathesis" ]; then
    st="$venv/bin/schemathesis"
else
    st="$(command -v schemathesis)"
fi
py="$(command -v python3)"

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
export DATABASE_URL="$work/confab.db"
export CONFAB_LISTEN="127.0.0.1:$port"

"$bin" migrate >/dev/null
"$bin" contact create --username alice --phone-number +15550100 >/dev/null
bob_id="$("$bin" contact create --username bob --phone-number +15550101 |
    "$py" -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
token="$("$bin" token issue --username alice)"

"$bin" serve >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 50); do
    curl -fsS "$base/healthz" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -fsS "$base/healthz" >/dev/null

# POSTs a form as alice; prints the new object's id.
create() {
    curl -fsS -X POST "$base$1" -H "Authorization: Bearer $token" --data "$2" |
        "$py" -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
export CONFAB_CONTACT_ID="$bob_id"
export CONFAB_CONVERSATION_ID="$(create /v1/conversations "contact_id=$bob_id")"
export CONFAB_MESSAGE_ID="$(create /v1/messages "conversation_id=$CONFAB_CONVERSATION_ID&message=hello")"
export CONFAB_GROUP_ID="$(create /v1/groups "name=team&contact_ids[]=$bob_id")"
export CONFAB_DOOMED_MESSAGE_ID="$(create /v1/messages "conversation_id=$CONFAB_CONVERSATION_ID&message=bye")"
export CONFAB_DOOMED_CONVERSATION_ID="$(create /v1/conversations "contact_id=$bob_id")"
export CONFAB_DOOMED_GROUP_ID="$(create /v1/groups "name=doomed")"

status=0
# From the scratch directory: schemathesis keeps a cache in its working
# directory.
cd "$work"
"$st" --config-file "$here/schemathesis.toml" run "$base/openapi.json" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
    --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-20}" \
    --max-time "${SCHEMATHESIS_MAX_TIME:-180}" \
    --request-timeout 10 \
    --workers 1 \
    --seed "${SCHEMATHESIS_SEED:-1}" \
    --no-color || status=$?
if [ "$status" -ne 0 ]; then
    echo "schemathesis failed (exit $status); the server's log:" >&2
    tail -n 50 "$work/server.log" >&2
fi
exit "$status"
