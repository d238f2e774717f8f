DROP INDEX groups_created_by_idx;
DROP INDEX message_gaps_sender_idx;
DROP INDEX events_subject_idx;
DROP INDEX events_actor_idx;
DROP INDEX reactions_contact_idx;
DROP INDEX messages_sender_idx;
ALTER TABLE contacts DROP COLUMN erasing;
DROP TABLE jobs;
