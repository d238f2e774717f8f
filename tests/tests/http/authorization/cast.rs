//! Who acts in the matrix (the columns) and what they act on (the
//! fixture).

use std::collections::HashMap;

use confab_tests::http::{TestApp, User};
use serde_json::Value;

use crate::support::{group_conversation, id_of, new_group};

#[derive(Clone, Copy, Debug)]
pub(super) enum Role {
    /// The group's owner.
    Owner,
    /// A plain member who created the conversation and sent the message.
    Creator,
    /// Another plain member, in a direct conversation the bystander
    /// started with them (no block).
    Member,
    /// A contact in none of it.
    Outsider,
    /// A group admin (made one by the owner), not the creator.
    Admin,
    /// A plain member whom the bystander has blocked, in a direct
    /// conversation with the bystander.
    Blocked,
    /// A plain member who has blocked the bystander, in a direct
    /// conversation with the bystander.
    Blocker,
    /// The owner's request without an `Authorization` header.
    NoToken,
    /// The owner's request with a token of theirs that was revoked.
    Revoked,
    /// The creator's request with a token of theirs that expired.
    Expired,
}

/// The columns of the matrix, in order.
pub(super) const ROLES: [Role; 10] = [
    Role::Owner,
    Role::Creator,
    Role::Member,
    Role::Outsider,
    Role::Admin,
    Role::Blocked,
    Role::Blocker,
    Role::NoToken,
    Role::Revoked,
    Role::Expired,
];

/// The contacts the whole matrix shares, the two dead tokens, a server
/// key (to see the reports) and a group of each contact's own.
pub(super) struct Cast {
    pub(super) owner: User,
    pub(super) creator: User,
    pub(super) member: User,
    pub(super) outsider: User,
    pub(super) admin: User,
    pub(super) blocked: User,
    pub(super) blocker: User,
    /// A token of the owner's, revoked.
    pub(super) revoked: String,
    /// A token of the creator's, expired.
    pub(super) expired: String,
    /// A server key: the operator's view of the reports.
    pub(super) key: String,
    /// Contact id -> a group that contact owns alone at first (where it
    /// may add the bystander: only a block can stop it).
    homes: HashMap<String, String>,
}

impl Cast {
    pub(super) async fn new(app: &TestApp) -> Cast {
        let mut owner = app.user("olive").await;
        let creator = app.user("cora").await;
        let revoked = app.revoke_and_reissue(&mut owner).await;
        let expired = app.expired_token(&creator).await;
        let key = app
            .service
            .create_server_key("matrix")
            .await
            .expect("create key")
            .secret;
        let cast = Cast {
            owner,
            creator,
            member: app.user("mike").await,
            outsider: app.user("otto").await,
            admin: app.user("adam").await,
            blocked: app.user("blake").await,
            blocker: app.user("brock").await,
            revoked,
            expired,
            key,
            homes: HashMap::new(),
        };
        let mut homes = HashMap::new();
        for user in cast.people() {
            let home = new_group(app, user, "Home", &[]).await;
            homes.insert(user.id.clone(), home);
        }
        Cast { homes, ..cast }
    }

    /// Every contact of the cast.
    pub(super) fn people(&self) -> [&User; 7] {
        [
            &self.owner,
            &self.creator,
            &self.member,
            &self.outsider,
            &self.admin,
            &self.blocked,
            &self.blocker,
        ]
    }

    /// The group `user` owns alone (but for bystanders added to it).
    pub(super) fn home(&self, user: &User) -> &str {
        self.homes.get(&user.id).expect("every contact has a home")
    }

    /// Whose request it is (the ids and names in its body) and the token it
    /// carries.
    pub(super) fn caller(&self, role: Role) -> (&User, Option<&str>) {
        match role {
            Role::Owner => (&self.owner, Some(&self.owner.token)),
            Role::Creator => (&self.creator, Some(&self.creator.token)),
            Role::Member => (&self.member, Some(&self.member.token)),
            Role::Outsider => (&self.outsider, Some(&self.outsider.token)),
            Role::Admin => (&self.admin, Some(&self.admin.token)),
            Role::Blocked => (&self.blocked, Some(&self.blocked.token)),
            Role::Blocker => (&self.blocker, Some(&self.blocker.token)),
            Role::NoToken => (&self.owner, None),
            Role::Revoked => (&self.owner, Some(&self.revoked)),
            Role::Expired => (&self.creator, Some(&self.expired)),
        }
    }
}

