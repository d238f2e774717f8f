#!/usr/bin/env python3
"""Load for GET /v1/events (run through bench/events.sh).

Opens STREAMS event streams (spread over RECIPIENTS contacts, each in a
direct conversation with one sender), then sends RATE messages per second
for DURATION seconds round-robin over those conversations, and measures for
every (message, stream that should get it) the time from the send's 201 to
the event's frame on the stream. Prints p50/p99/max, lost and duplicated
deliveries, and the server's RSS (VmRSS with the streams open, VmHWM at the
end). Standard library only: HTTP/1.1 over asyncio sockets.
"""

import asyncio
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import urllib.parse

HOST = "127.0.0.1"
PORT = int(os.environ["CONFAB_PORT"])
BIN = os.environ["CONFAB_BIN"]
PID = int(os.environ["CONFAB_PID"])
STREAMS = int(os.environ.get("STREAMS", "1000"))
RECIPIENTS = int(os.environ.get("RECIPIENTS", "200"))
RATE = int(os.environ.get("RATE", "200"))
DURATION = float(os.environ.get("DURATION", "30"))
SENDERS = int(os.environ.get("SENDERS", "16"))


def cli(*args):
    out = subprocess.run([BIN, *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def make_user(name):
    contact = json.loads(
        cli("contact", "create", "--username", name, "--phone-number", "+15550100")
    )
    return {"id": contact["id"], "token": cli("token", "issue", "--username", name)}


def rss_kib(field):
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Conn:
    """One keep-alive HTTP/1.1 connection for request/response."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls):
        r, w = await asyncio.open_connection(HOST, PORT)
        return cls(r, w)

    async def request(self, method, path, token, form=None):
        body = urllib.parse.urlencode(form).encode() if form else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n"
        if form:
            head += "Content-Type: application/x-www-form-urlencoded\r\n"
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
        data = await self.reader.readexactly(length) if length else b""
        return status, data


async def stream(token, ready, on_event, stop):
    """Reads one event stream (chunked transfer) until `stop`."""
    r, w = await asyncio.open_connection(HOST, PORT)
    w.write(
        f"GET /v1/events HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await w.drain()
    status = int((await r.readline()).split()[1])
    assert status == 200, status
    while (await r.readline()) not in (b"\r\n", b""):
        pass
    buf = b""
    opened = False
    try:
        while not stop.is_set():
            size = int((await r.readline()).strip(), 16)
            if size == 0:
                break
            chunk = await r.readexactly(size + 2)
            now = time.monotonic()
            buf += chunk[:-2]
            while b"\n\n" in buf:
                frame, buf = buf.split(b"\n\n", 1)
                if not opened:
                    opened = True
                    ready.set_result(None)
                    continue
                if b"event: message.created\n" in frame:
                    for line in frame.split(b"\n"):
                        if line.startswith(b"data: "):
                            event = json.loads(line[6:])
                            on_event(event["payload"]["id"], now)
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        w.close()


async def main():
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        sender = make_user("sender")
        recipients = list(pool.map(make_user, [f"r{i}" for i in range(RECIPIENTS)]))
    print(f"{RECIPIENTS + 1} contacts in {time.monotonic() - t0:.1f} s", flush=True)
    conn = await Conn.open()
    for rcp in recipients:
        status, data = await conn.request(
            "POST", "/v1/conversations", sender["token"], {"contact_id": rcp["id"]}
        )
        assert status == 201, (status, data)
        rcp["conversation"] = json.loads(data)["id"]

    # Streams: STREAMS spread over the recipients.
    arrivals = {}  # message id -> list of (stream index, time)
    stop = asyncio.Event()
    streams_of = {}
    tasks = []
    for i in range(STREAMS):
        rcp = recipients[i % RECIPIENTS]
        streams_of.setdefault(rcp["conversation"], []).append(i)
        ready = asyncio.get_running_loop().create_future()

        def on_event(mid, at, i=i):
            arrivals.setdefault(mid, []).append((i, at))

        tasks.append(asyncio.create_task(stream(rcp["token"], ready, on_event, stop)))
        await ready
    await asyncio.sleep(1)
    rss_streams = rss_kib("VmRSS")
    print(f"{STREAMS} streams open; server RSS {rss_streams / 1024:.1f} MiB", flush=True)

    # Sends: RATE per second, round-robin, over SENDERS connections.
    sent = {}  # message id -> (conversation, time of the 201)
    errors = 0
    queue = asyncio.Queue()
    for _ in range(SENDERS):
        queue.put_nowait(await Conn.open())

    async def send_one(n):
        nonlocal errors
        c = await queue.get()
        conv = recipients[n % RECIPIENTS]["conversation"]
        try:
            status, data = await c.request(
                "POST", "/v1/messages", sender["token"],
                {"conversation_id": conv, "message": f"load {n}"},
            )
            now = time.monotonic()
            if status == 201:
                sent[json.loads(data)["id"]] = (conv, now)
            else:
                errors += 1
        finally:
            queue.put_nowait(c)

    start = time.monotonic()
    n = 0
    pending = []
    while time.monotonic() - start < DURATION:
        due = start + n / RATE
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.create_task(send_one(n)))
        n += 1
    await asyncio.gather(*pending)
    elapsed = time.monotonic() - start
    await asyncio.sleep(2)  # the last deliveries
    stop.set()
    peak = rss_kib("VmHWM")
    rss_end = rss_kib("VmRSS")
    for t in tasks:
        t.cancel()

    latencies = []
    lost = dup = 0
    for mid, (conv, t201) in sent.items():
        got = arrivals.get(mid, [])
        want = set(streams_of[conv])
        seen = [i for i, _ in got]
        dup += len(seen) - len(set(seen))
        lost += len(want - set(seen))
        latencies += [max(0.0, at - t201) for _, at in got]
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    print(
        json.dumps(
            {
                "streams": STREAMS,
                "recipients": RECIPIENTS,
                "sends": len(sent),
                "send_errors": errors,
                "send_rate": round(len(sent) / elapsed, 1),
                "deliveries": len(latencies),
                "lost": lost,
                "duplicated": dup,
                "p50_ms": round(pct(0.50), 1),
                "p99_ms": round(pct(0.99), 1),
                "max_ms": round(latencies[-1] * 1000, 1),
                "rss_streams_mib": round(rss_streams / 1024, 1),
                "rss_end_mib": round(rss_end / 1024, 1),
                "rss_peak_mib": round(peak / 1024, 1),
            }
        )
    )


asyncio.run(main())
