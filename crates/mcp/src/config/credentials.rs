//! The credentials of `url` servers in `[mcp.servers.NAME]`: the static bearer token
//! (`bearer_token_env`, `bearer_token_file`) and the OAuth identity table
//! `[mcp.servers.NAME.oauth]` ([`McpOAuthConfig`]). Secrets are read here, from a variable
//! or from a file only its owner may read, and never appear in an error.

use std::path::Path;

use serde::Deserialize;

use super::McpServerConfig;
use crate::error::McpConfigError;

/// `[mcp.servers.NAME.oauth]`: how toolhost identifies itself to the authorization server
/// of a `url` server that asks for OAuth (docs/mcp.md, "Servers that log in with OAuth").
/// Without it, toolhost registers itself dynamically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client id registered with the authorization server out of band.
    pub client_id: Option<String>,
    /// The environment variable holding that client's secret.
    pub client_secret_env: Option<String>,
    /// A file holding that client's secret (first line that is neither blank nor a `#`
    /// comment; not accessible by group or others).
    pub client_secret_file: Option<std::path::PathBuf>,
    /// The `https` URL of toolhost's Client ID Metadata Document, hosted by the operator.
    pub client_metadata_url: Option<String>,
    /// The scopes `toolhost mcp login` asks for when given no `--scope` (and a machine
    /// client's tokens).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `authorization_code` (the default: a person logs in) or `client_credentials` (a
    /// machine client: toolhost gets its tokens itself with `client_id` and its secret
    /// or `private_key_file`).
    #[serde(default)]
    pub grant: crate::oauth::OAuthGrant,
    /// (`client_credentials`) A PEM private key (RSA or EC, not accessible by group or
    /// others) to authenticate with a signed assertion (`private_key_jwt`).
    pub private_key_file: Option<std::path::PathBuf>,
    /// The algorithm of `private_key_file`: `RS256` (the default), `RS384`, `RS512`,
    /// `ES256` or `ES384`.
    pub signing_algorithm: Option<String>,
}

impl McpServerConfig {
    /// The bearer token of `bearer_token_env` or `bearer_token_file`, read now; `None`
    /// when neither is set. Errors never contain the token.
    pub(super) fn bearer_token(&self) -> Result<Option<String>, McpConfigError> {
        let token = match (&self.bearer_token_env, &self.bearer_token_file) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err(McpConfigError::BearerTokenTwice),
            (Some(var), None) => {
                let env_error = |why: &'static str| McpConfigError::BearerTokenEnv {
                    var: var.clone(),
                    why,
                };
                env_secret(var).map_err(env_error)?
            }
            (None, Some(path)) => read_token_file(path)?,
        };
        Ok(Some(token))
    }

    /// Who toolhost is to this server's authorization server, from
    /// `[mcp.servers.NAME.oauth]` with the secret read now: a default identity (dynamic
    /// registration) when the table is absent. Errors never contain the secret.
    pub fn oauth_client(&self) -> Result<crate::oauth::OAuthClientIdentity, McpConfigError> {
        let Some(o) = &self.oauth else {
            return Ok(crate::oauth::OAuthClientIdentity::default());
        };
        let bad = |m: String| McpConfigError::OAuth(m);
        if self.url.is_none() {
            return Err(bad(
                "OAuth applies only to a `url` (HTTP) server; remove the table from this \
                 `command` entry"
                    .into(),
            ));
        }
        let client_secret = match (&o.client_secret_env, &o.client_secret_file) {
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(bad(
                    "set only one of `client_secret_env` and `client_secret_file`".into(),
                ));
            }
            (Some(var), None) => Some(env_secret(var).map_err(|why| {
                bad(format!(
                    "`client_secret_env = \"{var}\"`: the environment variable {var} is {why}"
                ))
            })?),
            (None, Some(path)) => Some(read_token_file(path).map_err(|e| match e {
                McpConfigError::BearerTokenFile { path, message } => {
                    bad(format!("`client_secret_file = \"{path}\"`: {message}"))
                }
                other => other,
            })?),
        };
        if client_secret.is_some() && o.client_id.is_none() {
            return Err(bad(
                "a client secret needs the `client_id` it belongs to".into()
            ));
        }
        if let Some(id) = &o.client_id
            && (id.is_empty() || id.chars().any(char::is_control))
        {
            return Err(bad("`client_id` is empty or has control characters".into()));
        }
        if let Some(u) = &o.client_metadata_url {
            let ok = url::Url::parse(u)
                .is_ok_and(|p| p.scheme() == "https" && !matches!(p.path(), "" | "/"));
            if !ok {
                return Err(bad(format!(
                    "`client_metadata_url = {u:?}` must be an https URL with a path (the \
                     address of toolhost's Client ID Metadata Document)"
                )));
            }
        }
        let machine = o.grant == crate::oauth::OAuthGrant::ClientCredentials;
        let private_key = match &o.private_key_file {
            None => None,
            Some(_) if !machine => {
                return Err(bad(
                    "`private_key_file` is for `grant = \"client_credentials\"`".into(),
                ));
            }
            Some(path) => Some(crate::oauth::SigningKey {
                pem: read_private_file(path).map_err(|m| {
                    bad(format!("`private_key_file = \"{}\"`: {m}", path.display()))
                })?,
                algorithm: o
                    .signing_algorithm
                    .clone()
                    .unwrap_or_else(|| "RS256".into()),
            }),
        };
        if let Some(alg) = &o.signing_algorithm
            && !["RS256", "RS384", "RS512", "ES256", "ES384"].contains(&alg.as_str())
        {
            return Err(bad(format!(
                "`signing_algorithm = {alg:?}`: use RS256, RS384, RS512, ES256 or ES384"
            )));
        }
        if machine {
            if o.client_id.is_none() {
                return Err(bad(
                    "`grant = \"client_credentials\"` needs the `client_id` registered for \
                     toolhost"
                        .into(),
                ));
            }
            if client_secret.is_some() == private_key.is_some() {
                return Err(bad(
                    "`grant = \"client_credentials\"` needs one of `client_secret_env`, \
                     `client_secret_file` and `private_key_file`"
                        .into(),
                ));
            }
            if o.client_metadata_url.is_some() {
                return Err(bad(
                    "`client_metadata_url` is for logins; a machine client has a `client_id`"
                        .into(),
                ));
            }
        }
        Ok(crate::oauth::OAuthClientIdentity {
            grant: o.grant,
            private_key,
            client_id: o.client_id.clone(),
            client_secret,
            client_metadata_url: o.client_metadata_url.clone(),
            scopes: o.scopes.clone(),
        })
    }
}

