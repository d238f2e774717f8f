-- The message a reply quotes, as every page reads it: a JSON array
-- [body, sender_id, sender's username] as text, NULL when the message is
-- gone (the reply then shows {"id","deleted":true}).
--
-- A function, not a scalar subquery in each page statement: the subquery
-- put its join (an index scan of `messages`, one of `contacts`) into the
-- plan of every page, set up on each execution and, behind PgBouncer where
-- statements go unnamed, planned on each execution too, whether the page
-- quotes anything or not. PL/pgSQL keeps its query's plan for the session;
-- STRICT skips the call for the rows that quote nothing; STABLE reads with
-- the calling statement's snapshot, so a page stays one consistent read.
-- docs/performance.md has the figures.
CREATE FUNCTION confab_quoted_message(quoted_id UUID) RETURNS TEXT
    LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
AS $$
BEGIN
    RETURN (
        SELECT CAST(json_build_array(quoted.body, quoted.sender_id, quoted_sender.username) AS TEXT)
        FROM messages quoted
        INNER JOIN contacts quoted_sender ON quoted_sender.id = quoted.sender_id
        WHERE quoted.id = quoted_id
    );
END
$$;
