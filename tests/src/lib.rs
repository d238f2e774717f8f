//! Shared test support: fresh databases for each test (`db`) and the
//! black-box HTTP harness (`http`). The suites live in `tests/tests/`.

pub mod db;
pub mod http;
