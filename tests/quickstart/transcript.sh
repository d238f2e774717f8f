#!/usr/bin/env bash
# Runs the README's quickstart block exactly as written, twice on one fresh
# database (it must be rerunnable), against a real `confab serve`, and keeps
# the second run's transcript in docs/api.md.
#
#   tests/quickstart/transcript.sh           rewrite the transcript in docs/api.md
#   tests/quickstart/transcript.sh --check   fail if the output's shape changed
#
# The shape is the output with ids, tokens, timestamps, dates, lengths and the
# run's suffix replaced by placeholders; anything else that differs (a field,
# a status, an error message) fails the check. CONFAB_BIN names the binary
# (default target/debug/confab, built by `cargo test`).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$(realpath "${CONFAB_BIN:-target/debug/confab}")
MODE=${1:-write}
README=README.md
DOC=docs/api.md

# The fenced block after the marker line in the README.
block=$(awk '/<!-- quickstart -->/ {on=1; next} on && /^```sh$/ {inblock=1; next} inblock && /^```$/ {exit} inblock' "$README")
[ -n "$block" ] || { echo "no quickstart block in $README" >&2; exit 1; }

work=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$work/bin"
ln -s "$BIN" "$work/bin/confab"
# `exec`: the subshell becomes the server, so that `$server` is the
# server's own process and the cleanup stops it (not only the subshell).
(cd "$work" && exec env -u DATABASE_URL CONFAB_LISTEN=127.0.0.1:$port RUST_LOG=warn "$BIN" serve >"$work/server.log" 2>&1) &
server=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || { cat "$work/server.log" >&2; exit 1; }

# Each logical line of the block (continuations joined) is shown after `$ `
# and run in one shell, so variables carry over as they do in a terminal.
run_block() {
    local script="$work/run.sh" buf="" line
    {
        echo 'set -e'
        while IFS= read -r line; do
            if [[ $line == *\\ ]]; then
                buf+="${line%\\} "
                continue
            fi
            line="$buf$line"
            buf=""
            [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
            printf 'printf "%%s\\n" %q\n' "\$ $line"
            printf '%s\n' "$line"
        done <<<"$block"
    } >"$script"
    (cd "$work" && env -u DATABASE_URL PATH="$work/bin:$PATH" CONFAB_URL="http://127.0.0.1:$port" bash "$script")
}

run_block >"$work/first.txt" 2>&1 || { echo "first run failed:" >&2; cat "$work/first.txt" >&2; exit 1; }
run_block >"$work/second.txt" 2>&1 || { echo "second run failed:" >&2; cat "$work/second.txt" >&2; exit 1; }

shape() {
    sed -E \
        -e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<id>/g' \
        -e 's/cfb_[0-9a-f]+/<token>/g' \
        -e 's/-[0-9]{12,}/-<run>/g' \
        -e 's/\b1[0-9]{9}\b/<time>/g' \
        -e 's/^date: .*/date: <date>/' \
        -e 's/^content-length: [0-9]+/content-length: <n>/' \
        -e "s#http://127\.0\.0\.1:$port#http://127.0.0.1:8080#g"
}

begin='<!-- transcript:begin -->'
end='<!-- transcript:end -->'
current=$(awk -v b="$begin" -v e="$end" '$0 == e {on=0} on && !/^```/ {print} $0 == b {on=1}' "$DOC")

if [ "$MODE" = "--check" ]; then
    if diff -u <(printf '%s\n' "$current" | shape) <(shape <"$work/second.txt"); then
        echo "quickstart transcript: same shape as docs/api.md (ran twice on one database)"
    else
        echo "quickstart output changed shape: run tests/quickstart/transcript.sh and review docs/api.md" >&2
        exit 1
    fi
else
    python3 - "$DOC" "$begin" "$end" "$work/second.txt" <<'PY'
import sys
doc, begin, end, out = sys.argv[1:]
text = open(doc).read()
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
body = open(out).read()
open(doc, "w").write(head + begin + "\n```\n" + body + "```\n" + end + tail)
PY
    sed -i -E "s#http://127\.0\.0\.1:$port#http://127.0.0.1:8080#g" "$DOC"
    echo "wrote the transcript into $DOC"
fi
