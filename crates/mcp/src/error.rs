//! [`McpClientError`] and [`McpServeError`]: the error enums at this crate's boundaries.
//!
//! The client's public methods return [`McpClientError`], so callers can tell what went
//! wrong. Only where an MCP tool runs in the registry (the [`McpTool`](crate::McpTool)
//! adapter) does it become a [`ToolError`](toolhost_core::tools::ToolError): `McpTimeout`
//! for timeouts, `McpNotInitialized` before `connect`, `Cancelled`, `InvalidArguments` and
//! `ExecutionFailed` for what the tool call itself reported, `McpError` otherwise.
//!
//! rmcp's own errors are put into words here ([`service_error_text`],
//! [`init_error_text`]): their `Display` names the transport by its Rust type
//! (`Transport [rmcp::transport::worker::WorkerTransport<...>] error: ...`), which means
//! nothing to a user, so only the cause is kept.

use std::time::Duration;

use thiserror::Error;
use toolhost_core::tools::ToolError;

/// What went wrong talking to an MCP server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server process could not be started.
    #[error("MCP server '{server}': cannot start `{command}`: {source}")]
    Spawn {
        /// The configured server name.
        server: String,
        /// The command line.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The `initialize` handshake failed.
    #[error("MCP server '{server}': handshake failed: {message}")]
    Handshake {
        /// The configured server name.
        server: String,
        /// What happened (including the server's last stderr lines, when known).
        message: String,
    },
    /// The connection closed (the server exited, crashed, or broke the framing).
    #[error("MCP server '{server}' closed the connection: {message}")]
    Closed {
        /// The configured server name.
        server: String,
        /// Why, as far as it is known.
        message: String,
    },
    /// A request got no answer in time; `notifications/cancelled` was sent.
    #[error(
        "MCP server '{server}' did not answer {what} within {ms} ms; the request was cancelled",
        ms = timeout.as_millis()
    )]
    Timeout {
        /// The configured server name.
        server: String,
        /// The request (`tools/call get-sum`, `initialize`, ...).
        what: String,
        /// The time budget.
        timeout: Duration,
    },
    /// The server answered with a JSON-RPC error or an unexpected message.
    #[error("MCP server '{server}' rejected {what}: {message}")]
    Protocol {
        /// The configured server name.
        server: String,
        /// The request.
        what: String,
        /// The server's error.
        message: String,
    },
    /// The client was used before `connect()` (or after `close()`).
    #[error("MCP server '{0}': not connected; call connect() first")]
    NotConnected(String),
    /// The server is down and the reconnect back-off has not elapsed yet.
    #[error("MCP server '{server}' is down ({message}); next reconnect attempt in {ms} ms", ms = retry_in.as_millis())]
    BackingOff {
        /// The configured server name.
        server: String,
        /// The last failure.
        message: String,
        /// Time until the next attempt.
        retry_in: Duration,
    },
    /// The caller cancelled the call; `notifications/cancelled` was sent.
    #[error("MCP server '{server}': the call of '{tool}' was cancelled")]
    Cancelled {
        /// The configured server name.
        server: String,
        /// The server's name of the tool.
        tool: String,
    },
    /// The arguments cannot be sent (MCP arguments are a JSON object).
    #[error("invalid arguments for MCP tool '{tool}': {message}")]
    InvalidArguments {
        /// The server's name of the tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
    /// The tool ran and reported an error (`isError: true`).
    #[error("MCP tool '{tool}' of server '{server}' failed: {message}")]
    ToolFailed {
        /// The configured server name.
        server: String,
        /// The server's name of the tool.
        tool: String,
        /// The tool's message.
        message: String,
    },
    /// The server declares a sandbox that cannot be set up (bad path, unsupported kernel
    /// or OS); it was not started.
    #[error("MCP server '{server}': {source}")]
    Sandbox {
        /// The configured server name.
        server: String,
        /// What is wrong.
        source: crate::sandbox::McpSandboxError,
    },
    /// The HTTP server refused us: 401 (no or a wrong credential) or 403 (not allowed).
    #[error("MCP server '{server}' answered HTTP {status}: {hint}")]
    Unauthorized {
        /// The configured server name.
        server: String,
        /// The HTTP status (401 or 403).
        status: u16,
        /// What to do, with the server's `WWW-Authenticate` challenge (escaped and
        /// shortened: the server is not trusted) when it sent one.
        hint: String,
        /// The challenge as the server sent it (at most 4 KiB), for a caller that acts
        /// on it (a new login with more scope); not for showing.
        challenge: Option<String>,
    },
    /// The transport configuration is invalid (bad URL, bad header).
    #[error("MCP server '{server}': invalid configuration: {message}")]
    Config {
        /// The configured server name.
        server: String,
        /// What is wrong.
        message: String,
    },
}

