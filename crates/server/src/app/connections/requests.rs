//! The gate's request side: each request head, body and answer counted
//! against its address's share as actix serves it (a middleware wrapping
//! the body), and the refusals when a share is spent.

use super::*;

/// Whether a request brings a credential the reserve is kept for: a
/// bearer token, or an event stream's ticket.
fn carries_credential(req: &ServiceRequest) -> bool {
    req.headers().contains_key(header::AUTHORIZATION)
        || (req.path() == "/v1/events" && req.query_string().contains("ticket="))
}

fn is_health(req: &ServiceRequest) -> bool {
    matches!(req.path(), "/healthz" | "/readyz")
}

/// Whether the request has a body still to come.
fn has_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
}

/// Answers `error` and closes the connection, the body unread.
fn refuse<B>(
    req: ServiceRequest,
    error: ApiError,
) -> ServiceResponse<EitherBody<Watched<B>, BoxBody>> {
    let (req, payload) = req.into_parts();
    confab_http::unread_body::hold(&req, payload);
    let mut res = HttpResponse::from_error(error);
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res.head_mut().set_connection_type(ConnectionType::Close);
    ServiceResponse::new(req, res).map_into_right_body()
}

/// The gate's middleware: fast refusals for connections past the budget
/// or the address's share and for requests without a credential within
/// the reserve; each request's head and body and answer told to the gate.
pub(crate) async fn keep_shares<B: MessageBody + 'static>(
    mut req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<Watched<B>, BoxBody>>, actix_web::Error> {
    if let Some(Refused(refusal)) = req.conn_data::<Refused>() {
        // A request read before the shut took effect.
        let refusal = refusal.clone();
        return Ok(refuse(req, refusal));
    }
    let Some((gate, id, over, reserve_only)) = req
        .conn_data::<ConnectionTicket>()
        .map(|t| (t.gate.clone(), t.id, t.over, t.reserve_only))
    else {
        let res = next.call(req).await?;
        return Ok(res
            .map_body(|_, body| Watched { body, done: None })
            .map_into_left_body());
    };
    gate.head_arrived(id);
    if over && !is_health(&req) {
        return Ok(refuse(req, ApiError::over_capacity()));
    }
    if reserve_only && !is_health(&req) && !carries_credential(&req) {
        return Ok(refuse(req, ApiError::over_capacity()));
    }
    if has_body(&req) {
        let client = confab_http::auth::client_ip(req.request());
        if let Some(client) = client {
            match gate.body_started(client) {
                Some(place) => {
                    let payload = req.take_payload();
                    req.set_payload(Payload::Stream {
                        payload: Box::pin(CountedBody {
                            body: payload,
                            place: Some(place),
                        }),
                    });
                }
                None => {
                    let max = gate.limits.pending_per_address;
                    return Ok(refuse(
                        req,
                        ApiError::too_many_connections(
                            "connections or requests still sending a request",
                            max,
                        ),
                    ));
                }
            }
        }
    }
    let mut res = next.call(req).await?;
    if reserve_only && res.status() == StatusCode::UNAUTHORIZED {
        // A bad credential does not keep a place of the reserve.
        res.response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    // A connection that closes after this answer waits for no other head.
    let kept = res.request().head().connection_type() == ConnectionType::KeepAlive
        && res.response().head().keep_alive();
    Ok(res
        .map_body(|_, body| Watched {
            body,
            done: kept.then_some(Answered { gate, id }),
        })
        .map_into_left_body())
}

/// Tells the gate that the answer on a connection is out when dropped
/// (its body sent whole, or the connection gone).
struct Answered {
    gate: Arc<Gate>,
    id: u64,
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.gate.answered(self.id);
    }
}

/// An answer's body, telling the gate when it is done.
pub(crate) struct Watched<B> {
    body: B,
    done: Option<Answered>,
}

impl<B: MessageBody + Unpin> MessageBody for Watched<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_next(cx);
        if let Poll::Ready(None) = polled {
            this.done.take();
        }
        polled
    }
}

/// A body's place among its address's pending requests.
pub(super) struct BodyInFlight {
    pub(super) gate: Arc<Gate>,
    pub(super) address: IpAddr,
}

impl Drop for BodyInFlight {
    fn drop(&mut self) {
        self.gate.body_ended(self.address);
    }
}

/// A request body holding its place until it ends (or is dropped).
struct CountedBody {
    body: Payload,
    place: Option<BodyInFlight>,
}

impl Stream for CountedBody {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_next(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.place.take();
        }
        polled
    }
}
