-- Big groups (API.md section 13): a write in a group conversation writes a
-- bounded number of rows, whatever the group's size. Before, a send wrote a
-- row per member twice over (each member's unread counter, and an event
-- recipient row per member), so its cost grew with the audience.
--
-- Unread counts from positions. Each conversation numbers its messages
-- (`conversations.message_seq`, the last number given; `messages.seq`, a
-- message's own). A member's state row keeps where they read up to
-- (`read_seq`: the conversation's `message_seq` when they last opened it)
-- and how many messages they sent themselves after it (`own_after`). A
-- deleted message leaves a gap (`message_gaps`: its number and sender), and
-- `deleted_count` says whether a conversation has any. A member's unread
-- count is then
--
--     message_seq - read_seq - own_after
--         - (gaps after read_seq of messages from others)
--
-- exact for every member, and a send writes the conversation (its number)
-- and the sender's own state row, never the others'. A member without a
-- state row (a group member who never opened, sent or changed anything)
-- has read_seq 0 and own_after 0: every message is unread, as before.
ALTER TABLE conversations
    ADD COLUMN message_seq BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN deleted_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;

-- The messages kept so far are numbered in their order.
UPDATE messages m
SET seq = n.seq
FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY created_at, id) AS seq
      FROM messages) AS n
WHERE n.id = m.id;
UPDATE conversations c
SET message_seq = n.last
FROM (SELECT conversation_id, MAX(seq) AS last FROM messages GROUP BY conversation_id) AS n
WHERE n.conversation_id = c.id;

CREATE TABLE message_gaps (
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    -- The deleted message's number.
    seq             BIGINT NOT NULL,
    -- Its sender: their own messages were never unread for them.
    sender_id       UUID NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);

ALTER TABLE conversation_states
    ADD COLUMN read_seq BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN own_after BIGINT NOT NULL DEFAULT 0;

-- Each member read up to the last message at or before their last opening;
-- `own_after` is then set so that the formula gives exactly the count each
-- row holds now (the counts are preserved as they are).
UPDATE conversation_states s
SET read_seq = n.last
FROM (SELECT s2.conversation_id, s2.contact_id, MAX(m.seq) AS last
      FROM conversation_states s2
      JOIN messages m ON m.conversation_id = s2.conversation_id
                     AND m.created_at <= s2.last_opened_at
      WHERE s2.last_opened_at IS NOT NULL
      GROUP BY s2.conversation_id, s2.contact_id) AS n
WHERE n.conversation_id = s.conversation_id AND n.contact_id = s.contact_id;
UPDATE conversation_states s
SET own_after = c.message_seq - s.read_seq - s.unread_count
FROM conversations c
WHERE c.id = s.conversation_id;
ALTER TABLE conversation_states DROP COLUMN unread_count;

-- Events read by group (fan-out on read). An event for a group's members
-- is one row here instead of a recipient row per member; a member reads
-- the group's rows from the position they joined at (`from_position`)
-- while a member, and those of a membership that ended from its span
-- (`group_member_spans`), so that a member sees the group's events from
-- when they joined until they left, never after.
CREATE TABLE event_groups (
    group_id UUID NOT NULL,
    position BIGINT NOT NULL,
    event_id UUID NOT NULL,
    PRIMARY KEY (group_id, position)
);
-- The fan-out reads a range of positions; pruning deletes by position.
CREATE INDEX event_groups_position_idx ON event_groups (position);

-- The position of the first event a member sees: their joining
-- transaction's first (`SqlBackend::TXN_FIRST_POSITION_SQL`). Members kept
-- so far see every kept group event (there are none in `event_groups` yet:
-- earlier events have their recipient rows).
ALTER TABLE group_members ADD COLUMN from_position BIGINT NOT NULL DEFAULT 0;

-- Memberships that ended (a member removed or leaving, a group deleted):
-- the group's events in [from_position, until_position) stay theirs for
-- catch-up, up to and including the events of the change that ended it.
-- Pruned with the events they span.
CREATE TABLE group_member_spans (
    contact_id     UUID NOT NULL,
    group_id       UUID NOT NULL,
    from_position  BIGINT NOT NULL,
    until_position BIGINT NOT NULL,
    PRIMARY KEY (contact_id, group_id, from_position)
);
CREATE INDEX group_member_spans_until_idx ON group_member_spans (until_position);

-- A group's size, kept with its membership (the group object's
-- `member_count`), so that no read counts the members.
ALTER TABLE groups ADD COLUMN member_count BIGINT NOT NULL DEFAULT 0;
UPDATE groups g
SET member_count = n.members
FROM (SELECT group_id, COUNT(*) AS members FROM group_members GROUP BY group_id) AS n
WHERE n.group_id = g.id;

-- A group's first members (the group object embeds 100) and the members
-- page walk the join order; its rules read its owners. Both by index, so
-- neither reads a 10,000-member group's every row.
CREATE INDEX group_members_order_idx ON group_members (group_id, seq, contact_id);
CREATE INDEX group_members_owners_idx ON group_members (group_id) WHERE role = 'owner';
