"""The Python half of tests/clients/run.sh: the package openapi-python-client
generated from the live server's /openapi.json (importable as
`confab_client`, run.sh puts it on PYTHONPATH), used as a backend and an app
would use it, with the generated functions and models only.

As the backend (a server key): create a contact, find it in the contact
list, mint it a token, create a webhook. As that contact (the minted token):
start a direct conversation, send (and retry the send with its
Idempotency-Key), list, react, create a group, update, make an event
ticket, upload a file, send it attached, list the attachments. Ids read from
a single object and from a list item are compared as they come (the same
type, equal).

Environment: CONFAB_URL, CONFAB_SERVER_KEY, BOB_ID, CAROL_ID.
Prints one line per step and a closing "python: N passed, N failed"; exits 1
if any step failed. A failed step also shows the request the generated code
sent (its Content-Type and body), to tell a document problem from a server
one.
"""

import io
import os
import re
import sys
import time
import traceback
import uuid
from uuid import UUID

import httpx

from confab_client import AuthenticatedClient
from confab_client.api.admin import (
    admin_create_contact,
    admin_create_webhook,
    admin_delete_webhook,
    admin_list_contacts,
    admin_mint_token,
)
from confab_client.api.attachments import list_attachments, upload_attachment
from confab_client.api.conversations import create_conversation, update_conversation
from confab_client.api.events import create_event_ticket
from confab_client.api.groups import create_group
from confab_client.api.messages import list_messages, send_message, update_message
from confab_client.models import (
    CreateContactIn,
    CreateConversationIn,
    CreateGroupIn,
    CreateWebhookIn,
    CreateWebhookInEventsItem,
    MintTokenIn,
    SendMessageIn,
    SendMessageInAttachmentsItemType0,
    UpdateConversationIn,
    UpdateMessageIn,
    UpdateMessageInReactions,
    UploadForm,
)
from confab_client.types import File


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
    last_request["body"] = request.content[:300].decode("utf-8", "replace")


def client_with(token):
    return AuthenticatedClient(
        base_url=env("CONFAB_URL"),
        token=token,
        timeout=httpx.Timeout(10.0),
        httpx_args={"event_hooks": {"request": [remember]}},
    )


backend = client_with(env("CONFAB_SERVER_KEY"))
bob_id = UUID(env("BOB_ID"))
carol_id = UUID(env("CAROL_ID"))
# The app's client, once the backend has minted its token (step A3).
app = None


def expect(cond, what):
    if not cond:
        raise StepError(what)


def expect_status(r, want):
    got = int(r.status_code)
    if got != want:
        raise StepError(
            f"status {got}, want {want}: {r.content.decode('utf-8', 'replace')}"
        )


def expect_same_id(single, listed, what):
    """An id read from a single object and the same id read from a list item
    are the same value of the same type (UUID, as `format: uuid` says)."""
    expect(
        isinstance(single, UUID) and type(single) is type(listed),
        f"{what}: {type(single).__name__} alone, {type(listed).__name__} in a list",
    )
    expect(single == listed, f"{what}: {single} alone, {listed} in the list")


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


USERNAME = "py-app"

# --- the backend: /v1/admin with the server key --------------------------------


def a1():
    r = admin_create_contact.sync_detailed(
        client=backend,
        body=CreateContactIn(username=USERNAME, phone_number="+15550198"),
    )
    expect_status(r, 201)
    expect(r.parsed.username == USERNAME, f"username {r.parsed.username!r}")
    expect(r.parsed.phone_number == "+15550198", f"phone {r.parsed.phone_number!r}")
    return r.parsed


contact = step("A1. POST /v1/admin/contacts -> 201", [], a1)


def a2():
    r = admin_list_contacts.sync_detailed(client=backend, username=USERNAME)
    expect_status(r, 200)
    expect(len(r.parsed.data) == 1, f"{len(r.parsed.data)} contacts named {USERNAME}")
    expect_same_id(contact.id, r.parsed.data[0].id, "the contact's id")
    return True


