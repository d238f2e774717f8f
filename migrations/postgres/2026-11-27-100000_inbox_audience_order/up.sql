-- The inbox (GET /v1/conversations) as a few ordered index ranges, like
-- the feed: the viewer's direct conversations as creator (one range), as
-- peer (one range), and one range per group the viewer belongs to now, each
-- in the inbox's order (activity_at, id descending), so a page reads about
-- as many rows as it returns. Before, one scan of the global activity order
-- filtered every conversation by membership: a viewer with few
-- conversations among many walked nearly all of them for each page.
--
-- Each index keeps its leading column, so it still serves what the old
-- one did (the foreign keys' checks, a group's conversations). The global
-- order served only the inbox: nothing reads it now, one index write less
-- per send.
DROP INDEX conversations_creator_id_idx;
DROP INDEX conversations_peer_id_idx;
DROP INDEX conversations_group_id_idx;
DROP INDEX conversations_activity_idx;
CREATE INDEX conversations_creator_order_idx ON conversations (creator_id, activity_at DESC, id DESC);
CREATE INDEX conversations_peer_order_idx ON conversations (peer_id, activity_at DESC, id DESC);
CREATE INDEX conversations_group_order_idx ON conversations (group_id, activity_at DESC, id DESC);
