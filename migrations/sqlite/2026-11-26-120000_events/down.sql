DROP TABLE IF EXISTS event_recipients;
DROP TABLE IF EXISTS events;
