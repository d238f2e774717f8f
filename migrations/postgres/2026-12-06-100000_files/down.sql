DROP TABLE server_secrets;
DROP INDEX events_attachment_idx;
DROP TRIGGER attachments_file_deleted ON attachments;
DROP FUNCTION confab_file_deleted();
DROP TABLE file_deletions;
DELETE FROM attachments WHERE message_id IS NULL OR file_url IS NULL;
DROP INDEX attachments_conversation_idx;
DROP INDEX attachments_uploader_idx;
ALTER TABLE attachments
    DROP CONSTRAINT attachments_attached_check,
    DROP CONSTRAINT attachments_source_check,
    DROP COLUMN content_sha256,
    DROP COLUMN conversation_id,
    DROP COLUMN uploader_id,
    ALTER COLUMN file_url SET NOT NULL,
    ALTER COLUMN message_id SET NOT NULL;
