DROP TABLE server_secrets;
DROP INDEX events_attachment_idx;
DROP TABLE file_deletions;
CREATE TABLE attachments_old (
    id          TEXT NOT NULL PRIMARY KEY,
    message_id  TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    filename    TEXT NOT NULL,
    file_url    TEXT NOT NULL,
    file_type   TEXT NOT NULL,
    file_size   BIGINT,
    created_at  BIGINT NOT NULL,
    CONSTRAINT attachments_message_id_seq_key UNIQUE (message_id, seq)
);
INSERT INTO attachments_old
SELECT id, message_id, seq, filename, file_url, file_type, file_size, created_at
FROM attachments WHERE message_id IS NOT NULL AND file_url IS NOT NULL;
DROP TABLE attachments;
ALTER TABLE attachments_old RENAME TO attachments;
