//! Requests of `/v1/reports` and `/v1/admin/reports`.

use confab_domain::{
    ContactId, DomainError, Field, MessageId, Page, ReportDescription, ReportId, ReportReason,
    ReportStatus, ReportTarget,
};

use super::{documented, optional, request, shape, text, Field as _, Flatten, FromParams, Shape};
use crate::error::ApiError;
use crate::params::{Malformed, Params};

fn reason(raw: String) -> Result<ReportReason, DomainError> {
    raw.parse().map_err(|_| {
        DomainError::invalid(
            Field::ReportReason,
            "must be one of spam, harassment, inappropriate, other",
        )
    })
}

fn status(raw: String) -> Result<ReportStatus, DomainError> {
    raw.parse().map_err(|_| {
        DomainError::invalid(
            Field::ReportStatus,
            "must be one of open, resolved, dismissed",
        )
    })
}

/// `POST /v1/reports`: exactly one of `message_id` and `contact_id` (both
/// is 400 `parameter_invalid` on `contact_id`, neither 400
/// `parameter_missing` on `message_id`), a `reason`, an optional
/// `description`. A malformed id is the same 404 as an unknown one.
#[derive(Debug)]
pub struct FileReportIn {
    pub target: ReportTarget,
    pub reason: ReportReason,
    pub description: ReportDescription,
}

const MESSAGE_ID: &str = "message_id";
const CONTACT_ID: &str = "contact_id";
const REASON: &str = "reason";
const DESCRIPTION: &str = "description";

impl FromParams for FileReportIn {
    fn knows(key: &str) -> bool {
        [MESSAGE_ID, CONTACT_ID, REASON, DESCRIPTION].contains(&key)
    }

    fn take(p: &mut Params) -> Result<Self, ApiError> {
        let target = match (p.has(MESSAGE_ID), p.has(CONTACT_ID)) {
            (true, true) => {
                return Err(ApiError::invalid(
                    CONTACT_ID,
                    "give either message_id or contact_id, not both",
                ))
            }
            (false, false) => {
                return Err(ApiError::missing(MESSAGE_ID)
                    .with_message("message_id or contact_id is required"))
            }
            (true, false) => {
                ReportTarget::Message(p.required_id::<MessageId>(MESSAGE_ID, Malformed::NotFound)?)
            }
            (false, true) => {
                ReportTarget::Contact(p.required_id::<ContactId>(CONTACT_ID, Malformed::NotFound)?)
            }
        };
        let reason = text(shape::report_reason, reason).take(p, REASON)?;
        let description = optional(text(shape::report_description, ReportDescription::new))
            .take(p, DESCRIPTION)?
            .unwrap_or_default();
        Ok(Self {
            target,
            reason,
            description,
        })
    }

    fn describe(shape: &mut Shape) {
        shape.add(
            MESSAGE_ID,
            shape::described_id("the message reported; not with contact_id"),
            false,
        );
        shape.add(
            CONTACT_ID,
            shape::described_id("the contact reported; not with message_id"),
            false,
        );
        shape.add(REASON, shape::report_reason(), true);
        shape.add(DESCRIPTION, shape::report_description(), false);
    }
}
documented!(FileReportIn);

request! {
    /// `GET /v1/admin/reports`: an optional status, then the page.
    pub struct ListReportsIn {
        status: Option<ReportStatus> = optional(text(shape::report_status, status)),
        page: Page<ReportId> = Flatten,
    }
}

request! {
    /// `PUT /v1/admin/reports/{id}`.
    pub struct UpdateReportIn {
        status: ReportStatus = text(shape::report_status, status),
    }
}
