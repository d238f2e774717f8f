-- confab schema (PostgreSQL). Timestamps are BIGINT microseconds since the
-- Unix epoch (exact order within a second, identical to the SQLite store).

CREATE TABLE contacts (
    id              UUID PRIMARY KEY,
    username        TEXT NOT NULL,
    -- Lowercase username: uniqueness and lookup are case-insensitive.
    username_folded TEXT NOT NULL,
    phone_number    TEXT NOT NULL,
    avatar_url      TEXT NOT NULL DEFAULT '',
    last_active_at  BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    CONSTRAINT contacts_username_folded_key UNIQUE (username_folded)
);

CREATE TABLE tokens (
    id          UUID PRIMARY KEY,
    contact_id  UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    -- Lowercase hex SHA-256 of the secret; the secret itself is never stored.
    token_hash  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT,
    CONSTRAINT tokens_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX tokens_contact_id_idx ON tokens (contact_id);

CREATE TABLE groups (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    avatar_url  TEXT NOT NULL DEFAULT '',
    created_by  UUID NOT NULL REFERENCES contacts (id),
    created_at  BIGINT NOT NULL
);
CREATE INDEX groups_created_at_id_idx ON groups (created_at DESC, id DESC);

CREATE TABLE group_members (
    group_id    UUID NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    contact_id  UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    -- Join order within the group.
    seq         BIGINT NOT NULL,
    joined_at   BIGINT NOT NULL,
    PRIMARY KEY (group_id, contact_id)
);
CREATE INDEX group_members_contact_id_idx ON group_members (contact_id, group_id);

CREATE TABLE conversations (
    id                UUID PRIMARY KEY,
    group_id          UUID REFERENCES groups (id) ON DELETE CASCADE,
    creator_id        UUID NOT NULL REFERENCES contacts (id),
    -- The other member of a direct conversation.
    peer_id           UUID REFERENCES contacts (id),
    pinned_message_id UUID,
    last_active_at    BIGINT,
    -- COALESCE(last_active_at, created_at), kept up to date: the list order.
    activity_at       BIGINT NOT NULL,
    created_at        BIGINT NOT NULL,
    CONSTRAINT conversations_kind_check CHECK ((group_id IS NULL) <> (peer_id IS NULL))
);
CREATE INDEX conversations_activity_idx ON conversations (activity_at DESC, id DESC);
CREATE INDEX conversations_group_id_idx ON conversations (group_id);
CREATE INDEX conversations_creator_id_idx ON conversations (creator_id);
CREATE INDEX conversations_peer_id_idx ON conversations (peer_id);
-- Deleting a message looks up the conversations that pinned it.
CREATE INDEX conversations_pinned_message_id_idx ON conversations (pinned_message_id)
    WHERE pinned_message_id IS NOT NULL;

-- A member's own view of a conversation. Direct conversations get both rows at
-- creation; a group member's row appears on its first change (absent = default).
CREATE TABLE conversation_states (
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    contact_id      UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    is_pinned       BOOLEAN NOT NULL DEFAULT FALSE,
    is_muted        BOOLEAN NOT NULL DEFAULT FALSE,
    archived_at     BIGINT,
    last_opened_at  BIGINT,
    PRIMARY KEY (conversation_id, contact_id)
);
CREATE INDEX conversation_states_contact_id_idx ON conversation_states (contact_id, conversation_id);

CREATE TABLE messages (
    id              UUID PRIMARY KEY,
    conversation_id UUID NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    sender_id       UUID NOT NULL REFERENCES contacts (id),
    body            TEXT NOT NULL,
    read_at         BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT
);
CREATE INDEX messages_conversation_order_idx ON messages (conversation_id, created_at DESC, id DESC);
CREATE INDEX messages_order_idx ON messages (created_at DESC, id DESC);
-- Opening a conversation marks its unread messages read.
CREATE INDEX messages_unread_idx ON messages (conversation_id) WHERE read_at IS NULL;

ALTER TABLE conversations
    ADD CONSTRAINT conversations_pinned_message_id_fkey
    FOREIGN KEY (pinned_message_id) REFERENCES messages (id) ON DELETE SET NULL;

CREATE TABLE reactions (
    -- Insertion order: names by their first reaction, reactors in order.
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id  UUID NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    contact_id  UUID NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    CONSTRAINT reactions_message_name_contact_key UNIQUE (message_id, name, contact_id)
);
CREATE INDEX reactions_message_id_seq_idx ON reactions (message_id, seq);

CREATE TABLE attachments (
    id          UUID PRIMARY KEY,
    message_id  UUID NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    -- Position within the message (insertion order).
    seq         INTEGER NOT NULL,
    filename    TEXT NOT NULL,
    file_url    TEXT NOT NULL,
    file_type   TEXT NOT NULL,
    file_size   BIGINT,
    created_at  BIGINT NOT NULL,
    CONSTRAINT attachments_message_id_seq_key UNIQUE (message_id, seq)
);
