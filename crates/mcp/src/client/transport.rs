//! How a server is reached and spoken to: [`McpTransport`] (a stdio child process,
//! sandboxed or not, or Streamable HTTP) and [`McpProtocol`] (the revision), with what
//! the opening of a connection (`client/open.rs`) needs to tell a refusal: an HTTP
//! server's 401 or 403 (at the handshake or on any later request) becomes
//! [`McpClientError::Unauthorized`](crate::McpClientError::Unauthorized) with what to do: `toolhost mcp login NAME` when the
//! server's challenge points at OAuth metadata or its well-known paths publish some
//! (docs/mcp.md, "Servers that need a token"), the config keys of a static token otherwise; a server
//! with a stored OAuth login (crate::oauth) gets its access token, refreshed as needed.

use std::time::Duration;

use serde::Deserialize;

use crate::sandbox::McpSandbox;

/// How long a child may take to exit after it was told to.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How to reach an MCP server. Its `Debug` hides the values of HTTP headers (they carry
/// credentials such as the bearer token) and of the child's environment, and the
/// credentials of the URL (user-info, secret query parameters).
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// Start a child process and talk JSON-RPC over its stdin/stdout.
    Stdio {
        /// The program (looked up in the host's `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The child's whole environment: it starts empty and gets exactly these variables.
        env: Vec<(String, String)>,
    },
    /// Like [`McpTransport::Stdio`], but the child runs inside `sandbox` (see
    /// [`crate::sandbox`]); when the sandbox cannot be enforced here, the server is not
    /// started and connecting fails with [`McpClientError::Sandbox`](crate::McpClientError::Sandbox).
    SandboxedStdio {
        /// The program (looked up in the host's `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The child's whole environment: it starts empty and gets exactly these variables.
        env: Vec<(String, String)>,
        /// What the child may read, write and reach.
        sandbox: McpSandbox,
    },
    /// Streamable HTTP (MCP 2025-03-26 and later): one endpoint, JSON or SSE replies.
    StreamableHttp {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers sent with every request (`Authorization: Bearer ...` included).
        headers: Option<Vec<(String, String)>>,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs
                .iter()
                .map(|(k, _)| format!("{k}=[redacted]"))
                .collect()
        };
        match self {
            McpTransport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            McpTransport::SandboxedStdio {
                command,
                args,
                env,
                sandbox,
            } => f
                .debug_struct("SandboxedStdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .field("sandbox", sandbox)
                .finish(),
            McpTransport::StreamableHttp { url, headers } => f
                .debug_struct("StreamableHttp")
                .field("url", &toolhost_core::tools::redact::scrub_urls(url))
                .field("headers", &headers.as_deref().map(names))
                .finish(),
        }
    }
}

impl McpTransport {
    /// A stdio transport with no environment variables.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// A Streamable HTTP transport with no extra headers.
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::StreamableHttp {
            url: url.into(),
            headers: None,
        }
    }
}

/// The HTTP status (401 or 403) and `WWW-Authenticate` challenge (when sent) of a
/// handshake the server refused for want of authorization; `None` for other failures.
pub(super) fn http_auth_failure(
    e: &rmcp::service::ClientInitializeError,
) -> Option<(u16, Option<String>)> {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, .. } => auth_failure_in(error.error.as_ref()),
        E::LegacyFallbackFailed { fallback, .. } => http_auth_failure(fallback),
        _ => None,
    }
}

/// The same for a request after the handshake (`tools/list`, `tools/call`, ...).
pub(super) fn request_auth_failure(
    e: &rmcp::service::ServiceError,
) -> Option<(u16, Option<String>)> {
    match e {
        rmcp::service::ServiceError::TransportSend(error) => auth_failure_in(error.error.as_ref()),
        _ => None,
    }
}

/// The HTTP status (401 or 403) and challenge of an auth refusal somewhere in the chain of
/// a transport error.
fn auth_failure_in(
    error: &(dyn std::error::Error + Send + Sync + 'static),
) -> Option<(u16, Option<String>)> {
    use rmcp::transport::streamable_http_client::{
        AuthRequiredError, InsufficientScopeError, StreamableHttpError,
    };
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = next {
        if let Some(a) = current.downcast_ref::<AuthRequiredError>() {
            return Some((401, Some(a.www_authenticate_header.clone())));
        }
        if let Some(a) = current.downcast_ref::<InsufficientScopeError>() {
            return Some((403, Some(a.www_authenticate_header.clone())));
        }
        // A 401/403 without a challenge: rmcp keeps only "HTTP <status>: <body>".
        if let Some(StreamableHttpError::UnexpectedServerResponse(text)) =
            current.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            for status in [401u16, 403] {
                if text.starts_with(&format!("HTTP {status} ")) {
                    return Some((status, None));
                }
            }
        }
        next = current.source();
    }
    None
}

