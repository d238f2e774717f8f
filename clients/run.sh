#!/usr/bin/env bash
# The TypeScript SDK and the reference web client against a live server:
# installs what it needs (pinned npm packages; Debian's Chromium and an
# emoji font when missing), generates the SDK's types from the given
# binary's own /openapi.json, builds the SDK and the web client, runs the
# SDK's tests in Node (the machine's, and Node 18, the oldest supported,
# from the npm registry's `node` package) and the web client's test in
# headless Chromium, loading the client from the binary itself (its
# built-in copy at /app/, CONFAB_WEB_APP=true).
#
# The server embeds the web client's build from crates/http/webapp/
# (committed, so that `cargo build` needs no Node); this script fails when
# those files differ by a byte from the build of the current sources. To
# refresh them: `node build.mjs --embed` in clients/web (after this script
# or another build of the SDK), then rebuild the binary.
# Exits non-zero on any failure.
#
#   clients/run.sh target/debug/confab
#
# npm packages install from package-lock.json (npm ci) with npm's cache in
# ${CONFAB_CLIENTS_CACHE:-~/.cache/confab-clients}/npm; a node_modules that
# matches its lock file is kept. Screenshots of the browser test go to
# clients/web/test-output/ (CI keeps that directory).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 path/to/confab" >&2
    exit 2
fi
BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[ -x "$BIN" ] || { echo "clients: $1 is not an executable" >&2; exit 2; }
HERE="$(cd "$(dirname "$0")" && pwd)"
SDK="$HERE/typescript"
WEB="$HERE/web"
CACHE="${CONFAB_CLIENTS_CACHE:-$HOME/.cache/confab-clients}"
export CONFAB_BIN="$BIN"

say() { echo "clients: $*"; }

# --- tools -----------------------------------------------------------------

apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "clients: $* missing; install it (apt-get install $*) or run as root" >&2
        exit 1
    fi
    say "installing $* with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null || [ "$(node_major)" -lt 18 ] || ! command -v npm >/dev/null; then
    apt_install nodejs npm
fi
# playwright-core needs Node 20 or later; the SDK itself runs on 18.
if [ "$(node_major)" -lt 20 ]; then
    echo "clients: Node $(node -v) is too old for the browser test (needs 20 or later)" >&2
    exit 1
fi
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || apt_install chromium
# Reactions are emoji: without a colour emoji font they show as boxes.
[ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || apt_install fonts-noto-color-emoji || true
export CHROMIUM

# npm ci when node_modules was not installed from the current package files.
npm_ci() {
    local dir="$1" stamp
    stamp="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$dir/node_modules/.confab-installed" 2>/dev/null || true)" != "$stamp" ]; then
        say "npm ci in ${dir#"$HERE"/}"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error --cache "$CACHE/npm")
        echo "$stamp" >"$dir/node_modules/.confab-installed"
    fi
}
npm_ci "$SDK"

# --- the SDK's types, from the binary's own document -------------------------

WORK="$(mktemp -d "${TMPDIR:-/tmp}/confab-clients.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
DATABASE_URL="$WORK/openapi.db" CONFAB_LISTEN="127.0.0.1:$PORT" RUST_LOG=warn "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 150); do
    if curl -sf -o "$WORK/openapi.json" "http://127.0.0.1:$PORT/openapi.json"; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
if [ ! -s "$WORK/openapi.json" ]; then
    echo "clients: could not read /openapi.json from $BIN; its log:" >&2
    cat "$WORK/server.log" >&2
    exit 1
fi

status=0
results=()
step() {
    local name="$1"
    shift
    say "== $name"
    if "$@"; then
        results+=("ok     $name")
    else
        results+=("FAILED $name")
        status=1
    fi
}

build_sdk() {
    (cd "$SDK" && node scripts/generate-types.mjs "$WORK/openapi.json" && rm -rf dist && npx tsc -p tsconfig.json && npx tsc -p tsconfig.check.json)
}
build_web() {
    npm_ci "$WEB" && (cd "$WEB" && npx tsc -p tsconfig.json --noEmit && node build.mjs)
}
# The copy the binary embeds is the build of these sources, byte for byte;
# and the build is deterministic (a second one gives the same bytes).
EMBEDDED="$HERE/../crates/http/webapp"
embedded_is_current() {
    local file ok=0
    mkdir -p "$WORK/first-build"
    cp "$WEB/dist/index.html" "$WEB/dist/app.js" "$WEB/dist/app.css" "$WORK/first-build/"
    (cd "$WEB" && node build.mjs >/dev/null) || return 1
    for file in index.html app.js app.css; do
        if ! cmp -s "$WORK/first-build/$file" "$WEB/dist/$file"; then
            echo "clients: two builds of the web client differ in $file" >&2
            ok=1
        fi
        if ! cmp -s "$WEB/dist/$file" "$EMBEDDED/$file"; then
            echo "clients: crates/http/webapp/$file is not the build of clients/web's sources;" \
                "run 'node build.mjs --embed' in clients/web and commit it" >&2
            ok=1
        fi
    done
    [ "$(ls "$EMBEDDED" | sort | tr '\n' ' ')" = "app.css app.js index.html " ] || {
        echo "clients: crates/http/webapp/ holds other files than the build's three" >&2
        ok=1
    }
    return "$ok"
}

step "SDK: types generated and built" build_sdk
if [ "$status" = 0 ]; then
    step "SDK: tests against a live server" bash -c "cd '$SDK' && node --test --test-concurrency=2 test/*.test.mjs"
    # The oldest Node the SDK supports, from the npm registry's `node` package.
    step "SDK: the same tests on Node 18" bash -c "$(declare -f npm_ci say); HERE='$HERE' CACHE='$CACHE' npm_ci '$SDK/test/node18' && cd '$SDK' && test/node18/node_modules/.bin/node --test --test-concurrency=2 test/*.test.mjs"
    step "web client: built" build_web
    if [ "${results[-1]}" = "ok     web client: built" ]; then
        step "web client: the copy in the binary is this build" embedded_is_current
        step "web client: browser test (Chromium)" bash -c "cd '$WEB' && node --test test/*.test.mjs"
    fi
fi

echo
for line in "${results[@]}"; do
    say "$line"
done
[ "$status" = 0 ] && say "screenshots in ${WEB#"$PWD"/}/test-output/"
exit "$status"
