//! Bearer-token authentication of `serve --http`: the accepted tokens ([`BearerTokens`],
//! read from token files and the environment, with the checks a secret deserves) and the
//! middleware that answers every request without a valid `Authorization: Bearer` with
//! HTTP 401, `WWW-Authenticate: Bearer realm="toolhost"` and a JSON-RPC error body.
//!
//! Rules (docs/mcp.md, "Authentication"):
//! - a token has at least [`BearerTokens::MIN_LEN`] characters, all visible ASCII (so it
//!   fits an HTTP header and cannot be guessed);
//! - a token file holds one token per line (`#` starts a comment line, blank lines are
//!   skipped) and must not be accessible by group or others, as ssh demands of a key;
//! - tokens are compared in constant time (`subtle`), every configured token is compared
//!   on every request, and no token ever reaches a log line or an error message;
//! - a token may belong to a configured client (`[serve.clients.NAME] token_file`): the
//!   request then carries that client ([`super::clients`]); the same token twice, for
//!   one client or two, is refused.

use std::path::Path;
use std::sync::Arc;

use subtle::ConstantTimeEq as _;

use super::clients::ServedClient;
use crate::error::McpTokenError;

/// The bearer tokens `serve --http` accepts. Its `Debug` shows only how many there are.
#[derive(Clone, Default)]
pub struct BearerTokens {
    tokens: Vec<Box<[u8]>>,
    /// The configured client of each token, by position.
    clients: Vec<Option<Arc<ServedClient>>>,
}

impl std::fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BearerTokens({} tokens)", self.tokens.len())
    }
}

impl BearerTokens {
    /// The shortest token accepted: 32 characters (e.g. `openssl rand -hex 32` gives 64),
    /// so that a token cannot be guessed by trying.
    pub const MIN_LEN: usize = 32;

    /// No tokens yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one token; `origin` names where it came from (e.g. `TOOLHOST_SERVE_TOKEN`) for
    /// the error message, which never contains the token itself. Surrounding whitespace
    /// is removed.
    pub fn add(&mut self, token: &str, origin: &str) -> Result<(), McpTokenError> {
        self.add_for(token, origin, None)
    }

    fn add_for(
        &mut self,
        token: &str,
        origin: &str,
        client: Option<&Arc<ServedClient>>,
    ) -> Result<(), McpTokenError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(McpTokenError::Empty {
                origin: origin.to_string(),
            });
        }
        if let Some(bad) = token.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(McpTokenError::BadCharacter {
                origin: origin.to_string(),
                what: if bad.is_whitespace() {
                    "whitespace"
                } else {
                    "a character that is not visible ASCII"
                },
            });
        }
        if token.len() < Self::MIN_LEN {
            return Err(McpTokenError::TooShort {
                origin: origin.to_string(),
                len: token.len(),
            });
        }
        // Configuration time, not a request: a plain comparison tells no client anything.
        if self.tokens.iter().any(|t| **t == *token.as_bytes()) {
            return Err(McpTokenError::Duplicate {
                origin: origin.to_string(),
            });
        }
        self.tokens.push(token.as_bytes().into());
        self.clients.push(client.cloned());
        Ok(())
    }

    /// Adds the tokens of a token file: one per line, `#` comment lines and blank lines
    /// skipped. Refuses a file that group or others may access (mode `& 0o077`), and a
    /// file that holds no token.
    pub fn add_file(&mut self, path: &Path) -> Result<(), McpTokenError> {
        self.add_file_for(path, None)
    }

    /// As [`BearerTokens::add_file`], for the tokens of the configured client `client`.
    pub fn add_client_file(
        &mut self,
        path: &Path,
        client: Arc<ServedClient>,
    ) -> Result<(), McpTokenError> {
        self.add_file_for(path, Some(&client))
    }

    fn add_file_for(
        &mut self,
        path: &Path,
        client: Option<&Arc<ServedClient>>,
    ) -> Result<(), McpTokenError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|source| McpTokenError::Read {
            path: shown.clone(),
            source,
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(McpTokenError::TooOpen { path: shown, mode });
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        let text = std::fs::read_to_string(path).map_err(|source| McpTokenError::Read {
            path: shown.clone(),
            source,
        })?;
        let before = self.tokens.len();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.add_for(line, &format!("{shown} line {}", i + 1), client)?;
        }
        if self.tokens.len() == before {
            return Err(McpTokenError::Empty { origin: shown });
        }
        Ok(())
    }

    /// No token configured.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the `Authorization` header values `values` carry exactly one
    /// `Bearer <token>` (scheme case-insensitive) with a configured token. Every token is
    /// compared, in constant time, whatever the outcome.
    pub fn accepts<'a>(&self, values: impl IntoIterator<Item = &'a [u8]>) -> bool {
        self.matching(values).is_some()
    }

    /// Whether `presented` is one of the tokens itself (no `Bearer ` scheme: a token typed
    /// into a login form). Every token is compared, in constant time.
    pub fn accepts_secret(&self, presented: &[u8]) -> bool {
        let mut ok = subtle::Choice::from(0);
        for token in &self.tokens {
            ok |= presented.ct_eq(token);
        }
        bool::from(ok)
    }

    /// As [`BearerTokens::accepts`], and which token it is: its position among the
    /// configured ones (the client's identity for the per-client session share). The
    /// position is chosen in constant time too.
    pub fn matching<'a>(&self, values: impl IntoIterator<Item = &'a [u8]>) -> Option<usize> {
        use subtle::ConditionallySelectable as _;

        let mut values = values.into_iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return None;
        };
        let space = value.iter().position(|b| *b == b' ')?;
        let (scheme, rest) = value.split_at(space);
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return None;
        }
        let presented = &rest[1..];
        let mut ok = subtle::Choice::from(0);
        let mut index = 0u64;
        for (i, token) in (0u64..).zip(&self.tokens) {
            let eq = presented.ct_eq(token);
            index = u64::conditional_select(&index, &i, eq);
            ok |= eq;
        }
        bool::from(ok).then(|| usize::try_from(index).unwrap_or(usize::MAX))
    }
}