/// The whole content of a private key file, which must not be accessible by group or
/// others and must be under 64 KiB; what is wrong with it otherwise (never its content).
fn read_private_file(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    owner_only(&meta, path, "a private key is a secret")?;
    if meta.len() > 64 * 1024 {
        return Err("larger than 64 KiB; not a private key".into());
    }
    std::fs::read(path).map_err(|e| e.to_string())
}

/// The secret in the environment variable `var`, trimmed; what is wrong with it
/// otherwise (never its value).
fn env_secret(var: &str) -> Result<String, &'static str> {
    let value = std::env::var(var).map_err(|e| match e {
        std::env::VarError::NotPresent => "not set",
        std::env::VarError::NotUnicode(_) => "not valid UTF-8",
    })?;
    let value = value.trim().to_string();
    if value.is_empty() {
        return Err("empty");
    }
    if !value.chars().all(|c| c.is_ascii_graphic()) {
        return Err("not a bearer token (it has whitespace or non-ASCII characters)");
    }
    Ok(value)
}

/// The token of a `bearer_token_file`: its first line that is neither blank nor a `#`
/// comment. Refuses a file group or others may access, as ssh does for a key.
fn read_token_file(path: &Path) -> Result<String, McpConfigError> {
    let file_error = |message: String| McpConfigError::BearerTokenFile {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| file_error(e.to_string()))?;
    owner_only(&meta, path, "a token is a password").map_err(file_error)?;
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let token = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| file_error("it holds no token".into()))?;
    if !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(file_error(
            "its token has whitespace or non-ASCII characters".into(),
        ));
    }
    Ok(token.to_string())
}

