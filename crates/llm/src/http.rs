//! HTTP plumbing shared by the providers: the [`Endpoint`] each one is built on (its
//! client, URL, headers with the key, and [`RetryPolicy`]), sending with retry, reading
//! answers with a size bound, and error text helpers.

use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde::Serialize;

use crate::error::LlmError;

/// How failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry). Default 3.
    pub max_retries: u32,
    /// The first backoff; it doubles on each retry. Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest backoff. Default 8 s.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one fails at once. Default 60 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(16));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// What every HTTP chat provider is built on: the client, the full URL of its API, the
/// headers sent with every request (the API key among them, marked sensitive so it never
/// shows in a `Debug`), and the retry policy. The providers differ in the URL's path, the
/// key's header and the body; the rest is this.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) client: reqwest::Client,
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) retry: RetryPolicy,
}

impl Endpoint {
    /// An endpoint at `base_url` (trimmed, without a trailing `/`, http or https only),
    /// whose full URL `url_of` makes from the base; `example` shows a good base URL in
    /// the error.
    pub(crate) fn new(
        base_url: &str,
        example: &str,
        url_of: impl FnOnce(&str) -> String,
    ) -> Result<Self, LlmError> {
        let base = base_url.trim().trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "the base URL must start with http:// or https:// (got {base:?}); \
                 for example {example}"
            )));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            url: url_of(base),
            headers: HeaderMap::new(),
            retry: RetryPolicy::default(),
        })
    }

    /// Sends `value` as the key in `header`, marked sensitive.
    pub(crate) fn set_key(&mut self, header: HeaderName, value: &str) -> Result<(), LlmError> {
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            LlmError::Config("the API key has characters a header cannot carry".into())
        })?;
        v.set_sensitive(true);
        self.headers.insert(header, v);
        Ok(())
    }

    /// The key from environment variable `var` (trimmed; unset or empty: no key, and any
    /// key set before is dropped), as `header: value_of(key)`.
    pub(crate) fn key_from_env(
        &mut self,
        header: HeaderName,
        var: &str,
        value_of: fn(&str) -> String,
    ) -> Result<(), LlmError> {
        self.headers.remove(&header);
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => self.set_key(header, &value_of(key.trim())),
            _ => Ok(()),
        }
    }

    /// Adds a header to every request.
    pub(crate) fn add_header(&mut self, name: &str, value: &str) -> Result<(), LlmError> {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| LlmError::Config(format!("{name:?} is not a valid header name")))?;
        let v = HeaderValue::from_str(value)
            .map_err(|_| LlmError::Config(format!("the value of header {name} is not valid")))?;
        self.headers.insert(n, v);
        Ok(())
    }

    /// Posts `body`, retrying transient failures; returns a success response.
    pub(crate) async fn send(&self, body: &impl Serialize) -> Result<reqwest::Response, LlmError> {
        send_with_retry(&self.client, &self.url, &self.headers, body, &self.retry).await
    }
}

/// The most bytes a provider reads of one answer, blocking or streamed. An answer past it
/// is an error: a model server (untrusted, like the network) cannot make the host buffer
/// without bound.
pub(crate) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Sends the request, retrying transient failures; returns a success response.
async fn send_with_retry(
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
    let head = toolhost_core::tools::render::head(s, MAX);
    if head.len() == s.len() {
        return s.to_string();
    }
    format!("{head}...")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let r = RetryPolicy::default();
        assert_eq!(r.backoff(0), Duration::from_millis(500));
        assert_eq!(r.backoff(1), Duration::from_secs(1));
        assert_eq!(r.backoff(10), Duration::from_secs(8));
    }
}
