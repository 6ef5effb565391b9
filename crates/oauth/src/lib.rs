//! OAuth 2.1 for Streamable HTTP servers that answer 401 with an OAuth challenge
//! (docs/mcp.md, "Servers that log in with OAuth"): [`login`] runs the authorization code
//! flow with PKCE (protected-resource and authorization-server metadata discovery,
//! dynamic client registration, a loopback callback on `127.0.0.1`), and [`OAuthStore`]
//! keeps each server's credentials in `<data dir>/toolhost/oauth/<server>.json` (mode
//! 0600, written atomically), from which the client refreshes its access token.
//!
//! Its own crate: the MCP client uses it (a stored login's token, refreshed; a machine's
//! client credentials; more scope during a session), the CLI's `toolhost mcp login`
//! runs it, and it depends on no other part of toolhost.
//!
//! The protocol itself is rmcp's (`rmcp::transport::auth`); this crate adds the file
//! store, the callback listener and the bounds. Authorization servers and the network are
//! not trusted: what they send is bounded and escaped before it is shown, the callback's
//! `state` must match the one sent, and tokens are never logged or shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialStore, StoredCredentials,
};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod discovery;
mod machine;
mod step_up;
pub use discovery::offers_oauth;
pub use discovery::{METADATA_PROBE_BUDGET, OAuthClientIdentity, OAuthGrant, SigningKey};
pub use machine::MachineAuth;
pub use step_up::{LocalLogin, step_up};

/// The longest credential file read (a token response is a few KiB).
const MAX_CREDENTIAL_FILE: u64 = 256 * 1024;
/// The longest HTTP request head the callback listener reads.
const MAX_CALLBACK_REQUEST: usize = 16 * 1024;
/// The longest piece of a server's text shown in an error.
const MAX_SHOWN: usize = 300;
/// How long the headless mode's request of the authorization URL may take.
const HEADLESS_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one connection to the callback listener may take to send its request.
const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong logging in to a server or using its stored credentials.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The server name cannot name a credential file.
    #[error(
        "MCP server {0:?}: the name cannot be used for a credential file (use letters, digits, \
         '-', '_' and '.')"
    )]
    BadServerName(String),
    /// No data directory is known on this platform (set `XDG_DATA_HOME` or `HOME`).
    #[error("no data directory for OAuth credentials on this platform; set XDG_DATA_HOME or HOME")]
    NoDataDir,
    /// Reading, writing or removing a credential file failed.
    #[error("OAuth credentials {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A credential file is not what toolhost writes.
    #[error(
        "OAuth credentials {path} are unreadable ({message}); run `toolhost mcp logout \
         {server}` and log in again"
    )]
    BadFile {
        /// The server.
        server: String,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The server or its authorization server refused or broke a step of the flow.
    #[error("MCP server '{server}': OAuth {step} failed: {message}")]
    Flow {
        /// The server.
        server: String,
        /// The step (`discovery`, `registration`, `token exchange`, ...).
        step: &'static str,
        /// What happened (escaped and shortened: it comes from the network).
        message: String,
    },
    /// The authorization server redirected back with an error (the user declined, ...).
    #[error("MCP server '{server}': authorization was refused: {message}")]
    Denied {
        /// The server.
        server: String,
        /// The `error` (and `error_description`) of the callback, escaped.
        message: String,
    },
    /// Nobody completed the authorization in time.
    #[error(
        "MCP server '{server}': no authorization callback within {secs} s; run `toolhost mcp \
         login {server}` again and finish the login in the browser",
        secs = timeout.as_secs()
    )]
    Timeout {
        /// The server.
        server: String,
        /// The time waited.
        timeout: Duration,
    },
}

/// `text` from the network, fit to be shown: control characters escaped, at most
/// [`MAX_SHOWN`] characters.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_SHOWN)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > MAX_SHOWN {
        out.push_str("...");
    }
    out
}

fn flow(server: &str, step: &'static str, e: impl std::fmt::Display) -> OAuthError {
    OAuthError::Flow {
        server: server.to_string(),
        step,
        message: shown(&e.to_string()),
    }
}

