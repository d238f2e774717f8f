//! Search: a contact runs at most a few searches at once; one more is
//! refused before it reaches the store, and every slot comes back when its
//! search ends, however it ends.
use confab_domain::{Page, Paged, SearchQuery};
use confab_ports::{SearchFilter, StoreError};

use crate::search::SearchSlots;
use crate::ServiceError;

use super::*;

fn query() -> SearchQuery {
    SearchQuery::parse("needle").expect("query")
}

fn first_page() -> Page<MessageId> {
    Page {
        limit: confab_domain::PageLimit::default(),
        cursor: None,
    }
}

/// A store whose searches of one contact wait until the test lets them
/// answer (mockall runs the calls of one expectation one at a time, so it
/// cannot hold two searches at once): it counts who came in, and answers
/// `Unavailable` once let go; anyone else's search answers at once.
struct HeldStore {
    held: ContactId,
    inside: tokio::sync::Semaphore,
    release: tokio::sync::Semaphore,
    calls: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl confab_ports::SearchStore for HeldStore {
    async fn search_messages(
        &self,
        viewer: ContactId,
        _query: SearchQuery,
        _filter: SearchFilter,
        _page: Page<MessageId>,
    ) -> Result<Paged<Message>, StoreError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if viewer != self.held {
            return Ok(Paged {
                items: vec![],
                has_more: false,
            });
        }
        self.inside.add_permits(1);
        self.release.acquire().await.expect("open").forget();
        Err(StoreError::Unavailable("the test says so".into()))
    }
}

#[test]
fn slots_count_each_contact_apart_and_come_back_when_dropped() {
    let slots = Arc::new(SearchSlots::new(2));
    let (a, b) = (alice().id(), bob().id());
    let one = SearchSlots::take(&slots, a).expect("first");
    let two = SearchSlots::take(&slots, a).expect("second");
    assert!(SearchSlots::take(&slots, a).is_none(), "a third at once");
    // Another contact has slots of its own.
    let theirs = SearchSlots::take(&slots, b).expect("bob's");
    drop(one);
    assert_eq!(slots.running(a), 1);
    let three = SearchSlots::take(&slots, a).expect("one came back");
    drop((two, three, theirs));
    assert_eq!((slots.running(a), slots.running(b)), (0, 0));
    // At least one, whatever was asked.
    let none_asked = Arc::new(SearchSlots::new(0));
    assert!(SearchSlots::take(&none_asked, a).is_some());
}

/// Two searches of alice held inside the store: a third is refused with
/// the limit, without reaching the store; bob's runs meanwhile; once hers
/// end (with an error), she may search again.
#[tokio::test]
async fn a_contact_runs_at_most_its_searches_at_once() {
    let store = Arc::new(HeldStore {
        held: alice().id(),
        inside: tokio::sync::Semaphore::new(0),
        release: tokio::sync::Semaphore::new(0),
        calls: Default::default(),
    });
    let mut ports = mocked_ports(NOW);
    ports.search = store.clone();
    let service = Confab::new(ports).with_max_searches_per_contact(2);
    let search = |who: Contact| {
        let service = service.clone();
        async move {
            service
                .search_messages(&who, query(), SearchFilter::default(), first_page())
                .await
        }
    };

    let running = [tokio::spawn(search(alice())), tokio::spawn(search(alice()))];
    store
        .inside
        .acquire_many(2)
        .await
        .expect("both inside")
        .forget();
    let refused = search(alice()).await;
    assert!(
        matches!(refused, Err(ServiceError::TooManySearches { max: 2 })),
        "{refused:?}"
    );
    // Through another handle of the same service (a request's budget).
    let refused = service
        .within(confab_ports::DbBudget::new(std::time::Duration::from_secs(
            1,
        )))
        .search_messages(&alice(), query(), SearchFilter::default(), first_page())
        .await;
    assert!(matches!(refused, Err(ServiceError::TooManySearches { .. })));
    assert!(search(bob()).await.is_ok(), "bob's own slots");
    // The refused ones never reached the store.
    assert_eq!(store.calls.load(std::sync::atomic::Ordering::SeqCst), 3);

    store.release.add_permits(2);
    for ended in running {
        let ended = ended.await.expect("join");
        assert!(
            matches!(ended, Err(ServiceError::Unavailable(_))),
            "{ended:?}"
        );
    }
    // Both slots came back, errors and all.
    store.release.add_permits(1);
    let again = search(alice()).await;
    assert!(
        matches!(again, Err(ServiceError::Unavailable(_))),
        "{again:?}"
    );
}

#[test]
fn the_default_is_two_searches() {
    assert_eq!(crate::DEFAULT_SEARCHES_PER_CONTACT, 2);
    let service = Confab::new(mocked_ports(NOW));
    let slots = &service.searches;
    let a = alice().id();
    let _one = SearchSlots::take(slots, a).expect("one");
    let _two = SearchSlots::take(slots, a).expect("two");
    assert!(SearchSlots::take(slots, a).is_none());
}
