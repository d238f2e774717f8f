-- The notification that wakes other processes' event hubs is no longer sent
-- by a trigger inside each write transaction. A NOTIFY takes a database-wide
-- lock from its transaction's commit until the commit is done, so every
-- transaction that wrote an event committed one at a time: measured with
-- pgbench on one event insert per transaction, 3,884 tps with the trigger,
-- 11,238 without (docs/performance.md). Each server now sends
-- `NOTIFY confab_events` itself, on its listening connection, after its own
-- commits (coalesced: one in flight at a time); writers that send none (the
-- CLI) are found by the hubs' one-second poll.
DROP TRIGGER events_notify ON events;
DROP FUNCTION confab_events_notify();
