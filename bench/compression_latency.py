#!/usr/bin/env python3
"""Compressed answers on a kept-alive connection (docs/api.md
"Requests and answers", "Compression costs no wait").

Usage: bench/compression_latency.py BINARY [BINARY...]

For each binary: a fresh SQLite database (migrate, two contacts, a token,
a conversation with 30 messages through the API), `confab serve` on
127.0.0.1, then REQUESTS (default 200) `GET /v1/messages?conversation_id=`
(about 9 KiB of JSON, 1-2 KiB gzipped) on ONE kept-alive connection, with
`Accept-Encoding: gzip` and without. Prints, per binary and encoding, the
median, 90th percentile and largest time to the whole answer, and how many
took over 20 ms (a delayed-ACK stall is 40 ms). Everything stays on
127.0.0.1; the servers and their files go at the end.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

REQUESTS = int(os.environ.get("REQUESTS", "200"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cli(binary, db, *args):
    out = subprocess.run(
        [binary, *args],
        env={**os.environ, "DATABASE_URL": db},
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def call(port, method, path, token, form=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = urllib.parse.urlencode(form) if form else None
    headers = {"Authorization": f"Bearer {token}"}
    if body:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return json.loads(data)


def measure(binary):
    work = tempfile.mkdtemp()
    db = os.path.join(work, "c.db")
    cli(binary, db, "migrate")
    cli(binary, db, "contact", "create", "--username", "alice", "--phone-number", "+15550100")
    bob = json.loads(
        cli(binary, db, "contact", "create", "--username", "bob", "--phone-number", "+15550101")
    )
    token = cli(binary, db, "token", "issue", "--username", "alice")
    port = free_port()
    server = subprocess.Popen(
        [binary, "serve"],
        env={
            **os.environ,
            "DATABASE_URL": db,
            "CONFAB_LISTEN": f"127.0.0.1:{port}",
            "RUST_LOG": "warn",
            "CONFAB_RATE_LIMIT_PER_SECOND": "0",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        conv = call(port, "POST", "/v1/conversations", token, {"contact_id": bob["id"]})["id"]
        for i in range(30):
            call(port, "POST", "/v1/messages", token,
                 {"conversation_id": conv, "message": f"message number {i} " + "words " * 30})
        path = f"/v1/messages?conversation_id={conv}&limit=30"
        results = {}
        for encoding in ["gzip", "identity"]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            times = []
            size = 0
            for _ in range(REQUESTS):
                started = time.perf_counter()
                conn.request("GET", path, headers={
                    "Authorization": f"Bearer {token}",
                    "Accept-Encoding": encoding,
                })
                r = conn.getresponse()
                size = len(r.read())
                times.append((time.perf_counter() - started) * 1000)
                if r.status != 200:
                    raise SystemExit(f"{binary}: {r.status}")
            conn.close()
            times.sort()
            results[encoding] = {
                "bytes": size,
                "p50": times[len(times) // 2],
                "p90": times[int(len(times) * 0.9)],
                "max": times[-1],
                "over_20ms": sum(1 for t in times if t > 20),
            }
        return results
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    print(f"{REQUESTS} requests on one kept-alive connection, per binary and encoding")
    print("| binary | encoding | answer bytes | p50 ms | p90 ms | max ms | over 20 ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for binary in sys.argv[1:]:
        for encoding, r in measure(binary).items():
            print(f"| {binary} | {encoding} | {r['bytes']} | {r['p50']:.2f} | {r['p90']:.2f} "
                  f"| {r['max']:.2f} | {r['over_20ms']} |")


if __name__ == "__main__":
    main()
