-- Deleted means gone (API.md section 9): when a message or a conversation
-- is deleted, its text, reactions and attachments also leave every stored
-- event payload, so that catch-up (`GET /v1/events`), stream replays and
-- webhook retries show its earlier events as
-- `{"id": "<the event's subject>", "deleted": true}`. As on PostgreSQL (see
-- its migration of the same name for the whole design):
--
-- * `subject_id`: the id of the event's object, its payload's `id`; what a
--   scrubbed payload keeps.
-- * `conversation_id`, `message_id`: the conversation, and the message,
--   whose content the payload carries (`message.*` but `message.deleted`,
--   `attachment.created`: both; `conversation.created|updated`: the
--   conversation alone); NULL for `*.deleted`, `contact.*`, `group.*`, and
--   once scrubbed.
-- * One partial index on `(conversation_id, message_id)`: a message's
--   events are one key, a conversation's one prefix.
--
-- A message's deletion scrubs its events by that key; a conversation's
-- (and a group's, for each of its conversations) first clears the
-- recipients' own payloads of the conversation's own events, then scrubs
-- every event of the conversation. Not scrubbed: `*.deleted` events, the
-- old text in the events of an edited message, reactions taken back.
ALTER TABLE events ADD COLUMN subject_id TEXT;
ALTER TABLE events ADD COLUMN conversation_id TEXT;
ALTER TABLE events ADD COLUMN message_id TEXT;

-- The events kept so far, from their payloads (SQLite evaluates every SET
-- expression on the row as it was). An attachment's payload names its
-- message, whose conversation is read from the message itself.
UPDATE events
SET subject_id = json_extract(payload, '$.id'),
    message_id = CASE
        WHEN type IN ('message.created', 'message.updated') THEN json_extract(payload, '$.id')
        WHEN type = 'attachment.created' THEN json_extract(payload, '$.message_id')
    END,
    conversation_id = CASE
        WHEN type IN ('message.created', 'message.updated')
            THEN json_extract(payload, '$.conversation_id')
        WHEN type IN ('conversation.created', 'conversation.updated')
            THEN json_extract(payload, '$.id')
        WHEN type = 'attachment.created'
            THEN (SELECT m.conversation_id FROM messages m
                  WHERE m.id = json_extract(events.payload, '$.message_id'))
    END
WHERE json_valid(payload);

-- What was deleted before this migration leaves the events now, as a
-- deletion from now on does (recipients first: they are found through the
-- events' columns, which the second statement clears).
UPDATE event_recipients
SET payload = NULL
WHERE payload IS NOT NULL
  AND position IN (
      SELECT e.position FROM events e
      WHERE (e.message_id IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id))
         OR (e.conversation_id IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = e.conversation_id)));
UPDATE events
SET payload = '{"id":"' || CAST(subject_id AS TEXT) || '","deleted":true}',
    conversation_id = NULL,
    message_id = NULL
WHERE subject_id IS NOT NULL
  AND ((message_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = events.message_id))
       OR (conversation_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = events.conversation_id)));

CREATE INDEX events_content_idx ON events (conversation_id, message_id)
    WHERE conversation_id IS NOT NULL;
