-- What each contact's uploads take in the file storage (see the
-- PostgreSQL migration of the same name): added by the upload's own
-- transaction within the quota, taken back by the trigger below whenever
-- a stored attachment's row goes (cascades included: SQLite runs a
-- foreign key's actions as row deletions, which fire it).
CREATE TABLE upload_usage (
    contact_id TEXT NOT NULL PRIMARY KEY REFERENCES contacts (id) ON DELETE CASCADE,
    bytes      BIGINT NOT NULL,
    files      BIGINT NOT NULL
);
INSERT INTO upload_usage (contact_id, bytes, files)
SELECT uploader_id, SUM(COALESCE(file_size, 0)), COUNT(*)
FROM attachments
WHERE content_sha256 IS NOT NULL
GROUP BY uploader_id;

CREATE TRIGGER attachments_upload_released
    AFTER DELETE ON attachments
    FOR EACH ROW WHEN OLD.content_sha256 IS NOT NULL
BEGIN
    UPDATE upload_usage
    SET bytes = bytes - COALESCE(OLD.file_size, 0), files = files - 1
    WHERE contact_id = OLD.uploader_id;
END;
