#!/usr/bin/env bash
# Runs every shell example the docs mark runnable against a live server, as
# a reader would paste them: the README and each page of the book in the
# order docs/SUMMARY.md lists them, each page's blocks in order in one shell
# (so a variable set by one block is there for the next), with
# `bash -euo pipefail`, against one `confab serve` on a fresh SQLite file.
# Fails on the first block that exits non-zero, naming it.
#
#   tests/docs/run.sh [BIN] [PAGE.md ...]    BIN defaults to target/debug/confab
#   CONFAB_DOCS_VERBOSE=1 tests/docs/run.sh  also prints what each page's blocks printed
#
# A block is runnable when the line before its ```sh fence (blank lines
# aside) is `<!-- runnable -->`, or `<!-- quickstart -->` (the README's
# quickstart, which tests/quickstart/transcript.sh also checks). The blocks
# see CONFAB_URL (the server's address), `confab` on PATH, and the server's
# directory as their working directory, so the CLI reaches the same
# confab.db; nothing outside 127.0.0.1 is reached.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$(realpath "${1:-target/debug/confab}")
shift || true
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build -p confab-server)" >&2; exit 1; }

if [ $# -gt 0 ]; then
    pages=("$@")
else
    pages=(README.md)
    while IFS= read -r page; do pages+=("docs/$page"); done < <(
        grep -o '([^)]*\.md)' docs/SUMMARY.md | tr -d '()')
fi

work=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$work/bin" "$work/server"
ln -s "$BIN" "$work/bin/confab"
(cd "$work/server" && exec env -u DATABASE_URL CONFAB_LISTEN=127.0.0.1:$port RUST_LOG=warn \
    "$BIN" serve >"$work/server.log" 2>&1) &
server=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || { cat "$work/server.log" >&2; exit 1; }

# One script per page: each block announced, then run as written.
extract() {
    python3 - "$1" <<'PY'
import re, shlex, sys
path = sys.argv[1]
lines = open(path).read().split("\n")
marked, i, n = False, 0, 0
while i < len(lines):
    line = lines[i].strip()
    if line in ("<!-- runnable -->", "<!-- quickstart -->"):
        marked = True
    elif marked and line == "":
        pass
    elif marked and re.fullmatch(r"```(sh|bash)", line):
        start = i + 1
        end = start
        while lines[end].strip() != "```":
            end += 1
        n += 1
        where = f"{path}:{start}"
        print(f"__block {shlex.quote(where)}")
        print("\n".join(lines[start:end]))
        i = end
        marked = False
    else:
        if marked:
            sys.exit(f"{path}:{i + 1}: a runnable marker must be followed by a ```sh block")
        marked = False
    i += 1
print(f"__done {n}")
PY
}

passed=0
failed=0
for page in "${pages[@]}"; do
    script="$work/$(echo "$page" | tr '/' '_').sh"
    {
        echo '__BLOCK=""'
        echo '__block() { __BLOCK=$1; echo ">>> $1" >&2; }'
        echo '__done() { echo "__blocks $1" >&2; }'
        echo 'trap '\''echo "!!! failed: $__BLOCK" >&2'\'' ERR'
        extract "$page"
    } >"$script"
    blocks=$(grep -c '^__block ' "$script" || true)
    [ "$blocks" -gt 0 ] || continue
    log="$work/$(basename "$script" .sh).log"
    if (cd "$work/server" && timeout 300 env -u DATABASE_URL PATH="$work/bin:$PATH" \
        CONFAB_URL="http://127.0.0.1:$port" bash -euo pipefail "$script") >"$log" 2>&1; then
        echo "$page: $blocks runnable block(s) passed"
        [ -z "${CONFAB_DOCS_VERBOSE:-}" ] || cat "$log"
        passed=$((passed + blocks))
    else
        echo "$page: a runnable block failed; its output:" >&2
        tail -n 40 "$log" >&2
        failed=$((failed + 1))
    fi
done
echo "docs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
