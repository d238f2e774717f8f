#!/usr/bin/env python3
"""The chaos test's clients and its verdict (Python 3, standard library only).

    chaos.py load  BASE_URL CLIENTS_JSON STOP_FILE RESULTS_JSON
    chaos.py check RESULTS_JSON EVENTS_FILE FOUND_FILE

`load`: one thread per client (CLIENTS_JSON: [{"name", "token"}], plus a
"peer" contact id), each with its own conversation (every second one a
group conversation: a group of the client and the peer), sends messages with
unique texts, each with its own Idempotency-Key, and retries the same
request with the same key on any failure (connection refused or reset, a
timeout, 409, 5xx) until it is acknowledged (201, or a replay). When
STOP_FILE appears each client finishes the message it is on and stops.
Every attempt is recorded (start, end, outcome).

`check`: compares what was acknowledged with what the database holds
(FOUND_FILE: every message text, one a line) and measures the requests in
flight during the stall (EVENTS_FILE: `stall_start <epoch>` and
`stall_end <epoch>` lines). Exit 1 on any loss, duplicate, unsent text,
unexpected answer, or a request in flight during the stall that took over
2.5 s.
"""

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

REQUEST_TIMEOUT = 10.0  # seconds; well over the 2.5 s bound, so a long wait shows
RETRY_PAUSE = 0.05
DRAIN_FOR = 30.0  # seconds after STOP_FILE a client may keep retrying
STALL_BOUND = 2.5
RETRIED = {409, 500, 502, 503, 504}


