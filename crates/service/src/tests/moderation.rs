//! Blocks and reports: what is refused before anything is written.

use confab_domain::{
    DomainError, Field, NewReport, ReportDescription, ReportReason, ReportTarget, Rule,
};

use crate::ServiceError;

use super::*;

fn report(target: ReportTarget) -> NewReport {
    NewReport {
        reporter: alice().id(),
        target,
        reason: ReportReason::Spam,
        description: ReportDescription::default(),
    }
}

#[tokio::test]
async fn nobody_reports_themself_their_own_message_or_what_they_cannot_see() {
    // No expectation on file_report: reaching it fails the test.
    let m = Mocks::new();
    assert!(matches!(
        m.service()
            .file_report(&alice(), report(ReportTarget::Contact(alice().id())), None)
            .await,
        Err(ServiceError::Invalid {
            field: Field::ReportedContact,
            rule: Rule::IsSelf
        })
    ));
    let mut m = Mocks::new();
    visible_message(&mut m, alice(), &alice());
    assert!(matches!(
        m.service()
            .file_report(&alice(), report(ReportTarget::Message(msg_id())), None)
            .await,
        Err(ServiceError::Invalid {
            field: Field::ReportedMessage,
            rule: Rule::OwnMessage
        })
    ));
    let mut m = Mocks::new();
    m.messages.expect_message_for().returning(|_, _| Ok(None));
    assert!(matches!(
        m.service()
            .file_report(&alice(), report(ReportTarget::Message(msg_id())), None)
            .await,
        Err(ServiceError::NotFound {
            of: Some(Field::ReportedMessage)
        })
    ));
    let mut m = Mocks::new();
    m.contacts.expect_contact().returning(|_| Ok(None));
    assert!(matches!(
        m.service()
            .file_report(&alice(), report(ReportTarget::Contact(bob().id())), None)
            .await,
        Err(ServiceError::NotFound {
            of: Some(Field::ReportedContact)
        })
    ));
}

#[tokio::test]
async fn a_message_report_names_its_sender_and_goes_to_the_operator_alone() {
    let mut m = Mocks::new();
    visible_message(&mut m, bob(), &alice());
    m.moderation
        .expect_file_report()
        .withf(|r, per_hour, outbox, _| {
            *per_hour == Some(confab_domain::DEFAULT_REPORTS_PER_HOUR)
                && r.message_id == Some(msg_id())
                && r.contact_id == bob().id()
                && r.reporter == alice().id()
                && matches!(outbox.events.as_slice(), [e]
                    if e.audience == confab_domain::Audience::Operator
                        && e.kind == confab_domain::EventType::ReportCreated)
        })
        .times(1)
        .returning(|r, _, _, _| {
            Ok(Some(confab_ports::Made {
                item: r,
                created: true,
            }))
        });
    let made = m
        .service()
        .file_report(&alice(), report(ReportTarget::Message(msg_id())), None)
        .await
        .expect("filed");
    assert!(made.created);
}

#[tokio::test]
async fn nobody_blocks_themself() {
    let m = Mocks::new();
    assert!(matches!(
        m.service().block(&alice(), alice().id(), None).await,
        Err(ServiceError::Invalid {
            field: Field::BlockedContact,
            rule: Rule::IsSelf
        })
    ));
    // The domain's words for a block, whoever made it.
    assert_eq!(
        DomainError::Blocked {
            field: None,
            by_actor: true
        }
        .to_string(),
        "you blocked this contact; unblock them first"
    );
}

#[tokio::test]
async fn a_report_past_the_hours_limit_is_refused_until_the_next_hour() {
    let mut m = Mocks::new();
    visible_message(&mut m, bob(), &alice());
    m.moderation
        .expect_file_report()
        .withf(|_, per_hour, _, _| *per_hour == Some(5))
        .times(1)
        .returning(|_, _, _, _| Ok(None));
    let mut signal = MockEventSignal::new();
    signal.expect_committed().never();
    m.signal = Some(signal);
    match m
        .service()
        .with_report_quota(5)
        .file_report(&alice(), report(ReportTarget::Message(msg_id())), None)
        .await
    {
        Err(ServiceError::ReportQuota {
            max: 5,
            retry_after_secs,
        }) => {
            // NOW is 1_700_000_000: 2,400 s into its hour.
            assert_eq!(retry_after_secs, 3_600 - (NOW % 3_600) as u64);
        }
        other => panic!("expected the report quota, got {other:?}"),
    }
}

#[tokio::test]
async fn no_limit_is_no_limit() {
    let mut m = Mocks::new();
    visible_message(&mut m, bob(), &alice());
    m.moderation
        .expect_file_report()
        .withf(|_, per_hour, _, _| per_hour.is_none())
        .times(1)
        .returning(|r, _, _, _| {
            Ok(Some(confab_ports::Made {
                item: r,
                created: true,
            }))
        });
    m.service()
        .with_report_quota(0)
        .file_report(&alice(), report(ReportTarget::Message(msg_id())), None)
        .await
        .expect("filed");
}
