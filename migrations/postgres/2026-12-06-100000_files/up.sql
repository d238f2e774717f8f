-- Files (API.md section 15): uploads stored by confab beside the by-URL
-- attachments.
--
-- * An attachment may exist before it is attached (`message_id` NULL): an
--   upload. `uploader_id` says whose it is (for a by-URL attachment, the
--   sender who attached it); `conversation_id` is its message's, copied
--   when it is attached, by which a member lists a conversation's files.
-- * `content_sha256` is set for an upload (its bytes are in the file
--   storage under the attachment's id); `file_url` for a by-URL one.
ALTER TABLE attachments
    ALTER COLUMN message_id DROP NOT NULL,
    ALTER COLUMN file_url DROP NOT NULL,
    ADD COLUMN uploader_id UUID REFERENCES contacts (id) ON DELETE CASCADE,
    ADD COLUMN conversation_id UUID,
    ADD COLUMN content_sha256 TEXT;
UPDATE attachments a
SET uploader_id = m.sender_id, conversation_id = m.conversation_id
FROM messages m
WHERE m.id = a.message_id;
ALTER TABLE attachments
    ALTER COLUMN uploader_id SET NOT NULL,
    ADD CONSTRAINT attachments_source_check
        CHECK ((file_url IS NULL) <> (content_sha256 IS NULL)),
    ADD CONSTRAINT attachments_attached_check
        CHECK ((message_id IS NULL) = (conversation_id IS NULL));
-- The caller's own uploads, newest first; a conversation's files.
CREATE INDEX attachments_uploader_idx ON attachments (uploader_id, id);
CREATE INDEX attachments_conversation_idx ON attachments (conversation_id, id)
    WHERE conversation_id IS NOT NULL;

-- Files to delete from the storage, and when. Written before an upload's
-- bytes (due 24 h later: an upload never attached goes then), removed when
-- it is attached; written again (due at once) whenever an uploaded
-- attachment's row goes, by the trigger below, in the deleting
-- transaction itself: a message, conversation, group or contact deleted,
-- an attachment deleted. A sweeper deletes the due files, then their rows:
-- a crash anywhere leaves a row to finish the work, never a file nobody
-- will delete nor a row pointing at a missing file.
CREATE TABLE file_deletions (
    attachment_id UUID PRIMARY KEY,
    due_at        BIGINT NOT NULL
);
CREATE INDEX file_deletions_due_idx ON file_deletions (due_at);

CREATE FUNCTION confab_file_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO file_deletions (attachment_id, due_at) VALUES (OLD.id, 0)
    ON CONFLICT (attachment_id) DO UPDATE SET due_at = 0;
    RETURN NULL;
END
$$;
CREATE TRIGGER attachments_file_deleted
    AFTER DELETE ON attachments
    FOR EACH ROW WHEN (OLD.content_sha256 IS NOT NULL)
    EXECUTE FUNCTION confab_file_deleted();

-- An attachment's own events, by its id: a deleted attachment's earlier
-- events are scrubbed (API.md section 9, "Deleted means gone").
CREATE INDEX events_attachment_idx ON events (subject_id)
    WHERE type IN ('attachment.created', 'attachment.updated');

-- Secrets the server instances share: the key that signs file links.
CREATE TABLE server_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
