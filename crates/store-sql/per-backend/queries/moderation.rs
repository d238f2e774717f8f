//! Blocks between contacts and reports to the operator (docs/api.md
//! "Blocks and reports"; migration `moderation`).

use confab_domain::{
    report_hour, Block, Contact, ContactId, ConversationId, MessageId, Page, Paged, Report,
    ReportDescription, ReportId, ReportStatus, Timestamp,
};
use confab_ports::{Completion, Made, Outbox};
use diesel::prelude::*;

use super::idempotency::complete;
use super::outbox::{self, Written};
use super::{Conn, Db, Result};
use confab_store_sql::error::{corrupt, inconsistent};
use confab_store_sql::id::DbId;
use confab_store_sql::queries::not_found;
use confab_store_sql::queries::paging::{fetch_size, finish_page, seek, Seek};
use confab_store_sql::rows::{contact_id, message_id, ts, ContactRow, DbKey};
use confab_store_sql::schema::{blocks, contacts, conversations, reports};

/// Contact ids per statement that lists them.
const IDS_PER_STATEMENT: usize = 1_000;

fn block_of_row((created_at, contact): (i64, ContactRow)) -> Result<Block> {
    Ok(Block {
        contact: Contact::try_from(contact)?,
        created_at: ts(created_at),
    })
}

pub(crate) fn block_of(
    conn: &mut Conn,
    blocker: ContactId,
    blocked: ContactId,
) -> Result<Option<Block>> {
    blocks::table
        .inner_join(contacts::table)
        .filter(blocks::blocker_id.eq(blocker.db()))
        .filter(blocks::blocked_id.eq(blocked.db()))
        .select((blocks::created_at, ContactRow::as_select()))
        .first::<(i64, ContactRow)>(conn)
        .optional()?
        .map(block_of_row)
        .transpose()
}

pub(crate) fn block(
    conn: &mut Conn,
    blocker: ContactId,
    blocked: ContactId,
    at: Timestamp,
    completion: Option<Completion<Made<Block>>>,
) -> Result<Made<Block>> {
    let exists = diesel::select(diesel::dsl::exists(contacts::table.find(blocked.db())))
        .get_result::<bool>(conn)?;
    if !exists {
        return Err(not_found());
    }
    let inserted = diesel::insert_into(blocks::table)
        .values((
            blocks::blocker_id.eq(blocker.db()),
            blocks::blocked_id.eq(blocked.db()),
            blocks::created_at.eq(at.micros()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    let item = block_of(conn, blocker, blocked)?.ok_or_else(not_found)?;
    let made = Made {
        item,
        created: inserted > 0,
    };
    complete(conn, completion, &made)?;
    Ok(made)
}

pub(crate) fn unblock(conn: &mut Conn, blocker: ContactId, blocked: ContactId) -> Result<bool> {
    let n = diesel::delete(blocks::table.find((blocker.db(), blocked.db()))).execute(conn)?;
    Ok(n > 0)
}

/// `blocker`'s blocks, newest first: `(created_at, blocked_id)`
/// descending.
pub(crate) fn blocks_page(
    conn: &mut Conn,
    blocker: ContactId,
    page: Page<ContactId>,
) -> Result<Paged<Block>> {
    let b = blocker.db();
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |c: ContactId| {
        Ok(blocks::table
            .find((b, c.db()))
            .select((blocks::created_at, blocks::blocked_id))
            .first::<(i64, DbId)>(conn)
            .optional()?)
    })?;
    let backwards = seek.backwards();
    let q = blocks::table
        .inner_join(contacts::table)
        .filter(blocks::blocker_id.eq(b))
        .select((blocks::created_at, ContactRow::as_select()))
        .limit(fetch)
        .into_boxed::<Db>();
    let (at, who) = (blocks::created_at, blocks::blocked_id);
    let q = match seek {
        Seek::First => q.order((at.desc(), who.desc())),
        Seek::After((t, c)) => q
            .filter(at.le(t))
            .filter(at.lt(t).or(at.eq(t).and(who.lt(c))))
            .order((at.desc(), who.desc())),
        Seek::Before((t, c)) => q
            .filter(at.ge(t))
            .filter(at.gt(t).or(at.eq(t).and(who.gt(c))))
            .order((at.asc(), who.asc())),
    };
    let rows: Vec<(i64, ContactRow)> = q.load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows.into_iter().map(block_of_row).collect::<Result<_>>()?,
        has_more,
    })
}

