//! A refused request's body is not read (docs/api.md "Hostile load").
//!
//! After an answer, actix reads on whatever is left of the request's body
//! so that the connection can serve the next request: a chunked body is
//! drained to its end however long it is (an unauthenticated client could
//! stream to a 401 for as long as it liked). It closes the connection
//! instead when the body's reader is still alive as the answer goes out.
//! So a refusal that leaves its body unread (401, 408, 413, 415, an
//! anonymous 429) keeps the body's reader in the answer itself: the
//! connection then closes after the answer (with a short lingering read,
//! `LINGER`, so that the answer is not lost to a reset).

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest};

/// How long the connection of a refused body still reads (and discards)
/// what the client sends after the answer, so that the client reads the
/// answer instead of a reset (actix's client disconnect timeout).
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(500);

/// An unread body's reader.
struct Held(#[allow(dead_code)] Payload);

/// Keeps `payload`, the reader of a body left unread by a refusal, until
/// [`keep_with_answer`] moves it into the answer.
pub fn hold(req: &HttpRequest, payload: Payload) {
    req.extensions_mut().insert(Held(payload));
}

/// An answer's body that also keeps the unread request body's reader
/// alive: actix decides whether to close the connection when the answer's
/// body ends, and closes it only while that reader lives.
pub struct Holding {
    body: BoxBody,
    _held: Held,
}

impl MessageBody for Holding {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// Moves a body reader [`hold`] kept with the request into its answer.
pub async fn keep_with_answer<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B, Holding>>, actix_web::Error> {
    let res = next.call(req).await?;
    let held = res.request().extensions_mut().remove::<Held>();
    Ok(match held {
        None => res.map_into_left_body(),
        Some(held) => res
            .map_body(|_, body| Holding {
                body: body.boxed(),
                _held: held,
            })
            .map_into_right_body(),
    })
}
