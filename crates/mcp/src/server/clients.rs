//! Who a request comes from, and what the operator set for that client.
//!
//! **One identity everywhere** ([`identity`]): the client a configured bearer token
//! belongs to (its name), else that token (by position, `token:N`), else the request's
//! session (`session:` and a digest of its id, never the id itself), else, for a
//! stateless request, the peer's IP address (`peer:ADDR`); over stdio, `stdio`. Tasks,
//! parked rounds, request states and execution-slot shares are all bound to it
//! (docs/mcp.md, "Clients").
//!
//! **Clients as tenants** ([`ServedClient`], `[serve.clients.NAME]`): the tools a client
//! sees and may call (name globs; any other name is an unknown tool to it), the
//! permission levels its calls may use (narrowing the host's policy), and its own limit
//! of calls executing at once. Clients not configured see every tool.

use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::service::{RequestContext, RoleServer};
use sha2::{Digest, Sha256};
use toolhost_core::tools::{Caller, Permission};

/// A configured client's name: what the audit trail, metrics and errors show.
const NAME_RULE: &str = "1 to 64 of a-z, 0-9, `-` and `_`";

/// Why a client's settings are refused.
#[derive(Debug, thiserror::Error)]
pub enum ServedClientError {
    /// The name is not of the allowed shape.
    #[error("the client name {name:?} is not allowed: use {NAME_RULE}")]
    Name {
        /// The name given.
        name: String,
    },
    /// A `tools` pattern is not a glob.
    #[error("client `{client}`: the tools pattern {pattern:?} is not a glob: {why}")]
    Pattern {
        /// The client.
        client: String,
        /// The pattern.
        pattern: String,
        /// The parser's reason.
        why: String,
    },
    /// `max_concurrent_calls` is zero.
    #[error("client `{client}`: max_concurrent_calls must be at least 1")]
    ZeroCalls {
        /// The client.
        client: String,
    },
}

/// One configured client (`[serve.clients.NAME]`).
#[derive(Debug)]
pub struct ServedClient {
    caller: Caller,
    tools: Option<GlobSet>,
}

impl ServedClient {
    /// A client named `name` that sees the tools matching `tools` (every tool when
    /// `None`), whose calls may use only the `allowed` permission levels (when given),
    /// and that runs at most `max_concurrent_calls` calls at once (when given).
    pub fn new(
        name: &str,
        tools: Option<&[String]>,
        allowed: Option<Vec<Permission>>,
        max_concurrent_calls: Option<usize>,
    ) -> Result<Self, ServedClientError> {
        let shaped = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !shaped {
            return Err(ServedClientError::Name {
                name: name.chars().take(80).collect(),
            });
        }
        if max_concurrent_calls == Some(0) {
            return Err(ServedClientError::ZeroCalls {
                client: name.to_string(),
            });
        }
        let tools = match tools {
            None => None,
            Some(patterns) => {
                let mut set = GlobSetBuilder::new();
                for p in patterns {
                    let glob = Glob::new(p).map_err(|e| ServedClientError::Pattern {
                        client: name.to_string(),
                        pattern: p.clone(),
                        why: e.kind().to_string(),
                    })?;
                    set.add(glob);
                }
                Some(set.build().map_err(|e| ServedClientError::Pattern {
                    client: name.to_string(),
                    pattern: patterns.join(", "),
                    why: e.to_string(),
                })?)
            }
        };
        Ok(ServedClient {
            caller: Caller {
                id: Arc::from(name),
                max_concurrent: max_concurrent_calls,
                allowed: allowed.map(Arc::from),
            },
            tools,
        })
    }

    /// The client's name.
    pub fn name(&self) -> &str {
        &self.caller.id
    }

    /// Whether the client sees (and may call) the tool `name`.
    pub fn sees(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|set| set.is_match(name))
    }

    /// The client as the registry's pipeline knows it.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }
}

/// Who sent a request: its identity and, for a configured client, its settings.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// The caller the registry counts slots by.
    pub(crate) caller: Caller,
    /// The configured client, when the request's token belongs to one.
    pub(crate) client: Option<Arc<ServedClient>>,
}

impl Identity {
    /// The identity string (the owner of tasks and request states).
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.caller.id
    }

    /// Whether the client sees (and may call) the tool `name`.
    pub(crate) fn sees(&self, name: &str) -> bool {
        self.client.as_ref().is_none_or(|c| c.sees(name))
    }

    /// What the client sees, as the predicate its calls carry (code mode's inner calls
    /// reach only these tools).
    pub(crate) fn visible(&self) -> toolhost_core::tools::Visible {
        let client = self.client.clone();
        toolhost_core::tools::Visible::new(move |name| client.as_ref().is_none_or(|c| c.sees(name)))
    }
}

/// Who sent the request of `context` (see the module docs).
pub(crate) fn identity(context: &RequestContext<RoleServer>) -> Identity {
    let parts = context.extensions.get::<::http::request::Parts>();
    let Some(parts) = parts else {
        return Identity {
            caller: Caller::new("stdio"),
            client: None,
        };
    };
    if let Some(t) = parts.extensions.get::<super::auth::AuthenticatedToken>() {
        if let Some(client) = &t.client {
            return Identity {
                caller: client.caller.clone(),
                client: Some(client.clone()),
            };
        }
        return Identity {
            caller: Caller::new(format!("token:{}", t.index)),
            client: None,
        };
    }
    let id = if let Some(session) = parts.headers.get("mcp-session-id") {
        // A session id is a credential of its own: only a digest of it is shown.
        let digest = Sha256::digest(session.as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("session:{hex}")
    } else if let Some(peer) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        format!("peer:{}", peer.0.ip().to_canonical())
    } else {
        "anonymous".to_string()
    };
    Identity {
        caller: Caller::new(id),
        client: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_sees_its_globs_and_its_name_is_checked() {
        let c = ServedClient::new(
            "analyst",
            Some(&["read_*".to_string(), "mean".to_string()]),
            Some(vec![Permission::Read]),
            Some(2),
        )
        .unwrap();
        assert!(c.sees("read_file") && c.sees("mean"));
        assert!(!c.sees("delete_file") && !c.sees("meaner"));
        assert_eq!(c.caller().max_concurrent, Some(2));
        let all = ServedClient::new("ops", None, None, None).unwrap();
        assert!(all.sees("anything"));
        for bad in ["", "Ops", "a:b", "token:1", &"x".repeat(65)] {
            let e = ServedClient::new(bad, None, None, None).unwrap_err();
            assert!(matches!(e, ServedClientError::Name { .. }), "{bad}");
        }
        let e = ServedClient::new("a", Some(&["[".to_string()]), None, None).unwrap_err();
        assert!(e.to_string().contains("not a glob"), "{e}");
        let e = ServedClient::new("a", None, None, Some(0)).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
    }
}
