//! The moderation port of both SQL stores (`confab_ports::ModerationStore`).

use async_trait::async_trait;
use confab_domain::{
    Block, ContactId, ConversationId, Page, Paged, Report, ReportId, ReportStatus, Timestamp,
};
use confab_ports::{Completion, Made, ModerationStore, Outbox, StoreError};

use crate::queries as q;
use crate::Store;
use confab_store_sql::door::{query, write};

#[async_trait]
impl ModerationStore for Store {
    async fn block(
        &self,
        blocker: ContactId,
        blocked: ContactId,
        at: Timestamp,
        completion: Option<Completion<Made<Block>>>,
    ) -> Result<Made<Block>, StoreError> {
        write(self, move |c| q::block(c, blocker, blocked, at, completion)).await
    }

    async fn unblock(&self, blocker: ContactId, blocked: ContactId) -> Result<bool, StoreError> {
        write(self, move |c| q::unblock(c, blocker, blocked)).await
    }

    async fn block_of(
        &self,
        blocker: ContactId,
        blocked: ContactId,
    ) -> Result<Option<Block>, StoreError> {
        query(self, move |c| q::block_of(c, blocker, blocked)).await
    }

    async fn blocks(
        &self,
        blocker: ContactId,
        page: Page<ContactId>,
    ) -> Result<Paged<Block>, StoreError> {
        query(self, move |c| q::blocks_page(c, blocker, page)).await
    }

    async fn blockers_of(
        &self,
        contact: ContactId,
        among: Vec<ContactId>,
    ) -> Result<Vec<ContactId>, StoreError> {
        query(self, move |c| q::blockers_of(c, contact, &among)).await
    }

    async fn block_between(
        &self,
        a: ContactId,
        b: ContactId,
    ) -> Result<Option<ContactId>, StoreError> {
        query(self, move |c| q::block_between(c, a, b)).await
    }

    async fn conversation_blocker(
        &self,
        conversation: ConversationId,
        member: ContactId,
    ) -> Result<Option<ContactId>, StoreError> {
        query(self, move |c| {
            q::conversation_blocker(c, conversation, member)
        })
        .await
    }

    async fn file_report(
        &self,
        report: Report,
        per_hour: Option<u32>,
        outbox: Outbox,
        completion: Option<Completion<Made<Report>>>,
    ) -> Result<Option<Made<Report>>, StoreError> {
        write(self, move |c| {
            q::file_report(c, report, per_hour, &outbox, completion)
        })
        .await
    }

    async fn report(&self, id: ReportId) -> Result<Option<Report>, StoreError> {
        query(self, move |c| q::report(c, id)).await
    }

    async fn reports_by(
        &self,
        reporter: ContactId,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, StoreError> {
        query(self, move |c| q::reports_by(c, reporter, page)).await
    }

    async fn list_reports(
        &self,
        status: Option<ReportStatus>,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, StoreError> {
        query(self, move |c| q::list_reports(c, status, page)).await
    }

    async fn set_report_status(
        &self,
        id: ReportId,
        status: ReportStatus,
        at: Timestamp,
    ) -> Result<Option<Report>, StoreError> {
        write(self, move |c| q::set_report_status(c, id, status, at)).await
    }
}
