//! Reports (docs/api.md "Blocks and reports"): a contact files one (`/v1/reports`); the
//! operator reads and closes them with a server key
//! (`/v1/admin/reports`).

use actix_web::{web, HttpRequest, HttpResponse};
use confab_domain::{NewReport, Report, ReportId};
use confab_service::{Made, StoredResponse};

use super::{endpoint, made_json, ok_json, page_json, path_id, Endpoint};
use crate::auth::{Caller, Server};
use crate::dto::{AdminReportDto, ListDto, ReportDto};
use crate::error::{ApiError, ErrorBody};
use crate::idempotency;
use crate::requests::reports::{FileReportIn, ListReportsIn, UpdateReportIn};
use crate::requests::{Input, NoParams};
use crate::service::Service;
use crate::wire;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint!(file, __path_file),
        endpoint!(get, __path_get),
        endpoint!(admin_list, __path_admin_list),
        endpoint!(admin_get, __path_admin_get),
        endpoint!(admin_update, __path_admin_update),
    ]
}

/// Report a message one can see, or a contact, to the operator. The same
/// target reported again while one's report of it is open answers that
/// report (200).
#[utoipa::path(
    post, path = "/v1/reports", tag = "reports", operation_id = "file_report",
    params(crate::idempotency::IdempotencyKeyHeader),
    request_body(content(
        (FileReportIn = "application/x-www-form-urlencoded"),
        (FileReportIn = "application/json"),
    )),
    responses(
        (
            status = 201, description = "the report", body = ReportDto,
            headers(("Location" = String, description = "the report's URL")),
        ),
        (status = 200, description = "the caller's open report of it", body = ReportDto),
        (status = 400, description = "oneself, or one's own message", body = ErrorBody),
        (status = 429, description = "`report_quota`: the caller filed as many new reports \
            this hour as a contact may (`CONFAB_REPORTS_PER_HOUR`); `Retry-After` says when the \
            next hour starts", body = ErrorBody),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn file(
    service: Service,
    caller: Caller,
    http: HttpRequest,
    Input(req): Input<FileReportIn>,
) -> Result<HttpResponse, ApiError> {
    let FileReportIn {
        target,
        reason,
        description,
    } = req;
    let report = NewReport {
        reporter: caller.0.id(),
        target,
        reason,
        description,
    };
    idempotency::post(&service, &caller.0, &http, filed, |completion| {
        service.file_report(&caller.0, report, completion)
    })
    .await
}

/// 201 with the new report, or 200 with the open one there already.
fn filed(made: &Made<Report>) -> StoredResponse {
    made_json(
        format!("/v1/reports/{}", made.item.id),
        wire::report(&made.item, false),
        made.created,
    )
}

/// One of the caller's own reports, with its status now.
#[utoipa::path(
    get, path = "/v1/reports/{id}", tag = "reports", operation_id = "get_report",
    params(("id" = String, Path, description = "the report id")),
    responses((status = 200, description = "the report", body = ReportDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn get(
    service: Service,
    caller: Caller,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ReportId = path_id(&path)?;
    let report = service.my_report(&caller.0, id).await?;
    Ok(ok_json(wire::report(&report, false)))
}

/// Every report, oldest first, or those of one `status`.
#[utoipa::path(
    get, path = "/v1/admin/reports", tag = "admin", operation_id = "admin_list_reports",
    params(ListReportsIn),
    responses((status = 200, description = "a page of reports", body = ListDto<AdminReportDto>)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn admin_list(
    service: Service,
    _: Server,
    Input(req): Input<ListReportsIn>,
) -> Result<HttpResponse, ApiError> {
    let ListReportsIn { status, page } = req;
    let reports = service.admin_reports(status, page).await?;
    Ok(page_json(&reports, |out, r| {
        wire::write_report(out, r, true)
    }))
}

/// One report.
#[utoipa::path(
    get, path = "/v1/admin/reports/{id}", tag = "admin", operation_id = "admin_get_report",
    params(("id" = String, Path, description = "the report id")),
    responses((status = 200, description = "the report", body = AdminReportDto)),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn admin_get(
    service: Service,
    _: Server,
    path: web::Path<String>,
    _: Input<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let id: ReportId = path_id(&path)?;
    let report = service.admin_report(id).await?;
    Ok(ok_json(wire::report(&report, true)))
}

/// Resolve or dismiss a report (or open it again).
#[utoipa::path(
    put, path = "/v1/admin/reports/{id}", tag = "admin", operation_id = "admin_update_report",
    params(("id" = String, Path, description = "the report id")),
    request_body(content(
        (UpdateReportIn = "application/x-www-form-urlencoded"),
        (UpdateReportIn = "application/json"),
    )),
    responses(
        (status = 200, description = "the report", body = AdminReportDto),
        (
            status = 409,
            description = "reopening it while its reporter has another open report of the \
                same target",
            body = ErrorBody,
        ),
    ),
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn admin_update(
    service: Service,
    _: Server,
    path: web::Path<String>,
    Input(req): Input<UpdateReportIn>,
) -> Result<HttpResponse, ApiError> {
    let id: ReportId = path_id(&path)?;
    let UpdateReportIn { status } = req;
    let report = service.set_report_status(id, status).await?;
    Ok(ok_json(wire::report(&report, true)))
}