impl From<McpClientError> for ToolError {
    fn from(e: McpClientError) -> Self {
        match e {
            McpClientError::Timeout { .. } => ToolError::McpTimeout(e.to_string()),
            McpClientError::NotConnected(_) => ToolError::McpNotInitialized(e.to_string()),
            McpClientError::Cancelled { tool, .. } => ToolError::Cancelled(tool),
            McpClientError::InvalidArguments { tool, message } => {
                ToolError::InvalidArguments(tool, message)
            }
            McpClientError::ToolFailed { tool, message, .. } => {
                ToolError::ExecutionFailed(tool, message)
            }
            other => ToolError::McpError(other.to_string()),
        }
    }
}

/// What a failed rmcp request says, in words for a user: a transport failure is its cause
/// alone, without the transport's Rust type name that rmcp puts before it.
pub(crate) fn service_error_text(e: &rmcp::service::ServiceError) -> String {
    use rmcp::service::ServiceError as E;
    match e {
        E::TransportSend(t) => format!("sending the request failed: {}", t.error),
        E::TransportClosed => "the connection closed".into(),
        E::McpError(err) => format!("{} (JSON-RPC error {})", err.message, err.code.0),
        E::UnexpectedResponse => "the peer answered with a reply of another kind".into(),
        other => other.to_string(),
    }
}

/// What a failed `initialize` handshake says, in words for a user: a transport failure is
/// its cause and the step, and a wrong reply is named rather than dumped as a Rust value.
pub(crate) fn init_error_text(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, context } => format!("{} ({context})", error.error),
        E::LegacyFallbackFailed { fallback, .. } => init_error_text(fallback),
        E::ExpectedInitResponse(_) => {
            "the server did not answer `initialize` with its response".into()
        }
        E::ExpectedInitResult(_) => "the server's answer to `initialize` is not its result".into(),
        E::JsonRpcError(err) => format!(
            "the server refused `initialize`: {} (JSON-RPC error {})",
            err.message, err.code.0
        ),
        E::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => {
            let list = |v: &[rmcp::model::ProtocolVersion]| {
                v.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "no protocol version in common (toolhost speaks {}; the server {})",
                list(client_supported),
                list(server_supported)
            )
        }
        other => other.to_string(),
    }
}

/// What a failed `initialize` of a client of `serve` says, in words for a user (as
/// [`init_error_text`]).
pub(crate) fn serve_init_error_text(e: &rmcp::service::ServerInitializeError) -> String {
    use rmcp::service::ServerInitializeError as E;
    match e {
        E::TransportError { error, context } => format!("{} ({context})", error.error),
        E::ExpectedInitializeRequest(_) => {
            "the client did not start with an `initialize` request".into()
        }
        E::UnexpectedInitializeResponse(_) => "the client's `initialize` was not answered".into(),
        other => other.to_string(),
    }
}

/// A `[mcp.servers.NAME]` entry that describes no usable transport.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// Both `command` and `url` are set.
    #[error("set either `command` (stdio) or `url` (HTTP), not both")]
    BothCommandAndUrl,
    /// Neither is set.
    #[error("set `command` (stdio) or `url` (Streamable HTTP)")]
    NoTransport,
    /// `bearer_token_env` names a variable that cannot be used.
    #[error(
        "`bearer_token_env = \"{var}\"`: the environment variable {var} is {why}; export \
         it (the bearer token) before starting toolhost"
    )]
    BearerTokenEnv {
        /// The variable.
        var: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `bearer_token_file` cannot be used.
    #[error("`bearer_token_file = \"{path}\"`: {message}")]
    BearerTokenFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// More than one of `bearer_token_env`, `bearer_token_file` and an `Authorization`
    /// header.
    #[error(
        "set only one of `bearer_token_env`, `bearer_token_file` and an `Authorization` \
         header"
    )]
    BearerTokenTwice,
    /// A bearer token on a `command` server.
    #[error(
        "`bearer_token_env` and `bearer_token_file` apply only to a `url` (HTTP) server; \
         pass a stdio server its secrets with `env` or `inherit_env`"
    )]
    BearerTokenWithoutUrl,
    /// `sandbox` is set on a `url` server: only a process this host starts can be confined.
    #[error(
        "`sandbox` applies only to a `command` (stdio) server; remove it from this `url` entry"
    )]
    SandboxWithoutCommand,
    /// A value of `env` cannot be read from its source.
    #[error("`env.{var}` ({from}): {message}")]
    Env {
        /// The variable.
        var: String,
        /// Where its value comes from (never the value).
        from: String,
        /// Why it cannot be read.
        message: String,
    },
    /// `[mcp.servers.NAME.oauth]` cannot be used.
    #[error("[mcp.servers.NAME.oauth]: {0}")]
    OAuth(String),
}