/// Where the OAuth credentials of servers are kept: one `<server>.json` per server in a
/// directory (by default `<data dir>/toolhost/oauth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthStore {
    dir: PathBuf,
}

impl OAuthStore {
    /// A store in `dir` (created, mode 0700, at the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        OAuthStore { dir: dir.into() }
    }

    /// The default store, `dirs::data_dir()/toolhost/oauth`.
    pub fn default_location() -> Result<Self, OAuthError> {
        dirs::data_dir()
            .map(|d| OAuthStore::new(d.join("toolhost").join("oauth")))
            .ok_or(OAuthError::NoDataDir)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The credential file of `server`; an error for names that are not a plain file name.
    pub fn path(&self, server: &str) -> Result<PathBuf, OAuthError> {
        let ok = !server.is_empty()
            && server.len() <= 128
            && !server.starts_with('.')
            && server
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(OAuthError::BadServerName(server.to_string()));
        }
        Ok(self.dir.join(format!("{server}.json")))
    }

    /// Whether credentials are stored for `server`.
    pub fn has(&self, server: &str) -> bool {
        self.path(server).is_ok_and(|p| p.is_file())
    }

    /// Deletes the credentials of `server`; `Ok(false)` when there were none.
    pub fn remove(&self, server: &str) -> Result<bool, OAuthError> {
        let path = self.path(server)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(OAuthError::Io { path, source }),
        }
    }

    fn credential_store(&self, server: &str) -> Result<FileCredentialStore, OAuthError> {
        Ok(FileCredentialStore {
            server: server.to_string(),
            path: self.path(server)?,
        })
    }
}

/// rmcp's [`CredentialStore`] over one JSON file.
struct FileCredentialStore {
    server: String,
    path: PathBuf,
}

impl FileCredentialStore {
    fn read(&self) -> Result<Option<StoredCredentials>, OAuthError> {
        let io = |source| OAuthError::Io {
            path: self.path.clone(),
            source,
        };
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, MAX_CREDENTIAL_FILE + 1),
            &mut text,
        )
        .map_err(io)?;
        let bad = |message: String| OAuthError::BadFile {
            server: self.server.clone(),
            path: self.path.clone(),
            message,
        };
        if text.len() as u64 > MAX_CREDENTIAL_FILE {
            return Err(bad(format!("larger than {MAX_CREDENTIAL_FILE} bytes")));
        }
        // The parse error names a position, never the content.
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad(format!("not valid JSON at line {}", e.line())))
    }

    /// Writes `creds` to a temporary file (mode 0600) in the same directory, then renames
    /// it over the old file, so a reader sees the old or the new credentials, never half.
    fn write(&self, creds: &StoredCredentials) -> Result<(), OAuthError> {
        let io = |source| OAuthError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(io)?;
        let json = serde_json::to_vec_pretty(creds).map_err(|e| io(std::io::Error::other(e)))?;
        // Unique per process and write, so two saves never share a temporary file.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self
            .path
            .with_extension(format!("json.{}.{n}.tmp", std::process::id()));
        let result = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut f = options.open(&tmp)?;
            std::io::Write::write_all(&mut f, &json)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(io)
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn store_error(e: OAuthError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(&credentials).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(format!(
                "{}: {e}",
                self.path.display()
            ))),
        }
    }
}

/// How [`login`] gets the user through the authorization server.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// For tests and automation: instead of waiting for a person, request the
    /// authorization URL with an HTTP GET and follow its redirects (at most 10), which
    /// ends at the loopback callback when the authorization server approves without
    /// asking anyone.
    pub headless: bool,
    /// How long to wait for the callback.
    pub timeout: Duration,
    /// Scopes to ask for; empty: those the server's challenge or metadata name.
    pub scopes: Vec<String>,
    /// Who toolhost is to the authorization server (default: registered dynamically).
    pub client: OAuthClientIdentity,
}

impl Default for LoginOptions {
    fn default() -> Self {
        LoginOptions {
            headless: false,
            timeout: Duration::from_secs(300),
            scopes: Vec::new(),
            client: OAuthClientIdentity::default(),
        }
    }
}

