//! `fetch`: HTTP GET through wasi:http. The host checks every request against the
//! `network` allowlist of `fetch.toml` (scheme, host and port), and only because
//! `http_get` declares Network.

use serde::Serialize;
use toolhost_sdk::{ToolError, tool};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The response.
#[derive(Serialize)]
struct Response {
    status: u16,
    body: String,
    truncated: bool,
}

fn split_url(url: &str) -> Result<(Scheme, String, String), ToolError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| ToolError::invalid("url must be absolute: scheme://host/path"))?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(ToolError::invalid(format!("unsupported scheme {other:?}"))),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path
    };
    Ok((scheme, authority.to_string(), path))
}

fn http_error(e: ErrorCode) -> ToolError {
    match e {
        ErrorCode::HttpRequestDenied => ToolError::denied("the host denied this request"),
        other => ToolError::failed(format!("request failed: {other:?}")),
    }
}

/// GETs `url`, keeping at most `max` bytes of the body.
pub fn get(url: &str, max: u64) -> Result<(u16, Vec<u8>, bool), ToolError> {
    let (scheme, authority, path) = split_url(url)?;
    let req = OutgoingRequest::new(Fields::new());
    let bad = |_| ToolError::invalid(format!("bad url {url:?}"));
    req.set_method(&Method::Get).map_err(bad)?;
    req.set_scheme(Some(&scheme)).map_err(bad)?;
    req.set_authority(Some(&authority)).map_err(bad)?;
    req.set_path_with_query(Some(&path)).map_err(bad)?;
    let pending = outgoing_handler::handle(req, None).map_err(http_error)?;
    pending.subscribe().block();
    let resp = match pending.get() {
        Some(Ok(Ok(r))) => r,
        Some(Ok(Err(e))) => return Err(http_error(e)),
        _ => return Err(ToolError::failed("no response")),
    };
    let status = resp.status();
    let body = resp.consume().map_err(|_| ToolError::failed("no body"))?;
    let stream = body
        .stream()
        .map_err(|_| ToolError::failed("no body stream"))?;
    let mut buf = Vec::new();
    let mut truncated = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                let room = max.saturating_sub(buf.len() as u64) as usize;
                if chunk.len() > room {
                    buf.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                buf.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => break,
            Err(e) => return Err(ToolError::failed(format!("reading the body: {e:?}"))),
        }
    }
    Ok((status, buf, truncated))
}

/// Fetches a URL with HTTP GET and returns status and body text
#[tool(permissions = [network])]
fn http_get(
    /// An absolute http:// or https:// URL.
    url: String,
    /// Keep at most this many bytes of the body (default 65536).
    max_bytes: Option<u64>,
) -> Result<Response, ToolError> {
    let (status, body, truncated) = get(&url, max_bytes.unwrap_or(65536))?;
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
        truncated,
    })
}

toolhost_sdk::export!([http_get]);