/// Refuses a secret file group or others may access, as ssh does for a key; `why` says
/// what the secret is.
fn owner_only(meta: &std::fs::Metadata, path: &Path, why: &str) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "it is accessible by group or others (mode {mode:04o}); {why}: run `chmod 600 {}`",
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (meta, path, why);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McpTransport;

    #[test]
    fn bearer_tokens_come_from_a_variable_or_a_private_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let url = Some("http://127.0.0.1:1/mcp".to_string());
        let entry = |env: Option<&str>, file: Option<std::path::PathBuf>| McpServerConfig {
            url: url.clone(),
            bearer_token_env: env.map(str::to_string),
            bearer_token_file: file,
            ..Default::default()
        };
        let missing = entry(Some("TOOLHOST_TEST_NO_SUCH_VARIABLE"), None).transport();
        let Err(e) = missing else {
            panic!("a missing variable must be an error");
        };
        assert!(e.to_string().contains("bearer_token_env"), "{e}");
        assert!(e.to_string().contains("not set"), "{e}");

        let dir = toolhost_testkit::temp_dir("mcp-token");
        let file = dir.join("token");
        std::fs::write(&file, "# the token\n\n  secret-token-value  \n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = entry(None, Some(file.clone())).transport().unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        assert!(!e.to_string().contains("secret-token-value"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let Ok(McpTransport::StreamableHttp { headers, .. }) =
            entry(None, Some(file.clone())).transport()
        else {
            panic!("an HTTP transport");
        };
        assert_eq!(
            headers,
            Some(vec![(
                "Authorization".to_string(),
                "Bearer secret-token-value".to_string()
            )])
        );
        let transport = McpTransport::StreamableHttp {
            url: "http://127.0.0.1:1/mcp".into(),
            headers,
        };
        let shown = format!("{transport:?}");
        assert!(!shown.contains("secret-token-value"), "{shown}");
        assert!(shown.contains("Authorization=[redacted]"), "{shown}");
        assert_eq!(
            entry(Some("X"), Some(file.clone())).transport(),
            Err(McpConfigError::BearerTokenTwice)
        );
        let mut both = entry(None, Some(file));
        both.headers
            .insert("authorization".into(), "Bearer other".into());
        assert_eq!(both.transport(), Err(McpConfigError::BearerTokenTwice));
        let stdio = McpServerConfig {
            command: Some("node".into()),
            bearer_token_env: Some("X".into()),
            ..Default::default()
        };
        assert_eq!(
            stdio.transport(),
            Err(McpConfigError::BearerTokenWithoutUrl)
        );
    }

    #[test]
    fn oauth_identity_is_checked_and_its_secret_never_shown() {
        use std::os::unix::fs::PermissionsExt as _;
        let parse = |extra: &str| -> McpServerConfig {
            toml::from_str(&format!(
                "url = \"http://127.0.0.1:1/mcp\"\n[oauth]\n{extra}"
            ))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        // No table: dynamic registration.
        let plain = McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..Default::default()
        };
        assert_eq!(plain.oauth_client(), Ok(Default::default()));

        let dir = std::env::temp_dir().join(format!("th-oauth-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "# the client secret\nvery-secret-value\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let good = parse(&format!(
            "client_id = \"th\"\nclient_secret_file = \"{}\"",
            secret.display()
        ))
        .oauth_client()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(good.client_id.as_deref(), Some("th"));
        assert_eq!(good.client_secret.as_deref(), Some("very-secret-value"));
        assert!(!format!("{good:?}").contains("very-secret"));

        // A world-readable secret file is refused, naming the key, never the secret.
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = parse(&format!(
            "client_id = \"th\"\nclient_secret_file = \"{}\"",
            secret.display()
        ))
        .oauth_client()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("client_secret_file") && e.contains("chmod 600"),
            "{e}"
        );
        assert!(!e.contains("very-secret"), "{e}");

        for (extra, says) in [
            (
                "client_secret_env = \"TH_NO_SUCH_VAR_X\"\nclient_id = \"a\"",
                "not set",
            ),
            ("client_secret_env = \"PATH\"", "needs the `client_id`"),
            (
                "client_metadata_url = \"http://me.example/c.json\"",
                "https URL",
            ),
            ("client_metadata_url = \"https://me.example/\"", "https URL"),
            ("client_id = \"a\\u001b[2J\"", "control characters"),
        ] {
            let e = parse(extra).oauth_client().unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }
        // Machine clients: a client id and exactly one of a secret and a private key,
        // the key private to its owner.
        let key = dir.join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nsecret-key-material\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let machine = parse(&format!(
            "grant = \"client_credentials\"\nclient_id = \"m\"\nprivate_key_file = \"{}\"\nsigning_algorithm = \"ES256\"",
            key.display()
        ))
        .oauth_client()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(machine.grant, crate::oauth::OAuthGrant::ClientCredentials);
        assert!(!format!("{machine:?}").contains("secret-key-material"));
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = parse(&format!(
            "grant = \"client_credentials\"\nclient_id = \"m\"\nprivate_key_file = \"{}\"",
            key.display()
        ))
        .oauth_client()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("chmod 600") && !e.contains("secret-key-material"),
            "{e}"
        );
        for (extra, says) in [
            ("grant = \"client_credentials\"", "needs the `client_id`"),
            (
                "grant = \"client_credentials\"\nclient_id = \"m\"",
                "needs one of",
            ),
            (
                "client_id = \"m\"\nprivate_key_file = \"/nonexistent\"",
                "is for `grant",
            ),
            (
                "grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_env = \"PATH\"\nsigning_algorithm = \"none\"",
                "signing_algorithm",
            ),
        ] {
            let e = parse(extra).oauth_client().unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }

        // Unknown keys are refused (a typo must not silently fall back to registration).
        let typo: Result<McpServerConfig, _> =
            toml::from_str("url = \"http://127.0.0.1:1/mcp\"\n[oauth]\nclient_ud = \"a\"");
        assert!(typo.is_err());
        // Only for HTTP servers.
        let stdio: McpServerConfig =
            toml::from_str("command = \"node\"\n[oauth]\nclient_id = \"a\"").unwrap();
        assert!(
            stdio
                .oauth_client()
                .unwrap_err()
                .to_string()
                .contains("only to a `url`")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
