//! [`Watched`]: the HTTP client of a Streamable HTTP connection with OAuth, wrapped:
//!
//! - it keeps the `WWW-Authenticate` challenge of a 403 `insufficient_scope` answer during
//!   the session. rmcp ends the connection on such an answer and the calls in flight only
//!   learn that it closed; the kept challenge lets the call report which scope the server
//!   wants, and lets a person behind the call log in again with it (docs/mcp.md, "More
//!   scope during a session");
//! - for a machine client (the `client_credentials` grant, [`MachineAuth`]) it puts the
//!   current access token on every request, getting a new one before it expires and once
//!   more when the server answers 401.
//!
//! Everything else passes through unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::oauth::MachineAuth;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

/// The longest challenge kept, in bytes (a header value; the rest is cut).
const MAX_CHALLENGE: usize = 4096;

/// The last challenge of a 403 `insufficient_scope`, taken by whoever reports it.
pub(crate) type Denied = Arc<Mutex<Option<String>>>;

/// An HTTP client that notes 403 `insufficient_scope` challenges in `denied`, and sends
/// `machine`'s token when there is one.
#[derive(Clone)]
pub(super) struct Watched<C> {
    pub(super) inner: C,
    pub(super) denied: Denied,
    pub(super) machine: Option<Arc<MachineAuth>>,
}

impl<C> Watched<C> {
    /// Runs `call` with the auth header: `header` as given, or the machine client's
    /// token, with one new token and one retry when the server answers 401.
    async fn with_auth<T, E, F, Fut>(
        &self,
        header: Option<String>,
        call: F,
    ) -> Result<T, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<E>>>,
    {
        let Some(machine) = &self.machine else {
            return call(header).await;
        };
        let token = machine.token(false).await?;
        match call(Some(token)).await {
            Err(StreamableHttpError::AuthRequired(_)) => {
                let fresh = machine.token(true).await?;
                call(Some(fresh)).await
            }
            r => r,
        }
    }

    fn note<T, E: std::error::Error + Send + Sync + 'static>(
        &self,
        r: Result<T, StreamableHttpError<E>>,
    ) -> Result<T, StreamableHttpError<E>> {
        if let Err(StreamableHttpError::InsufficientScope(e)) = &r {
            let challenge =
                toolhost_core::tools::render::head(&e.www_authenticate_header, MAX_CHALLENGE)
                    .to_string();
            *self.denied.lock().unwrap_or_else(|p| p.into_inner()) = Some(challenge);
        }
        r
    }
}

impl<C> StreamableHttpClient for Watched<C>
where
    C: StreamableHttpClient + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let r = self
            .with_auth(auth_header, |h| {
                self.inner.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    h,
                    custom_headers.clone(),
                )
            })
            .await;
        self.note(r)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let r = self
            .with_auth(auth_header, |h| {
                self.inner.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    h,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.note(r)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let r = self
            .with_auth(auth_header, |h| {
                self.inner.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    h,
                    custom_headers.clone(),
                    limits,
                )
            })
            .await;
        self.note(r)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.with_auth(auth_header, |h| {
            self.inner
                .delete_session(uri.clone(), session_id.clone(), h, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<Self::Error>,
    > {
        let r = self
            .with_auth(auth_header, |h| {
                self.inner.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    h,
                    custom_headers.clone(),
                )
            })
            .await;
        self.note(r)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        StreamableHttpError<Self::Error>,
    > {
        let r = self
            .with_auth(auth_header, |h| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    h,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.note(r)
    }
}