/// The request extension [`require_bearer`] adds: which configured token (its position)
/// the request carried, and the client it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct AuthenticatedToken {
    /// The token's position among the configured ones.
    pub(crate) index: usize,
    /// Its configured client, if any.
    pub(crate) client: Option<Arc<ServedClient>>,
}

/// Answers a request without a valid bearer token with HTTP 401; passes the others on.
pub(super) async fn require_bearer(
    axum::extract::State(tokens): axum::extract::State<Arc<BearerTokens>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let headers = request.headers().get_all(http::header::AUTHORIZATION);
    if let Some(i) = tokens.matching(headers.iter().map(|v| v.as_bytes())) {
        let client = tokens.clients.get(i).cloned().flatten();
        request
            .extensions_mut()
            .insert(AuthenticatedToken { index: i, client });
        return next.run(request).await;
    }
    let presented = headers.iter().next().is_some();
    tracing::debug!(
        method = %request.method(),
        presented,
        "refused an HTTP request without a valid bearer token"
    );
    let (challenge, message) = if presented {
        (
            r#"Bearer realm="toolhost", error="invalid_token""#,
            "unauthorized: the bearer token is not valid",
        )
    } else {
        (
            r#"Bearer realm="toolhost""#,
            "unauthorized: send `Authorization: Bearer <token>` with a token this server \
             accepts",
        )
    };
    let mut resp = super::http_limits::jsonrpc_error(
        http::StatusCode::UNAUTHORIZED,
        -32001,
        message.to_string(),
    );
    resp.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static(challenge),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let mut t = BearerTokens::new();
        t.add(GOOD, "test").unwrap();
        let ok = format!("Bearer {GOOD}");
        assert!(t.accepts([ok.as_bytes()]));
        assert!(t.accepts([format!("bearer {GOOD}").as_bytes()]));
        assert!(!t.accepts([format!("Bearer {GOOD}x").as_bytes()]));
        assert!(!t.accepts([format!("Bearer {}", &GOOD[1..]).as_bytes()]));
        assert!(!t.accepts([format!("Bearer  {GOOD}").as_bytes()]));
        assert!(!t.accepts([format!("Basic {GOOD}").as_bytes()]));
        assert!(!t.accepts([b"Bearer ".as_slice()]));
        assert!(!t.accepts([b"Bearer".as_slice()]));
        assert!(!t.accepts([ok.as_bytes(), ok.as_bytes()]));
        assert!(!t.accepts(std::iter::empty::<&[u8]>()));
        assert!(!BearerTokens::new().accepts([ok.as_bytes()]));
        assert_eq!(format!("{t:?}"), "BearerTokens(1 tokens)");
        let other = "fedcba9876543210fedcba9876543210";
        t.add(other, "test").unwrap();
        assert_eq!(t.matching([ok.as_bytes()]), Some(0));
        assert_eq!(t.matching([format!("Bearer {other}").as_bytes()]), Some(1));
        assert_eq!(t.matching([format!("Bearer {other}x").as_bytes()]), None);
    }

    #[test]
    fn short_or_odd_tokens_are_refused_without_echoing_them() {
        let mut t = BearerTokens::new();
        let e = t.add("short-secret", "ENV").unwrap_err().to_string();
        assert!(e.contains("32") && e.contains("ENV"), "{e}");
        assert!(!e.contains("short-secret"), "{e}");
        let e = t.add(&format!("{GOOD} {GOOD}"), "ENV").unwrap_err();
        assert!(e.to_string().contains("whitespace"), "{e}");
        assert!(t.add("   ", "ENV").is_err());
        assert!(t.is_empty());
    }

    #[test]
    fn the_same_token_twice_is_refused_and_a_client_token_carries_its_client() {
        let mut t = BearerTokens::new();
        t.add(GOOD, "first").unwrap();
        let e = t.add(GOOD, "second").unwrap_err().to_string();
        assert!(e.contains("second") && !e.contains(GOOD), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        std::fs::write(&file, "fedcba9876543210fedcba9876543210\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let analyst = Arc::new(ServedClient::new("analyst", None, None, None).unwrap());
        t.add_client_file(&file, analyst).unwrap();
        assert_eq!(t.clients[1].as_ref().map(|c| c.name()), Some("analyst"));
        assert!(t.clients[0].is_none());
    }
}
