-- Seeds a migrated, empty confab database (SQLite) with the benchmark set:
-- the same layout and the same ids as seed_postgres.sql (read it first).
-- Run by run.sh statement by statement (`;` at a line end) with the named
-- parameters :contacts, :convs, :messages, :big, :inbox, :base; the secondary
-- indexes of messages are dropped before the part after `-- messages` and
-- rebuilt before the part after `-- after`. Ids are TEXT here: lowercase hyphenated UUIDs.
CREATE TEMP TABLE conv_map (j INTEGER PRIMARY KEY, id TEXT, creator TEXT, peer TEXT);

WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < :contacts)
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
SELECT printf('%08x-%04x-7%03x-8000-%012x', ((:base - 7200000000) / 1000) >> 16,
              ((:base - 7200000000) / 1000) & 65535, 1, i),
       'u' || i, 'u' || i, '+1555' || printf('%07d', i), '', :base - 7200000000, :base - 7200000000
FROM s;

WITH RECURSIVE s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < :convs),
m AS (
  SELECT j,
         CASE WHEN j <= :inbox THEN 1 ELSE 2 + (j % (:contacts - 1)) END AS creator,
         CASE WHEN j = 1 THEN 2
              WHEN j <= :inbox THEN 2 + ((j - 1) % (:contacts - 1))
              ELSE 2 + ((j + 1 + (j / (:contacts - 1)) % (:contacts - 2)) % (:contacts - 1)) END AS peer
  FROM s)
INSERT INTO conv_map
SELECT j,
       printf('%08x-%04x-7%03x-8000-%012x', ((:base - 3600000000) / 1000) >> 16,
              ((:base - 3600000000) / 1000) & 65535, 2, j),
       printf('%08x-%04x-7%03x-8000-%012x', ((:base - 7200000000) / 1000) >> 16,
              ((:base - 7200000000) / 1000) & 65535, 1, creator),
       printf('%08x-%04x-7%03x-8000-%012x', ((:base - 7200000000) / 1000) >> 16,
              ((:base - 7200000000) / 1000) & 65535, 1, peer)
FROM m;

INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
SELECT id, creator, peer, :base - 3600000000, :base - 3600000000 FROM conv_map;

INSERT INTO conversation_states (conversation_id, contact_id)
SELECT id, creator FROM conv_map UNION ALL SELECT id, peer FROM conv_map;

-- messages
WITH RECURSIVE s(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM s WHERE k < :messages)
-- Each message's audience (direct_creator_id, direct_peer_id; no group
-- conversations here) from the conversation map, as a send copies it.
-- Each conversation numbers its messages in their order (`seq`).
INSERT INTO messages (id, conversation_id, sender_id, body, read_at, created_at,
                      direct_creator_id, direct_peer_id, seq, body_folded)
SELECT printf('%08x-%04x-7%03x-8000-%012x', ((:base + k * 1000) / 1000) >> 16,
              ((:base + k * 1000) / 1000) & 65535, 3, k),
       c.id,
       CASE WHEN (k / 7) % 2 = 0 THEN c.creator ELSE c.peer END,
       'Lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k,
       CASE WHEN k <= :messages * 99 / 100 THEN :base + k * 1000 + 60000000 END,
       :base + k * 1000,
       c.creator,
       c.peer,
       ROW_NUMBER() OVER (PARTITION BY c.j ORDER BY k),
       -- Folded for search as a send folds it (ASCII text: lowercased).
       'lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k
FROM s JOIN conv_map c ON c.j = CASE WHEN k % (:messages / :big) = 0 THEN 1
                                     ELSE 2 + (k % (:convs - 1)) END;

-- after
UPDATE conversations
SET last_active_at = (SELECT max(created_at) FROM messages WHERE conversation_id = conversations.id),
    activity_at = (SELECT max(created_at) FROM messages WHERE conversation_id = conversations.id),
    message_seq = (SELECT count(*) FROM messages WHERE conversation_id = conversations.id);
-- Every member has read everything (unread counts 0).
UPDATE conversation_states
SET read_seq = (SELECT message_seq FROM conversations WHERE id = conversation_states.conversation_id);

ANALYZE;
