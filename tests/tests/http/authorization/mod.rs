//! The authorization matrix (docs/api.md "Objects", 2, 3, 5 to 8 and 18):
//! every `/v1` operation (each route and method, and each kind of change a
//! PUT can make) tried by every kind of caller: the group owner, a group
//! admin, the member who created the conversation and sent the message,
//! another member, a member the bystander blocked, a member who blocked
//! the bystander, an outsider, and requests with no token, a revoked token
//! and an expired one. Each gets the answer the contract demands (status,
//! code and param); when allowed, the request did what it says (and no
//! answer shows anyone else's phone number); when refused, nothing changed
//! (snapshots of the affected objects, before and after).
//!
//! One server per store. Each cell starts from a fixture as made: a fresh
//! one, or the previous cell's when that cell provably left it so (see the
//! loop), which keeps the run short without one cell seeing another's
//! effects.
//!
//! - `cast`: the columns and the fixture;
//! - `requests`: the rows and the request of each;
//! - `snapshot`: what a refusal must leave as it was;
//! - `effects`: what an allowed request must have done.

mod cast;
mod effects;
mod requests;
mod snapshot;

use confab_tests::http::TestApp;
use serde_json::json;

use crate::support::check;
use cast::{fixture, Cast, Fixture, ROLES};
use effects::check_effect;
use requests::{is_read, request, send, Op};
use snapshot::{check_untouched, listed_ids, snapshot, View};

