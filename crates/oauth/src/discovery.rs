//! Which authorization server a login talks to, and as whom: [`OAuthClientIdentity`] (a
//! pre-registered client or a Client ID Metadata Document URL, from
//! `[mcp.servers.NAME.oauth]`) and [`discover`], rmcp's metadata discovery with the one
//! compatibility case of the 2025-03-26 revision it refuses (docs/mcp.md, "Servers that
//! log in with OAuth").
//!
//! That case: a server without protected-resource metadata serves its authorization
//! server metadata at the root of its own origin (`/.well-known/oauth-authorization-server`),
//! as the 2025-03-26 revision told servers to, but names an issuer with a path
//! (`https://mcp.example/oauth`). RFC 8414 section 3.3 says the issuer must be the one the
//! well-known URL was derived from, and rmcp enforces it. The check exists so that a
//! document cannot speak for an authorization server elsewhere. Here the document, the
//! issuer it names and every endpoint it lists are on the MCP server's own origin, the
//! origin the client already talks to, so nothing is spoken for that is not the server's
//! own: only then is the document accepted. Anything off that origin is still refused.
//!
//! [`offers_oauth`] runs the same discovery before a 401 is explained to the user, to tell
//! a server that publishes OAuth metadata (then `toolhost mcp login` is the advice) from
//! one that wants a static token. That probe is bounded: it only asks the MCP server's own
//! origin, follows no redirect rmcp does not (rmcp follows only same-origin ones), reads
//! at most [`PROBE_MAX_BYTES`] per document and takes at most [`METADATA_PROBE_BUDGET`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest,
};

use super::{OAuthError, flow};

/// The largest authorization server metadata document read in the compatibility case.
const MAX_METADATA_BYTES: usize = 256 * 1024;
/// How long fetching it may take.
const METADATA_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest the look for OAuth metadata before a 401 is explained may take in all (less
/// when the client's own timeout is shorter); see docs/mcp.md, "Servers that need a token".
pub const METADATA_PROBE_BUDGET: Duration = Duration::from_secs(5);
/// How long one request of the probe may take.
const PROBE_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// The largest document the probe reads (metadata documents are a few KiB).
const PROBE_MAX_BYTES: usize = 64 * 1024;

/// How toolhost gets its access tokens from a server's authorization server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person logs in (`toolhost mcp login`): authorization code with PKCE.
    #[default]
    AuthorizationCode,
    /// No person: toolhost authenticates as its client and asks for tokens itself
    /// (machine-to-machine).
    ClientCredentials,
}

/// The private key of a `private_key_jwt` client.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    /// The key, PEM (RSA or EC).
    pub pem: Vec<u8>,
    /// `RS256` (the default), `RS384`, `RS512`, `ES256` or `ES384`.
    pub algorithm: String,
}

/// How toolhost identifies itself to a server's authorization server. By default
/// (everything `None`) a person logs in and toolhost registers itself dynamically
/// (RFC 7591).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthClientIdentity {
    /// How tokens are obtained.
    pub grant: OAuthGrant,
    /// The private key of a `client_credentials` client that authenticates with a signed
    /// assertion (`private_key_jwt`) rather than a secret. Never shown.
    pub private_key: Option<SigningKey>,
    /// A client registered with the authorization server out of band: registration is
    /// skipped and this id is used.
    pub client_id: Option<String>,
    /// The secret of that client (a confidential client), sent as the authorization
    /// server's metadata asks (`client_secret_basic` unless only `client_secret_post` is
    /// offered). Never shown.
    pub client_secret: Option<String>,
    /// The `https` URL of a Client ID Metadata Document describing toolhost, hosted by
    /// the operator: used as the client id when the authorization server advertises
    /// `client_id_metadata_document_supported` and no `client_id` is set.
    pub client_metadata_url: Option<String>,
    /// The scopes asked for when nobody says otherwise (a login without `--scope`, a
    /// machine client's tokens); empty: what the server names.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for OAuthClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientIdentity")
            .field("grant", &self.grant)
            .field(
                "private_key",
                &self.private_key.as_ref().map(|k| &k.algorithm),
            )
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[hidden]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl OAuthClientIdentity {
    /// rmcp's client-credentials configuration of this identity, for the MCP server at
    /// `url` (the `resource` of every token request).
    pub fn client_credentials(
        &self,
        server: &str,
        url: &str,
    ) -> Result<rmcp::transport::auth::ClientCredentialsConfig, OAuthError> {
        use rmcp::transport::auth::{ClientCredentialsConfig, JwtSigningAlgorithm};
        let bad = |m: &str| flow(server, "client credentials", m);
        let client_id = self
            .client_id
            .clone()
            .ok_or_else(|| bad("the client_credentials grant needs a `client_id`"))?;
        let resource = Some(url.to_string());
        match (&self.client_secret, &self.private_key) {
            (Some(secret), None) => Ok(ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: secret.clone(),
                scopes: self.scopes.clone(),
                resource,
            }),
            (None, Some(key)) => {
                let signing_algorithm = match key.algorithm.as_str() {
                    "RS256" => JwtSigningAlgorithm::RS256,
                    "RS384" => JwtSigningAlgorithm::RS384,
                    "RS512" => JwtSigningAlgorithm::RS512,
                    "ES256" => JwtSigningAlgorithm::ES256,
                    "ES384" => JwtSigningAlgorithm::ES384,
                    _ => return Err(bad("unknown signing algorithm")),
                };
                Ok(ClientCredentialsConfig::PrivateKeyJwt {
                    client_id,
                    signing_key: key.pem.clone(),
                    signing_algorithm,
                    token_endpoint_audience: None,
                    scopes: self.scopes.clone(),
                    resource,
                })
            }
            _ => Err(bad(
                "the client_credentials grant needs exactly one of a client secret and a \
                 private key",
            )),
        }
    }
}

