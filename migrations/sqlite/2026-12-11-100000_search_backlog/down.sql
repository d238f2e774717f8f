-- Back to indexing on every write: what is still in the backlog is
-- indexed first.
INSERT INTO messages_search (rowid, body_folded)
SELECT m.rowid, m.body_folded
FROM messages_search_backlog b JOIN messages m ON m.rowid = b.message_rowid;

DROP TRIGGER messages_search_update;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_insert;
DROP TABLE messages_search_backlog;

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
