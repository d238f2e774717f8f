-- As on PostgreSQL: pruning takes the oldest events by position (the
-- table's rowid), so the index on `created_at` only cost every write that
-- has events an index entry. (The recipients' foreign key stays: SQLite
-- cannot drop one without rebuilding the table, and its check is a lookup
-- in the events' own unique index.)
DROP INDEX events_created_at_idx;