/// Resolves the authorization server metadata of the MCP server at `url` (from the 401
/// `challenge` when there is one) and sets it on `manager`.
pub(super) async fn discover(
    manager: &mut AuthorizationManager,
    server: &str,
    url: &str,
    challenge: Option<&str>,
) -> Result<(), OAuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => {
            manager.set_metadata(resolution.metadata);
            Ok(())
        }
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) => {
            let refused = || {
                flow(
                    server,
                    "discovery",
                    format!(
                        "the authorization server metadata names issuer {received_issuer} but \
                         was fetched for {expected_issuer} (RFC 8414, section 3.3)"
                    ),
                )
            };
            let Some(origin) = same_origin_root(url, &expected_issuer, &received_issuer) else {
                return Err(refused());
            };
            let metadata = fetch_root_metadata(server, &origin).await?;
            if metadata.issuer.as_deref() != Some(received_issuer.as_str())
                || !endpoints_on(&metadata, &origin)
            {
                return Err(refused());
            }
            tracing::info!(
                server,
                issuer = %received_issuer,
                "using the authorization server metadata at the root of the MCP server's \
                 origin (2025-03-26 discovery; its issuer has a path on the same origin)"
            );
            manager.set_metadata(metadata);
            Ok(())
        }
        Err(e) => Err(flow(server, "discovery", e)),
    }
}

/// The origin of `url` (`scheme://host:port`) when `expected` is that origin's root (the
/// metadata was found at `/.well-known/oauth-authorization-server`) and `received` is on
/// the same origin; `None` otherwise.
fn same_origin_root(url: &str, expected: &str, received: &str) -> Option<url::Url> {
    let server = url::Url::parse(url).ok()?;
    let expected = url::Url::parse(expected).ok()?;
    let received = url::Url::parse(received).ok()?;
    let origin = server.origin();
    let at_root = matches!(expected.path(), "" | "/")
        && expected.query().is_none()
        && expected.origin() == origin;
    if !at_root || received.origin() != origin || !origin.is_tuple() {
        return None;
    }
    url::Url::parse(&origin.ascii_serialization()).ok()
}

/// Whether every endpoint the metadata names is on `origin`.
fn endpoints_on(metadata: &AuthorizationMetadata, origin: &url::Url) -> bool {
    let on =
        |endpoint: &str| url::Url::parse(endpoint).is_ok_and(|u| u.origin() == origin.origin());
    on(&metadata.authorization_endpoint)
        && on(&metadata.token_endpoint)
        && metadata.registration_endpoint.as_deref().is_none_or(on)
}