#[derive(Clone, Copy, Debug)]
enum Want {
    /// This success status.
    Success(u16),
    /// 200, and the fixture's item is (or is not) in the list.
    Listed(bool),
    /// 404 `not_found` with this `param`.
    NotFound(Option<&'static str>),
    /// 403 `forbidden`.
    Forbidden,
    /// 403 `contact_blocked` with this `param`.
    ContactBlocked(Option<&'static str>),
    /// 400 `parameter_invalid` with this `param`.
    Invalid(&'static str),
    /// 401 `unauthorized` with `WWW-Authenticate: Bearer`.
    Unauthorized,
    /// 401 `token_expired` with `WWW-Authenticate: Bearer`.
    Expired,
}

impl Want {
    fn refused(self) -> bool {
        !matches!(self, Want::Success(_) | Want::Listed(_))
    }
}

/// A row of the matrix: the answers of the seven authenticated roles, in
/// the order owner, creator, member, outsider, admin, blocked, blocker;
/// every request without a live token is 401, whatever the operation
/// (`token_expired` for the expired one).
const fn row(
    owner: Want,
    creator: Want,
    member: Want,
    outsider: Want,
    admin: Want,
    blocked: Want,
    blocker: Want,
) -> [Want; 10] {
    use Want::{Expired as E, Unauthorized as U};
    [
        owner, creator, member, outsider, admin, blocked, blocker, U, U, E,
    ]
}

/// A row where the six members get the same answer.
const fn members(member: Want, outsider: Want) -> [Want; 10] {
    row(member, member, member, outsider, member, member, member)
}

/// A row where only the owner and the admin may (the plain members,
/// blocked, blocker and creator alike are forbidden).
const fn staff(owner: Want, admin: Want) -> [Want; 10] {
    use Want::{Forbidden as F, NotFound};
    row(owner, F, F, NotFound(None), admin, F, F)
}

async fn authorization_matrix(app: TestApp) {
    use Op::*;
    use Want::*;
    let started = std::time::Instant::now();
    let cast = Cast::new(&app).await;
    const F: Want = Forbidden;
    const NF: Want = NotFound(None);
    const NF_GROUP: Want = NotFound(Some("group_id"));
    const NF_CONV: Want = NotFound(Some("conversation_id"));
    const OK200: Want = Success(200);
    const OK201: Want = Success(201);
    const OK204: Want = Success(204);
    const CB_CONTACT: Want = ContactBlocked(Some("contact_id"));
    const CB_CONV: Want = ContactBlocked(Some("conversation_id"));
    const CB_PATH: Want = ContactBlocked(None);
    const ANYONE_200: [Want; 10] = members(OK200, OK200);
    const ANYONE_201: [Want; 10] = members(OK201, OK201);
    // Columns: owner, creator, member, outsider, admin, blocked, blocker
    // (`members(m, o)` when the six members agree, `staff(owner, admin)`
    // when only those two may); then no token, revoked, expired: always
    // 401 (`token_expired` for the last).
    let table: [(Op, [Want; 10]); 48] = [
        (ListAllMessages, members(Listed(true), Listed(false))),
        (ListConversationMessages, members(Listed(true), NF_CONV)),
        // Group conversations are unaffected by blocks.
        (SendMessage, members(OK201, NF_CONV)),
        (GetMessage, members(OK200, NF)),
        // Editing stays the sender's, admins or not.
        (EditMessage, row(F, OK200, F, NF, F, F, F)),
        (React, members(OK200, NF)),
        (ReactAsOther, members(F, NF)),
        (AppendAttachment, row(F, OK200, F, NF, F, F, F)),
        (Unreact, members(OK200, NF)),
        // The sender, the owner and admins delete any message of the group.
        (DeleteMessage, row(OK204, OK204, F, NF, OK204, F, F)),
        // Every member sees a message's earlier texts.
        (ListEdits, members(OK200, NF)),
        // Search finds what a member sees, and nothing of others'.
        (SearchMessages, members(Listed(true), Listed(false))),
        (SearchConversation, members(Listed(true), NF_CONV)),
        (ListConversations, members(Listed(true), Listed(false))),
        (ListGroupConversations, members(Listed(true), NF_GROUP)),
        (CreateGroupConversation, members(OK201, NF_GROUP)),
        // A block either way: no direct conversation.
        (
            CreateDirectConversation,
            row(OK201, OK201, OK201, OK201, OK201, CB_CONTACT, CB_CONTACT),
        ),
        (GetConversation, members(OK200, NF)),
        (UpdateConversation, members(OK200, NF)),
        (PinMessage, members(OK200, NF)),
        // Its creator or the owner; admins too are forbidden.
        (DeleteConversation, row(OK204, OK204, F, NF, F, F, F)),
        (DeleteDirectConversation, row(NF, NF, OK204, NF, NF, NF, NF)),
        // Typing is a member's, blocks aside (the conversation is the
        // path's: no param).
        (Typing, members(OK204, NF)),
        (
            TypingInBlockedDirect,
            row(NF, NF, OK204, NF, NF, CB_PATH, CB_PATH),
        ),
        (ListGroups, members(Listed(true), Listed(false))),
        // The blocked cannot add their blocker; the blocker may add the
        // blocked.
        (
            CreateGroup,
            row(
                OK201,
                OK201,
                OK201,
                OK201,
                OK201,
                ContactBlocked(Some("contact_ids")),
                OK201,
            ),
        ),
        (GetGroup, members(OK200, NF)),
        (UpdateGroup, staff(OK200, F)),
        (AddMember, staff(OK200, OK200)),
        (RemoveMember, staff(OK200, OK200)),
        (
            LeaveGroup,
            row(
                Invalid("remove_contact_ids"),
                OK200,
                OK200,
                NF,
                OK200,
                OK200,
                OK200,
            ),
        ),
        (DeleteGroup, staff(OK204, F)),
        (GetMembers, members(OK200, NF)),
        // Only the owner names admins.
        (MakeAdmin, staff(OK200, F)),
        (RemoveAdmin, staff(OK200, F)),
        // The owner removes the admin; the admin may leave.
        (RemoveAdminAsMember, staff(OK200, OK200)),
        (FindContact, ANYONE_200),
        (GetMe, ANYONE_200),
        (UpdateMe, ANYONE_200),
        (GetContact, ANYONE_200),
        // Anyone may block the bystander; the blocker already did (200).
        (
            BlockContact,
            row(OK201, OK201, OK201, OK201, OK201, OK201, OK200),
        ),
        (UnblockContact, row(NF, NF, NF, NF, NF, NF, OK204)),
        (
            ListBlocked,
            row(
                Listed(false),
                Listed(false),
                Listed(false),
                Listed(false),
                Listed(false),
                Listed(false),
                Listed(true),
            ),
        ),
        (
            SendInBlockedDirect,
            row(NF_CONV, NF_CONV, OK201, NF_CONV, NF_CONV, CB_CONV, CB_CONV),
        ),
        // distinct=true: the member has one already (200).
        (
            CreateDirectWithBlocker,
            row(OK201, OK201, OK200, OK201, OK201, CB_CONTACT, CB_CONTACT),
        ),
        (
            AddBlockerToGroup,
            row(
                OK200,
                OK200,
                OK200,
                OK200,
                OK200,
                ContactBlocked(Some("add_contact_ids")),
                OK200,
            ),
        ),
        // One's own message cannot be reported; an unseen one is 404.
        (
            ReportMessage,
            row(
                OK201,
                Invalid("message_id"),
                OK201,
                NotFound(Some("message_id")),
                OK201,
                OK201,
                OK201,
            ),
        ),
        (ReportContact, ANYONE_201),
    ];
    let mut failures = Vec::new();
    let mut cells = 0;
    let mut fixtures = 0;
    // A cell gets a fresh fixture unless the previous one provably left
    // its own as made: refused with every view unchanged (its views after
    // are then this cell's views before), or an allowed read.
    let mut kept: Option<(Fixture, Option<Vec<View>>)> = None;
    for (op, wants) in table {
        for (role, want) in ROLES.into_iter().zip(wants) {
            cells += 1;
            let (fx, views) = match kept.take() {
                Some(kept) => kept,
                None => {
                    fixtures += 1;
                    (fixture(&app, &cast, fixtures).await, None)
                }
            };
            let (who, token) = cast.caller(role);
            let (req, item) = request(&cast, &fx, op, who);
            let ctx = format!("{op:?} as {role:?} ({} {})", req.method, req.path);
            let before = match (want.refused(), views) {
                (false, _) => None,
                (true, Some(views)) => Some(views),
                (true, None) => Some(snapshot(&app, &cast, &fx).await),
            };
            let r = send(&app, token, &req).await;
            let status = r.status.as_u16();
            let (want_status, want_code, want_param) = match want {
                Success(s) => (s, None, None),
                Listed(_) => (200, None, None),
                NotFound(p) => (404, Some("not_found"), p),
                Forbidden => (403, Some("forbidden"), None),
                ContactBlocked(p) => (403, Some("contact_blocked"), p),
                Invalid(p) => (400, Some("parameter_invalid"), Some(p)),
                Unauthorized => (401, Some("unauthorized"), None),
                Expired => (401, Some("token_expired"), None),
            };
            if status != want_status {
                failures.push(format!(
                    "{ctx}: want {want_status}, got {status}: {}",
                    r.raw
                ));
            } else if let Some(code) = want_code {
                check!(
                    failures,
                    r.body["code"] == code
                        && r.body["type"] == "invalid_request"
                        && r.body["param"] == json!(want_param)
                        && r.body["message"].is_string(),
                    "{ctx}: want code {code} param {want_param:?}, got {}",
                    r.raw
                );
                if let Unauthorized | Expired = want {
                    let www = r.header("www-authenticate");
                    check!(
                        failures,
                        www.is_some_and(|h| h.starts_with("Bearer")),
                        "{ctx}: WWW-Authenticate is {www:?}"
                    );
                }
            } else {
                if let (Listed(listed), Some(item)) = (want, &item) {
                    check!(
                        failures,
                        listed_ids(&r.body).contains(item) == listed,
                        "{ctx}: listed should be {listed}: {}",
                        r.raw
                    );
                }
                check_effect(&app, &cast, &fx, (op, who, &r), &ctx, &mut failures).await;
            }
            match before {
                Some(before) => {
                    let after =
                        check_untouched(&app, &cast, &fx, &before, &ctx, &mut failures).await;
                    if after.is_some() {
                        kept = Some((fx, after));
                    }
                }
                None if is_read(op) && status == want_status => kept = Some((fx, None)),
                None => {}
            }
        }
    }
    // Figures for the record (shown with --nocapture).
    println!(
        "authorization matrix on {:?}: {cells} cells, {fixtures} fixtures, {:.1} s",
        app.backend,
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} wrong answers out of {cells} cells:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The matrix drives each actor's token as fast as the machine allows
/// (about a thousand requests a token in a few seconds, more than the
/// default 100/s with a burst of 200 on a fast machine): what it checks is
/// who may do what, so its server allows more per token. The limit itself is
/// tested in tests/tests/http/rate_limit.rs.
async fn on_matrix_server<F, Fut>(backend: confab_tests::db::Backend, test: F)
where
    F: FnOnce(TestApp) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let limits = confab_server::startup::RateLimits {
        per_contact: confab_server::startup::Quota::new(100_000, 100_000),
        anonymous: None,
        per_key: None,
    };
    test(TestApp::spawn_with(backend, limits).await).await;
}

confab_tests::on_both_stores!(crate::authorization::on_matrix_server; authorization_matrix);