/// Whether a `WWW-Authenticate` challenge points at OAuth metadata (`resource_metadata`,
/// as MCP authorization servers send it).
pub(super) fn names_metadata(challenge: &str) -> bool {
    challenge.to_ascii_lowercase().contains("resource_metadata")
}

/// The longest part of a server's `WWW-Authenticate` value shown in an error.
const MAX_CHALLENGE_SHOWN: usize = 200;

/// What to do about a 401/403 from `server`: the config keys to set, or, when `oauth`
/// (the server's challenge points at OAuth metadata, or its well-known paths publish some),
/// `toolhost mcp login`; with the challenge itself escaped and shortened.
pub(super) fn unauthorized_hint(
    server: &str,
    status: u16,
    challenge: Option<&str>,
    how: Credential,
    oauth: bool,
) -> String {
    let sent_token = how == Credential::Bearer;
    let mut hint = if how == Credential::OAuth && status == 401 {
        format!(
            "the stored OAuth login was refused or has expired and could not be refreshed; \
             run `toolhost mcp login {server}` again"
        )
    } else if oauth && status == 401 && !sent_token {
        format!(
            "the server asks for OAuth 2.1 authorization and no login is stored for it; run \
             `toolhost mcp login {server}` (or, if the server also accepts a static token, \
             set `bearer_token_env = \"VAR\"` or `bearer_token_file` in [mcp.servers.{server}])"
        )
    } else if status == 403 && how == Credential::OAuth {
        format!(
            "the server asks for more scope than the stored login has; run `toolhost mcp \
             login {server}` with `--scope` for each scope it names (or, for `toolhost call`, \
             let it log in when asked: on a terminal, or with `--login`)"
        )
    } else if status == 403 {
        format!(
            "the credential was accepted but is not allowed to do this (scope or role); use \
             a token with more rights in [mcp.servers.{server}]"
        )
    } else if sent_token && oauth {
        format!(
            "the bearer token was refused; check the token of `bearer_token_env`, \
             `bearer_token_file` or the `Authorization` header in [mcp.servers.{server}], \
             or, as the server also offers OAuth 2.1, remove it and run `toolhost mcp login \
             {server}`"
        )
    } else if sent_token {
        format!(
            "the bearer token was refused; check the token of `bearer_token_env`, \
             `bearer_token_file` or the `Authorization` header in [mcp.servers.{server}]"
        )
    } else {
        format!(
            "the server requires authentication; set `bearer_token_env = \"VAR\"` (the \
             variable holding the token) or `bearer_token_file = \"PATH\"` in \
             [mcp.servers.{server}], or send the credential with `headers`"
        )
    };
    if let Some(c) = challenge {
        let mut shown: String = c
            .chars()
            .take(MAX_CHALLENGE_SHOWN)
            .flat_map(char::escape_default)
            .collect();
        if c.chars().count() > MAX_CHALLENGE_SHOWN {
            shown.push_str("...");
        }
        hint.push_str(&format!(" (WWW-Authenticate: \"{shown}\")"));
    }
    hint
}

/// Which credential the handshake sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Credential {
    None,
    /// A configured `Authorization` header (`bearer_token_env`, `bearer_token_file`, ...).
    Bearer,
    /// The access token of a stored OAuth login.
    OAuth,
}

/// Kills a child process and waits (a little) for it to go.
pub(super) async fn kill_child(child: &tokio::sync::Mutex<tokio::process::Child>) {
    let mut child = child.lock().await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
}

/// Which revision toolhost speaks to the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum McpProtocol {
    /// 2025-11-25 and older: the `initialize` handshake and a session. The default (see
    /// docs/mcp.md on why `auto` is not).
    #[default]
    #[serde(rename = "2025-11-25")]
    Initialize,
    /// 2026-07-28: `server/discover`, then stateless requests carrying their version,
    /// client info and capabilities in `_meta`, `Mcp-Method`/`Mcp-Name` headers, and
    /// `input_required` rounds answered as the server's requests are today.
    #[serde(rename = "2026-07-28")]
    Discover,
    /// 2026-07-28 when the server offers it (`server/discover` answered), else 2025-11-25.
    /// A server whose 2026-07-28 start fails, or that does not offer it, is spoken to in
    /// 2025-11-25 from then on without asking again (client/open.rs).
    #[serde(rename = "auto")]
    Auto,
}