/// `GET {origin}/.well-known/oauth-authorization-server`, without redirects, bounded in
/// time and size.
async fn fetch_root_metadata(
    server: &str,
    origin: &url::Url,
) -> Result<AuthorizationMetadata, OAuthError> {
    let fail = |e: &dyn std::fmt::Display| flow(server, "discovery", e);
    let at = origin
        .join("/.well-known/oauth-authorization-server")
        .map_err(|e| fail(&e))?;
    let client = reqwest::Client::builder()
        .timeout(METADATA_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| fail(&e))?;
    let mut response = client.get(at).send().await.map_err(|e| fail(&e))?;
    if !response.status().is_success() {
        return Err(fail(&format!(
            "authorization server metadata: HTTP {}",
            response.status()
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(&e))? {
        if body.len() + chunk.len() > MAX_METADATA_BYTES {
            return Err(fail(&format!(
                "authorization server metadata is larger than {MAX_METADATA_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| fail(&format!("authorization server metadata: {e}")))
}

/// Whether the MCP server at `url` publishes OAuth metadata: protected-resource metadata
/// (path-based or at the root of its origin, or where its 401 `challenge` points) or
/// authorization server metadata at its well-known paths (the 2025-03-26 revision's root
/// `/.well-known/oauth-authorization-server` included). rmcp's discovery, as [`discover`]
/// runs it for a login, through `ProbeClient` and within `budget` (at most
/// [`METADATA_PROBE_BUDGET`]); `false` when nothing usable was found in time.
pub async fn offers_oauth(url: &str, challenge: Option<&str>, budget: Duration) -> bool {
    let probe = async {
        let client = Arc::new(ProbeClient::new(url)?);
        let manager = AuthorizationManager::new_with_oauth_http_client(url, client)
            .await
            .ok()?;
        let found = match manager.resolve_metadata_from_challenge(challenge).await {
            // Nothing found: rmcp made up the 2025-03-26 default endpoints.
            Ok(r) => r.source != AuthorizationMetadataSource::LegacyEndpointFallback,
            Err(e) => metadata_was_published(&e),
        };
        Some(found)
    };
    let found = tokio::time::timeout(budget.min(METADATA_PROBE_BUDGET), probe)
        .await
        .ok()
        .flatten()
        .unwrap_or(false);
    tracing::debug!(found, "OAuth metadata probe");
    found
}

/// Whether a discovery that failed had found the server's OAuth metadata first: its
/// protected-resource metadata names authorization servers that are elsewhere (the probe
/// does not go there) or that publish nothing usable, or its authorization server metadata
/// names another issuer (the login decides whether that is the 2025-03-26 case it accepts).
fn metadata_was_published(e: &AuthError) -> bool {
    match e {
        AuthError::AuthorizationServersUnavailable { .. }
        | AuthError::AuthorizationServerMismatch { .. } => true,
        AuthError::DiscoveryRequestFailed { source, .. } => {
            matches!(source.downcast_ref(), Some(ProbeError::OffOrigin))
        }
        _ => false,
    }
}

/// Why the probe's client refused a request or a response.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    /// A URL off the MCP server's origin (named by metadata found on it).
    #[error("not on the MCP server's origin")]
    OffOrigin,
    /// A document over [`PROBE_MAX_BYTES`].
    #[error("the document is larger than {PROBE_MAX_BYTES} bytes")]
    TooLarge,
}

/// The HTTP client of [`offers_oauth`]: requests to the MCP server's own origin only,
/// redirects never followed (rmcp asks for that during discovery and follows same-origin
/// ones itself), [`PROBE_REQUEST_TIMEOUT`] per request, bodies up to [`PROBE_MAX_BYTES`].
/// rmcp's own client reads up to 1 MiB in up to 30 s per request and goes wherever the
/// metadata points: right for a login the user asked for, too much for an error message.
struct ProbeClient {
    origin: url::Origin,
    http: reqwest::Client,
}

impl ProbeClient {
    fn new(url: &str) -> Option<Self> {
        let origin = url::Url::parse(url).ok()?.origin();
        let http = reqwest::Client::builder()
            .timeout(PROBE_REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(ProbeClient { origin, http })
    }
}

impl OAuthHttpClient for ProbeClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let boxed = |e: ProbeError| Box::new(e) as OAuthHttpClientError;
            let request = reqwest::Request::try_from(request.request)?;
            if request.url().origin() != self.origin {
                return Err(boxed(ProbeError::OffOrigin));
            }
            let mut response = self.http.execute(request).await?;
            let mut answer = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if chunk.len() > PROBE_MAX_BYTES - body.len() {
                    return Err(boxed(ProbeError::TooLarge));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(answer.body(body)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_own_origin_root_is_relaxed() {
        let url = "http://127.0.0.1:4000/mcp";
        let root = "http://127.0.0.1:4000/";
        assert!(same_origin_root(url, root, "http://127.0.0.1:4000/oauth").is_some());
        // Another origin named as issuer, or found elsewhere than the root: refused.
        assert!(same_origin_root(url, root, "http://127.0.0.1:4001/oauth").is_none());
        assert!(same_origin_root(url, root, "https://evil.example/oauth").is_none());
        assert!(
            same_origin_root(
                url,
                "http://127.0.0.1:4000/tenant",
                "http://127.0.0.1:4000/x"
            )
            .is_none()
        );
        assert!(same_origin_root(url, "http://other:4000/", "http://other:4000/x").is_none());
    }

    #[test]
    fn endpoints_must_stay_on_the_origin() {
        let origin = url::Url::parse("http://127.0.0.1:4000").unwrap_or_else(|e| panic!("{e}"));
        let mut m = AuthorizationMetadata::default();
        m.authorization_endpoint = "http://127.0.0.1:4000/oauth/authorize".into();
        m.token_endpoint = "http://127.0.0.1:4000/oauth/token".into();
        assert!(endpoints_on(&m, &origin));
        m.registration_endpoint = Some("https://evil.example/register".into());
        assert!(!endpoints_on(&m, &origin));
        m.registration_endpoint = None;
        m.token_endpoint = "https://evil.example/token".into();
        assert!(!endpoints_on(&m, &origin));
    }

    #[test]
    fn the_secret_is_not_shown() {
        let id = OAuthClientIdentity {
            client_id: Some("c".into()),
            client_secret: Some("s3cret-value".into()),
            private_key: Some(SigningKey {
                pem: b"-----BEGIN PRIVATE KEY-----s3cret".to_vec(),
                algorithm: "ES256".into(),
            }),
            ..Default::default()
        };
        assert!(!format!("{id:?}").contains("s3cret"));
    }
}
