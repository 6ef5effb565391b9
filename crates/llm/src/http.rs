//! HTTP plumbing shared by the providers: sending with retry, reading answers with a
//! size bound, and error text helpers.

use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde::Serialize;

use crate::error::LlmError;
use crate::openai::RetryPolicy;

/// The most bytes a provider reads of one answer, blocking or streamed. An answer past it
/// is an error: a model server (untrusted, like the network) cannot make the host buffer
/// without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Sends the request, retrying transient failures; returns a success response.
pub(crate) async fn send_with_retry(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    body: &impl Serialize,
    retry: &RetryPolicy,
) -> Result<reqwest::Response, LlmError> {
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let result = client
            .post(url)
            .headers(headers.clone())
            .json(body)
            .send()
            .await;
        let retries_left = attempt <= retry.max_retries;
        match result {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let transient = status == 429 || status >= 500;
                let retry_after = resp
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let text = resp.text().await.unwrap_or_default();
                let err = LlmError::Http {
                    status,
                    body: excerpt(&text),
                    attempts: attempt,
                };
                if !transient || !retries_left {
                    return Err(err);
                }
                let wait = match retry_after {
                    Some(d) if d > retry.max_retry_after => return Err(err),
                    Some(d) => d,
                    None => retry.backoff(attempt - 1),
                };
                tracing::warn!(status, attempt, ?wait, "model server busy; retrying");
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                let err = LlmError::Transport {
                    url: url.to_string(),
                    message: error_chain(&e),
                };
                // Only failures before the server saw the request are safe to repeat.
                if !(e.is_connect() || e.is_timeout()) || !retries_left {
                    return Err(err);
                }
                let wait = retry.backoff(attempt - 1);
                tracing::warn!(error = %err, attempt, ?wait, "retrying");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Reads a whole body, failing past `limit` bytes.
pub(crate) async fn read_limited(
    mut resp: reqwest::Response,
    url: &str,
    limit: usize,
) -> Result<Vec<u8>, LlmError> {
    let mut out = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > limit {
                    return Err(too_long(limit));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(out),
            Err(e) => {
                return Err(LlmError::Transport {
                    url: url.to_string(),
                    message: error_chain(&e),
                });
            }
        }
    }
}

/// The body as a byte stream that fails once more than `limit` bytes arrived.
pub(crate) fn stream_limited(
    resp: reqwest::Response,
    limit: usize,
) -> impl Stream<Item = Result<impl AsRef<[u8]>, LimitError>> + Send + Unpin {
    let mut seen = 0usize;
    resp.bytes_stream().map(move |r| match r {
        Ok(b) => {
            seen += b.len();
            if seen > limit {
                Err(LimitError::TooLong(limit))
            } else {
                Ok(b)
            }
        }
        Err(e) => Err(LimitError::Transport(error_chain(&e))),
    })
}

/// Why a limited stream failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimitError {
    /// The answer passed the limit.
    #[error("the answer passed {0} bytes")]
    TooLong(usize),
    /// The connection failed.
    #[error("{0}")]
    Transport(String),
}

/// The error for a broken event stream: a stream past its bound is an incomplete answer
/// (saying so), anything else a transport failure.
pub(crate) fn stream_error(
    url: &str,
    e: eventsource_stream::EventStreamError<LimitError>,
) -> LlmError {
    match e {
        eventsource_stream::EventStreamError::Transport(LimitError::TooLong(limit)) => {
            too_long(limit)
        }
        other => LlmError::Transport {
            url: url.to_string(),
            message: format!("the event stream broke: {other}"),
        },
    }
}

fn too_long(limit: usize) -> LlmError {
    LlmError::Incomplete(format!(
        "the answer passed {limit} bytes, the most a provider reads; it was cut off"
    ))
}

/// At most 500 bytes of a body, cut on a character boundary.
pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 500;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// An error and its sources, joined by `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}