step("A2. GET /v1/admin/contacts?username= -> 200, the same id", [contact], a2)


def a3():
    r = admin_mint_token.sync_detailed(
        contact.id, client=backend, body=MintTokenIn(expires_in=3600)
    )
    expect_status(r, 201)
    expect(r.parsed.contact_id == contact.id, f"contact_id {r.parsed.contact_id}")
    expect(r.parsed.expires_at > time.time(), f"expires_at {r.parsed.expires_at}")
    global app
    app = client_with(r.parsed.token)
    return r.parsed.token


token = step("A3. POST /v1/admin/contacts/{id}/tokens -> 201", [contact], a3)


def a4():
    r = admin_create_webhook.sync_detailed(
        client=backend,
        body=CreateWebhookIn(
            # Nothing listens there: deliveries fail and are retried, which
            # this run does not look at.
            url="http://127.0.0.1:9/confab-hook",
            events=[CreateWebhookInEventsItem.MESSAGE_CREATED],
        ),
    )
    expect_status(r, 201)
    expect(isinstance(r.parsed.id, UUID), f"id {r.parsed.id!r}")
    expect(r.parsed.secret, "no signing secret in the answer to its creation")
    expect(
        [str(e) for e in r.parsed.events] == ["message.created"],
        f"events {r.parsed.events}",
    )
    return r.parsed.id


webhook_id = step("A4. POST /v1/admin/webhooks -> 201 with its secret", [], a4)

# --- the app: the contact's own token -----------------------------------------


def a():
    r = create_conversation.sync_detailed(
        client=app, body=CreateConversationIn(contact_id=bob_id, distinct=True)
    )
    expect_status(r, 201)
    expect(r.parsed.contact_id == bob_id, f"contact_id {r.parsed.contact_id}, want {bob_id}")
    return r.parsed.id


conv_id = step("a. POST /v1/conversations {contact_id, distinct} -> 201", [token], a)

TEXT = "hello from the generated Python client"
SEND_KEY = str(uuid.uuid4())


def b():
    body = SendMessageIn(conversation_id=conv_id, message=TEXT)
    r = send_message.sync_detailed(client=app, body=body, idempotency_key=SEND_KEY)
    expect_status(r, 201)
    expect(r.parsed.message == TEXT, f"message {r.parsed.message!r}")
    expect(r.parsed.conversation_id == conv_id, f"conversation_id {r.parsed.conversation_id}")
    # A retry (a lost answer) with the same key: the first answer again.
    retry = send_message.sync_detailed(client=app, body=body, idempotency_key=SEND_KEY)
    expect_status(retry, 201)
    expect(
        retry.headers.get("Idempotent-Replayed") == "true",
        f"Idempotent-Replayed {retry.headers.get('Idempotent-Replayed')!r}",
    )
    expect(retry.parsed.id == r.parsed.id, f"the retry made {retry.parsed.id}")
    return r.parsed


sent = step("b. POST /v1/messages, retried with its Idempotency-Key -> 201 once", [conv_id], b)


def c():
    r = list_messages.sync_detailed(client=app, conversation_id=conv_id)
    expect_status(r, 200)
    expect(len(r.parsed.data) == 1, f"{len(r.parsed.data)} messages, want 1 (no duplicate)")
    listed = r.parsed.data[0]
    expect_same_id(sent.id, listed.id, "the message's id")
    expect(listed.message == TEXT, f"message {listed.message!r}")
    return True


step("c. GET /v1/messages?conversation_id= -> 200, sent.id == page.data[0].id", [sent], c)


