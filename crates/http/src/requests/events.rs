//! Requests of `/v1/events`.

use confab_domain::{EventId, PageLimit};

use super::{id, optional, reader, request, shape, Field};
use crate::params::{Malformed, Params};

request! {
    /// `GET /v1/events`: the stream, or (with `Accept: application/json`)
    /// the catch-up list.
    pub struct EventsIn {
        after: Option<EventId> = optional(id(Malformed::Invalid)),
        limit: Option<PageLimit> = optional(limit()),
        /// Authentication's (a browser's `EventSource` sends no header):
        /// read there, before routing; only the stream takes it.
        ticket: Option<String> = optional(ticket()),
    }
}

/// `ticket`: what `POST /v1/events/tickets` made.
fn ticket() -> impl Field<String> {
    reader(shape::ticket, true, |p: &mut Params, name: &'static str| {
        p.required_str(name)
    })
}

/// `limit`, 1 to 100, with the one message every list gives.
fn limit() -> impl Field<PageLimit> {
    reader(shape::limit, false, |p: &mut Params, name: &'static str| {
        let n = p.optional_int(name).unwrap_or(Some(0)).unwrap_or(0);
        PageLimit::new(n).map_err(|e| p.domain(e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(s: &str) -> Result<EventsIn, crate::error::ApiError> {
        Params::from_query(s).and_then(Params::into_request)
    }

    #[test]
    fn after_and_limit() {
        let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let r = query(&format!("after={id}&limit=100")).expect("ok");
        assert_eq!(r.after.map(|a| a.to_string()).as_deref(), Some(id));
        assert_eq!(r.limit.map(PageLimit::get), Some(100));
        let r = query("").expect("empty");
        assert!(r.after.is_none() && r.limit.is_none());
        for bad in ["limit=0", "limit=101", "limit=x", "limit="] {
            let e = query(bad).expect_err(bad);
            assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("limit")));
        }
        let e = query("after=nope").expect_err("malformed");
        assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("after")));
        let e = query("starting_after=x").expect_err("unknown");
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_unknown", Some("starting_after"))
        );
    }
}
