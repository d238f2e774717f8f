-- Files (API.md section 15): uploads stored by confab beside the by-URL
-- attachments. See the PostgreSQL migration of the same name for the
-- columns; SQLite cannot drop a NOT NULL, so the table is rebuilt (nothing
-- references it).
CREATE TABLE attachments_new (
    id              TEXT NOT NULL PRIMARY KEY,
    message_id      TEXT REFERENCES messages (id) ON DELETE CASCADE,
    -- Position within the message (insertion order).
    seq             INTEGER NOT NULL,
    filename        TEXT NOT NULL,
    file_url        TEXT,
    file_type       TEXT NOT NULL,
    file_size       BIGINT,
    created_at      BIGINT NOT NULL,
    uploader_id     TEXT NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    conversation_id TEXT,
    content_sha256  TEXT,
    CONSTRAINT attachments_source_check CHECK ((file_url IS NULL) <> (content_sha256 IS NULL)),
    CONSTRAINT attachments_attached_check CHECK ((message_id IS NULL) = (conversation_id IS NULL))
);
INSERT INTO attachments_new (id, message_id, seq, filename, file_url, file_type, file_size,
    created_at, uploader_id, conversation_id, content_sha256)
SELECT a.id, a.message_id, a.seq, a.filename, a.file_url, a.file_type, a.file_size,
    a.created_at, m.sender_id, m.conversation_id, NULL
FROM attachments a JOIN messages m ON m.id = a.message_id;
DROP TABLE attachments;
ALTER TABLE attachments_new RENAME TO attachments;
-- Named (not a constraint's automatic index), so that the message reads
-- can name it (`INDEXED BY`) whatever the table's history.
CREATE UNIQUE INDEX attachments_message_id_seq_key ON attachments (message_id, seq);
CREATE INDEX attachments_uploader_idx ON attachments (uploader_id, id);
CREATE INDEX attachments_conversation_idx ON attachments (conversation_id, id)
    WHERE conversation_id IS NOT NULL;

-- Files to delete from the storage, and when (see the PostgreSQL
-- migration).
CREATE TABLE file_deletions (
    attachment_id TEXT NOT NULL PRIMARY KEY,
    due_at        BIGINT NOT NULL
);
CREATE INDEX file_deletions_due_idx ON file_deletions (due_at);

-- Also fired by the cascades of a message's, conversation's or contact's
-- deletion (SQLite runs a foreign key's actions as row deletions).
CREATE TRIGGER attachments_file_deleted
    AFTER DELETE ON attachments
    FOR EACH ROW WHEN OLD.content_sha256 IS NOT NULL
BEGIN
    INSERT OR REPLACE INTO file_deletions (attachment_id, due_at) VALUES (OLD.id, 0);
END;

CREATE INDEX events_attachment_idx ON events (subject_id)
    WHERE type IN ('attachment.created', 'attachment.updated');

CREATE TABLE server_secrets (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);
