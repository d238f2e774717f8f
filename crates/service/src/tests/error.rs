//! Store errors as the service reports them.
use confab_domain::{DomainError, Field, Rule};
use confab_ports::StoreError;

use crate::ServiceError;

#[tokio::test]
async fn store_rule_errors_surface_as_invalid() {
    let e: ServiceError = StoreError::Rule(DomainError::breaks(
        Field::Reactions,
        Rule::TooManyReactionNames { max: 32 },
    ))
    .into();
    assert!(matches!(
        e,
        ServiceError::Invalid {
            field: Field::Reactions,
            rule: Rule::TooManyReactionNames { max: 32 }
        }
    ));
    let e: ServiceError = StoreError::Unavailable("down".into()).into();
    assert!(matches!(e, ServiceError::Unavailable(_)));
}

/// Every message down the chain of `source()`s, the error's own excluded.
fn causes(e: &dyn std::error::Error) -> Vec<String> {
    std::iter::successors(e.source(), |&e| e.source())
        .map(ToString::to_string)
        .collect()
}

#[tokio::test]
async fn store_failures_keep_their_cause() {
    let e: ServiceError = StoreError::Unavailable("connection refused".into()).into();
    assert!(matches!(e, ServiceError::Unavailable(_)));
    assert!(causes(&e).iter().any(|c| c.contains("connection refused")));
    let e: ServiceError = StoreError::Other("disk full".into()).into();
    assert!(matches!(e, ServiceError::Internal { .. }));
    assert!(causes(&e).iter().any(|c| c.contains("disk full")));
    assert!(!e.to_string().contains("disk full"));
}
