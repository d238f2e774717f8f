-- A send is one statement in a transaction of its own (no `BEGIN`, no
-- `COMMIT` round trip): the statement decides by itself, after every write
-- it made, whether it may commit. This function is called last, with the
-- counts of those writes as arguments (so every write, and every row lock
-- it waited for, is done before its body runs):
--
-- * an idempotency key's answer must have been stored exactly when the
--   message was (`completed` NULL: no key): otherwise the key's claim went
--   to another holder, and the whole send rolls back (SQLSTATE CF002);
-- * the clock must still be before `deadline_us` (microseconds since the
--   Unix epoch, PostgreSQL's clock): the caller gives up a little after it
--   and answers 503, so a send that could not finish in time rolls back
--   instead of committing after its caller was told it failed (CF001).
--   A statement that reached the server late (a stalled server, a lost
--   network) or waited long for a row lock never commits.
--
-- Returns `sent` (how many messages were written: 0 or 1).
CREATE FUNCTION confab_settle_send(
    deadline_us BIGINT,
    sent BIGINT,
    completed BIGINT,
    written BIGINT
) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $$
BEGIN
    IF sent = 0 THEN
        RETURN 0;
    END IF;
    IF completed IS NOT NULL AND completed <> sent THEN
        RAISE EXCEPTION 'confab: the idempotency key''s claim was lost'
            USING ERRCODE = 'CF002';
    END IF;
    IF CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT) >= deadline_us THEN
        RAISE EXCEPTION 'confab: the send''s deadline passed; its % writes roll back', written
            USING ERRCODE = 'CF001';
    END IF;
    RETURN sent;
END
$$;
