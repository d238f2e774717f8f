CREATE FUNCTION confab_events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('confab_events', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION confab_events_notify();
