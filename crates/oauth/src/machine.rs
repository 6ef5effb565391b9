//! [`MachineAuth`]: OAuth for a server reached by a program with no person behind it,
//! the `client_credentials` grant (the MCP extension for machine-to-machine clients):
//! toolhost authenticates as a client registered out of band, with its secret
//! (`client_secret_basic` or `_post`, as the metadata offers) or a private key
//! (`private_key_jwt`, RFC 7523), and gets its access tokens itself. No login, no
//! refresh token and no credential file: a new token is asked for shortly before the
//! last one expires, and once more when the server answers 401 (docs/mcp.md, "Machine
//! clients").

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig};

use super::{OAuthClientIdentity, OAuthError, flow};

/// A token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(30);
/// The lifetime assumed when the token response names none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);

/// The access token of a machine client, renewed as needed.
pub struct MachineAuth {
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
    cached: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl std::fmt::Debug for MachineAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineAuth")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl MachineAuth {
    /// Discovers the authorization server of the MCP server at `url`, checks it takes
    /// this client's authentication, and gets the first token.
    pub async fn connect(
        server: &str,
        url: &str,
        client: &OAuthClientIdentity,
    ) -> Result<Arc<Self>, OAuthError> {
        let config = client.client_credentials(server, url)?;
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| flow(server, "discovery", e))?;
        super::discovery::discover(&mut manager, server, url, None).await?;
        manager
            .validate_client_credentials_metadata(&config)
            .map_err(|e| flow(server, "client credentials", e))?;
        manager
            .configure_client_credentials(&config)
            .map_err(|e| flow(server, "client credentials", e))?;
        let auth = Arc::new(Self {
            manager,
            config,
            cached: tokio::sync::Mutex::new(None),
        });
        auth.token(true)
            .await
            .map_err(|e| flow(server, "token request", e))?;
        Ok(auth)
    }

    /// The current access token; a new one when `fresh`, or when the last one expires
    /// within [`RENEW_BEFORE`].
    pub async fn token(self: &Arc<Self>, fresh: bool) -> Result<String, AuthError> {
        let mut cached = self.cached.lock().await;
        if !fresh
            && let Some((token, until)) = &*cached
            && Instant::now() + RENEW_BEFORE < *until
        {
            return Ok(token.clone());
        }
        // rmcp's token request for `private_key_jwt` keeps a (non-`Sync`) form serializer
        // across an await, so its future is not `Send`, and a connection's future must be.
        // It runs on a blocking-pool thread that drives it on the same runtime.
        let me = self.clone();
        let response = tokio::task::spawn_blocking(move || {
            tokio::runtime::Handle::current()
                .block_on(me.manager.exchange_client_credentials(&me.config))
        })
        .await
        .map_err(|e| AuthError::InternalError(format!("token request: {e}")))??;
        // The response type's accessors need the oauth2 crate's trait; its JSON form
        // has the same two fields.
        let json = serde_json::to_value(&response)
            .map_err(|e| AuthError::InternalError(format!("token response: {e}")))?;
        let token = json
            .get("access_token")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| AuthError::InternalError("token response without a token".into()))?
            .to_string();
        let lifetime = json
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_LIFETIME);
        *cached = Some((token.clone(), Instant::now() + lifetime));
        Ok(token)
    }
}
