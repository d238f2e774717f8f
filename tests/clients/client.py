"""The Python half of tests/clients/run.sh: the package openapi-python-client
generated from the live server's /openapi.json (importable as
`confab_client`, run.sh puts it on PYTHONPATH), acting as alice.

Environment: CONFAB_URL, CONFAB_TOKEN (alice's), BOB_ID, CAROL_ID.
Prints one line per step and a closing "python: N passed, N failed"; exits 1
if any step failed. A failed step also shows the request the generated code
sent (its Content-Type and body), to tell a document problem from a server
one.
"""

import os
import re
import sys
import time
import traceback
from uuid import UUID

import httpx

from confab_client import AuthenticatedClient
from confab_client.api.conversations import create_conversation, update_conversation
from confab_client.api.events import create_event_ticket
from confab_client.api.groups import create_group
from confab_client.api.messages import list_messages, send_message, update_message
from confab_client.models import (
    CreateConversationIn,
    CreateGroupIn,
    NoParams,
    SendMessageIn,
    UpdateConversationIn,
    UpdateMessageIn,
    UpdateMessageInReactions,
)


def env(name):
    value = os.environ.get(name)
    if not value:
        print(f"python: {name} is not set", file=sys.stderr)
        sys.exit(2)
    return value


class StepError(Exception):
    pass


last_request = {}


def remember(request: httpx.Request):
    request.read()
    last_request["line"] = f"{request.method} {request.url.raw_path.decode()}"
    last_request["content_type"] = request.headers.get("content-type")
    last_request["body"] = request.content.decode("utf-8", "replace")


client = AuthenticatedClient(
    base_url=env("CONFAB_URL"),
    token=env("CONFAB_TOKEN"),
    timeout=httpx.Timeout(10.0),
    httpx_args={"event_hooks": {"request": [remember]}},
)
bob_id = env("BOB_ID")
carol_id = env("CAROL_ID")


def expect(cond, what):
    if not cond:
        raise StepError(what)


def expect_status(r, want):
    got = int(r.status_code)
    if got != want:
        raise StepError(
            f"status {got}, want {want}: {r.content.decode('utf-8', 'replace')}"
        )


passed = 0
failed = 0


def step(name, needs, body):
    """Runs one step; a step whose prerequisite failed is counted as failed
    without being sent."""
    global passed, failed
    if any(n is None for n in needs):
        failed += 1
        print(f"python: FAIL {name}: skipped (an earlier step failed)")
        return None
    last_request.clear()
    try:
        value = body()
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failed += 1
        why = str(e) if isinstance(e, StepError) else traceback.format_exc().strip()
        print(f"python: FAIL {name}: {why}")
        if last_request:
            print(
                f"python:      sent {last_request['line']}"
                f" Content-Type: {last_request['content_type']}"
                f" body: {last_request['body']!r}"
            )
        return None
    passed += 1
    print(f"python: ok   {name}")
    return value


def a():
    r = create_conversation.sync_detailed(
        client=client, body=CreateConversationIn(contact_id=UUID(bob_id))
    )
    expect_status(r, 201)
    expect(r.parsed.id, f"no id: {r.content!r}")
    expect(str(r.parsed.contact_id) == bob_id, f"contact_id {r.parsed.contact_id}, want {bob_id}")
    return str(r.parsed.id)


conv_id = step("a. POST /v1/conversations {contact_id} -> 201", [], a)

TEXT = "hello from the generated Python client"


def b():
    r = send_message.sync_detailed(
        client=client, body=SendMessageIn(conversation_id=UUID(conv_id), message=TEXT)
    )
    expect_status(r, 201)
    expect(r.parsed.message == TEXT, f"message {r.parsed.message!r}")
    expect(str(r.parsed.conversation_id) == conv_id, f"conversation_id {r.parsed.conversation_id}")
    return str(r.parsed.id)


msg_id = step("b. POST /v1/messages -> 201", [conv_id], b)


def c():
    r = list_messages.sync_detailed(client=client, conversation_id=UUID(conv_id))
    expect_status(r, 200)
    found = [m for m in r.parsed.data if str(m.id) == msg_id]
    expect(found, f"message {msg_id} not in {[str(m.id) for m in r.parsed.data]}")
    expect(found[0].message == TEXT, f"message {found[0].message!r}")
    return True


step("c. GET /v1/messages?conversation_id= -> 200 with it", [conv_id, msg_id], c)


def d():
    reactions = UpdateMessageInReactions()
    reactions["like"] = ["alice"]
    r = update_message.sync_detailed(
        msg_id, client=client, body=UpdateMessageIn(reactions=reactions)
    )
    expect_status(r, 200)
    like = [x["like"] for x in r.parsed.reactions if "like" in x]
    expect(like and "alice" in like[0], f"reactions {[x.to_dict() for x in r.parsed.reactions]}")
    return True


step("d. PUT /v1/messages/{id} {reactions:{like:[alice]}} -> 200", [msg_id], d)


def e():
    r = create_group.sync_detailed(
        client=client,
        body=CreateGroupIn(name="team", contact_ids=[UUID(bob_id), UUID(carol_id)]),
    )
    expect_status(r, 201)
    expect(r.parsed.name == "team", f"name {r.parsed.name!r}")
    # alice (the owner), bob and carol
    expect(r.parsed.member_count == 3, f"member_count {r.parsed.member_count}, want 3")
    ids = [str(x.id) for x in r.parsed.contacts]
    expect(bob_id in ids and carol_id in ids, f"contacts {ids}")
    return str(r.parsed.id)


step("e. POST /v1/groups {name, contact_ids:[bob,carol]} -> 201", [], e)


def f():
    r = update_conversation.sync_detailed(
        conv_id, client=client, body=UpdateConversationIn()
    )
    expect_status(r, 200)
    expect(str(r.parsed.id) == conv_id, f"id {r.parsed.id}")
    return True


step("f. PUT /v1/conversations/{id} {} -> 200", [conv_id], f)


def g():
    r = create_event_ticket.sync_detailed(client=client, body=NoParams())
    expect_status(r, 201)
    expect(re.fullmatch(r"cft_[0-9a-f]{64}", r.parsed.ticket), f"ticket {r.parsed.ticket!r}")
    expect(r.parsed.expires_at > time.time(), f"expires_at {r.parsed.expires_at}")
    return True


step("g. POST /v1/events/tickets -> 201 {ticket, expires_at}", [], g)

print(f"python: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
