-- Search (API.md section 17): each message's text as searches compare it,
-- and a trigram index over it, so that a substring in any script is found
-- without reading every message.
--
-- The text is folded by confab, not by PostgreSQL (`confab_domain::fold`:
-- composed, then lowercased character by character): `lower()` follows
-- the database's locale (a `C` database folds ASCII only) and SQLite folds
-- differently again, and both stores must find the same messages. Sends and
-- edits write it; the rows written before are folded here when their text
-- is ASCII (where folding is only A-Z to a-z, whatever the locale), and by
-- `confab migrate` otherwise (`PgStore::fold_unfolded`).
ALTER TABLE messages ADD COLUMN body_folded TEXT;

UPDATE messages
SET body_folded = translate(body, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
WHERE octet_length(body) = char_length(body);

-- The rows still to fold: empty once `confab migrate` has run, so that
-- finding none costs nothing on every later start.
CREATE INDEX messages_unfolded_idx ON messages (id) WHERE body_folded IS NULL;

-- pg_trgm is a trusted extension: the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Searches read it only for terms with three letters or digits in a row
-- (what pg_trgm makes trigrams of); other terms are checked on the rows
-- found by the others, or on the searcher's own messages
-- (docs/performance.md, "Search").
CREATE INDEX messages_body_trgm_idx ON messages USING gin (body_folded gin_trgm_ops);
