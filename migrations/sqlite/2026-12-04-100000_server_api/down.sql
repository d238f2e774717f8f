DROP TABLE webhook_deliveries;
CREATE INDEX tokens_contact_id_idx ON tokens (contact_id);
DROP INDEX tokens_contact_created_idx;
DROP INDEX contacts_created_idx;
ALTER TABLE tokens DROP COLUMN last_used_at;
DROP TABLE server_keys;
