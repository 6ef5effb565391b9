//! A graceful stop of `serve --http`: the requests in flight when the server is asked to
//! stop finish and their answers are sent before the sessions end.
//!
//! A `tools/call` answered as an event stream runs while its response body streams, so a
//! request counts as in flight from its arrival until its body is done (or dropped).
//! On stop the listener stops accepting; [`InFlight::idle`] resolves once no request is
//! in flight; then the sessions are cancelled, which also ends the long-lived `GET`
//! streams that would otherwise hold their connections open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// The requests in flight (POSTs: a GET stream is no call).
#[derive(Debug, Default)]
pub(super) struct InFlight {
    count: AtomicUsize,
}

/// One request in flight; it ends when dropped.
struct Entered(Arc<InFlight>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> Entered {
        self.count.fetch_add(1, Ordering::AcqRel);
        Entered(self.clone())
    }

    /// Resolves when no request is in flight (checked every 20 ms: a stop is rare and a
    /// poll needs no wake-up on every request's end).
    pub(super) async fn idle(&self) {
        while self.count.load(Ordering::Acquire) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Middleware: counts each POST as in flight until its response body is done.
pub(super) async fn track(
    State(in_flight): State<Arc<InFlight>>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() != http::Method::POST {
        return next.run(req).await;
    }
    let entered = in_flight.enter();
    let response = next.run(req).await;
    let streaming = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streaming {
        // A JSON answer was complete when it was returned.
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        // Held by the stream: dropped when the body ends or is dropped.
        let _ = &entered;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
