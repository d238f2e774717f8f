use super::*;
use actix_web::body::MessageBody;
use confab_domain::DomainError;
use confab_service::{ServiceError, StoreError};

fn body_of(e: &ApiError) -> serde_json::Value {
    let bytes = e
        .error_response()
        .into_body()
        .try_into_bytes()
        .expect("sized body");
    serde_json::from_slice(&bytes).expect("json body")
}

#[test]
fn body_has_the_contract_shape() {
    let e = ApiError::from(DomainError::invalid(
        Field::PageLimit,
        "must be an integer from 1 to 100",
    ));
    assert_eq!(
        body_of(&e),
        serde_json::json!({"type": "invalid_request", "code": "parameter_invalid",
            "message": "limit must be an integer from 1 to 100", "param": "limit"})
    );
    let e = ApiError::from(ServiceError::Internal {
        what: "secret detail",
        source: "more secret".into(),
    });
    let body = body_of(&e);
    assert_eq!(body["type"], "api_error");
    assert!(!body.to_string().contains("secret"));
    let e = ApiError::from(ServiceError::Unavailable(StoreError::Unavailable(
        "secret host".into(),
    )));
    assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(!body_of(&e).to_string().contains("secret"));
}

#[test]
fn unauthorized_and_405_carry_headers() {
    let r = ApiError::unauthorized().error_response();
    assert_eq!(
        r.headers().get("www-authenticate").map(|v| v.as_bytes()),
        Some(&b"Bearer"[..])
    );
    let r = ApiError::method_not_allowed("GET, POST").error_response();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        r.headers().get("allow").map(|v| v.as_bytes()),
        Some(&b"GET, POST"[..])
    );
    assert_eq!(
        r.headers().get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
}