pub(crate) fn blockers_of(
    conn: &mut Conn,
    contact: ContactId,
    among: &[ContactId],
) -> Result<Vec<ContactId>> {
    let ids: Vec<DbId> = among.iter().map(DbKey::db).collect();
    let mut out = Vec::new();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        out.extend(
            blocks::table
                .filter(blocks::blocked_id.eq(contact.db()))
                .filter(blocks::blocker_id.eq_any(chunk))
                .select(blocks::blocker_id)
                .load::<DbId>(conn)?
                .into_iter()
                .map(contact_id),
        );
    }
    Ok(out)
}

pub(crate) fn block_between(
    conn: &mut Conn,
    a: ContactId,
    b: ContactId,
) -> Result<Option<ContactId>> {
    let (a, b) = (a.db(), b.db());
    let blockers: Vec<DbId> = blocks::table
        .filter(
            blocks::blocker_id
                .eq(a)
                .and(blocks::blocked_id.eq(b))
                .or(blocks::blocker_id.eq(b).and(blocks::blocked_id.eq(a))),
        )
        .select(blocks::blocker_id)
        .load(conn)?;
    Ok(if blockers.contains(&a) {
        Some(contact_id(a))
    } else {
        blockers.first().copied().map(contact_id)
    })
}

/// SQL: whether the conversation `conv` (a table name or alias) is a
/// direct one whose two members are in a block, either way: nothing is
/// written there ([`confab_domain::DomainError::Blocked`]). Two lookups
/// by the blocks' key; none for a group conversation.
pub(super) fn blocked_direct(conv: &str) -> String {
    format!(
        "({conv}.group_id IS NULL AND EXISTS (SELECT 1 FROM blocks b WHERE \
            (b.blocker_id = {conv}.creator_id AND b.blocked_id = {conv}.peer_id) \
            OR (b.blocker_id = {conv}.peer_id AND b.blocked_id = {conv}.creator_id)))"
    )
}

/// Who blocked whom in direct conversation `conversation`, when `member`
/// is one of its two: the blocker, if they are in a block (`member`, when
/// both blocked). One statement: the conversation by its key, the blocks
/// by theirs.
pub(crate) fn conversation_blocker(
    conn: &mut Conn,
    conversation: ConversationId,
    member: ContactId,
) -> Result<Option<ContactId>> {
    let me = member.db();
    let (c, b) = (conversations::table, blocks::table);
    let between = (blocks::blocker_id
        .eq(conversations::creator_id)
        .and(blocks::blocked_id.nullable().eq(conversations::peer_id)))
    .or(blocks::blocker_id
        .nullable()
        .eq(conversations::peer_id)
        .and(blocks::blocked_id.eq(conversations::creator_id)));
    let blockers: Vec<DbId> = c
        .inner_join(b.on(between))
        .filter(conversations::id.eq(conversation.db()))
        .filter(conversations::group_id.is_null())
        .filter(
            conversations::creator_id
                .eq(me)
                .or(conversations::peer_id.eq(me)),
        )
        .select(blocks::blocker_id)
        .load(conn)?;
    Ok(if blockers.contains(&me) {
        Some(member)
    } else {
        blockers.first().copied().map(contact_id)
    })
}

type ReportRow = (
    DbId,
    DbId,
    Option<DbId>,
    DbId,
    String,
    String,
    String,
    i64,
    i64,
);