/// The `WWW-Authenticate` challenge of the server's answer to an unauthenticated first
/// request (`None` when it sent none, or did not answer 401): `initialize`, and when
/// that is refused otherwise than with a 401 (a server of the 2026-07-28 revision has no
/// `initialize`), `server/discover` as that revision sends it.
async fn probe_challenge(server: &str, url: &str) -> Result<Option<String>, OAuthError> {
    let client = reqwest::Client::builder()
        .timeout(HEADLESS_REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| flow(server, "discovery", e))?;
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolhost","version":"0"}}}"#;
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize)
        .send()
        .await
        .map_err(|e| flow(server, "discovery", e))?;
    let status = resp.status();
    let resp = if status.is_success() || status == reqwest::StatusCode::UNAUTHORIZED {
        resp
    } else {
        let discover = r#"{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"toolhost","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(discover)
            .send()
            .await
            .map_err(|e| flow(server, "discovery", e))?
    };
    if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string))
}

/// Logs in to the MCP server `server` at `url`: discovers its authorization server,
/// registers toolhost as a client when needed, runs the authorization code flow with
/// PKCE through a loopback callback (`http://127.0.0.1:PORT/callback`) and saves the
/// credentials in `store`. `show_url` is given the authorization URL to show the user
/// (and open in a browser) once the callback listener is up.
pub async fn login(
    server: &str,
    url: &str,
    store: &OAuthStore,
    options: &LoginOptions,
    show_url: impl FnOnce(&str),
) -> Result<(), OAuthError> {
    let cred_store = store.credential_store(server)?;
    let challenge = probe_challenge(server, url).await?;
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| flow(server, "discovery", e))?;
    manager.set_credential_store(cred_store);
    discovery::discover(&mut manager, server, url, challenge.as_deref()).await?;

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| flow(server, "callback listener", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| flow(server, "callback listener", e))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let mut request = AuthorizationRequest::new(redirect_uri.clone())
        .with_client_name("toolhost")
        .with_initial_scope_selection();
    if let Some(c) = &challenge {
        request = request.with_challenge(c.clone());
    }
    if !options.scopes.is_empty() {
        request = request.with_scopes(options.scopes.iter().cloned());
    }
    if let Some(id) = &options.client.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &options.client.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(metadata_url) = &options.client.client_metadata_url {
        request = request.with_client_metadata_url(metadata_url.clone());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| flow(server, "registration", e))?;
    let auth_url = session.auth_url.clone();
    let state = url::Url::parse(&auth_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| {
            flow(
                server,
                "authorization",
                "the authorization URL has no state",
            )
        })?;
    show_url(&auth_url);

    let headless = options.headless.then(|| {
        let server = server.to_string();
        let auth_url = auth_url.clone();
        tokio::spawn(async move { headless_visit(&server, &auth_url).await })
    });
    let waited = tokio::time::timeout(
        options.timeout,
        wait_for_callback(server, &listener, port, &state),
    )
    .await;
    if let Some(h) = headless {
        // The visit ends with the callback's answer; a failure before that shows as the
        // callback never coming, so it is reported then.
        if waited.is_err()
            && let Ok(Err(e)) = h.await
        {
            return Err(e);
        }
    }
    let callback_url = match waited {
        Ok(r) => r?,
        Err(_) => {
            return Err(OAuthError::Timeout {
                server: server.to_string(),
                timeout: options.timeout,
            });
        }
    };
    session
        .handle_callback_url(&callback_url)
        .await
        .map_err(|e| flow(server, "token exchange", e))?;
    Ok(())
}

/// The headless mode: GET the authorization URL and follow its redirects to the callback.
async fn headless_visit(server: &str, auth_url: &str) -> Result<(), OAuthError> {
    let client = reqwest::Client::builder()
        .timeout(HEADLESS_REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(10))
        .build()
        .map_err(|e| flow(server, "authorization", e))?;
    client
        .get(auth_url)
        .send()
        .await
        .map_err(|e| flow(server, "authorization", e))?;
    Ok(())
}

