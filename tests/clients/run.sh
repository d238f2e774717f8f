#!/usr/bin/env bash
# Generated clients against a live server: generates a TypeScript client
# (openapi-typescript types + openapi-fetch) and a Python one
# (openapi-python-client) from the server's own /openapi.json, checks that
# every generated module type-checks (tsc) or imports (Python), and runs
# client.ts and client.py with each against the server, as a backend (a
# server key) and as the contact it makes (tests/clients/README.md).
#
#   tests/clients/run.sh target/debug/confab
#
# Tools are installed only when missing or when their pinned list changed:
# the npm packages of package.json / package-lock.json into
# ${CONFAB_CLIENTS_CACHE:-~/.cache/confab-clients}/node, the Python ones of
# requirements.txt into the venv ${CONFAB_CI_VENV:-~/.cache/confab-ci-venv}.
# Generated code goes to a temporary directory (kept with CONFAB_CLIENTS_KEEP=1).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 path/to/confab" >&2
    exit 2
fi
BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[ -x "$BIN" ] || { echo "clients: $1 is not an executable" >&2; exit 2; }
HERE="$(cd "$(dirname "$0")" && pwd)"

OPENAPI_PYTHON_CLIENT_VERSION="$(sed -n 's/^openapi-python-client==//p' "$HERE/requirements.txt")"
CACHE="${CONFAB_CLIENTS_CACHE:-$HOME/.cache/confab-clients}"
NODE_DIR="$CACHE/node"
VENV="${CONFAB_CI_VENV:-$HOME/.cache/confab-ci-venv}"

# --- tools -----------------------------------------------------------------

# npm: (re)installed when the committed package files differ from the ones
# the cache was last installed from.
stamp="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$NODE_DIR/.installed" 2>/dev/null || true)" != "$stamp" ] \
    || [ ! -x "$NODE_DIR/node_modules/.bin/tsc" ] \
    || [ ! -x "$NODE_DIR/node_modules/.bin/openapi-typescript" ]; then
    echo "clients: installing the npm packages into $NODE_DIR"
    mkdir -p "$NODE_DIR"
    rm -f "$NODE_DIR/.installed"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$stamp" >"$NODE_DIR/.installed"
fi

# Python: the venv the other scripted checks use; (re)installed when
# requirements.txt differs from the one the venv was last installed from.
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
py_stamp="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.confab-clients" 2>/dev/null || true)" != "$py_stamp" ] \
    || [ ! -x "$VENV/bin/openapi-python-client" ] || [ ! -x "$VENV/bin/ruff" ]; then
    echo "clients: installing the Python tools of requirements.txt into $VENV"
    rm -f "$VENV/.confab-clients"
    "$VENV/bin/pip" install -q -r "$HERE/requirements.txt"
    echo "$py_stamp" >"$VENV/.confab-clients"
fi

# --- the server --------------------------------------------------------------

WORK="$(mktemp -d "${TMPDIR:-/tmp}/confab-clients.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "${CONFAB_CLIENTS_KEEP:-}" = 1 ]; then
        echo "clients: kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"
export DATABASE_URL="$WORK/c.db"

# The scripts' webhook points at this host (nothing listens there).
CONFAB_LISTEN="127.0.0.1:$PORT" CONFAB_WEBHOOK_ALLOW_PRIVATE=true \
    "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
ready=""
for _ in $(seq 1 100); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz" || true)" = 200 ]; then
        ready=1
        break
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [ -z "$ready" ]; then
    echo "clients: the server did not become ready on $URL; its log:" >&2
    cat "$WORK/server.log" >&2
    exit 1
fi

# --- users -------------------------------------------------------------------

