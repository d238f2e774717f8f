-- Deleted means gone (API.md section 9): when a message or a conversation
-- is deleted, its text, reactions and attachments also leave every stored
-- event payload, so that catch-up (`GET /v1/events`), stream replays and
-- webhook retries show its earlier events as
-- `{"id": "<the event's subject>", "deleted": true}`.
--
-- Each event now names what it is about, so that a deletion finds every
-- kept event of the deleted object by index, at a cost proportional to that
-- object's events (never a scan of the table):
--
-- * `subject_id`: the id of the event's object, its payload's `id` (the
--   message, attachment, conversation, group or contact); what a scrubbed
--   payload keeps.
-- * `conversation_id`, `message_id`: the conversation, and the message,
--   whose content the payload carries. `message.created` and
--   `message.updated` (read marks included): the message's conversation and
--   the message; `attachment.created`: its message's conversation and its
--   message; `conversation.created` and `conversation.updated`: the
--   conversation, `message_id` NULL. NULL for `*.deleted` (their payload is
--   `{"id"}` only and stays so), `contact.*` and `group.*`.
--
-- One index, partial, on `(conversation_id, message_id)`: a message's
-- events are one key, a conversation's one prefix; events about no
-- conversation get no entry. A send (one event) pays for one index entry.
--
-- A deletion, in its own transaction (`queries/outbox.rs`, `scrub`):
--
-- 1. `message.deleted`: its events' payloads become `{"id", "deleted"}`,
--    and their `conversation_id` and `message_id` become NULL: a scrubbed
--    payload carries nothing of anything (a later deletion of the
--    conversation has nothing of them left to scrub). Their recipients
--    have no own payloads: those exist only for a conversation's own
--    events (each member's view of it).
-- 2. `conversation.deleted`: first the recipients' own payloads of the
--    conversation's own events (`message_id IS NULL`, by the recipients'
--    position index) become NULL, then every event of the conversation
--    (its own, its messages', their attachments') is scrubbed as in 1.
--    Group deletion does this for each conversation of the group, before
--    they cascade away.
--
-- Not scrubbed: the `*.deleted` events themselves; edits (an earlier
-- `message.created` or `message.updated` keeps the text it had then, until
-- the message is deleted); reactions taken back.
ALTER TABLE events
    ADD COLUMN subject_id UUID,
    ADD COLUMN conversation_id UUID,
    ADD COLUMN message_id UUID;

-- The events kept so far, from their payloads (all written by confab's
-- renderer: valid JSON objects with an `id`). An attachment's payload names
-- its message, whose conversation is read from the message itself.
UPDATE events e
SET subject_id = CAST(j.doc ->> 'id' AS UUID),
    message_id = CASE
        WHEN e.type IN ('message.created', 'message.updated') THEN CAST(j.doc ->> 'id' AS UUID)
        WHEN e.type = 'attachment.created' THEN CAST(j.doc ->> 'message_id' AS UUID)
    END,
    conversation_id = CASE
        WHEN e.type IN ('message.created', 'message.updated')
            THEN CAST(j.doc ->> 'conversation_id' AS UUID)
        WHEN e.type IN ('conversation.created', 'conversation.updated')
            THEN CAST(j.doc ->> 'id' AS UUID)
        WHEN e.type = 'attachment.created'
            THEN (SELECT m.conversation_id FROM messages m
                  WHERE m.id = CAST(j.doc ->> 'message_id' AS UUID))
    END
FROM (SELECT id, CAST(payload AS JSONB) AS doc FROM events) AS j
WHERE j.id = e.id;

-- What was deleted before this migration leaves the events now, as a
-- deletion from now on does (recipients first: they are found through the
-- events' columns, which the second statement clears).
UPDATE event_recipients r
SET payload = NULL
FROM events e
WHERE e.position = r.position AND r.payload IS NOT NULL
  AND ((e.message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id))
       OR (e.conversation_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = e.conversation_id)));
UPDATE events e
SET payload = '{"id":"' || CAST(e.subject_id AS TEXT) || '","deleted":true}',
    conversation_id = NULL,
    message_id = NULL
WHERE e.subject_id IS NOT NULL
  AND ((e.message_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id))
       OR (e.conversation_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = e.conversation_id)));

CREATE INDEX events_content_idx ON events (conversation_id, message_id)
    WHERE conversation_id IS NOT NULL;
