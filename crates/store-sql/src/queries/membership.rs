//! Who sees what: the membership predicate every visible list and lookup is
//! built on, and the existence checks of the write paths.
//!
//! The list macros build boxed queries for the backend `Db` in scope where
//! they are used; they are macros because diesel's expression types are
//! unnameable.

/// The predicate "`$viewer` is a member of this conversation": its creator or
/// peer (direct only), or a current member of its group (live membership, a join,
/// never a copy). A macro because diesel's expression types are unnameable.
#[macro_export]
macro_rules! visible_to {
    ($viewer:expr) => {{
        use $crate::schema::{conversations, group_members};
        // A direct conversation's members are its creator and its peer; a
        // group conversation's are the group's members right now, so its
        // creator loses it on leaving the group. A conversation being
        // deleted (by a job) is no one's.
        conversations::deleting.eq(false).and(
            conversations::group_id
                .is_null()
                .and(
                    conversations::creator_id
                        .eq($viewer)
                        .or(conversations::peer_id.eq($viewer)),
                )
                .or(conversations::group_id.eq_any(
                    group_members::table
                        .filter(group_members::contact_id.eq($viewer))
                        .select(group_members::group_id.nullable()),
                )),
        )
    }};
}

/// The viewer's conversations joined with the viewer's own state row (absent
/// for a group member who never changed anything), with `filter` applied, as
/// a boxed query.
#[macro_export]
macro_rules! conversation_list {
    ($viewer:expr, $filter:expr) => {{
        use $crate::schema::{conversation_states, conversations};
        let viewer: $crate::id::DbId = $viewer;
        let filter: &confab_ports::ConversationFilter = $filter;
        let mut q = conversations::table
            .left_join(
                conversation_states::table.on(conversation_states::conversation_id
                    .eq(conversations::id)
                    .and(conversation_states::contact_id.eq(viewer))),
            )
            .filter($crate::visible_to!(viewer))
            .into_boxed::<Db>();
        // An absent state row reads as the default state: not muted, not
        // archived, not pinned.
        if let Some(muted) = filter.muted {
            q = if muted {
                q.filter(conversation_states::is_muted.eq(true))
            } else {
                q.filter(
                    conversation_states::is_muted
                        .is_null()
                        .or(conversation_states::is_muted.eq(false)),
                )
            };
        }
        if let Some(pinned) = filter.pinned {
            q = if pinned {
                q.filter(conversation_states::is_pinned.eq(true))
            } else {
                q.filter(
                    conversation_states::is_pinned
                        .is_null()
                        .or(conversation_states::is_pinned.eq(false)),
                )
            };
        }
        if let Some(archived) = filter.archived {
            q = if archived {
                q.filter(conversation_states::archived_at.is_not_null())
            } else {
                q.filter(conversation_states::archived_at.is_null())
            };
        }
        if let Some(group) = filter.group_id {
            q = q.filter(conversations::group_id.eq($crate::rows::DbKey::db(&group)));
        }
        q
    }};
}

/// The groups the viewer belongs to, boxed.
#[macro_export]
macro_rules! group_list {
    ($viewer:expr) => {{
        use $crate::schema::{group_members, groups};
        let viewer: $crate::id::DbId = $viewer;
        groups::table
            .filter(
                groups::id.eq_any(
                    group_members::table
                        .filter(group_members::contact_id.eq(viewer))
                        .select(group_members::group_id),
                ),
            )
            .into_boxed::<Db>()
    }};
}
pub use crate::{conversation_list, group_list, visible_to};