/// Why one configured server (or one of its tools) did not load; see
/// [`connect_all`](crate::config::connect_all). The other servers load regardless.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpLoadError {
    /// The entry is invalid.
    #[error("{0}")]
    Config(#[from] McpConfigError),
    /// Connecting or listing failed.
    #[error("{0}")]
    Client(#[from] McpClientError),
    /// One tool could not be registered (the server's other tools are).
    #[error("{0}")]
    Tool(String),
    /// The connect task itself failed (it panicked or was aborted).
    #[error("connect task failed: {0}")]
    Task(String),
}

/// One [`McpLoadError`] and the server it concerns.
#[derive(Debug)]
pub struct McpServerProblem {
    /// The configured server name.
    pub server: String,
    /// What went wrong.
    pub error: McpLoadError,
}

/// Why a bearer token (or a token file) for `serve --http` was refused. No variant
/// carries the token itself.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpTokenError {
    /// The token file cannot be read.
    #[error("cannot read the token file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The token file may be read or written by group or others.
    #[error(
        "the token file {path} is accessible by group or others (mode {mode:04o}); a bearer \
         token is a password, so it must be private: run `chmod 600 {path}`"
    )]
    TooOpen {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// No token where one was expected.
    #[error("{origin} holds no bearer token")]
    Empty {
        /// Where: a file, a file line, or an environment variable.
        origin: String,
    },
    /// The token is configured twice (for one client or two).
    #[error(
        "the bearer token in {origin} is configured already; each token must be distinct, \
         so that it names one client"
    )]
    Duplicate {
        /// Where the second one came from.
        origin: String,
    },
    /// The token is too short to be safe from guessing.
    #[error(
        "the bearer token in {origin} has {len} characters; at least 32 are required so it \
         cannot be guessed (make one with `openssl rand -hex 32`)"
    )]
    TooShort {
        /// Where it came from.
        origin: String,
        /// Its length.
        len: usize,
    },
    /// The token has a character an HTTP `Authorization` header cannot carry as is.
    #[error(
        "the bearer token in {origin} contains {what}; use visible ASCII only (e.g. \
         `openssl rand -hex 32`)"
    )]
    BadCharacter {
        /// Where it came from.
        origin: String,
        /// What kind of character.
        what: &'static str,
    },
}

/// What went wrong serving the registry as an MCP server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The key that seals 2026-07-28 `requestState` values is unusable.
    #[error("the requestState key is unusable: {0} (it must be at least 32 bytes)")]
    RequestStateKey(String),
    /// The HTTP listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Binding a non-loopback address without opting in.
    #[error(
        "refusing to listen on {0}: it is not a loopback address; bind 127.0.0.1, or pass \
         --allow-remote together with a bearer token (--auth-token-file FILE or the \
         TOOLHOST_SERVE_TOKEN environment variable; docs/mcp.md, \"Authentication\")"
    )]
    NotLoopback(String),
    /// A non-loopback address (`--allow-remote`) without any bearer token.
    #[error(
        "refusing to listen on {0} with --allow-remote but no bearer token: anyone who can \
         reach the port could call every tool. Give tokens with --auth-token-file FILE \
         (one per line, mode 0600), the TOOLHOST_SERVE_TOKEN environment variable, or \
         `auth_token_file` under [serve] in toolhost.toml"
    )]
    RemoteWithoutAuth(String),
    /// `--allowed-host '*'` (any Host) without a bearer token: that would switch off the
    /// DNS-rebinding protection of an unauthenticated server.
    #[error(
        "--allowed-host '*' accepts any Host header, which is safe only with a bearer token; \
         configure one (--auth-token-file FILE or TOOLHOST_SERVE_TOKEN) or name the hosts"
    )]
    AnyHostWithoutAuth,
    /// The client never completed the handshake, or the transport failed.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// An I/O error of the server loop.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
