//! Group roles (docs/api.md "Groups" and "Blocks and reports"): the members list names the
//! owner, admins and members; only the owner names admins, with every
//! list checked against the members after the request; admins add and
//! remove plain members and delete any message of the group's
//! conversations; an erased owner's group passes to its oldest admin, else
//! its oldest member.

use std::time::{Duration, Instant};

use confab_tests::http::{TestApp, User};
use reqwest::Method;
use serde_json::{json, Value};

use super::{all_events, events_until, role_of, roles, server_key, with_key};
use crate::support::{group_conversation, id_of, ids_of, keys, member_ids, new_group, UNKNOWN_ID};

fn path(group: &str) -> String {
    format!("/v1/groups/{group}")
}

/// (contact id, role) pairs, to compare with [`roles`].
fn want(list: &[(&User, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(u, r)| (u.id.clone(), (*r).to_owned()))
        .collect()
}

/// The number of `group.updated` events of `group` in `events`.
fn group_updates(events: &[Value], group: &str) -> usize {
    events
        .iter()
        .filter(|e| e["type"] == "group.updated" && e["payload"]["id"] == group)
        .count()
}

/// Waits until `user` has heard `n` `group.updated` of `group` (and no
/// more); returns the last.
async fn nth_group_update(app: &TestApp, user: &User, group: &str, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    let events = loop {
        let events = all_events(app, user, 100).await;
        if group_updates(&events, group) >= n {
            break events;
        }
        assert!(
            Instant::now() < deadline,
            "{} heard fewer than {n} group.updated: {events:#?}",
            user.username
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        group_updates(&events, group),
        n,
        "{} heard more group.updated than changes: {events:#?}",
        user.username
    );
    events
        .into_iter()
        .rfind(|e| e["type"] == "group.updated" && e["payload"]["id"] == group)
        .expect("a group.updated")
}

async fn members_list_shows_owner_admins_and_members(app: TestApp) {
    let olive = app.user("olive").await;
    let adam = app.user("adam").await;
    let bea = app.user("bea").await;
    let carl = app.user("carl").await;
    let dana = app.user("dana").await;
    let gid = new_group(&app, &olive, "Team", &[&adam, &bea, &carl]).await;
    let p = path(&gid);
    // The creator owns it; everyone else is a plain member. Each item is
    // the contact, the role and when they joined.
    let r = app
        .get(&carl, &format!("/v1/groups/{gid}/members?limit=100"))
        .await;
    for m in r.expect(200)["data"].as_array().expect("data") {
        assert_eq!(keys(m), ["contact", "joined_at", "role"], "{m}");
        assert!(m["joined_at"].is_i64(), "{m}");
    }
    let start = want(&[
        (&olive, "owner"),
        (&adam, "member"),
        (&bea, "member"),
        (&carl, "member"),
    ]);
    assert_eq!(roles(&app, &carl, &gid).await, start);

    // The owner makes adam an admin (form): the group object answers,
    // members unchanged, and every member hears group.updated.
    let r = app
        .put(&olive, &p, &[("add_admin_ids[]", adam.id.as_str())])
        .await;
    let g = r.expect(200);
    assert_eq!(g["id"], gid.as_str(), "{g}");
    assert_eq!(member_ids(g), ids_of(&[&olive, &adam, &bea, &carl]));
    for u in [&olive, &adam, &carl] {
        let e = nth_group_update(&app, u, &gid, 1).await;
        assert_eq!(e["payload"]["id"], gid.as_str(), "{e}");
    }
    // Then bea (JSON arrays).
    app.json(
        Method::PUT,
        &olive,
        &p,
        &json!({ "add_admin_ids": [bea.id] }),
    )
    .await
    .expect(200);
    nth_group_update(&app, &carl, &gid, 2).await;
    assert_eq!(
        roles(&app, &carl, &gid).await,
        want(&[
            (&olive, "owner"),
            (&adam, "admin"),
            (&bea, "admin"),
            (&carl, "member"),
        ])
    );
    // Taking bea's back; carl, a plain member, in the list changes nothing.
    app.put(
        &olive,
        &p,
        &[
            ("remove_admin_ids[]", bea.id.as_str()),
            ("remove_admin_ids[]", carl.id.as_str()),
        ],
    )
    .await
    .expect(200);
    nth_group_update(&app, &bea, &gid, 3).await;
    let now = want(&[
        (&olive, "owner"),
        (&adam, "admin"),
        (&bea, "member"),
        (&carl, "member"),
    ]);
    assert_eq!(roles(&app, &bea, &gid).await, now);
    // Already an admin: no change.
    app.put(&olive, &p, &[("add_admin_ids[]", adam.id.as_str())])
        .await
        .expect(200);
    assert_eq!(roles(&app, &olive, &gid).await, now);
    // A new member made admin in the same request, with other changes.
    let r = app
        .put(
            &olive,
            &p,
            &[
                ("add_contact_ids[]", dana.id.as_str()),
                ("add_admin_ids[]", dana.id.as_str()),
                ("name", "Renamed"),
            ],
        )
        .await;
    assert_eq!(r.expect(200)["name"], "Renamed");
    assert_eq!(
        roles(&app, &dana, &gid).await,
        want(&[
            (&olive, "owner"),
            (&adam, "admin"),
            (&bea, "member"),
            (&carl, "member"),
            (&dana, "admin"),
        ])
    );
}

async fn only_the_owner_names_admins(app: TestApp) {
    let olive = app.user("olive").await;
    let adam = app.user("adam").await;
    let bea = app.user("bea").await;
    let carl = app.user("carl").await;
    let otto = app.user("otto").await;
    let gid = new_group(&app, &olive, "Team", &[&adam, &bea]).await;
    let p = path(&gid);
    app.put(&olive, &p, &[("add_admin_ids[]", adam.id.as_str())])
        .await
        .expect(200);
    let before = roles(&app, &olive, &gid).await;

    // An admin or a member using the admin lists: 403, also on
    // themself, also beside what they may do (which then does not happen).
    let forbidden: Vec<(&User, Vec<(&str, &str)>)> = vec![
        (&adam, vec![("add_admin_ids[]", bea.id.as_str())]),
        (&adam, vec![("remove_admin_ids[]", adam.id.as_str())]),
        (&adam, vec![("add_admin_ids[]", adam.id.as_str())]),
        (
            &adam,
            vec![
                ("add_contact_ids[]", carl.id.as_str()),
                ("add_admin_ids[]", carl.id.as_str()),
            ],
        ),
        (
            &adam,
            vec![
                ("add_contact_ids[]", carl.id.as_str()),
                ("remove_admin_ids[]", bea.id.as_str()),
            ],
        ),
        (&bea, vec![("add_admin_ids[]", bea.id.as_str())]),
        (&bea, vec![("remove_admin_ids[]", adam.id.as_str())]),
        (&bea, vec![("remove_admin_ids[]", bea.id.as_str())]),
    ];
    for (who, pairs) in &forbidden {
        let r = app.put(who, &p, pairs).await;
        assert_eq!(
            r.status.as_u16(),
            403,
            "{} {pairs:?}: {}",
            who.username,
            r.raw
        );
        r.expect_error(403, "forbidden", None);
    }
    app.json(
        Method::PUT,
        &adam,
        &p,
        &json!({ "add_admin_ids": [bea.id] }),
    )
    .await
    .expect_error(403, "forbidden", None);
    // A non-member: 404, like a group that does not exist.
    for pairs in [
        vec![("add_admin_ids[]", otto.id.as_str())],
        vec![("remove_admin_ids[]", adam.id.as_str())],
    ] {
        app.put(&otto, &p, &pairs)
            .await
            .expect_error(404, "not_found", None);
    }
    assert_eq!(roles(&app, &olive, &gid).await, before);
    let g = app.get(&olive, &p).await;
    assert_eq!(member_ids(g.expect(200)), ids_of(&[&olive, &adam, &bea]));
}

async fn admin_lists_are_checked_against_the_members_after_the_request(app: TestApp) {
    let olive = app.user("olive").await;
    let adam = app.user("adam").await;
    let bea = app.user("bea").await;
    let carl = app.user("carl").await;
    let otto = app.user("otto").await;
    let gid = new_group(&app, &olive, "Team", &[&adam, &bea, &carl]).await;
    let p = path(&gid);
    app.put(&olive, &p, &[("add_admin_ids[]", adam.id.as_str())])
        .await
        .expect(200);
    let before = roles(&app, &olive, &gid).await;

    let add = "add_admin_ids";
    let remove = "remove_admin_ids";
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        // Not a member, the owner, unknown, malformed.
        (vec![("add_admin_ids[]", otto.id.as_str())], add),
        (vec![("add_admin_ids[]", olive.id.as_str())], add),
        (vec![("add_admin_ids[]", UNKNOWN_ID)], add),
        (vec![("add_admin_ids[]", "nope")], add),
        // No longer a member after this request's removals.
        (
            vec![
                ("remove_contact_ids[]", bea.id.as_str()),
                ("add_admin_ids[]", bea.id.as_str()),
            ],
            add,
        ),
        // Beside a change that alone would pass (it does not happen).
        (
            vec![("name", "Changed"), ("add_admin_ids[]", otto.id.as_str())],
            add,
        ),
        (
            vec![
                ("add_contact_ids[]", otto.id.as_str()),
                ("add_admin_ids[]", olive.id.as_str()),
            ],
            add,
        ),
        (vec![("remove_admin_ids[]", otto.id.as_str())], remove),
        (vec![("remove_admin_ids[]", olive.id.as_str())], remove),
        (vec![("remove_admin_ids[]", UNKNOWN_ID)], remove),
        (
            vec![
                ("remove_contact_ids[]", adam.id.as_str()),
                ("remove_admin_ids[]", adam.id.as_str()),
            ],
            remove,
        ),
        // The same id in both lists.
        (
            vec![
                ("add_admin_ids[]", bea.id.as_str()),
                ("remove_admin_ids[]", bea.id.as_str()),
            ],
            remove,
        ),
        (
            vec![
                ("remove_admin_ids[]", adam.id.as_str()),
                ("add_admin_ids[]", adam.id.as_str()),
            ],
            remove,
        ),
        // Twice in one list.
        (
            vec![
                ("add_admin_ids[]", bea.id.as_str()),
                ("add_admin_ids[]", bea.id.as_str()),
            ],
            add,
        ),
        (
            vec![
                ("remove_admin_ids[]", adam.id.as_str()),
                ("remove_admin_ids[]", adam.id.as_str()),
            ],
            remove,
        ),
    ];
    for (pairs, param) in &cases {
        let r = app.put(&olive, &p, pairs).await;
        assert_eq!(r.status.as_u16(), 400, "{pairs:?}: {}", r.raw);
        r.expect_error(400, "parameter_invalid", Some(param));
    }
    // JSON: not an array of ids.
    for (body, param) in [
        (json!({ "add_admin_ids": bea.id }), add),
        (json!({ "remove_admin_ids": [5] }), remove),
    ] {
        app.json(Method::PUT, &olive, &p, &body).await.expect_error(
            400,
            "parameter_invalid",
            Some(param),
        );
    }
    // Nothing changed.
    assert_eq!(roles(&app, &olive, &gid).await, before);
    let g = app.get(&olive, &p).await;
    let g = g.expect(200);
    assert_eq!(g["name"], "Team");
    assert_eq!(member_ids(g), ids_of(&[&olive, &adam, &bea, &carl]));

    // Members after this request's adds: a newcomer may be made admin.
    app.put(
        &olive,
        &p,
        &[
            ("add_contact_ids[]", otto.id.as_str()),
            ("add_admin_ids[]", otto.id.as_str()),
        ],
    )
    .await
    .expect(200);
    assert_eq!(role_of(&app, &olive, &gid, &otto).await, "admin");
}

async fn admins_add_and_remove_plain_members_only(app: TestApp) {
    let olive = app.user("olive").await;
    let adam = app.user("adam").await;
    let alma = app.user("alma").await;
    let bea = app.user("bea").await;
    let carl = app.user("carl").await;
    let dana = app.user("dana").await;
    let eve = app.user("eve").await;
    let fred = app.user("fred").await;
    let gid = new_group(&app, &olive, "Team", &[&adam, &alma, &bea, &carl]).await;
    let p = path(&gid);
    app.put(
        &olive,
        &p,
        &[
            ("add_admin_ids[]", adam.id.as_str()),
            ("add_admin_ids[]", alma.id.as_str()),
        ],
    )
    .await
    .expect(200);

    // An admin adds members (form and JSON) and removes a plain one.
    let r = app
        .put(&adam, &p, &[("add_contact_ids[]", dana.id.as_str())])
        .await;
    assert!(member_ids(r.expect(200)).contains(&dana.id));
    app.get(&dana, &p).await.expect(200);
    app.json(
        Method::PUT,
        &adam,
        &p,
        &json!({ "add_contact_ids": [eve.id] }),
    )
    .await
    .expect(200);
    let r = app
        .put(&adam, &p, &[("remove_contact_ids[]", carl.id.as_str())])
        .await;
    assert!(!member_ids(r.expect(200)).contains(&carl.id));
    app.get(&carl, &p)
        .await
        .expect_error(404, "not_found", None);
    let members = ids_of(&[&olive, &adam, &alma, &bea, &dana, &eve]);

    // Not the owner, not another admin, not the group's details, not the
    // group itself: 403, and nothing of the request happens.
    let forbidden: Vec<Vec<(&str, &str)>> = vec![
        vec![("remove_contact_ids[]", olive.id.as_str())],
        vec![("remove_contact_ids[]", alma.id.as_str())],
        vec![
            ("remove_contact_ids[]", bea.id.as_str()),
            ("remove_contact_ids[]", alma.id.as_str()),
        ],
        vec![("name", "Mine")],
        vec![("description", "mine")],
        vec![("avatar_url", "https://img.example/mine.png")],
        vec![("add_contact_ids[]", fred.id.as_str()), ("name", "Mine")],
    ];
    for pairs in &forbidden {
        let r = app.put(&adam, &p, pairs).await;
        assert_eq!(r.status.as_u16(), 403, "{pairs:?}: {}", r.raw);
        r.expect_error(403, "forbidden", None);
    }
    app.delete(&adam, &p)
        .await
        .expect_error(403, "forbidden", None);
    let g = app.get(&olive, &p).await;
    let g = g.expect(200).clone();
    assert_eq!(g["name"], "Team");
    assert_eq!(g["description"], "");
    assert_eq!(g["avatar_url"], "");
    assert_eq!(member_ids(&g), members);
    assert_eq!(role_of(&app, &olive, &gid, &alma).await, "admin");

    // Plain members still may not add or remove others.
    app.put(&bea, &p, &[("add_contact_ids[]", fred.id.as_str())])
        .await
        .expect_error(403, "forbidden", None);
    app.put(&bea, &p, &[("remove_contact_ids[]", dana.id.as_str())])
        .await
        .expect_error(403, "forbidden", None);

    // An admin the owner demotes loses the powers at once.
    app.put(&olive, &p, &[("remove_admin_ids[]", alma.id.as_str())])
        .await
        .expect(200);
    app.put(&alma, &p, &[("add_contact_ids[]", fred.id.as_str())])
        .await
        .expect_error(403, "forbidden", None);
    // Now a plain member, alma may be removed by an admin.
    app.put(&adam, &p, &[("remove_contact_ids[]", alma.id.as_str())])
        .await
        .expect(200);

    // An admin may leave.
    let r = app
        .put(&adam, &p, &[("remove_contact_ids[]", adam.id.as_str())])
        .await;
    assert_eq!(
        member_ids(r.expect(200)),
        ids_of(&[&olive, &bea, &dana, &eve])
    );
    app.get(&adam, &p)
        .await
        .expect_error(404, "not_found", None);
    assert_eq!(
        roles(&app, &olive, &gid).await,
        want(&[
            (&olive, "owner"),
            (&bea, "member"),
            (&dana, "member"),
            (&eve, "member"),
        ])
    );
}

async fn owner_and_admins_delete_any_message_of_the_group(app: TestApp) {
    let olive = app.user("olive").await;
    let adam = app.user("adam").await;
    let bea = app.user("bea").await;
    let carl = app.user("carl").await;
    let otto = app.user("otto").await;
    let gid = new_group(&app, &olive, "Team", &[&adam, &bea, &carl]).await;
    app.put(
        &olive,
        &path(&gid),
        &[("add_admin_ids[]", adam.id.as_str())],
    )
    .await
    .expect(200);
    let conv = group_conversation(&app, &bea, &gid).await;
    let of_bea = id_of(&app.send_message(&bea, &conv, "bea's").await);
    let of_carl = id_of(&app.send_message(&carl, &conv, "carl's").await);
    let of_olive = id_of(&app.send_message(&olive, &conv, "olive's").await);
    let of_adam = id_of(&app.send_message(&adam, &conv, "adam's").await);
    let bea_again = id_of(&app.send_message(&bea, &conv, "bea again").await);
    let msg = |id: &str| format!("/v1/messages/{id}");

    // The admin deletes bea's message: 204, gone for all, and each member
    // hears message.deleted.
    let r = app.delete(&adam, &msg(&of_bea)).await;
    r.expect(204);
    assert!(r.raw.is_empty(), "{}", r.raw);
    for u in [&bea, &carl, &olive] {
        app.get(u, &msg(&of_bea))
            .await
            .expect_error(404, "not_found", None);
        events_until(&app, u, |e| {
            e["type"] == "message.deleted" && e["payload"]["id"] == of_bea.as_str()
        })
        .await;
    }
    // The owner deletes carl's.
    app.delete(&olive, &msg(&of_carl)).await.expect(204);
    events_until(&app, &bea, |e| {
        e["type"] == "message.deleted" && e["payload"]["id"] == of_carl.as_str()
    })
    .await;
    // Plain members: 403 on others' messages (the admin's, the owner's);
    // an outsider: 404.
    app.delete(&bea, &msg(&of_adam))
        .await
        .expect_error(403, "forbidden", None);
    app.delete(&carl, &msg(&of_olive))
        .await
        .expect_error(403, "forbidden", None);
    app.delete(&otto, &msg(&of_olive))
        .await
        .expect_error(404, "not_found", None);
    // Editing others' messages stays the sender's: text and attachments.
    for who in [&adam, &olive] {
        app.put(who, &msg(&bea_again), &[("message", "censored")])
            .await
            .expect_error(403, "forbidden", None);
        app.put(
            who,
            &msg(&bea_again),
            &[
                ("attachments[0][file_url]", "https://example.com/x.png"),
                ("attachments[0][filename]", "x.png"),
            ],
        )
        .await
        .expect_error(403, "forbidden", None);
    }
    let left: Vec<String> = crate::support::conversation_messages(&app, &carl, &conv)
        .await
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(left, [bea_again.clone(), of_adam, of_olive]);
    let kept = app.get(&carl, &msg(&bea_again)).await;
    assert_eq!(kept.expect(200)["message"], "bea again");

    // Only in that group's conversations: in a group where adam is a plain
    // member, and in a direct conversation, his role counts for nothing.
    let other = new_group(&app, &bea, "Other", &[&adam, &carl]).await;
    let there = group_conversation(&app, &carl, &other).await;
    let of_carl_there = id_of(&app.send_message(&carl, &there, "there").await);
    app.delete(&adam, &msg(&of_carl_there))
        .await
        .expect_error(403, "forbidden", None);
    let direct = app.direct(&bea, &carl).await;
    let private = id_of(&app.send_message(&bea, &direct, "private").await);
    for who in [&adam, &olive] {
        app.delete(who, &msg(&private))
            .await
            .expect_error(404, "not_found", None);
    }

    // Conversation deletion is unchanged: not the admin; the owner may.
    let c = format!("/v1/conversations/{conv}");
    app.delete(&adam, &c)
        .await
        .expect_error(403, "forbidden", None);
    app.delete(&olive, &c).await.expect(204);
    app.get(&bea, &c).await.expect_error(404, "not_found", None);
}

/// Erases `who` with a server key (`DELETE /v1/admin/contacts/:id`).
async fn erase(app: &TestApp, who: &User) {
    let key = server_key(app).await;
    with_key(
        app,
        Method::DELETE,
        &format!("/v1/admin/contacts/{}", who.id),
        &key,
        None,
        &[],
    )
    .await
    .expect(204);
}

async fn ownership_passes_to_the_oldest_admin_when_the_owner_is_erased(app: TestApp) {
    // Made and joined in this order: mia, the oldest member, stays a
    // plain member; al1 became admin (and joined) before al2.
    let olive = app.user("olive").await;
    let mia = app.user("mia").await;
    let al1 = app.user("al1").await;
    let al2 = app.user("al2").await;
    let gid = new_group(&app, &olive, "Team", &[&mia]).await;
    let p = path(&gid);
    for u in [&al1, &al2] {
        app.put(&olive, &p, &[("add_contact_ids[]", u.id.as_str())])
            .await
            .expect(200);
    }
    for u in [&al1, &al2] {
        app.put(&olive, &p, &[("add_admin_ids[]", u.id.as_str())])
            .await
            .expect(200);
    }
    erase(&app, &olive).await;

    assert_eq!(
        roles(&app, &mia, &gid).await,
        want(&[(&mia, "member"), (&al1, "owner"), (&al2, "admin")])
    );
    // The new owner has the owner's powers, the others still not.
    app.put(&al1, &p, &[("name", "Ours")]).await.expect(200);
    app.put(&al1, &p, &[("add_admin_ids[]", mia.id.as_str())])
        .await
        .expect(200);
    app.put(&al2, &p, &[("name", "Mine")])
        .await
        .expect_error(403, "forbidden", None);
    assert_eq!(role_of(&app, &al2, &gid, &mia).await, "admin");
}

async fn ownership_passes_to_the_oldest_member_without_admins(app: TestApp) {
    let olive = app.user("olive").await;
    let mia = app.user("mia").await;
    let nick = app.user("nick").await;
    let gid = new_group(&app, &olive, "Team", &[&mia, &nick]).await;
    erase(&app, &olive).await;
    assert_eq!(
        roles(&app, &nick, &gid).await,
        want(&[(&mia, "owner"), (&nick, "member")])
    );
    let p = path(&gid);
    app.put(&mia, &p, &[("name", "Ours")]).await.expect(200);
    app.put(&nick, &p, &[("name", "Mine")])
        .await
        .expect_error(403, "forbidden", None);
}

confab_tests::on_both_stores!(
    crate::support::on_server;
    members_list_shows_owner_admins_and_members,
    only_the_owner_names_admins,
    admin_lists_are_checked_against_the_members_after_the_request,
    admins_add_and_remove_plain_members_only,
    owner_and_admins_delete_any_message_of_the_group,
    ownership_passes_to_the_oldest_admin_when_the_owner_is_erased,
    ownership_passes_to_the_oldest_member_without_admins,
);