/// Serves `GET /callback?code=...&state=...` on `listener` until one arrives with the
/// expected `state` (or an `error`); returns its full URL. Other requests get 404, a
/// wrong state 400, and the wait goes on.
async fn wait_for_callback(
    server: &str,
    listener: &tokio::net::TcpListener,
    port: u16,
    state: &str,
) -> Result<String, OAuthError> {
    loop {
        let (mut conn, _) = listener
            .accept()
            .await
            .map_err(|e| flow(server, "callback listener", e))?;
        let Ok(Some(target)) =
            tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_request_target(&mut conn)).await
        else {
            continue;
        };
        let Ok(url) = url::Url::parse(&format!("http://127.0.0.1:{port}{target}")) else {
            respond(&mut conn, 400, "Bad request.").await;
            continue;
        };
        if url.path() != "/callback" {
            respond(&mut conn, 404, "Not found.").await;
            continue;
        }
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if param("state").as_deref() != Some(state) {
            tracing::warn!(server, "OAuth callback with a wrong state ignored");
            respond(
                &mut conn,
                400,
                "This callback does not belong to the login in progress.",
            )
            .await;
            continue;
        }
        if let Some(error) = param("error") {
            respond(&mut conn, 400, "Authorization refused; see the terminal.").await;
            let mut message = shown(&error);
            if let Some(d) = param("error_description") {
                message.push_str(&format!(" ({})", shown(&d)));
            }
            return Err(OAuthError::Denied {
                server: server.to_string(),
                message,
            });
        }
        respond(
            &mut conn,
            200,
            "toolhost is authorized. You can close this window.",
        )
        .await;
        return Ok(url.to_string());
    }
}

/// The target of a `GET` request (`None` for anything else), reading at most
/// [`MAX_CALLBACK_REQUEST`] bytes of the head.
async fn read_request_target(conn: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() >= MAX_CALLBACK_REQUEST {
            return None;
        }
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = std::str::from_utf8(&buf).ok()?;
    let line = head.lines().next()?;
    let mut parts = line.split(' ');
    let (Some("GET"), Some(target)) = (parts.next(), parts.next()) else {
        return None;
    };
    target.starts_with('/').then(|| target.to_string())
}

async fn respond(conn: &mut tokio::net::TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n{text}",
        text.len()
    );
    let _ = conn.write_all(answer.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// An HTTP client that sends the stored access token of `server` (refreshing it when it
/// is about to expire, as `client` when that is a pre-registered client with a secret);
/// `None` when nothing usable is stored.
pub async fn auth_client(
    server: &str,
    url: &str,
    store: &OAuthStore,
    client: &OAuthClientIdentity,
) -> Result<Option<AuthClient<reqwest::Client>>, OAuthError> {
    if !store.has(server) {
        return Ok(None);
    }
    let cred_store = store.credential_store(server)?;
    // A broken file is the user's to fix; say so rather than silently logging out.
    let Some(stored) = cred_store.read()? else {
        return Ok(None);
    };
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| flow(server, "discovery", e))?;
    manager.set_credential_store(cred_store);
    discovery::discover(&mut manager, server, url, None).await?;
    let ready = manager
        .initialize_from_store()
        .await
        .map_err(|e| flow(server, "discovery", e))?;
    if !ready {
        return Ok(None);
    }
    // A confidential client authenticates its refresh requests with its secret; the
    // stored credentials keep only the id.
    if let (Some(id), Some(secret)) = (&client.client_id, &client.client_secret)
        && *id == stored.client_id
    {
        let config = rmcp::transport::auth::OAuthClientConfig::new(id.clone(), REFRESH_REDIRECT)
            .with_client_secret(secret.clone());
        manager
            .configure_client(config)
            .map_err(|e| flow(server, "client configuration", e))?;
    }
    Ok(Some(AuthClient::new(reqwest::Client::default(), manager)))
}

/// The redirect URI given to the OAuth client used only for refreshing (a refresh
/// request carries none; the client type needs one).
const REFRESH_REDIRECT: &str = "http://127.0.0.1/callback";

#[cfg(test)]
mod tests;
