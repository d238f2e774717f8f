DROP TRIGGER attachments_upload_released ON attachments;
DROP FUNCTION confab_upload_released();
DROP TABLE upload_usage;
