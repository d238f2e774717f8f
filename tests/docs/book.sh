#!/usr/bin/env bash
# Builds the docs as a book (book.toml: src docs/, out target/book) and
# checks every link, with no network: fails on any warning or error of
# mdbook's (a missing page, an include that does not resolve) and on any
# relative link or #anchor that names nothing (tests/docs/links.py, on the
# Markdown sources and on the built HTML). Needs `mdbook` 0.5 on PATH
# (`cargo install mdbook --locked`; .ci/run installs it into a cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v mdbook >/dev/null || { echo "mdbook is needed: cargo install mdbook --locked" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mdbook build 2>&1 | tee "$log"
if grep -E '(WARN|ERROR)' "$log" >/dev/null; then
    echo "mdbook warned: the book must build cleanly" >&2
    exit 1
fi
python3 tests/docs/links.py target/book
# The first screen of docs/performance.md and its chart agree with the
# benchmark's latest run recorded below them.
python3 bench/chart.py --check