const REPORT_COLUMNS: (
    reports::id,
    reports::reporter_id,
    reports::message_id,
    reports::contact_id,
    reports::reason,
    reports::description,
    reports::status,
    reports::created_at,
    reports::updated_at,
) = (
    reports::id,
    reports::reporter_id,
    reports::message_id,
    reports::contact_id,
    reports::reason,
    reports::description,
    reports::status,
    reports::created_at,
    reports::updated_at,
);

fn report_of(row: ReportRow) -> Result<Report> {
    let (id, reporter, message, contact, reason, description, status, created, updated) = row;
    Ok(Report {
        id: ReportId::from_uuid(id.uuid()),
        reporter: contact_id(reporter),
        message_id: message.map(message_id),
        contact_id: contact_id(contact),
        reason: reason
            .parse()
            .map_err(|_| inconsistent(format!("stored report reason {reason:?} is invalid")))?,
        description: ReportDescription::new(description).map_err(|e| corrupt("description", e))?,
        status: status
            .parse()
            .map_err(|_| inconsistent(format!("stored report status {status:?} is invalid")))?,
        created_at: ts(created),
        updated_at: ts(updated),
    })
}

pub(crate) fn report(conn: &mut Conn, id: ReportId) -> Result<Option<Report>> {
    reports::table
        .find(DbId::from(*id.as_uuid()))
        .select(REPORT_COLUMNS)
        .first::<ReportRow>(conn)
        .optional()?
        .map(report_of)
        .transpose()
}

/// The reporter's open report of the same target as `report`, if any.
fn open_report_of(conn: &mut Conn, report: &Report) -> Result<Option<Report>> {
    let q = reports::table
        .filter(reports::reporter_id.eq(report.reporter.db()))
        .filter(reports::status.eq(ReportStatus::Open.as_str()))
        .select(REPORT_COLUMNS)
        .into_boxed::<Db>();
    let q = match report.message_id {
        Some(m) => q.filter(reports::message_id.eq(m.db())),
        None => q
            .filter(reports::message_id.is_null())
            .filter(reports::contact_id.eq(report.contact_id.db())),
    };
    q.first::<ReportRow>(conn)
        .optional()?
        .map(report_of)
        .transpose()
}

/// Counts one more new report of `reporter` in `hour`, unless they
/// filed `max` in it already: whether it counted. One statement, under
/// the counter's row lock (reports filed at once queue on it); a refusal
/// writes nothing.
fn count_report(conn: &mut Conn, reporter: ContactId, hour: i64, max: u32) -> Result<bool> {
    use confab_store_sql::raw::{Bind, Sql};

    #[derive(QueryableByName)]
    struct Filed {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        #[allow(dead_code)]
        filed: i64,
    }
    let mut sql = Sql::default();
    let who = sql.id(reporter.db());
    let hour = sql.bind(Bind::Int(hour));
    let max = sql.bind(Bind::Int(i64::from(max)));
    sql.push(&format!(
        "INSERT INTO report_quota (contact_id, hour, filed) VALUES ({who}, {hour}, 1) \
         ON CONFLICT (contact_id) DO UPDATE SET \
             filed = CASE WHEN report_quota.hour = excluded.hour \
                 THEN report_quota.filed + 1 ELSE 1 END, \
             hour = excluded.hour \
         WHERE report_quota.hour <> excluded.hour OR report_quota.filed < {max} \
         RETURNING filed"
    ));
    Ok(!sql.query::<Db>().load::<Filed>(conn)?.is_empty())
}

