//! Every write on a message or conversation checks the caller's membership
//! inside its own transaction: a member removed from a group between the
//! service's read and the store's write changes nothing.

use confab_ports::{GroupChange, StoreError};

use crate::support::no_events;
use crate::support::{
    all_messages, assert_err, at, change, contact, group, group_conversation, rn, send, text, S,
};

async fn a_removed_member_changes_nothing_in_the_write_itself(s: S) {
    let owner = contact(&s, "owner").await;
    let gone = contact(&s, "gone").await;
    let g = group(&s, &owner, &[&gone], at(1)).await;
    let c = group_conversation(&s, &owner, g.id(), at(2)).await;
    let mine = send(&s, &c, &gone, "mine", at(3)).await;
    let theirs = send(&s, &c, &owner, "theirs", at(4)).await;
    let mut reacted = change(&gone, at(5));
    reacted.add_reactions = vec![rn("like")];
    s.update_message(theirs.id(), reacted, no_events())
        .await
        .expect("react while a member");

    // What the service checked a moment before no longer holds.
    s.update_group(
        g.id(),
        GroupChange {
            remove: vec![gone.id()],
            ..GroupChange::default()
        },
        at(6),
        no_events(),
    )
    .await
    .expect("remove");

    let mut edit = change(&gone, at(7));
    edit.text = Some(text("edited after removal"));
    assert_err!(
        s.update_message(mine.id(), edit, no_events()).await,
        StoreError::NotFound
    );
    let mut react = change(&gone, at(7));
    react.add_reactions = vec![rn("heart")];
    assert_err!(
        s.update_message(theirs.id(), react, no_events()).await,
        StoreError::NotFound
    );
    assert_err!(
        s.remove_reaction(theirs.id(), gone.id(), rn("like"), at(7), no_events())
            .await,
        StoreError::NotFound
    );
    assert_err!(
        s.delete_message(mine.id(), gone.id(), no_events()).await,
        StoreError::NotFound
    );
    assert_err!(
        s.delete_conversation(c.id(), gone.id(), no_events()).await,
        StoreError::NotFound
    );

    // Nothing changed.
    let seen = s
        .message_for(owner.id(), mine.id())
        .await
        .expect("get")
        .expect("still there");
    assert_eq!(seen.text().as_str(), "mine");
    assert_eq!(seen.updated_at(), None);
    let theirs_now = s
        .message_for(owner.id(), theirs.id())
        .await
        .expect("get")
        .expect("still there");
    assert_eq!(theirs_now.reactions().len(), 1, "only the like from before");
    assert_eq!(
        all_messages(&s, &owner, Some(c.id())).await,
        vec![theirs.id(), mine.id()]
    );
    // A member still may.
    s.delete_message(theirs.id(), owner.id(), no_events())
        .await
        .expect("member deletes");
    s.delete_conversation(c.id(), owner.id(), no_events())
        .await
        .expect("member deletes");
}

confab_tests::on_both_stores!(
    crate::support::on_store;
    a_removed_member_changes_nothing_in_the_write_itself,
);
