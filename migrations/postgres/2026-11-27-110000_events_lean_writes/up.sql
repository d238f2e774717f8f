-- Every write that has events (a send: one event, one recipient row per
-- member) paid for index entries and checks that only pruning used:
-- `events_created_at_idx`, and on each recipient row the foreign key to
-- `events` (a lookup of the event) and the index `event_recipients_event_id_idx`
-- that its ON DELETE CASCADE needed. Pruning now takes the oldest events by
-- position (commit order, already indexed) and deletes their recipients by
-- position (already indexed) itself. pgbench on a send's statements: ~10 %
-- more sends per second without them (docs/performance.md).
ALTER TABLE event_recipients DROP CONSTRAINT event_recipients_event_id_fkey;
DROP INDEX event_recipients_event_id_idx;
DROP INDEX events_created_at_idx;
