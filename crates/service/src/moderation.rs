//! Moderation (docs/api.md "Blocks and reports"): blocks between contacts, reports to the
//! operator, and the checks the other use cases make with them (a block
//! stops writes in a direct conversation, a moderator deletes others'
//! messages). Group roles themselves are the groups' use cases'.

use confab_domain::{
    check_other_contact, report_created, secs_to_next_report_hour, Block, Change, Contact,
    ContactId, ConversationId, DomainError, Field, Message, NewReport, Page, Paged, Report,
    ReportId, ReportStatus, ReportTarget,
};
use confab_ports::{Completion, Made, StoreError};

use crate::error::page_error;
use crate::{Confab, ServiceError};

impl Confab {
    /// Refuses with [`ServiceError::Blocked`] on `field` when `caller`
    /// and `other` are in a block, either way.
    pub(crate) async fn check_unblocked(
        &self,
        caller: ContactId,
        other: ContactId,
        field: Field,
    ) -> Result<(), ServiceError> {
        match self.ports.moderation.block_between(caller, other).await? {
            Some(blocker) => Err(DomainError::Blocked {
                field: Some(field),
                by_actor: blocker == caller,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// The refusal a write by `caller` in `conversation` gets when it is a
    /// direct conversation of theirs whose two members are in a block.
    pub(crate) async fn conversation_blocked(
        &self,
        caller: &Contact,
        conversation: ConversationId,
        field: Option<Field>,
    ) -> Result<Option<ServiceError>, ServiceError> {
        let blocker = self
            .ports
            .moderation
            .conversation_blocker(conversation, caller.id())
            .await?;
        Ok(blocker.map(|b| {
            DomainError::Blocked {
                field,
                by_actor: b == caller.id(),
            }
            .into()
        }))
    }

    /// Whether `caller` moderates the conversation of `message`: it is a
    /// group's, and they are its owner or an admin.
    pub(crate) async fn moderates(
        &self,
        caller: &Contact,
        message: &Message,
    ) -> Result<bool, ServiceError> {
        let Some(view) = self
            .ports
            .conversations
            .conversation_for(caller.id(), message.conversation_id())
            .await?
        else {
            return Ok(false);
        };
        let Some(group) = view.conversation.group_id() else {
            return Ok(false);
        };
        let roles = self
            .ports
            .groups
            .member_roles(group, vec![caller.id()])
            .await?;
        Ok(roles.iter().any(|(_, role)| role.moderates()))
    }

    /// Refuses with [`ServiceError::Blocked`] on `field` when one of
    /// `contacts` blocked `caller` (who may then not add them to a group).
    pub(crate) async fn check_not_blocked_by_any(
        &self,
        caller: ContactId,
        contacts: &[ContactId],
        field: Field,
    ) -> Result<(), ServiceError> {
        if contacts.is_empty() {
            return Ok(());
        }
        let blockers = self
            .ports
            .moderation
            .blockers_of(caller, contacts.to_vec())
            .await?;
        if blockers.is_empty() {
            Ok(())
        } else {
            Err(DomainError::Blocked {
                field: Some(field),
                by_actor: false,
            }
            .into())
        }
    }

    /// Blocks `contact` for the caller: 201 the first time, the same
    /// block after. With a `completion`, its answer is kept for the
    /// caller's idempotency key in the same transaction.
    pub async fn block(
        &self,
        caller: &Contact,
        contact: ContactId,
        completion: Option<Completion<Made<Block>>>,
    ) -> Result<Made<Block>, ServiceError> {
        check_other_contact(caller.id(), contact, Field::BlockedContact)?;
        Ok(self
            .ports
            .moderation
            .block(caller.id(), contact, self.now(), completion)
            .await?)
    }

    /// Ends the caller's block of `contact`; `NotFound` when there is none.
    pub async fn unblock(&self, caller: &Contact, contact: ContactId) -> Result<(), ServiceError> {
        if self.ports.moderation.unblock(caller.id(), contact).await? {
            Ok(())
        } else {
            Err(ServiceError::not_found())
        }
    }

    /// The caller's block of `contact`; `NotFound` when there is none.
    pub async fn block_of(
        &self,
        caller: &Contact,
        contact: ContactId,
    ) -> Result<Block, ServiceError> {
        self.ports
            .moderation
            .block_of(caller.id(), contact)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// The caller's blocks, newest first.
    pub async fn blocks(
        &self,
        caller: &Contact,
        page: Page<ContactId>,
    ) -> Result<Paged<Block>, ServiceError> {
        self.ports
            .moderation
            .blocks(caller.id(), page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// Files a report of a message the caller can see or of a contact:
    /// new (`created`), or the caller's open report of the same target.
    /// A new one past the caller's reports of the hour
    /// ([`Confab::with_report_quota`]) is `ReportQuota`, and nothing is
    /// written.
    pub async fn file_report(
        &self,
        caller: &Contact,
        report: NewReport,
        completion: Option<Completion<Made<Report>>>,
    ) -> Result<Made<Report>, ServiceError> {
        report.check()?;
        let (message_id, contact_id) = match report.target {
            ReportTarget::Message(id) => {
                let message = self
                    .ports
                    .messages
                    .message_for(caller.id(), id)
                    .await?
                    .ok_or(ServiceError::not_found_of(Field::ReportedMessage))?;
                report.check_sender(message.sender().id())?;
                (Some(id), message.sender().id())
            }
            ReportTarget::Contact(id) => {
                self.ports
                    .contacts
                    .contact(id)
                    .await?
                    .ok_or(ServiceError::not_found_of(Field::ReportedContact))?;
                (None, id)
            }
        };
        let now = self.now();
        let filed = Report {
            id: ReportId::from_uuid(self.new_uuid()),
            reporter: caller.id(),
            message_id,
            contact_id,
            reason: report.reason,
            description: report.description,
            status: ReportStatus::Open,
            created_at: now,
            updated_at: now,
        };
        let events = report_created(Change::new(caller.id(), now), self.event_ids(), filed.id);
        let made = self
            .ports
            .moderation
            .file_report(
                filed,
                self.reports_per_hour,
                self.outbox(events),
                completion,
            )
            .await?
            .ok_or(ServiceError::ReportQuota {
                max: self.reports_per_hour.unwrap_or(0),
                retry_after_secs: secs_to_next_report_hour(now),
            })?;
        if made.created {
            self.committed();
        }
        Ok(made)
    }

    /// One of the caller's own reports; anyone else's is `NotFound`.
    pub async fn my_report(&self, caller: &Contact, id: ReportId) -> Result<Report, ServiceError> {
        match self.ports.moderation.report(id).await? {
            Some(r) if r.reporter == caller.id() => Ok(r),
            _ => Err(ServiceError::not_found()),
        }
    }

    /// Every report (of `status`, when given), oldest first: the
    /// operator's.
    pub async fn admin_reports(
        &self,
        status: Option<ReportStatus>,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, ServiceError> {
        self.ports
            .moderation
            .list_reports(status, page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// The reports `reporter` filed, oldest first (their export).
    pub async fn reports_filed(
        &self,
        reporter: ContactId,
        page: Page<ReportId>,
    ) -> Result<Paged<Report>, ServiceError> {
        self.ports
            .moderation
            .reports_by(reporter, page)
            .await
            .map_err(|e| page_error(&page, e))
    }

    /// One report: the operator's.
    pub async fn admin_report(&self, id: ReportId) -> Result<Report, ServiceError> {
        self.ports
            .moderation
            .report(id)
            .await?
            .ok_or(ServiceError::not_found())
    }

    /// Sets a report's status: the operator's. Reopening a report whose
    /// reporter has since filed another open one of the same target is a
    /// conflict.
    pub async fn set_report_status(
        &self,
        id: ReportId,
        status: ReportStatus,
    ) -> Result<Report, ServiceError> {
        match self
            .ports
            .moderation
            .set_report_status(id, status, self.now())
            .await
        {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(ServiceError::not_found()),
            Err(StoreError::Conflict(_)) => Err(ServiceError::Conflict(
                "the reporter has another open report of the same target".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }
}
