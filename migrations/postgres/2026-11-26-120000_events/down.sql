DROP TRIGGER IF EXISTS events_notify ON events;
DROP FUNCTION IF EXISTS confab_events_notify();
DROP TABLE IF EXISTS event_recipients;
DROP TABLE IF EXISTS events;