def request(base, method, path, token, form=None, key=None):
    """(status, headers, body) or (None, None, error text) on a transport failure."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    if key is not None:
        req.add_header("Idempotency-Key", key)
    try:
        with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode(errors="replace")
    except (OSError, urllib.error.URLError) as e:
        return None, None, repr(e)


class Client(threading.Thread):
    def __init__(self, base, name, token, peer, stop_file, run_id, in_group=False):
        super().__init__(daemon=True)
        self.in_group = in_group
        self.base, self.name, self.token, self.peer = base, name, token, peer
        self.stop_file, self.run_id = stop_file, run_id
        self.attempts = []  # [start, end, status or None, text or None]
        self.sent = []  # texts whose first attempt was made
        self.acked = []  # texts acknowledged
        self.unexpected = []  # answers that are neither success nor retried
        self.conversation = None
        self.drain_until = None

    def stopping(self):
        """Whether the run is over; then a client has DRAIN_FOR more seconds."""
        if self.drain_until is None and os.path.exists(self.stop_file):
            self.drain_until = time.time() + DRAIN_FOR
        return self.drain_until is not None

    def post(self, path, form, key):
        """Retries with the same key until acknowledged; the response body,
        or None on an unexpected answer or when the drain time is over."""
        while True:
            start = time.time()
            status, headers, body = request(self.base, "POST", path, self.token, form, key)
            end = time.time()
            self.attempts.append([start, end, status, form.get("message")])
            if status == 201 or (status == 200 and headers.get("Idempotent-Replayed") == "true"):
                return body
            if status is not None and status not in RETRIED:
                self.unexpected.append(f"{self.name} {path} {status}: {body[:200]}")
                return None
            if self.stopping() and time.time() > self.drain_until:
                return None
            time.sleep(RETRY_PAUSE)

    def run(self):
        if self.in_group:
            body = self.post(
                "/v1/groups",
                {"name": f"chaos {self.name}", "contact_ids[]": self.peer},
                str(uuid.uuid4()),
            )
            if body is None:
                return
            target = {"group_id": json.loads(body)["id"]}
        else:
            target = {"contact_id": self.peer}
        body = self.post("/v1/conversations", target, str(uuid.uuid4()))
        if body is None:
            return
        self.conversation = json.loads(body)["id"]
        seq = 0
        while not self.stopping():
            text = f"chaos-{self.run_id}-{self.name}-{seq}"
            seq += 1
            self.sent.append(text)
            form = {"conversation_id": self.conversation, "message": text}
            if self.post("/v1/messages", form, str(uuid.uuid4())) is not None:
                self.acked.append(text)


def load(base, clients_json, stop_file, results_json):
    with open(clients_json) as f:
        setup = json.load(f)
    run_id = uuid.uuid4().hex[:8]
    clients = [
        Client(base, c["name"], c["token"], setup["peer"], stop_file, run_id, i % 2 == 1)
        for i, c in enumerate(setup["clients"])
    ]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    results = {
        "run_id": run_id,
        "clients": len(clients),
        "conversations": sum(1 for c in clients if c.conversation),
        "sent": [t for c in clients for t in c.sent],
        "acked": [t for c in clients for t in c.acked],
        "attempts": [a for c in clients for a in c.attempts],
        "unexpected": [u for c in clients for u in c.unexpected],
    }
    with open(results_json, "w") as f:
        json.dump(results, f)


def check(results_json, events_file, found_file):
    with open(results_json) as f:
        r = json.load(f)
    events = {}
    with open(events_file) as f:
        for line in f:
            name, _, value = line.strip().partition(" ")
            if value:
                events[name] = float(value)
    prefix = f"chaos-{r['run_id']}-"
    with open(found_file) as f:
        found = [line.rstrip("\n") for line in f if line.startswith(prefix)]
    counts = {}
    for text in found:
        counts[text] = counts.get(text, 0) + 1
    sent, acked = set(r["sent"]), set(r["acked"])
    lost = sorted(t for t in acked if counts.get(t, 0) == 0)
    duplicated = sorted(t for t, n in counts.items() if n > 1)
    extra_copies = sum(n - 1 for n in counts.values() if n > 1)
    unsent = sorted(t for t in counts if t not in sent)
    attempts = r["attempts"]
    stall_start, stall_end = events.get("stall_start"), events.get("stall_end")
    in_stall = [
        a for a in attempts if stall_start is not None and a[0] <= stall_end and a[1] >= stall_start
    ]
    worst_stall = max((a[1] - a[0] for a in in_stall), default=0.0)
    worst_all = max((a[1] - a[0] for a in attempts), default=0.0)
    by_status = {}
    for a in attempts:
        key = str(a[2]) if a[2] is not None else "no answer"
        by_status[key] = by_status.get(key, 0) + 1

    print(f"clients:         {r['clients']} ({r['conversations']} conversations)")
    print(f"sent:            {len(sent)}")
    print(f"acknowledged:    {len(acked)}")
    print(f"found:           {len(counts)} distinct texts, {len(found)} rows")
    print(f"lost:            {len(lost)}")
    print(f"duplicated:      {len(duplicated)} texts ({extra_copies} extra rows)")
    print(f"never sent:      {len(unsent)}")
    print(f"attempts:        {len(attempts)} " + json.dumps(dict(sorted(by_status.items()))))
    if stall_start is not None:
        print(
            f"stall:           {stall_end - stall_start:.1f} s, {len(in_stall)} requests in flight, "
            f"worst {worst_stall:.3f} s (bound {STALL_BOUND} s)"
        )
    else:
        print("stall:           none recorded")
    print(f"worst request:   {worst_all:.3f} s (whole run, server kill and restarts included)")
    t0 = min((a[0] for a in attempts), default=0.0)
    marks = sorted((v, k) for k, v in events.items())

    def when(text):
        """When the text was first sent, and the fault nearest that time."""
        first = min((a[0] for a in attempts if a[3] == text), default=None)
        if first is None or not marks:
            return text
        at, fault = min(marks, key=lambda m: abs(m[0] - first))
        return f"{text} (first sent at {first - t0:.1f} s; nearest fault: {fault} at {at - t0:.1f} s)"

    duplicated = [when(t) for t in duplicated]
    lost = [when(t) for t in lost]
    for label, items in (("LOST", lost), ("DUPLICATED", duplicated), ("NEVER SENT", unsent),
                         ("UNEXPECTED", r["unexpected"])):
        for item in items[:10]:
            print(f"  {label}: {item}")
    failed = (
        lost or duplicated or unsent or r["unexpected"] or stall_start is None
        or worst_stall > STALL_BOUND or r["conversations"] != r["clients"]
    )
    print("verdict:         " + ("FAIL" if failed else "PASS"))
    return 1 if failed else 0


def main(argv):
    if len(argv) == 6 and argv[1] == "load":
        load(*argv[2:])
        return 0
    if len(argv) == 5 and argv[1] == "check":
        return check(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
