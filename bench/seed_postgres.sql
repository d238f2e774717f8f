-- Seeds a migrated, empty confab database (PostgreSQL) with the benchmark set.
-- psql variables: contacts, convs, messages, big (messages of conversation 1),
-- inbox (conversations of contact 1), base (microseconds of message 1).
--
-- Ids have the shape of the server's UUIDv7 (time first, so that they are
-- appended to the primary key index like real ones), and are the same in the
-- SQLite seed: ms(8)-ms(4)-7<kind>-8000-<n>. Contact n holds token
-- `cfb_bench_<n>` (tokens are inserted by the caller, which hashes them).
--
-- Layout: conversation 1 is contacts 1 and 2 with `big` messages;
-- conversations 2..inbox are contact 1's others (so contact 1 has `inbox`
-- conversations); the rest pair contacts 2..contacts round robin. Message k
-- is sent at base + k ms; every (messages/big)-th goes to conversation 1, the
-- others go round robin to conversations 2..convs.
\set ON_ERROR_STOP on
SET maintenance_work_mem = '512MB';
SET synchronous_commit = off;
-- No foreign-key triggers while seeding: the generator keeps the references
-- valid by construction.
SET session_replication_role = replica;

CREATE FUNCTION pg_temp.bench_id(ms bigint, kind int, n bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE AS $$
  SELECT (lpad(to_hex(ms >> 16), 8, '0') || '-' || lpad(to_hex(ms & 65535), 4, '0')
          || '-7' || lpad(to_hex(kind), 3, '0') || '-8000-' || lpad(to_hex(n), 12, '0'))::uuid
$$;

INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
SELECT pg_temp.bench_id((:base - 7200000000) / 1000, 1, i), 'u' || i, 'u' || i,
       '+1555' || lpad(i::text, 7, '0'), '', :base - 7200000000, :base - 7200000000
FROM generate_series(1, :contacts) i;

CREATE TEMP TABLE conv_map AS
SELECT j,
       pg_temp.bench_id((:base - 3600000000) / 1000, 2, j) AS id,
       CASE WHEN j <= :inbox THEN 1 ELSE 2 + (j % (:contacts - 1)) END AS creator,
       CASE WHEN j = 1 THEN 2
            WHEN j <= :inbox THEN 2 + ((j - 1) % (:contacts - 1))
            ELSE 2 + ((j + 1 + (j / (:contacts - 1)) % (:contacts - 2)) % (:contacts - 1)) END AS peer
FROM generate_series(1, :convs) j;
ALTER TABLE conv_map ADD PRIMARY KEY (j);

INSERT INTO conversations (id, creator_id, peer_id, activity_at, created_at)
SELECT m.id, pg_temp.bench_id((:base - 7200000000) / 1000, 1, m.creator),
       pg_temp.bench_id((:base - 7200000000) / 1000, 1, m.peer),
       :base - 3600000000, :base - 3600000000
FROM conv_map m;

INSERT INTO conversation_states (conversation_id, contact_id)
SELECT id, pg_temp.bench_id((:base - 7200000000) / 1000, 1, creator) FROM conv_map
UNION ALL
SELECT id, pg_temp.bench_id((:base - 7200000000) / 1000, 1, peer) FROM conv_map;

-- Secondary indexes of messages are built after the rows (much faster);
-- their definitions are read from the catalog, so that they stay whatever the
-- migrations made them.
CREATE TEMP TABLE message_indexes AS
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = 'public' AND tablename = 'messages'
  AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'messages'::regclass);
SELECT format('DROP INDEX %I', indexname) FROM message_indexes \gexec

-- Each message's audience (direct_creator_id, direct_peer_id; no group
-- conversations here) from the conversation map, as a send copies it.
-- Each conversation numbers its messages in their order (`seq`, migration
-- `big_groups`).
INSERT INTO messages (id, conversation_id, sender_id, body, read_at, created_at,
                      direct_creator_id, direct_peer_id, seq, body_folded)
SELECT pg_temp.bench_id((:base + k * 1000) / 1000, 3, k), c.id,
       pg_temp.bench_id((:base - 7200000000) / 1000, 1,
                        CASE WHEN (k / 7) % 2 = 0 THEN c.creator ELSE c.peer END),
       'Lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k,
       -- The newest 1 % are unread.
       CASE WHEN k <= :messages * 99 / 100 THEN :base + k * 1000 + 60000000 END,
       :base + k * 1000,
       pg_temp.bench_id((:base - 7200000000) / 1000, 1, c.creator),
       pg_temp.bench_id((:base - 7200000000) / 1000, 1, c.peer),
       ROW_NUMBER() OVER (PARTITION BY c.j ORDER BY k),
       -- Folded for search as a send folds it (ASCII text: lowercased).
       'lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k
FROM generate_series(1::bigint, :messages) k
JOIN conv_map c ON c.j = CASE WHEN k % (:messages / :big) = 0 THEN 1
                              ELSE 2 + (k % (:convs - 1)) END;

SELECT indexdef FROM message_indexes \gexec

UPDATE conversations c SET last_active_at = m.last, activity_at = m.last, message_seq = m.n
FROM (SELECT conversation_id, max(created_at) AS last, count(*) AS n FROM messages GROUP BY 1) m
WHERE c.id = m.conversation_id;
-- Every member has read everything (unread counts 0, as the counters the
-- seed left before `big_groups`).
UPDATE conversation_states s SET read_seq = c.message_seq
FROM conversations c WHERE c.id = s.conversation_id;

RESET session_replication_role;
-- As a long-running database would be: statistics, and a visibility map for
-- index-only scans (also keeps autovacuum from starting during the runs).
VACUUM ANALYZE;
