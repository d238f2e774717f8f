#!/usr/bin/env bash
# Search under load (docs/api.md "Search messages"), on both stores: the
# benchmark's seed at 1,000,000 messages over 10,000 conversations, a
# contact in 50 of them searching for a common term, a rare one and one
# with no match at 8 connections (wrk, a second process), then sends with
# and without the search index. Prints a table; exits 1 when a search's
# p99 is 50 ms or more, or sends with the index run below 0.9x of their
# rate without it. Details, knobs and what is checked: bench/search.py.
#
#   bench/search.sh                                   # both stores
#   BENCH_STORES=sqlite BENCH_BIN=target/release/confab bench/search.sh
#
# Needs wrk, psql and pgbench (bench/README.md), PostgreSQL at
# 127.0.0.1:5432 (user postgres, trust) for the postgres store, and a
# release build (built here unless BENCH_BIN names a binary).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BENCH_BIN:-}" ]; then
    cargo build --release -p confab-server
    export BENCH_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/confab"
fi
exec python3 bench/search.py
