//! The `https://…/NAME.wasm` source: the component, `NAME.toml` and `NAME.wasm.minisig` beside
//! it, each read with a size cap; and the plain-HTTP rule shared with the OCI client.
//!
//! Plain `http://` is allowed only to loopback hosts unless `insecure`; the check runs on
//! the URL before any connection, and again on every redirect hop (at most 5), so an
//! https server cannot bounce the download to plain HTTP elsewhere.

use futures::StreamExt;

use crate::error::clip;
use crate::source::is_loopback_host;
use crate::{DistError, FetchOptions, Fetched, Limits, sha256_digest, utf8};

/// Redirect hops followed at most.
const MAX_REDIRECTS: usize = 5;

/// Refuses a plain-HTTP URL to a non-loopback host unless `insecure`.
pub(crate) fn check_scheme(url: &url::Url, insecure: bool) -> Result<(), DistError> {
    let host = url.host_str().unwrap_or("");
    match url.scheme() {
        "https" => Ok(()),
        "http" if insecure || is_loopback_host(host) => Ok(()),
        "http" => Err(DistError::InsecureRefused {
            host: host.to_string(),
        }),
        other => Err(DistError::Http {
            url: clip(url.as_str()),
            reason: format!("unsupported scheme `{other}`"),
        }),
    }
}

/// An HTTP client with the limits' timeouts and the plain-HTTP rule on every redirect.
pub(crate) fn client(limits: &Limits, insecure: bool) -> Result<reqwest::Client, DistError> {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if let Err(e) = check_scheme(attempt.url(), insecure) {
            attempt.error(e.to_string())
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .connect_timeout(limits.connect_timeout)
        .read_timeout(limits.read_timeout)
        .redirect(policy)
        .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| DistError::Http {
            url: String::new(),
            reason: e.to_string(),
        })
}

/// Reads a response body, refusing it as soon as it passes `limit` bytes (and before reading
/// at all when `Content-Length` already says so).
pub(crate) async fn read_body(
    resp: reqwest::Response,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, DistError> {
    let too_large = || DistError::TooLarge {
        what: what.to_string(),
        limit,
    };
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let url = resp.url().to_string();
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| DistError::Http {
            url: clip(&url),
            reason: e.to_string(),
        })?;
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// GETs `url` with a size cap; `Ok(None)` on 404 when `optional`.
async fn get(
    client: &reqwest::Client,
    url: &url::Url,
    limit: u64,
    what: &str,
    optional: bool,
) -> Result<Option<Vec<u8>>, DistError> {
    let err = |reason: String| DistError::Http {
        url: clip(url.as_str()),
        reason,
    };
    tracing::debug!(%url, "GET");
    let resp = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| err(error_chain(&e)))?;
    let status = resp.status();
    if optional && status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(err(format!("{what}: server answered {status}")));
    }
    read_body(resp, limit, what).await.map(Some)
}

/// Fetches `…/NAME.wasm`, `…/NAME.toml`, `…/NAME.wasm.minisig` and
/// `…/NAME.wasm.statement`.
pub(crate) async fn fetch(url: &url::Url, opts: &FetchOptions) -> Result<Fetched, DistError> {
    check_scheme(url, opts.insecure)?;
    let limits = &opts.limits;
    let client = client(limits, opts.insecure)?;
    let file = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("")
        .to_string();
    let name = file.strip_suffix(".wasm").unwrap_or(&file).to_string();
    let sibling = |f: &str| {
        url.join(f).map_err(|e| DistError::InvalidSource {
            source_str: url.to_string(),
            reason: e.to_string(),
        })
    };
    let wasm = get(
        &client,
        url,
        limits.max_component_bytes,
        "the component",
        false,
    )
    .await?
    .unwrap_or_default();
    let request = get(
        &client,
        &sibling(&format!("{name}.toml"))?,
        limits.max_request_bytes,
        "the request file",
        true,
    )
    .await?
    .map(|b| utf8(b, "the request file", url.as_str()))
    .transpose()?;
    let signature = get(
        &client,
        &sibling(&format!("{file}.minisig"))?,
        limits.max_signature_bytes,
        "the signature",
        true,
    )
    .await?
    .map(|b| utf8(b, "the signature", url.as_str()))
    .transpose()?;
    let statement = get(
        &client,
        &sibling(&format!("{file}.statement"))?,
        limits.max_statement_bytes,
        "the package statement",
        true,
    )
    .await?
    .map(|b| utf8(b, "the package statement", url.as_str()))
    .transpose()?;
    Ok(Fetched {
        name,
        digest: sha256_digest(&wasm),
        wasm,
        request,
        signature,
        statement,
        source: url.to_string(),
    })
}

/// An error with its causes (reqwest hides the interesting part in `source()`).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    clip(&s)
}
