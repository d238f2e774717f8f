-- What each contact's uploads take in the file storage: the bytes and the
-- files of its stored attachments (attached or not), so that a quota is
-- checked by one row's read, never by adding up a contact's uploads.
--
-- An upload adds its size here in the transaction that writes its row,
-- conditionally (`INSERT ... ON CONFLICT DO UPDATE ... WHERE` the sum stays
-- within the quota), so that concurrent uploads cannot pass the quota
-- together. Whenever a stored attachment's row goes (deleted, swept, or
-- cascaded from its message, conversation, group or contact), the trigger
-- below takes its size back in that same transaction. A stored
-- attachment's uploader and size never change.
CREATE TABLE upload_usage (
    contact_id UUID PRIMARY KEY REFERENCES contacts (id) ON DELETE CASCADE,
    bytes      BIGINT NOT NULL,
    files      BIGINT NOT NULL
);
INSERT INTO upload_usage (contact_id, bytes, files)
SELECT uploader_id, SUM(COALESCE(file_size, 0)), COUNT(*)
FROM attachments
WHERE content_sha256 IS NOT NULL
GROUP BY uploader_id;

-- A plain UPDATE, never an insert: during a contact's deletion its row
-- may already be gone (it cascades too).
CREATE FUNCTION confab_upload_released() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE upload_usage
    SET bytes = bytes - COALESCE(OLD.file_size, 0), files = files - 1
    WHERE contact_id = OLD.uploader_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER attachments_upload_released
    AFTER DELETE ON attachments
    FOR EACH ROW WHEN (OLD.content_sha256 IS NOT NULL)
    EXECUTE FUNCTION confab_upload_released();
