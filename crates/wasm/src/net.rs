//! The allowlist of one call ([`NetAllow`]) over the network rules of its grant. The
//! rules themselves (parsing, matching, what is internal) are `toolhost_caps::net`, the
//! one model of capabilities; this module adds the checks that need the runtime: name
//! lookups for wasi:sockets and resolving a rule's host to check a socket address.

use std::net::{IpAddr, SocketAddr};

pub use toolhost_caps::net::{NetRule, NetRuleError, has_userinfo, is_internal};

/// The allowlist of one call.
#[derive(Debug, Clone, Default)]
pub struct NetAllow {
    rules: Vec<NetRule>,
}

impl NetAllow {
    /// An allowlist of these rules (empty: everything denied).
    pub fn new(rules: Vec<NetRule>) -> Self {
        NetAllow { rules }
    }

    /// Whether `scheme://host:port` is allowed.
    pub fn allows_url(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.rules.iter().any(|r| r.matches(scheme, host, port))
    }

    /// Whether a raw socket to `addr` is allowed: a rule with that literal IP and port, or
    /// a rule whose (non-wildcard) host resolves to that IP when the IP is public.
    pub async fn allows_addr(&self, addr: SocketAddr) -> bool {
        for r in &self.rules {
            if r.port != addr.port() {
                continue;
            }
            if let Some(ip) = r.ip() {
                if ip == addr.ip() {
                    return true;
                }
                continue;
            }
            // A name never leads to an internal address (see `is_internal`): those need
            // an IP-literal rule, as for wasi:http.
            if r.host.starts_with("*.") || is_internal(addr.ip()) {
                continue;
            }
            if let Ok(mut addrs) = tokio::net::lookup_host((r.host.as_str(), r.port)).await
                && addrs.any(|a| a.ip() == addr.ip())
            {
                return true;
            }
        }
        false
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether wasi:sockets may look up `name`: an IP literal (no lookup happens), or a
    /// name some rule names (see [`NetRule::names`]). Everything else is refused, so a
    /// guest cannot use the host's resolver to probe or exfiltrate through DNS.
    pub fn allows_lookup(&self, name: &str) -> bool {
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<IpAddr>().is_ok() || self.rules.iter().any(|r| r.names(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> NetRule {
        NetRule::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn lookups_only_for_named_hosts() {
        let allow = NetAllow::new(vec![
            rule("https://api.example.com"),
            rule("https://*.github.com"),
            rule("http://127.0.0.1:8080"),
        ]);
        assert!(allow.allows_lookup("api.example.com"));
        assert!(allow.allows_lookup("API.example.com."));
        assert!(allow.allows_lookup("raw.github.com"));
        assert!(allow.allows_lookup("127.0.0.1"));
        assert!(allow.allows_lookup("::1"));
        assert!(!allow.allows_lookup("github.com"));
        assert!(!allow.allows_lookup("secret-data.attacker.example"));
        assert!(!allow.allows_lookup("localhost"));
        assert!(!NetAllow::default().allows_lookup("example.com"));
    }
}