# bob and carol to talk to, and the server key the scripts act as a backend
# with (they make their own contact and its token through /v1/admin).
contact_id() {
    "$BIN" contact create --username "$1" --phone-number "$2" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
BOB_ID="$(contact_id bob +15550101)"
CAROL_ID="$(contact_id carol +15550102)"
SERVER_KEY="$("$BIN" key create --name clients \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')"
[ -n "$BOB_ID" ] && [ -n "$CAROL_ID" ] && [ -n "$SERVER_KEY" ]
export CONFAB_URL="$URL" CONFAB_SERVER_KEY="$SERVER_KEY" BOB_ID CAROL_ID

curl -sf -o "$WORK/openapi.json" "$URL/openapi.json"

# --- the clients -------------------------------------------------------------

results=()
status=0

# TypeScript: the types as the command line writes them, type-checked
# alone; the types as gen-types.mjs writes them (files as Blob and
# FormData), type-checked with client.ts, which then runs. Both are written
# as .ts, not .d.ts: tsc checks every line of a .ts file (`skipLibCheck`
# skips declaration files).
ts_dir="$WORK/ts"
mkdir -p "$ts_dir"
cp "$HERE/client.ts" "$HERE/gen-types.mjs" "$HERE/tsconfig.json" "$HERE/tsconfig.cli.json" \
    "$HERE/package.json" "$ts_dir/"
ln -s "$NODE_DIR/node_modules" "$ts_dir/node_modules"
ts_status=0
if ! "$NODE_DIR/node_modules/.bin/openapi-typescript" "$WORK/openapi.json" \
    -o "$ts_dir/cli.ts" >"$WORK/openapi-typescript.log" 2>&1; then
    cat "$WORK/openapi-typescript.log" >&2
    echo "typescript: FAIL openapi-typescript could not generate the types"
    ts_status=1
elif ! (cd "$ts_dir" && "$NODE_DIR/node_modules/.bin/tsc" -p tsconfig.cli.json); then
    echo "typescript: FAIL tsc --noEmit: the command line's types do not type-check"
    ts_status=1
elif ! (cd "$ts_dir" && node gen-types.mjs "$WORK/openapi.json" schema.ts); then
    echo "typescript: FAIL gen-types.mjs could not generate the types"
    ts_status=1
elif ! (cd "$ts_dir" && "$NODE_DIR/node_modules/.bin/tsc" -p tsconfig.json); then
    echo "typescript: FAIL tsc: the generated types and client.ts do not type-check"
    ts_status=1
else
    echo "typescript: ok   tsc: both outputs of openapi-typescript type-check"
    if ! (cd "$ts_dir" && node out/client.js); then
        ts_status=1
    fi
fi
if [ "$ts_status" = 0 ]; then
    results+=("typescript (openapi-typescript + openapi-fetch): ok")
else
    results+=("typescript (openapi-typescript + openapi-fetch): FAILED")
    status=1
fi

# Python: generate the package confab_client; check that every operation
# has its module, that every module imports and that no name is undefined
# (ruff's pyflakes checks); then run client.py with it on the path.
py_dir="$WORK/py"
mkdir -p "$py_dir"
py_status=0
# The generator formats its output with ruff, installed beside it in the venv.
if ! (cd "$py_dir" && PATH="$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate \
    --path "$WORK/openapi.json" --meta none --output-path confab_client \
    >"$WORK/openapi-python-client.log" 2>&1); then
    cat "$WORK/openapi-python-client.log" >&2
    echo "python: FAIL openapi-python-client could not generate the package"
    py_status=1
elif ! (cd "$py_dir" && PYTHONPATH="$py_dir" "$VENV/bin/python" "$HERE/check_python.py" \
    "$WORK/openapi.json" confab_client); then
    py_status=1
elif ! "$VENV/bin/ruff" check --isolated --no-cache --quiet \
    --select F821,F822,F823,E9 "$py_dir/confab_client"; then
    echo "python: FAIL ruff: undefined names in the generated package"
    py_status=1
elif ! PYTHONPATH="$py_dir" "$VENV/bin/python" "$HERE/client.py"; then
    py_status=1
fi
if [ "$py_status" = 0 ]; then
    results+=("python (openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION): ok")
else
    results+=("python (openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION): FAILED")
    status=1
fi

echo
for line in "${results[@]}"; do
    echo "clients: $line"
done
if [ "$status" != 0 ] && [ "${CONFAB_CLIENTS_KEEP:-}" != 1 ]; then
    echo "clients: rerun with CONFAB_CLIENTS_KEEP=1 to keep the generated clients and the server's log"
fi
exit "$status"
