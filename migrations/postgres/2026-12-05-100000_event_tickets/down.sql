DROP TABLE event_tickets;
