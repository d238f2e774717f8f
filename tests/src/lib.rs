//! Shared test support: fresh databases for each test (`db`), the
//! black-box HTTP harness (`http`) and `on_both_stores!`, which runs a
//! suite's tests on every store. The suites live in `tests/tests/`.

pub mod db;
pub mod http;

/// Generates `postgres::<name>` and `sqlite::<name>`, one `#[tokio::test]`
/// each, for every listed async test function.
///
/// The suite names its runner first: an `async fn(Backend, test)` that
/// builds what the tests take (a store, a server) on that backend and hands
/// it to `test`. Give it as an absolute path (`crate::support::on_store`),
/// since it is named from inside the generated modules.
///
/// ```text
/// confab_tests::on_both_stores!(
///     crate::support::on_store;
///     messages_append_and_get,
///     messages_paging_both_ways,
/// );
/// ```
#[macro_export]
macro_rules! on_both_stores {
    ($run:path; $($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@backend postgres, Postgres, $run; $($name),*);
        $crate::on_both_stores!(@backend sqlite, Sqlite, $run; $($name),*);
    };
    (@backend $module:ident, $backend:ident, $run:path; $($name:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    $run($crate::db::Backend::$backend, super::$name).await;
                }
            )*
        }
    };
}