def d():
    reactions = UpdateMessageInReactions()
    reactions["like"] = [USERNAME]
    r = update_message.sync_detailed(
        sent.id, client=app, body=UpdateMessageIn(reactions=reactions)
    )
    expect_status(r, 200)
    like = [x["like"] for x in r.parsed.reactions if "like" in x]
    expect(
        like and USERNAME in like[0], f"reactions {[x.to_dict() for x in r.parsed.reactions]}"
    )
    return True


step("d. PUT /v1/messages/{id} {reactions:{like:[me]}} -> 200", [sent], d)


def e():
    r = create_group.sync_detailed(
        client=app,
        body=CreateGroupIn(name="team", contact_ids=[bob_id, carol_id]),
    )
    expect_status(r, 201)
    expect(r.parsed.name == "team", f"name {r.parsed.name!r}")
    # the owner, bob and carol
    expect(r.parsed.member_count == 3, f"member_count {r.parsed.member_count}, want 3")
    ids = [x.id for x in r.parsed.contacts]
    expect(bob_id in ids and carol_id in ids, f"contacts {ids}")
    return r.parsed.id


step("e. POST /v1/groups {name, contact_ids:[bob,carol]} -> 201", [token], e)


def f():
    r = update_conversation.sync_detailed(conv_id, client=app, body=UpdateConversationIn())
    expect_status(r, 200)
    expect(r.parsed.id == conv_id, f"id {r.parsed.id}")
    return True


step("f. PUT /v1/conversations/{id} {} -> 200", [conv_id], f)


def g():
    # No body: a ticket takes no parameters.
    r = create_event_ticket.sync_detailed(client=app)
    expect_status(r, 201)
    expect(re.fullmatch(r"cft_[0-9a-f]{64}", r.parsed.ticket), f"ticket {r.parsed.ticket!r}")
    expect(r.parsed.expires_at > time.time(), f"expires_at {r.parsed.expires_at}")
    return True


step("g. POST /v1/events/tickets -> 201 {ticket, expires_at}", [token], g)

FILE = b"a file uploaded by the generated Python client\n"


def h():
    form = UploadForm(
        file=File(payload=io.BytesIO(FILE), file_name="notes.txt", mime_type="text/plain")
    )
    r = upload_attachment.sync_detailed(
        client=app, body=form, idempotency_key=str(uuid.uuid4())
    )
    expect_status(r, 201)
    expect(r.parsed.filename == "notes.txt", f"filename {r.parsed.filename!r}")
    expect(r.parsed.file_size == len(FILE), f"file_size {r.parsed.file_size}")
    expect(r.parsed.message_id is None, f"message_id {r.parsed.message_id}")
    return r.parsed


upload = step("h. POST /v1/attachments (multipart: file) -> 201", [token], h)


def i():
    r = send_message.sync_detailed(
        client=app,
        body=SendMessageIn(
            conversation_id=conv_id,
            message="the notes",
            attachments=[SendMessageInAttachmentsItemType0(id=upload.id)],
        ),
    )
    expect_status(r, 201)
    ids = [x.id for x in r.parsed.attachments]
    expect(ids == [upload.id], f"attachments {ids}, want [{upload.id}]")
    return r.parsed.id


with_file = step("i. POST /v1/messages {attachments:[{id}]} -> 201 with it", [conv_id, upload], i)


def j():
    r = list_attachments.sync_detailed(client=app, message_id=with_file)
    expect_status(r, 200)
    expect(len(r.parsed.data) == 1, f"{len(r.parsed.data)} attachments, want 1")
    listed = r.parsed.data[0]
    expect_same_id(upload.id, listed.id, "the attachment's id")
    expect(listed.message_id == with_file, f"message_id {listed.message_id}")
    return True


step("j. GET /v1/attachments?message_id= -> 200, upload.id == page.data[0].id", [with_file], j)


def a5():
    r = admin_delete_webhook.sync_detailed(webhook_id, client=backend)
    expect_status(r, 204)
    return True


step("A5. DELETE /v1/admin/webhooks/{id} -> 204", [webhook_id], a5)

print(f"python: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
