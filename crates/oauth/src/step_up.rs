//! More scope during a session: a server that answers a call with 403
//! `insufficient_scope` names the scope it wants. The person behind the call (a
//! [`LocalLogin`]) logs in again, asking for the scopes the stored login has plus the
//! ones named, and the caller makes the call again (docs/mcp.md, "More scope during a
//! session").
//!
//! The server is not trusted: what it names must be RFC 6749 scope tokens, at most
//! [`MAX_SCOPES`] in all, and a challenge that asks for nothing the login lacks ends the
//! attempt instead of starting another login.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::WWWAuthenticateParams;

use super::{LoginOptions, OAuthClientIdentity, OAuthError, OAuthStore, flow, login};

/// How the person behind a call (the CLI's `LocalUser` in toolhost-mcp) logs in again when a server asks for more OAuth scope during a
/// call (HTTP 403 `insufficient_scope`).
#[derive(Clone)]
pub enum LocalLogin {
    /// A person: the authorization URL is given to this function (the CLI prints it on
    /// stderr and opens a browser), then the login waits for the callback.
    Person(Arc<dyn Fn(&str) + Send + Sync>),
    /// Automation: the authorization URL's redirects are followed without a person,
    /// which works only with authorization servers that approve without asking.
    Headless,
}

impl std::fmt::Debug for LocalLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LocalLogin::Person(_) => "Person",
            LocalLogin::Headless => "Headless",
        })
    }
}

/// The most scopes a login asks for.
pub const MAX_SCOPES: usize = 32;
/// The longest scope token accepted.
const MAX_SCOPE_LEN: usize = 256;
/// How long the new login may take.
const STEP_UP_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether `s` is a scope token: `%x21 / %x23-5B / %x5D-7E` (RFC 6749, section 3.3).
fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_SCOPE_LEN
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// The scopes to ask for: `granted`, then those of `wanted` not in it. An error when
/// `wanted` has a bad token, the total is over [`MAX_SCOPES`], or nothing is new.
fn scopes_for(server: &str, granted: &[String], wanted: &str) -> Result<Vec<String>, OAuthError> {
    let mut scopes: Vec<String> = granted.to_vec();
    for s in wanted.split_ascii_whitespace() {
        if !is_scope_token(s) {
            return Err(flow(
                server,
                "step-up",
                format!("the server names a malformed scope {s:?}"),
            ));
        }
        if !scopes.iter().any(|g| g == s) {
            scopes.push(s.to_string());
        }
        if scopes.len() > MAX_SCOPES {
            return Err(flow(
                server,
                "step-up",
                format!("the server asks for more than {MAX_SCOPES} scopes"),
            ));
        }
    }
    if scopes.len() == granted.len() {
        return Err(flow(
            server,
            "step-up",
            format!(
                "the server refuses the call for want of scope {wanted:?}, which the login \
                 already has (granted: {}); not logging in again",
                granted.join(" ")
            ),
        ));
    }
    Ok(scopes)
}

/// Logs in to `server` again for the scope its 403 `challenge` names, as `how` says.
pub async fn step_up(
    server: &str,
    url: &str,
    store: &OAuthStore,
    client: &OAuthClientIdentity,
    challenge: &str,
    how: &LocalLogin,
) -> Result<(), OAuthError> {
    let base = url::Url::parse(url).map_err(|e| flow(server, "step-up", e))?;
    let params = WWWAuthenticateParams::parse(challenge, &base);
    if !params.is_insufficient_scope() {
        return Err(flow(
            server,
            "step-up",
            "the server's 403 is not an `insufficient_scope` challenge",
        ));
    }
    let wanted = params.scope.unwrap_or_default();
    let granted = store
        .credential_store(server)?
        .read()?
        .map(|c| c.granted_scopes)
        .unwrap_or_default();
    let scopes = scopes_for(server, &granted, &wanted)?;
    tracing::info!(server, scopes = %scopes.join(" "), "the server asks for more scope: logging in again");
    let options = LoginOptions {
        headless: matches!(how, LocalLogin::Headless),
        timeout: STEP_UP_TIMEOUT,
        scopes,
        client: client.clone(),
    };
    login(server, url, store, &options, |auth_url| {
        if let LocalLogin::Person(show) = how {
            show(auth_url);
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn scopes_grow_by_what_is_named_and_hostile_challenges_end_the_attempt() {
        let got = scopes_for("s", &granted(&["mcp:basic"]), "mcp:basic mcp:write").unwrap();
        assert_eq!(got, granted(&["mcp:basic", "mcp:write"]));
        // Nothing new: no second login (a server cannot make toolhost loop).
        assert!(scopes_for("s", &granted(&["a", "b"]), "b a").is_err());
        assert!(scopes_for("s", &granted(&["a"]), "").is_err());
        // Malformed tokens (quote, backslash, control characters) are refused.
        for bad in ["a\"b", "a\\b", "x\u{1b}[2J", "\u{7f}"] {
            assert!(scopes_for("s", &[], bad).is_err(), "{bad:?}");
        }
        let many: Vec<String> = (0..100).map(|i| format!("s{i}")).collect();
        let e = scopes_for("s", &[], &many.join(" "))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 32"), "{e}");
        assert!(scopes_for("s", &[], &"x".repeat(300)).is_err());
    }
}