/// What a cell acts on: a group (the owner, the admin, the creator, the
/// member, the blocked, the blocker and a bystander), a conversation the
/// creator made in it, a message the creator sent there and reacted to,
/// and three direct conversations of the bystander: with the member (no
/// block), with the blocked (whom the bystander blocked) and with the
/// blocker (who blocked the bystander).
pub(super) struct Fixture {
    /// A member of the group, new for each fixture: the target of
    /// operations on someone else (react in their name, remove them, talk
    /// to them, block them, report them).
    pub(super) bystander: User,
    pub(super) group: String,
    pub(super) conversation: String,
    pub(super) message: String,
    /// Set by the creator's reaction.
    pub(super) message_updated_at: Value,
    /// The bystander's with the member, started by the bystander.
    pub(super) direct: String,
    /// The blocked's with the bystander, started by the blocked before the
    /// bystander blocked them.
    pub(super) blocked_direct: String,
    /// The blocker's with the bystander, started by the blocker before
    /// they blocked the bystander.
    pub(super) blocker_direct: String,
    /// `created_at` of the blocker's block of the bystander.
    pub(super) blocker_block_at: Value,
}

impl Fixture {
    /// The direct conversation of `who` with the bystander, or (for those
    /// without one) the member's, which they are not in.
    pub(super) fn direct_of(&self, cast: &Cast, who: &User) -> &str {
        if who.id == cast.blocked.id {
            &self.blocked_direct
        } else if who.id == cast.blocker.id {
            &self.blocker_direct
        } else {
            &self.direct
        }
    }

    /// Every member of the group.
    pub(super) fn members<'a>(&'a self, cast: &'a Cast) -> [&'a User; 7] {
        [
            &cast.owner,
            &cast.creator,
            &cast.member,
            &self.bystander,
            &cast.admin,
            &cast.blocked,
            &cast.blocker,
        ]
    }
}

async fn block(app: &TestApp, by: &User, whom: &User) -> Value {
    let r = app
        .post(by, &format!("/v1/contacts/{}/block", whom.id), &[])
        .await;
    r.expect(201).clone()
}

pub(super) async fn fixture(app: &TestApp, cast: &Cast, n: usize) -> Fixture {
    let bystander = app.user(&format!("bea{n}")).await;
    let group = new_group(
        app,
        &cast.owner,
        "Team",
        &[
            &cast.member,
            &cast.creator,
            &bystander,
            &cast.admin,
            &cast.blocked,
            &cast.blocker,
        ],
    )
    .await;
    app.put(
        &cast.owner,
        &format!("/v1/groups/{group}"),
        &[("add_admin_ids[]", &cast.admin.id)],
    )
    .await
    .expect(200);
    let conversation = group_conversation(app, &cast.creator, &group).await;
    let message = id_of(
        &app.send_message(&cast.creator, &conversation, "hello")
            .await,
    );
    let reacted = app
        .put(
            &cast.creator,
            &format!("/v1/messages/{message}"),
            &[("reactions[like][]", "cora")],
        )
        .await;
    let message_updated_at = reacted.expect(200)["updated_at"].clone();
    let direct = app.direct(&bystander, &cast.member).await;
    let blocked_direct = app.direct(&cast.blocked, &bystander).await;
    let blocker_direct = app.direct(&cast.blocker, &bystander).await;
    block(app, &bystander, &cast.blocked).await;
    let blocker_block_at = block(app, &cast.blocker, &bystander).await["created_at"].clone();
    Fixture {
        bystander,
        group,
        conversation,
        message,
        message_updated_at,
        direct,
        blocked_direct,
        blocker_direct,
        blocker_block_at,
    }
}
