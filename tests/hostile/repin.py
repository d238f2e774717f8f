"""Writes that change nothing, in a 2,000-member group (see repin.sh).

Seeds a group of MEMBERS contacts through the server API, then one member
pins the message that is already pinned, again and again, for SECONDS,
and the database must not grow past LIMIT bytes. Then it measures what
one real change costs: pinning another message, and renaming the group,
each done CHANGES times, the database's growth divided by CHANGES.

Only the standard library: http.client on keep-alive connections, a few
threads for the seeding. Prints one line per figure; exits 1 when the
re-pins grew the database past the limit (or a request failed).
"""

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time


class Api:
    """One keep-alive connection; `auth` is a token or a server key."""

    def __init__(self, port, auth, acting_for=None):
        self.port = port
        self.headers = {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"}
        if acting_for:
            self.headers["Confab-Contact"] = acting_for
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None, expect=(200, 201)):
        data = json.dumps(body) if body is not None else None
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=data, headers=self.headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                # The server closed an idle keep-alive connection: reopen.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt == 2:
                    raise
        if resp.status == 429:
            time.sleep(float(resp.getheader("Retry-After", "1")))
            return self.call(method, path, body, expect)
        if resp.status not in expect:
            raise SystemExit(f"repin: {method} {path}: {resp.status} {raw[:300]!r}")
        return json.loads(raw) if raw else None


def seed_contacts(port, key, count, threads=8):
    ids = [None] * count

    def work(first):
        api = Api(port, key)
        for i in range(first, count, threads):
            c = api.call("POST", "/v1/admin/contacts",
                         {"username": f"member{i:05d}", "phone_number": f"+1555{i:07d}"})
            ids[i] = c["id"]

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if any(i is None for i in ids):
        raise SystemExit("repin: some contacts were not created")
    return ids


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--size-cmd", required=True, help="a shell command printing the database's size in bytes")
    p.add_argument("--members", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--limit", type=int, default=1_000_000)
    p.add_argument("--changes", type=int, default=20)
    a = p.parse_args()

    def size():
        out = subprocess.run(a.size_cmd, shell=True, check=True, capture_output=True, text=True)
        return int(out.stdout.strip())

    t0 = time.monotonic()
    ids = seed_contacts(a.port, a.key, a.members)
    owner, member = ids[0], ids[1]
    as_owner = Api(a.port, a.key, acting_for=owner)
    half = a.members // 2
    group = as_owner.call("POST", "/v1/groups", {"name": "everyone", "contact_ids": ids[1:half]})
    as_owner.call("PUT", f"/v1/groups/{group['id']}", {"add_contact_ids": ids[half:]})
    conv = as_owner.call("POST", "/v1/conversations", {"group_id": group["id"]})
    first = as_owner.call("POST", "/v1/messages", {"conversation_id": conv["id"], "message": "pin me"})
    second = as_owner.call("POST", "/v1/messages", {"conversation_id": conv["id"], "message": "or me"})
    token = Api(a.port, a.key).call("POST", f"/v1/admin/contacts/{member}/tokens", {})["token"]
    mallory = Api(a.port, token)
    got = as_owner.call("GET", f"/v1/groups/{group['id']}")
    print(f"repin: seeded {got['member_count']} members in {time.monotonic() - t0:.1f} s", flush=True)
    if got["member_count"] != a.members:
        raise SystemExit("repin: the group is not whole")

    path = f"/v1/conversations/{conv['id']}"
    # The first pin is a change; every one after it is not.
    mallory.call("PUT", path, {"pinned_message_id": first["id"]})
    time.sleep(1.0)
    before = size()
    end = time.monotonic() + a.seconds
    n = 0
    while time.monotonic() < end:
        answer = mallory.call("PUT", path, {"pinned_message_id": first["id"]})
        if answer["pinned_message_id"] != first["id"]:
            raise SystemExit(f"repin: a re-pin answered {answer}")
        n += 1
    time.sleep(1.0)
    grew = size() - before
    print(f"repin: {n} re-pins in {a.seconds:.0f} s grew the database by {grew} bytes "
          f"(limit {a.limit})", flush=True)

    # What real changes cost, each: the growth over `changes` of them.
    def per_change(what, change):
        time.sleep(0.5)
        start = size()
        for i in range(a.changes):
            change(i)
        time.sleep(1.0)
        each = (size() - start) / a.changes
        print(f"repin: one {what} in a {a.members}-member group: {each:.0f} bytes "
              f"(growth over {a.changes})", flush=True)

    per_change("pin change", lambda i: mallory.call(
        "PUT", path, {"pinned_message_id": (second if i % 2 == 0 else first)["id"]}))
    per_change("group rename", lambda i: as_owner.call(
        "PUT", f"/v1/groups/{group['id']}", {"name": f"everyone {i}"}))
    return 0 if grew < a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
