//! What the database knows of moderation (docs/api.md "Blocks and reports"): blocks
//! between contacts, and reports to the operator. Group roles are the
//! groups' own ([`crate::GroupStore`]).

use async_trait::async_trait;
use confab_domain::{
    Block, ContactId, ConversationId, Page, Paged, Report, ReportId, ReportStatus, Timestamp,
};

use crate::{Completion, Outbox, StoreError};

/// What a write that may find its work already done wrote: the object,
/// and whether this write made it (a second block or report of the same
/// thing finds the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made<T> {
    /// The object, as stored.
    pub item: T,
    /// Whether this write made it (else it was there already).
    pub created: bool,
}

/// Blocks and reports.
#[cfg_attr(feature = "mocks", mockall::automock)]
#[async_trait]
pub trait ModerationStore: Send + Sync {
    /// `blocker` blocks `blocked` at `at`, unless they have already (then
    /// the first block, `created` false). With a `completion`, stores its
    /// response in the same transaction.
    /// # Errors
    /// - MUST return `NotFound`, writing nothing, when `blocked` is no
    ///   contact.
    async fn block(
        &self,
        blocker: ContactId,
        blocked: ContactId,
        at: Timestamp,
        completion: Option<Completion<Made<Block>>>,
    ) -> Result<Made<Block>, StoreError>;
    /// Ends `blocker`'s block of `blocked`; whether there was one.
    async fn unblock(&self, blocker: ContactId, blocked: ContactId) -> Result<bool, StoreError>;
    /// `blocker`'s block of `blocked`, if any.
    async fn block_of(
        &self,
        blocker: ContactId,
        blocked: ContactId,
    ) -> Result<Option<Block>, StoreError>;
    /// A page of `blocker`'s blocks, newest first (a cursor names the
    /// contact blocked).
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn blocks(
        &self,
        blocker: ContactId,
        page: Page<ContactId>,
    ) -> Result<Paged<Block>, StoreError>;
    /// Of `among`, the contacts who blocked `contact`, in no order.
    async fn blockers_of(
        &self,
        contact: ContactId,
        among: Vec<ContactId>,
    ) -> Result<Vec<ContactId>, StoreError>;
    /// Who of `a` and `b` blocked the other, if either did (`a` when
    /// both did).
    async fn block_between(
        &self,
        a: ContactId,
        b: ContactId,
    ) -> Result<Option<ContactId>, StoreError>;
    /// The blocker, when conversation `conversation` is a direct one of
    /// `member`'s whose two members are in a block (`member` when both
    /// blocked); `None` for any other conversation, and for one `member`
    /// is not in.
    async fn conversation_blocker(
        &self,
        conversation: ConversationId,
        member: ContactId,
    ) -> Result<Option<ContactId>, StoreError>;
    /// Files `report` (status open) with the `outbox`'s events
    /// (`report.created`), unless its reporter has an open report of the
    /// same target: then that one, unchanged, `created` false, and no
    /// event. A target is a message (`message_id`), or a contact (no
    /// `message_id`). With a `completion`, stores its response in the
    /// same transaction.
    ///
    /// A new report counts against its reporter's `per_hour` new reports
    /// of the hour it is filed in (`confab_domain::report_hour` of its
    /// `created_at`; `None`: no limit): past it, `None`, and nothing is
    /// written. Reports filed at once never pass the limit together.
    async fn file_report(
        &self,
        report: Report,
        per_hour: Option<u32>,
        outbox: Outbox,
        completion: Option<Completion<Made<Report>>>,
    ) -> Result<Option<Made<Report>>, StoreError>;
    /// The report with this id.
    async fn report(&self, id: ReportId) -> Result<Option<Report>, StoreError>;
    /// A page of the reports `reporter` filed, oldest first (their
    /// export).
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn reports_by(
        &self,
        reporter: ContactId,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, StoreError>;
    /// A page of the reports (of one status, when given), oldest first.
    /// # Errors
    /// - MUST return `CursorNotFound` when the cursor is not in this list.
    async fn list_reports(
        &self,
        status: Option<ReportStatus>,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, StoreError>;
    /// Sets the report's status (its `updated_at` to `at` when it
    /// changes); the report after, or `None` when there is no such report.
    async fn set_report_status(
        &self,
        id: ReportId,
        status: ReportStatus,
        at: Timestamp,
    ) -> Result<Option<Report>, StoreError>;
}
