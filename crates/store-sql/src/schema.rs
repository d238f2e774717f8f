//! The diesel schema, written once for both stores. It matches
//! `migrations/{postgres,sqlite}/*/up.sql` column for column; the only
//! difference between the two databases is how ids are stored, which
//! [`IdSql`](crate::id::IdSql) hides (PostgreSQL `uuid`, SQLite `TEXT`).
//! Timestamps are `BigInt` microseconds since the Unix epoch in both.

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    contacts (id) {
        id -> IdSql,
        username -> Text,
        username_folded -> Text,
        phone_number -> Text,
        avatar_url -> Text,
        last_active_at -> BigInt,
        created_at -> BigInt,
        erasing -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    jobs (id) {
        id -> IdSql,
        kind -> Text,
        subject_id -> IdSql,
        actor_id -> Nullable<IdSql>,
        state -> Text,
        created_at -> BigInt,
        finished_at -> Nullable<BigInt>,
        progress -> BigInt,
        lease_owner -> Nullable<IdSql>,
        lease_until -> Nullable<BigInt>,
        /// How far an erase's redaction of kept events (then of stored
        /// answers) has gone, by their `created_at` (migration
        /// `job_cursors`).
        events_done_to -> Nullable<BigInt>,
        answers_done_to -> Nullable<BigInt>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    tokens (id) {
        id -> IdSql,
        contact_id -> IdSql,
        token_hash -> Text,
        created_at -> BigInt,
        expires_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
        last_used_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    server_keys (id) {
        id -> IdSql,
        name -> Text,
        key_hash -> Text,
        created_at -> BigInt,
        last_used_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    groups (id) {
        id -> IdSql,
        name -> Text,
        description -> Text,
        avatar_url -> Text,
        created_by -> IdSql,
        created_at -> BigInt,
        /// Its members, counted with every change of them.
        member_count -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    group_members (group_id, contact_id) {
        group_id -> IdSql,
        contact_id -> IdSql,
        role -> Text,
        seq -> BigInt,
        joined_at -> BigInt,
        /// The first event position the member sees of the group's
        /// (`event_groups`): their joining transaction's first.
        from_position -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// Memberships that ended: the group's events in
    /// `[from_position, until_position)` stay the contact's to catch up.
    group_member_spans (contact_id, group_id, from_position) {
        contact_id -> IdSql,
        group_id -> IdSql,
        from_position -> BigInt,
        until_position -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    conversations (id) {
        id -> IdSql,
        group_id -> Nullable<IdSql>,
        creator_id -> IdSql,
        peer_id -> Nullable<IdSql>,
        pinned_message_id -> Nullable<IdSql>,
        last_active_at -> Nullable<BigInt>,
        activity_at -> BigInt,
        created_at -> BigInt,
        /// The number the last message sent in it got (`messages.seq`).
        message_seq -> BigInt,
        /// How many of its messages were deleted (`message_gaps`).
        deleted_count -> BigInt,
        /// Its deletion runs as a job: no one sees it any more (migration
        /// `job_cursors`).
        deleting -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// A deleted message's number and sender, for unread counts.
    message_gaps (conversation_id, seq) {
        conversation_id -> IdSql,
        seq -> BigInt,
        sender_id -> IdSql,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    conversation_states (conversation_id, contact_id) {
        conversation_id -> IdSql,
        contact_id -> IdSql,
        is_pinned -> Bool,
        is_muted -> Bool,
        archived_at -> Nullable<BigInt>,
        last_opened_at -> Nullable<BigInt>,
        /// The conversation's `message_seq` when the member last opened it.
        read_seq -> BigInt,
        /// Messages the member sent after `read_seq`.
        own_after -> BigInt,
        /// Their unread messages that mention them.
        mention_unread -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    messages (id) {
        id -> IdSql,
        conversation_id -> IdSql,
        sender_id -> IdSql,
        body -> Text,
        read_at -> Nullable<BigInt>,
        created_at -> BigInt,
        updated_at -> Nullable<BigInt>,
        /// The audience, copied from the conversation at insert (see the
        /// `message_audience` migration): a direct conversation's members,
        /// or a group conversation's group.
        direct_creator_id -> Nullable<IdSql>,
        direct_peer_id -> Nullable<IdSql>,
        group_id -> Nullable<IdSql>,
        /// Its number in its conversation (1, 2, ...).
        seq -> BigInt,
        /// The message it quotes (kept when that one is deleted).
        reply_to_id -> Nullable<IdSql>,
        /// The message whose thread it replies in.
        parent_id -> Nullable<IdSql>,
        /// Its thread's replies.
        reply_count -> BigInt,
        /// When its thread's latest reply was sent.
        last_reply_at -> Nullable<BigInt>,
        /// When its text last changed.
        edited_at -> Nullable<BigInt>,
        /// The mentioned contacts, a JSON array of ids; NULL when none.
        mentions -> Nullable<Text>,
        /// Its text as searches compare it (`confab_domain::fold`); NULL
        /// only until `confab migrate` folds the rows written before.
        body_folded -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// The earlier texts of edited messages (migration
    /// `conversation_depth`).
    message_edits (id) {
        id -> IdSql,
        message_id -> IdSql,
        body -> Text,
        edited_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    reactions (seq) {
        seq -> BigInt,
        message_id -> IdSql,
        name -> Text,
        contact_id -> IdSql,
        created_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    attachments (id) {
        id -> IdSql,
        message_id -> Nullable<IdSql>,
        seq -> Integer,
        filename -> Text,
        file_url -> Nullable<Text>,
        file_type -> Text,
        file_size -> Nullable<BigInt>,
        created_at -> BigInt,
        uploader_id -> IdSql,
        conversation_id -> Nullable<IdSql>,
        content_sha256 -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    file_deletions (attachment_id) {
        attachment_id -> IdSql,
        due_at -> BigInt,
    }
}

diesel::table! {
    server_secrets (name) {
        name -> Text,
        value -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    idempotency_keys (contact_id, key) {
        contact_id -> IdSql,
        key -> Text,
        fingerprint -> Text,
        claim -> IdSql,
        created_at -> BigInt,
        locked_until -> BigInt,
        status -> Nullable<Integer>,
        location -> Nullable<Text>,
        body -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// The outbox (docs/api.md "Listen for events"). `position` is the commit order: on
    /// PostgreSQL `pg_current_xact_id() * 2^20 + index`, on SQLite an
    /// AUTOINCREMENT key (see the migration).
    events (id) {
        id -> IdSql,
        position -> BigInt,
        #[sql_name = "type"]
        kind -> Text,
        actor_id -> IdSql,
        created_at -> BigInt,
        payload -> Text,
        /// What the event is about, so that a deletion finds and scrubs
        /// its events by index (migration `deleted_leaves_events`): the
        /// object's id (its payload's `id`), and the conversation and
        /// message whose content the payload carries (NULL when none, and
        /// once scrubbed).
        subject_id -> Nullable<IdSql>,
        conversation_id -> Nullable<IdSql>,
        message_id -> Nullable<IdSql>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    event_recipients (contact_id, position) {
        contact_id -> IdSql,
        position -> BigInt,
        event_id -> IdSql,
        payload -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// An event for a group's members, read by group (fan-out on read).
    event_groups (group_id, position) {
        group_id -> IdSql,
        position -> BigInt,
        event_id -> IdSql,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// Webhooks and their first-attempt cursor and lease (see the migration).
    webhooks (id) {
        id -> IdSql,
        url -> Text,
        event_types -> Text,
        secret -> Text,
        created_at -> BigInt,
        cursor_position -> BigInt,
        leased_by -> Nullable<IdSql>,
        leased_until -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    webhook_deliveries (id) {
        id -> IdSql,
        webhook_id -> IdSql,
        event_id -> IdSql,
        attempt -> Integer,
        status -> Nullable<Integer>,
        error -> Nullable<Text>,
        attempted_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    webhook_retries (webhook_id, event_id) {
        webhook_id -> IdSql,
        event_id -> IdSql,
        attempt -> Integer,
        next_at -> BigInt,
        first_attempt_at -> BigInt,
        leased_by -> Nullable<IdSql>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// New idempotency keys per contact and UTC day (the quota, docs/api.md
    /// "Retry safely: idempotency keys"; see the migration).
    idempotency_quota (day, contact_id) {
        day -> BigInt,
        contact_id -> IdSql,
        used -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    event_tickets (ticket_hash) {
        ticket_hash -> Text,
        token_id -> IdSql,
        contact_id -> IdSql,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// One contact's block of another (migration `moderation`).
    blocks (blocker_id, blocked_id) {
        blocker_id -> IdSql,
        blocked_id -> IdSql,
        created_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::id::IdSql;

    /// Reports to the operator (migration `moderation`).
    reports (id) {
        id -> IdSql,
        reporter_id -> IdSql,
        message_id -> Nullable<IdSql>,
        contact_id -> IdSql,
        reason -> Text,
        description -> Text,
        status -> Text,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::joinable!(tokens -> contacts (contact_id));
diesel::joinable!(blocks -> contacts (blocked_id));
diesel::joinable!(event_tickets -> tokens (token_id));
diesel::joinable!(idempotency_keys -> contacts (contact_id));
diesel::joinable!(group_members -> groups (group_id));
diesel::joinable!(group_members -> contacts (contact_id));
diesel::joinable!(conversation_states -> conversations (conversation_id));
diesel::joinable!(messages -> conversations (conversation_id));
diesel::joinable!(reactions -> messages (message_id));
diesel::joinable!(reactions -> contacts (contact_id));
diesel::joinable!(attachments -> messages (message_id));
diesel::joinable!(message_edits -> messages (message_id));
diesel::joinable!(event_recipients -> events (event_id));
diesel::joinable!(webhook_retries -> webhooks (webhook_id));
diesel::joinable!(webhook_retries -> events (event_id));

diesel::allow_tables_to_appear_in_same_query!(
    contacts,
    jobs,
    tokens,
    server_keys,
    groups,
    group_members,
    group_member_spans,
    conversations,
    message_gaps,
    conversation_states,
    messages,
    message_edits,
    reactions,
    attachments,
    file_deletions,
    server_secrets,
    idempotency_keys,
    events,
    event_recipients,
    event_groups,
    webhooks,
    webhook_deliveries,
    webhook_retries,
    idempotency_quota,
    event_tickets,
    blocks,
    reports,
);
