-- Search's index off the send's path (issue 40): a send, an edit or a
-- deletion no longer writes the FTS5 index itself. Each commit that did
-- wrote a new segment of the index and merged older ones: sends ran at
-- 0.43x of their rate without it (docs/performance.md). Now a new or
-- edited message's rowid goes to `messages_search_backlog` (one row in a
-- small table), and the store's indexer thread moves the backlog into the
-- index in batches, in transactions of its own (`search_index` of the
-- SQLite store). A search reads the index and the backlog
-- (`confab_store_sqlite::search`), so a message is found as soon as it is
-- committed.
--
-- The rule that keeps the external-content index whole: every message is
-- either in the index, as its text is now, or in the backlog, never both.
-- FTS5's 'delete' must be given exactly the text it indexed (a message not
-- yet folded, whose `body_folded` is NULL, is indexed as an empty
-- document, and deleted as one); so an edit or a deletion takes the old
-- text out of the index only when the row is not in the backlog (then it
-- was indexed), and an edited row goes (back) to the backlog, to be
-- indexed with its new text.
--
-- Migration `search` let a row whose text was NULL (indexed empty by its
-- rebuild) be indexed again when `confab migrate` folded it, without
-- taking the empty document out first; so the index is rebuilt here, from
-- the messages as they are, with the backlog empty.
CREATE TABLE messages_search_backlog (
    message_rowid INTEGER PRIMARY KEY NOT NULL
);

DROP TRIGGER messages_search_insert;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_update;

CREATE TRIGGER messages_search_insert AFTER INSERT ON messages
BEGIN
    INSERT INTO messages_search_backlog (message_rowid) VALUES (new.rowid);
END;

CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
BEGIN
    INSERT INTO messages_search (messages_search, rowid, body_folded)
    SELECT 'delete', old.rowid, old.body_folded
    WHERE NOT EXISTS (SELECT 1 FROM messages_search_backlog WHERE message_rowid = old.rowid);
    DELETE FROM messages_search_backlog WHERE message_rowid = old.rowid;
END;

CREATE TRIGGER messages_search_update AFTER UPDATE OF body_folded ON messages
BEGIN
    INSERT INTO messages_search (messages_search, rowid, body_folded)
    SELECT 'delete', old.rowid, old.body_folded
    WHERE NOT EXISTS (SELECT 1 FROM messages_search_backlog WHERE message_rowid = old.rowid);
    INSERT OR IGNORE INTO messages_search_backlog (message_rowid) VALUES (new.rowid);
END;

INSERT INTO messages_search (messages_search) VALUES ('rebuild');
