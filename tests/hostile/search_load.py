"""Costly searches against a running confab, and the victim's view of it
(see search.sh beside this file). Standard library only.

  search_load.py setup   --port P --attacker T --peer T --victim T --friends T,T,...
      makes the conversations (prints the JSON the seed needs);
  search_load.py victim  --port P --token T --conversation C --seconds S
      asks for the victim's inbox (and sends one message in four) for S
      seconds, one request at a time; prints its latencies as JSON;
  search_load.py attack  --port P --token T --seconds S --parallel N
      N threads each keep one costly search in flight for S seconds, never
      faster together than the contact's rate limit; prints what they got.
"""

import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

# Searches that find nothing and whose cost, before the per-search limits,
# followed all of the searcher's messages: terms with no three letters or
# digits in a row (PostgreSQL's trigram index cannot find them), and terms
# made of trigrams every message has but none has whole ("dolor" and
# "lorem" are in every seeded text, "dolorem" in none), for which either
# index hands over every row to be checked. (A term every message has is
# cheap: the newest rows answer it.)
COSTLY = [".-.", "dolorem", "!..", "adipsum", "-.-", "ametur"]

# The rate limit a contact has by default (CONFAB_RATE_LIMIT_PER_SECOND):
# the attacker stays under it, as a patient one would.
RATE_PER_SECOND = 90.0


class Client:
    """One keep-alive connection, reopened when the server closes it."""

    def __init__(self, port, token, timeout=10.0):
        self.port = port
        self.token = token
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, form=None):
        body = None
        headers = {"Authorization": f"Bearer {self.token}"}
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=body, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return resp.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    return 0, b""
        return 0, b""


def must(status, data, want, what):
    if status != want:
        sys.exit(f"search_load: {what}: {status} {data[:300]!r}")
    return json.loads(data)


def setup(args):
    attacker = Client(args.port, args.attacker)
    victim = Client(args.port, args.victim)
    # The attacker's history: one direct conversation (its messages are
    # seeded in SQL from the one sent here).
    conv = must(*attacker.request("POST", "/v1/conversations", {"contact_id": args.peer_id}),
                201, "attacker's conversation")
    msg = must(*attacker.request("POST", "/v1/messages", {
        "conversation_id": conv["id"],
        "message": "lorem ipsum dolor sit amet... consectetur adipiscing elit, 0",
    }), 201, "attacker's first message")
    # The victim's inbox: a conversation with each friend, two messages each.
    first = None
    for friend_id in args.friends.split(","):
        c = must(*victim.request("POST", "/v1/conversations", {"contact_id": friend_id}),
                 201, "victim's conversation")
        first = first or c["id"]
        for text in ("hello there", "see you at noon"):
            must(*victim.request("POST", "/v1/messages", {
                "conversation_id": c["id"], "message": text,
            }), 201, "victim's message")
    print(json.dumps({"conversation": conv["id"], "message": msg["id"], "victim_conversation": first}))


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(p / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def victim(args):
    client = Client(args.port, args.token)
    inbox, sends, failures = [], [], {}
    end = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        send = n % 4 == 0
        started = time.perf_counter()
        if send:
            status, _ = client.request("POST", "/v1/messages", {
                "conversation_id": args.conversation, "message": f"still here {n}",
            })
        else:
            status, _ = client.request("GET", "/v1/conversations?limit=20")
        ms = (time.perf_counter() - started) * 1000.0
        if status not in (200, 201):
            failures[str(status)] = failures.get(str(status), 0) + 1
        (sends if send else inbox).append(ms)
        # About 40 requests a second: a busy client, not a load test.
        time.sleep(0.02)
    inbox.sort()
    sends.sort()
    print(json.dumps({
        "inbox": {"n": len(inbox), "p50": percentile(inbox, 50), "p99": percentile(inbox, 99),
                  "max": inbox[-1] if inbox else float("nan")},
        "send": {"n": len(sends), "p50": percentile(sends, 50), "p99": percentile(sends, 99),
                 "max": sends[-1] if sends else float("nan")},
        "failures": failures,
    }))


def attack(args):
    counts = {}
    lock = threading.Lock()
    end = time.monotonic() + args.seconds
    # Each thread at most its share of the rate limit.
    gap = args.parallel / RATE_PER_SECOND
    queries = args.queries.split(",") if args.queries else COSTLY

    def worker(i):
        client = Client(args.port, args.token, timeout=30.0)
        n = i
        while time.monotonic() < end:
            query = queries[n % len(queries)]
            n += 1
            started = time.monotonic()
            status, data = client.request(
                "GET", "/v1/messages/search?" + urllib.parse.urlencode({"query": query}))
            code = ""
            if status >= 400:
                try:
                    code = json.loads(data).get("code", "")
                except ValueError:
                    code = "?"
            key = f"{status} {code}".strip()
            with lock:
                counts[key] = counts.get(key, 0) + 1
            left = gap - (time.monotonic() - started)
            if left > 0:
                time.sleep(left)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(counts, sort_keys=True))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("setup")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--attacker", required=True)
    s.add_argument("--peer-id", required=True)
    s.add_argument("--victim", required=True)
    s.add_argument("--friends", required=True)
    v = sub.add_parser("victim")
    v.add_argument("--port", type=int, required=True)
    v.add_argument("--token", required=True)
    v.add_argument("--conversation", required=True)
    v.add_argument("--seconds", type=float, required=True)
    a = sub.add_parser("attack")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--token", required=True)
    a.add_argument("--seconds", type=float, required=True)
    a.add_argument("--parallel", type=int, default=8)
    a.add_argument("--queries", default=os.environ.get("SEARCH_QUERIES", ""),
                   help="comma-separated; default: the costly ones above")
    args = p.parse_args()
    {"setup": setup, "victim": victim, "attack": attack}[args.mode](args)


if __name__ == "__main__":
    main()
