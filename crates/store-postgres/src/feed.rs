//! The feed's page on PostgreSQL (docs/api.md "Paginate a list", `GET /v1/messages`):
//! one statement over the viewer's audience ranges, each read newest first
//! by a `LATERAL` seek of its index, and the page's rows read whole.

use diesel::pg::Pg;

use confab_store_sql::id::DbId;

/// [`PgStore::feed_page`]'s statement, for a loader of rows of its own.
pub(crate) fn feed_page_query(
    viewer: DbId,
    cursor: Option<(bool, DbId)>,
    fetch: i64,
) -> confab_store_sql::raw::TypedQuery<Pg, crate::queries::WholeSql> {
    // Kept prepared (few binds): one shape without a cursor and one for
    // each direction, each built once.
    static SHAPES: [std::sync::OnceLock<confab_store_sql::raw::Shape>; 3] =
        [const { std::sync::OnceLock::new() }; 3];
    confab_store_sql::queries::paging::feed_query(&SHAPES, feed_page_text, viewer, cursor, fetch)
}

/// [`feed_page_query`]'s text for a way of travel (none: from the newest;
/// else whether before the cursor), with the viewer, the rows to fetch and
/// the cursor as binds 0, 1 and 2.
fn feed_page_text(travel: Option<bool>) -> String {
    use confab_store_sql::raw::marker;

    let (v, limit) = (marker(0), marker(1));
    let key = travel.map(|_| marker(2));
    let (order, keyset) = match (travel, &key) {
        (Some(backwards), Some(k)) => {
            let (order, past) = confab_store_sql::queries::paging::travel_order(backwards);
            (
                order,
                format!("AND (m.created_at, m.id) {past} ((SELECT at FROM cursor_key), {k})"),
            )
        }
        _ => ("DESC", String::new()),
    };
    let sees = confab_store_sql::queries::paging::feed_sees(&v);
    let cursor_key = match &key {
        Some(k) => format!(
            "cursor_key (at) AS MATERIALIZED ( \
                 SELECT created_at FROM messages WHERE id = {k} AND {sees} \
             ), "
        ),
        None => String::new(),
    };
    let range = |audience: &str| {
        format!(
            "SELECT m.id, m.conversation_id, m.sender_id, m.body, m.read_at, m.created_at, \
                 m.updated_at, m.reply_to_id, m.parent_id, m.reply_count, m.last_reply_at, \
                 m.edited_at, m.mentions \
             FROM messages m WHERE {audience} {keyset} \
             ORDER BY m.created_at {order}, m.id {order} LIMIT {limit}"
        )
    };
    let [as_creator, as_peer, in_group] =
        confab_store_sql::queries::paging::feed_audiences("m", &v).map(|audience| range(&audience));
    // Whole rows: each message's reactions and attachments in the same
    // statement (`rows::relation_columns`), for the page's rows only.
    let columns = crate::queries::whole_columns("p", "s");
    format!(
        "WITH {cursor_key}page AS ( \
             SELECT * FROM ( \
                 ({as_creator}) \
                 UNION ALL ({as_peer}) \
                 UNION ALL SELECT r.* FROM group_members g CROSS JOIN LATERAL ({in_group}) r \
                     WHERE g.contact_id = {v} \
             ) u \
             ORDER BY created_at {order}, id {order} LIMIT {limit} \
         ) \
         SELECT {columns} \
         FROM page p CROSS JOIN LATERAL ( \
             SELECT * FROM contacts WHERE id = p.sender_id \
         ) s \
         ORDER BY p.created_at {order}, p.id {order}"
    )
}
