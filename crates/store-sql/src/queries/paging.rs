//! Keyset paging, the same for every list: a cursor is resolved to its
//! item's sort key, and the page is the rows strictly after (or before) it.
//! Lists fetch `limit + 1` rows to learn whether more lie beyond.

use confab_domain::{Cursor, Page};
use confab_ports::StoreError;

use super::Result;
use crate::error::Error;

/// Where a page starts, resolved to the sort key of its cursor item.
pub enum Seek<K> {
    First,
    After(K),
    Before(K),
}

impl<K> Seek<K> {
    pub fn backwards(&self) -> bool {
        matches!(self, Self::Before(_))
    }
}

/// The order of travel of a written-out page and its keyset comparison:
/// newest first and `<` ("further along" is older), or, before a cursor,
/// oldest first and `>` (run in reverse, turned back by [`finish_page`]).
pub fn travel_order(backwards: bool) -> (&'static str, &'static str) {
    if backwards {
        ("ASC", ">")
    } else {
        ("DESC", "<")
    }
}

/// Which of a written-out page's three statement shapes a cursor takes
/// (`crate::raw::Shape`): from the newest, after the cursor, before it.
pub fn travel_shape<K>(cursor: Option<(bool, K)>) -> usize {
    match cursor {
        None => 0,
        Some((false, _)) => 1,
        Some((true, _)) => 2,
    }
}

/// A feed page's written-out statement: one of its three shapes
/// ([`travel_shape`]), each built once by `text` from its way of travel
/// (none: from the newest; else whether before the cursor), with the
/// viewer, the rows to fetch and the cursor as binds 0, 1 and 2. Each
/// backend writes its own text (`SqlBackend::feed_page`).
pub fn feed_query<DB, ST>(
    shapes: &'static [std::sync::OnceLock<crate::raw::Shape>; 3],
    text: fn(Option<bool>) -> String,
    viewer: crate::id::DbId,
    cursor: Option<(bool, crate::id::DbId)>,
    fetch: i64,
) -> crate::raw::TypedQuery<DB, ST> {
    use crate::raw::{Bind, Shape};

    let travel = cursor.map(|(backwards, _)| backwards);
    let mut binds = vec![Bind::Id(viewer), Bind::Int(fetch)];
    binds.extend(cursor.map(|(_, k)| Bind::Id(k)));
    shapes[travel_shape(cursor)]
        .get_or_init(|| Shape::new(&text(travel)))
        .typed(binds)
}

/// The feed's audiences on message row `m` for the viewer `v` (markers of
/// a feed's text; `migrations/*/..._message_audience`): its direct
/// messages as creator, as peer, and its groups' (with `g` the viewer's
/// `group_members` row), each one range of an audience index.
pub fn feed_audiences(m: &str, v: &str) -> [String; 3] {
    [
        format!("{m}.direct_creator_id = {v}"),
        // Never twice: a direct conversation's members are two.
        format!("{m}.direct_peer_id = {v} AND {m}.direct_creator_id <> {v}"),
        format!("{m}.group_id = g.group_id"),
    ]
}

/// Whether the viewer `v` sees the message row of `messages` in scope:
/// the feed's cursor is resolved only if so.
pub fn feed_sees(v: &str) -> String {
    format!(
        "(direct_creator_id = {v} OR direct_peer_id = {v} \
         OR group_id IN (SELECT group_id FROM group_members WHERE contact_id = {v}))"
    )
}

/// Resolves a cursor to its item's sort key with `key_of`, which must look
/// the item up in the very list being paged (same viewer, same filters).
pub fn seek<Id, K>(
    cursor: Option<Cursor<Id>>,
    key_of: impl FnOnce(Id) -> Result<Option<K>>,
) -> Result<Seek<K>> {
    let missing = || Error::Store(StoreError::CursorNotFound);
    Ok(match cursor {
        None => Seek::First,
        Some(Cursor::After(id)) => Seek::After(key_of(id)?.ok_or_else(missing)?),
        Some(Cursor::Before(id)) => Seek::Before(key_of(id)?.ok_or_else(missing)?),
    })
}

/// Rows fetched with `limit + 1`: cut to the page, learn `has_more`, and put a
/// backwards page back into list order.
pub fn finish_page<T>(mut rows: Vec<T>, limit: usize, backwards: bool) -> (Vec<T>, bool) {
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    if backwards {
        rows.reverse();
    }
    (rows, has_more)
}

pub fn fetch_size<Id>(page: &Page<Id>) -> (usize, i64) {
    let n = page.limit.get();
    (usize::from(n), i64::from(n) + 1)
}

/// Orders a boxed list query by `($a, $b)` descending (every list's order)
/// and applies a resolved [`Seek`]: strictly after the key in list order, or
/// strictly before it, which runs in reverse order (the rows are turned
/// back by [`finish_page`]). The tuple comparison is spelled out (both
/// databases understand it), with a redundant bound on `$a` alone that lets
/// the index scan start at the cursor instead of filtering its way there.
#[macro_export]
macro_rules! keyset {
    ($q:expr, $a:expr, $b:expr, $seek:expr) => {
        match $seek {
            $crate::queries::paging::Seek::First => $q.order(($a.desc(), $b.desc())),
            $crate::queries::paging::Seek::After((ka, kb)) => $q
                .filter($a.le(ka))
                .filter($a.lt(ka).or($a.eq(ka).and($b.lt(kb))))
                .order(($a.desc(), $b.desc())),
            $crate::queries::paging::Seek::Before((ka, kb)) => $q
                .filter($a.ge(ka))
                .filter($a.gt(ka).or($a.eq(ka).and($b.gt(kb))))
                .order(($a.asc(), $b.asc())),
        }
    };
}
pub use crate::keyset;
