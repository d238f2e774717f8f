-- Search (API.md section 17): each message's text as searches compare it,
-- and an FTS5 trigram index over it, so that a substring in any script is
-- found without reading every message.
--
-- The text is folded by confab, not by SQLite (`confab_domain::fold`:
-- composed, then lowercased character by character): FTS5's own folding
-- differs from PostgreSQL's, and both stores must find the same messages;
-- so the index compares case-sensitively. Sends and edits write it; the
-- rows written before are folded here when their text is ASCII (`lower()`
-- folds A-Z only), and by `confab migrate` otherwise
-- (`SqliteStore::fold_unfolded`).
ALTER TABLE messages ADD COLUMN body_folded TEXT;

UPDATE messages SET body_folded = lower(body)
WHERE length(body) = length(CAST(body AS BLOB));

-- The rows still to fold: empty once `confab migrate` has run.
CREATE INDEX messages_unfolded_idx ON messages (id) WHERE body_folded IS NULL;

-- An external-content index: the text stays in `messages` only, the
-- index keyed by its rowid and kept by the triggers below.
CREATE VIRTUAL TABLE messages_search USING fts5(
    body_folded,
    content = 'messages',
    content_rowid = 'rowid',
    tokenize = 'trigram case_sensitive 1'
);
INSERT INTO messages_search (messages_search) VALUES ('rebuild');

CREATE TRIGGER messages_search_insert AFTER INSERT ON messages
WHEN new.body_folded IS NOT NULL
BEGIN
    INSERT INTO messages_search (rowid, body_folded) VALUES (new.rowid, new.body_folded);
END;

CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
WHEN old.body_folded IS NOT NULL
BEGIN
    INSERT INTO messages_search (messages_search, rowid, body_folded)
    VALUES ('delete', old.rowid, old.body_folded);
END;

CREATE TRIGGER messages_search_update AFTER UPDATE OF body_folded ON messages
BEGIN
    INSERT INTO messages_search (messages_search, rowid, body_folded)
    SELECT 'delete', old.rowid, old.body_folded WHERE old.body_folded IS NOT NULL;
    INSERT INTO messages_search (rowid, body_folded)
    SELECT new.rowid, new.body_folded WHERE new.body_folded IS NOT NULL;
END;