/// A refused credential's challenge names `invalid_token` and carries the
/// message as its description, stripped of what a quoted string cannot
/// hold (RFC 6750 section 3).
#[test]
fn a_refused_credential_s_challenge_says_invalid_token() {
    let r = ApiError::token_expired("it \"expired\"\\ é").error_response();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.headers().get("www-authenticate").map(|v| v.as_bytes()),
        Some(&br#"Bearer error="invalid_token", error_description="it expired ""#[..])
    );
    let r = ApiError::from(confab_service::ServiceError::Unauthorized).error_response();
    let www = r.headers().get("www-authenticate").expect("challenge");
    assert!(www
        .as_bytes()
        .starts_with(br#"Bearer error="invalid_token", error_description=""#));
}

#[test]
fn fields_and_rules_become_params_and_messages() {
    let cases = [
        (
            ServiceError::invalid(Field::PageBefore, Rule::CursorNotInList),
            "ending_before",
            "ending_before must be the id of an item in the list being paged",
        ),
        (
            ServiceError::invalid(Field::PageAfter, Rule::CursorNotInList),
            "starting_after",
            "starting_after must be the id of an item in the list being paged",
        ),
        (
            DomainError::breaks(Field::Attachments, Rule::TooManyAttachments { max: 10 }).into(),
            "attachments",
            "attachments must not bring a message to more than 10 attachments",
        ),
        (
            DomainError::breaks(Field::PinnedMessage, Rule::OutsideConversation).into(),
            "pinned_message_id",
            "pinned_message_id must be a message of this conversation",
        ),
        (
            DomainError::breaks(Field::RemovedMembers, Rule::LastOwnerRemoved).into(),
            "remove_contact_ids",
            "remove_contact_ids must not remove the group's last owner; delete the group instead",
        ),
        (
            DomainError::breaks(
                Field::ArchivedAt,
                Rule::TooFarInFuture { tolerance_secs: 60 },
            )
            .into(),
            "archived_at",
            "archived_at must be Unix seconds not more than 60 seconds in the future",
        ),
        (
            ServiceError::invalid(Field::EventsAfter, Rule::EventNotKept),
            "after",
            "after must be the id of an event of the last 7 days (older ones are pruned); \
             resync with GET requests and stream without it",
        ),
        (
            ServiceError::invalid(
                Field::TokenLifetime,
                Rule::Invariant("must be a positive duration"),
            ),
            "expires_in",
            "expires_in must be a positive duration",
        ),
    ];
    for (e, want_param, want_message) in cases {
        let e = ApiError::from(e);
        assert_eq!(e.code(), "parameter_invalid");
        assert_eq!(e.param(), Some(want_param));
        assert_eq!(e.to_string(), want_message);
    }
    let e = ApiError::from(ServiceError::not_found_of(Field::Conversation));
    assert_eq!(e.status, StatusCode::NOT_FOUND);
    assert_eq!(e.param(), Some("conversation_id"));
    assert_eq!(
        e.to_string(),
        "conversation_id does not name anything you can see"
    );
    assert_eq!(ApiError::from(ServiceError::not_found()).param(), None);
}

#[test]
fn each_field_has_its_own_param() {
    let fields = [
        Field::MessageText,
        Field::Attachments,
        Field::FileUrl,
        Field::Filename,
        Field::FileType,
        Field::FileSize,
        Field::Reactions,
        Field::Username,
        Field::PhoneNumber,
        Field::AvatarUrl,
        Field::GroupName,
        Field::GroupDescription,
        Field::Members,
        Field::AddedMembers,
        Field::RemovedMembers,
        Field::Contact,
        Field::Group,
        Field::Conversation,
        Field::PinnedMessage,
        Field::ArchivedAt,
        Field::PageLimit,
        Field::PageAfter,
        Field::PageBefore,
        Field::TokenLifetime,
        Field::IdempotencyKey,
        Field::AddedAdmins,
        Field::RemovedAdmins,
        Field::ReportedMessage,
        Field::ReportReason,
        Field::ReportStatus,
        Field::ReplyTo,
        Field::Parent,
        Field::Mentions,
        Field::TypingState,
        Field::SearchQuery,
    ];
    let params: std::collections::HashSet<_> = fields.iter().map(|f| param(*f)).collect();
    assert_eq!(params.len(), fields.len());
}

#[test]
fn the_log_gets_the_whole_chain() {
    let e = ServiceError::Internal {
        what: "the store failed",
        source: Box::new(StoreError::Other("disk full".into())),
    };
    let logged = Chain(&e).to_string();
    assert!(logged.starts_with("the store failed: "), "{logged}");
    assert!(logged.contains("disk full"), "{logged}");
    // Kept on the error for the request's one log line, not the body.
    let api = ApiError::from(e);
    assert_eq!(api.cause(), Some(logged.as_str()));
    assert_eq!(api.code(), "internal_error");
    assert!(!body_of(&api).to_string().contains("disk full"));
    assert_eq!(ApiError::not_found(None).cause(), None);
}

#[test]
fn the_documented_codes_cover_every_status() {
    for status in 400..600 {
        let status = StatusCode::from_u16(status).expect("status");
        let code = ApiError::for_status(status).code();
        assert!(CODES.contains(&code), "{status}: {code}");
    }
    for e in [
        ApiError::body_invalid("x"),
        ApiError::missing("x"),
        ApiError::invalid("x", "x"),
        ApiError::unknown("x"),
        ApiError::forbidden("x"),
        ApiError::contact_blocked(true, Some("x")),
        ApiError::not_found(None),
        ApiError::method_not_allowed("GET"),
        ApiError::conflict("x"),
        ApiError::internal(&"x"),
    ] {
        assert!(CODES.contains(&e.code()), "{}", e.code());
    }
}

#[test]
fn nested_params_are_prefixed() {
    let e = ApiError::from(DomainError::invalid(Field::FileUrl, "must be a URL"))
        .nested_in(Some("attachments[0]"));
    assert_eq!(e.param(), Some("attachments[0][file_url]"));
    assert_eq!(e.to_string(), "attachments[0][file_url] must be a URL");
}

#[test]
fn too_many_searches_is_a_429_that_says_when_to_retry() {
    let e = ApiError::from(ServiceError::TooManySearches { max: 2 });
    let r = e.error_response();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        r.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let body = body_of(&e);
    assert_eq!(body["code"], "too_many_searches");
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("at most 2 searches")));
    assert!(CODES.contains(&"too_many_searches"));
    // Other errors say nothing of a wait.
    let r = ApiError::conflict("x").error_response();
    assert!(r.headers().get("retry-after").is_none());
}
