DROP TRIGGER attachments_upload_released;
DROP TABLE upload_usage;
