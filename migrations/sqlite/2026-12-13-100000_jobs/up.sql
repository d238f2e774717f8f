-- Work too big for one request's transaction (docs/api.md, "Jobs"): a
-- contact's erase, a big conversation's deletion. The request locks the contact out and records the job in
-- one small transaction; the rest runs in the background in bounded
-- batches, each its own short transaction, and resumes after a restart.
-- A server runs a job only while it holds the job's lease, so that two
-- servers on one database never run the same job at once.
CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    -- 'contact.erase' or 'conversation.delete'.
    kind        TEXT NOT NULL,
    -- What the job works on (the contact erased, the conversation deleted).
    subject_id  TEXT NOT NULL,
    -- Who asked (the contact deleting a conversation); NULL: the server API.
    actor_id    TEXT,
    -- 'running' until done, then 'succeeded'.
    state       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    finished_at BIGINT,
    -- Batches done so far.
    progress    BIGINT NOT NULL DEFAULT 0,
    -- The server running it, until when (microseconds); NULL: free.
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX jobs_unfinished_idx ON jobs (created_at) WHERE finished_at IS NULL;
CREATE INDEX jobs_subject_idx ON jobs (subject_id, kind);

-- A contact being erased: nothing may act as it any more (its tokens are
-- gone; a server key acting for it is refused), and it is no longer found.
ALTER TABLE contacts ADD COLUMN erasing BOOLEAN NOT NULL DEFAULT FALSE;

-- An erase finds the contact's rows by index, so that its cost follows
-- them and never the size of the database.
CREATE INDEX messages_sender_idx ON messages (sender_id, id);
CREATE INDEX reactions_contact_idx ON reactions (contact_id);
CREATE INDEX events_actor_idx ON events (actor_id);
CREATE INDEX events_subject_idx ON events (subject_id);
CREATE INDEX message_gaps_sender_idx ON message_gaps (sender_id);
CREATE INDEX groups_created_by_idx ON groups (created_by);