pub(crate) fn file_report(
    conn: &mut Conn,
    report: Report,
    per_hour: Option<u32>,
    outbox: &Outbox,
    completion: Option<Completion<Made<Report>>>,
) -> Result<Option<Made<Report>>> {
    // The same target again while the reporter's report of it is open
    // is that report, and no new one: it does not count.
    if let Some(open) = open_report_of(conn, &report)? {
        let made = Made {
            item: open,
            created: false,
        };
        complete(conn, completion, &made)?;
        return Ok(Some(made));
    }
    if let Some(max) = per_hour {
        if !count_report(conn, report.reporter, report_hour(report.created_at), max)? {
            return Ok(None);
        }
    }
    // The unique index on open targets settles a race: the loser inserts
    // nothing and finds the winner's.
    let inserted = diesel::insert_into(reports::table)
        .values((
            reports::id.eq(DbId::from(*report.id.as_uuid())),
            reports::reporter_id.eq(report.reporter.db()),
            reports::message_id.eq(report.message_id.map(|m: MessageId| m.db())),
            reports::contact_id.eq(report.contact_id.db()),
            reports::reason.eq(report.reason.as_str()),
            reports::description.eq(report.description.as_str()),
            reports::status.eq(report.status.as_str()),
            reports::created_at.eq(report.created_at.micros()),
            reports::updated_at.eq(report.updated_at.micros()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    let made = if inserted > 0 {
        outbox::write(
            conn,
            outbox,
            &Written {
                report: Some(&report),
                ..Written::default()
            },
        )?;
        Made {
            item: report,
            created: true,
        }
    } else {
        Made {
            item: open_report_of(conn, &report)?.ok_or_else(not_found)?,
            created: false,
        }
    };
    complete(conn, completion, &made)?;
    Ok(Some(made))
}

/// Which reports a list holds.
#[derive(Clone, Copy)]
enum Reports {
    /// Every one, or those of one status.
    Status(Option<ReportStatus>),
    /// One reporter's.
    By(ContactId),
}

/// The reports (of `status`, when given), oldest first: id ascending
/// (ids are time-ordered).
pub(crate) fn list_reports(
    conn: &mut Conn,
    status: Option<ReportStatus>,
    page: Page<ReportId>,
) -> Result<Paged<Report>> {
    reports_page(conn, Reports::Status(status), page)
}

/// The reports `reporter` filed, oldest first.
pub(crate) fn reports_by(
    conn: &mut Conn,
    reporter: ContactId,
    page: Page<ReportId>,
) -> Result<Paged<Report>> {
    reports_page(conn, Reports::By(reporter), page)
}

fn reports_page(conn: &mut Conn, which: Reports, page: Page<ReportId>) -> Result<Paged<Report>> {
    let only = |q: reports::BoxedQuery<'static, Db>| match which {
        Reports::Status(None) => q,
        Reports::Status(Some(s)) => q.filter(reports::status.eq(s.as_str())),
        Reports::By(c) => q.filter(reports::reporter_id.eq(c.db())),
    };
    let (limit, fetch) = fetch_size(&page);
    let seek = seek(page.cursor, |r: ReportId| {
        let q = only(reports::table.into_boxed())
            .filter(reports::id.eq(DbId::from(*r.as_uuid())))
            .select(reports::id);
        Ok(q.first::<DbId>(conn).optional()?)
    })?;
    let backwards = seek.backwards();
    let q = only(reports::table.into_boxed())
        .select(REPORT_COLUMNS)
        .limit(fetch);
    let id = reports::id;
    let q = match seek {
        Seek::First => q.order(id.asc()),
        Seek::After(after) => q.filter(id.gt(after)).order(id.asc()),
        Seek::Before(before) => q.filter(id.lt(before)).order(id.desc()),
    };
    let rows: Vec<ReportRow> = q.load(conn)?;
    let (rows, has_more) = finish_page(rows, limit, backwards);
    Ok(Paged {
        items: rows.into_iter().map(report_of).collect::<Result<_>>()?,
        has_more,
    })
}

pub(crate) fn set_report_status(
    conn: &mut Conn,
    id: ReportId,
    status: ReportStatus,
    at: Timestamp,
) -> Result<Option<Report>> {
    let key = DbId::from(*id.as_uuid());
    diesel::update(
        reports::table
            .find(key)
            .filter(reports::status.ne(status.as_str())),
    )
    .set((
        reports::status.eq(status.as_str()),
        reports::updated_at.eq(at.micros()),
    ))
    .execute(conn)?;
    report(conn, id)
}
